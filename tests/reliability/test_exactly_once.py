"""Exactly-once commits and detected state loss, through the real HTTP path (SPEC §6.4, §9;
RELIABILITY S15, S17).

* S17: the store stalls (`DEBUG SLEEP`) after a request's read and before its commit, so the
  commit times out with an unknown outcome. The server runs it late; the sidecar re-sends the
  same batch (same request id) once the store answers, and the markers make that a duplicate:
  the escalation, the share counters and the turn are counted once.
* The other branch: a commit that never reached the store (it was down) is re-sent after the
  store is back and applies once; the escalation the client was served is not lost.
* S15: a restart that lost the state is detected (epoch gone, new run_id), audited once as
  `state_lost` store-wide (two sidecars agree on the time), shown by `/healthz`, and the share
  caps restart conservatively: strong is denied until `warmup_requests` requests were counted
  since the loss, where a fresh store's ordinary warm-up allows it from the first request.
"""

from __future__ import annotations

import asyncio

import pytest

from orca_cli.routing.caps import window_hours
from orca_cli.state.base import ReadRequest, SlotRef, Snapshot
from orca_cli.testing import eventually
from tests.redis_procs import RedisFarm, RedisProc
from tests.reliability.agent import (
    ROUTER,
    STRONG_MODEL,
    Agent,
    Reply,
    make_config,
    serve_agent,
)

pytestmark = pytest.mark.slow

TIMEOUT_MS = 250


async def state_of(sc: Agent, session: str) -> Snapshot:
    now = sc.rt.clock.now()
    return await sc.store.inner.read(ReadRequest(ROUTER, session, share_hours=window_hours(now, 24)))


async def stats_of(sc: Agent) -> dict[str, float]:
    hour = int(sc.rt.clock.now() // 3600)
    entry = await sc.store.inner.get(SlotRef.of_router(ROUTER), f"stats:{hour}")
    return {} if entry is None else {k: float(v) for k, v in dict(entry.value).items()}


async def test_a_commit_stalled_past_its_timeout_is_resent_and_applies_once(
    farm: RedisFarm, prefix: str
) -> None:
    redis = farm.server()
    # The strong upstream takes 400 ms: the store falls asleep after the read, before the commit.
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS,
                      strong_latency_ms=400)
    async with serve_agent(cfg) as sc:
        # Connected connections for the commit to take: a new one would first need a handshake
        # with the sleeping store, so the stalled commit would never leave the sidecar (then it
        # applies on its re-send, still once, but this test is about one the server ran late).
        await asyncio.gather(*(sc.store.inner.ping() for _ in range(4)))
        request = asyncio.create_task(sc.chat("stalled", tier="strong", request_id="cli-17"))
        await eventually(lambda: sc.store.reads_done >= 1, 2, 0.001, what="the read")
        sleeper = asyncio.create_task(asyncio.to_thread(redis.command, "DEBUG", "SLEEP", 1.2))
        r = await request
        assert (r.status, r.tier, r.model) == (200, "strong; reason=explicit", STRONG_MODEL)
        await sleeper
        await eventually(lambda: sc.rt.gate.healthy and not sc.rt.gate.pending, 8,
                         what="the re-send")
        outcomes = sc.store.outcomes(r.request_id)
        # timed out (the server ran it when it woke up), then re-sent: a duplicate
        assert outcomes == ["StoreUnavailable", "duplicate"], (outcomes, sc.store.faults)
        assert sc.rt.gate.replayed == 1 and sc.rt.gate.dropped == 0
        state = await state_of(sc, "stalled")
        assert state.tier is not None
        assert (state.tier["tier"], state.tier["count"], state.tier["turn"]) == ("strong", 1, 1)
        assert (state.share.strong, state.share.total) == (1, 1)
        assert (state.workspace_share.strong, state.workspace_share.total) == (1, 1)
        assert (await stats_of(sc))["requests"] == 1
        trace = await sc.store.get_trace("cli-17")
        assert trace is not None and trace["request_id"] == r.request_id


async def _escalate_while_the_store_dies(sc: Agent, redis: RedisProc) -> Reply:
    """An escalation whose read succeeds and whose commit meets a dead store; then the store
    comes back with everything but that commit (a SAVE taken after the read)."""
    await sc.chat("before")
    request = asyncio.create_task(sc.chat("lost", tier="strong", request_id="cli-lost"))
    await eventually(lambda: sc.store.reads_done >= 2, 2, 0.001, what="the read")
    redis.command("SAVE")
    redis.kill()
    r = await request
    assert (r.status, r.tier, r.model) == (200, "strong; reason=explicit", STRONG_MODEL)
    assert sc.store.outcomes(r.request_id) == ["StoreUnavailable"]
    redis.start()
    await eventually(lambda: sc.rt.gate.healthy and not sc.rt.gate.pending, 8,
                         what="the re-send")
    return r


async def test_an_escalation_whose_commit_was_held_is_audited_once_after_the_resend(
    farm: RedisFarm, prefix: str
) -> None:
    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS,
                      strong_latency_ms=400)
    async with serve_agent(cfg) as sc:
        await _escalate_while_the_store_dies(sc, redis)
        await eventually(lambda: sc.rt.gate.healthy and not sc.rt.gate.pending, 5, what="quiet")
        events = [e for e in await sc.store.list_audit(ROUTER) if e["event"] == "escalated"]
        assert [e["session"] for e in events] == ["lost"]
        assert (await stats_of(sc)).get("escalations:explicit") == 1


async def test_a_commit_that_never_reached_the_store_is_resent_and_applies_once(
    farm: RedisFarm, prefix: str
) -> None:
    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS,
                      strong_latency_ms=400)
    async with serve_agent(cfg) as sc:
        r = await _escalate_while_the_store_dies(sc, redis)
        assert sc.store.outcomes(r.request_id) == ["StoreUnavailable", "applied"]
        state = await state_of(sc, "lost")
        assert state.tier is not None and (state.tier["tier"], state.tier["count"]) == ("strong", 1)
        assert (state.share.strong, state.share.total) == (1, 2)  # "before" survived in the dump
        again = await sc.chat("lost")
        assert (again.tier, again.model) == ("strong; reason=explicit", STRONG_MODEL)
        # The restart changed the server's run_id: flagged as a possible loss, conservatively.
        assert state.state_lost_at is not None


async def test_a_restart_that_lost_state_is_detected_once_and_caps_restart_conservatively(
    farm: RedisFarm, prefix: str
) -> None:
    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS,
                      share_cap=0.5, warmup=4)
    async with serve_agent(cfg) as one, serve_agent(cfg) as two:
        # Ordinary warm-up: a fresh store allows an escalation at once.
        first = await one.chat("early", tier="strong")
        assert first.tier == "strong; reason=explicit"
        assert (await two.chat("early-2")).status == 200
        assert (await one.healthz())["store"]["state_lost_at"] is None

        redis.kill()
        redis.start()
        for sc in (one, two):  # each meets the connection the restart closed, or not
            assert (await sc.chat("poke")).status == 200
        await eventually(lambda: one.rt.gate.healthy and two.rt.gate.healthy,
                         what="both sidecars healthy")
        # Inverted warm-up: strong is denied until 4 requests were counted since the loss.
        denied = []
        counted = (await state_of(one, "x")).share.total
        while counted < 4:
            sc = (one, two)[len(denied) % 2]
            denied.append(await sc.chat(f"after-{len(denied)}", tier="strong"))
            counted = (await state_of(one, "x")).share.total
        assert denied and all(r.tier == "base; reason=denied:share_cap" for r in denied), denied
        allowed = await two.chat("late", tier="strong")
        assert allowed.tier == "strong; reason=explicit"

        lost = [e for e in await one.store.list_audit() if e["event"] == "state_lost"]
        assert len(lost) == 1 and lost[0]["reason"] in ("epoch_missing", "run_id_changed")
        h1, h2 = (await one.healthz())["store"], (await two.healthz())["store"]
        assert h1["state_lost_at"] is not None and h1["state_lost_at"] == h2["state_lost_at"]
        trace = await one.store.get_trace(denied[0].request_id)
        assert trace is not None and trace["caps"]["warmup"]["inverted"] is True
