"""Store faults seen through the real HTTP path (SPEC §9; RELIABILITY S13, S14, S18).

A redis-server of our own is crashed (SIGKILL by pid), restarted on the same port, paused
(`CLIENT PAUSE`, all commands or writes only) or put to sleep (`DEBUG SLEEP`) while a sidecar
serves a conversation over it. What must hold: no request fails; while the store is gone every
request is served base with `X-Orca-Session-Tier: base; reason=degraded`; a request pays at
most one store timeout; escalation and pins resume by themselves once the store answers.

Elapsed-time checks are bounds with a generous slack (the point is "one store timeout, not the
~4 s of a default redis-py client or a hung request"), never performance assertions.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from orca_cli.routing.caps import window_hours
from orca_cli.state.base import ReadRequest, Snapshot
from orca_cli.testing import eventually
from tests.redis_procs import RedisFarm, RedisProc
from tests.redis_procs import stalled as redis_stalled
from tests.reliability.agent import (
    BASE_MODEL,
    ROUTER,
    STRONG_MODEL,
    Agent,
    make_config,
    serve_agent,
)

pytestmark = pytest.mark.slow

TIMEOUT_MS = 250
SLACK_S = 0.75
DEGRADED = "base; reason=degraded"


async def session_state(sc: Agent, session: str) -> Snapshot:
    now = sc.rt.clock.now()
    return await sc.store.inner.read(ReadRequest(ROUTER, session, share_hours=window_hours(now, 24)))


async def test_a_crash_mid_conversation_serves_base_and_escalation_resumes_after_restart(
    farm: RedisFarm, prefix: str
) -> None:
    redis = farm.server()
    # warmup 1: the inverted warm-up after the loss ends with the first request counted
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS, warmup=1)
    async with serve_agent(cfg) as sc:
        first = await sc.chat("conv", tier="strong")
        assert (first.status, first.tier, first.model) == (200, "strong; reason=explicit",
                                                          STRONG_MODEL)
        for _ in range(2):
            r = await sc.chat("conv")
            assert (r.status, r.tier, r.model) == (200, "strong; reason=explicit", STRONG_MODEL)
        before = await session_state(sc, "conv")
        assert before.tier is not None and before.tier["tier"] == "strong"
        assert before.pins.get("strong") == STRONG_MODEL

        redis.kill()
        crash_hit = await sc.chat("conv")  # the first request meets the dead store
        assert crash_hit.status == 200 and crash_hit.tier == DEGRADED
        assert crash_hit.elapsed_s < TIMEOUT_MS / 1000 + SLACK_S
        during = await asyncio.gather(
            *[sc.chat(s, tier=t) for s in ("conv", "side-1", "side-2") for t in (None, "strong")]
        )
        during += [await sc.chat("conv") for _ in range(4)]
        assert all(r.status == 200 and r.tier == DEGRADED for r in during), during
        assert {r.model for r in during} == {BASE_MODEL}  # no escalation while degraded
        assert all(r.body["choices"][0]["message"]["content"] for r in during)
        assert all(r.elapsed_s < SLACK_S for r in during)  # known down: no store call at all
        health = await sc.healthz()
        assert health["status"] == "degraded" and health["store"]["degraded_since"] is not None

        redis.start()  # same port, empty: the state is gone
        await eventually(lambda: sc.rt.gate.healthy, timeout=5,
                         what="the sidecar reports the store healthy again")
        back = await sc.chat("conv")
        assert (back.status, back.tier, back.model) == (200, "base; reason=default", BASE_MODEL)
        again = await sc.chat("conv", tier="strong")
        assert (again.status, again.tier, again.model) == (200, "strong; reason=explicit",
                                                          STRONG_MODEL)
        pinned = await sc.chat("conv")
        assert (pinned.tier, pinned.model) == ("strong; reason=explicit", STRONG_MODEL)
        after = await session_state(sc, "conv")
        assert after.tier is not None and after.tier["tier"] == "strong"
        assert after.tier["count"] == 1  # a new episode on the new store
        assert after.pins == {"base": BASE_MODEL, "strong": STRONG_MODEL}
        assert after.state_lost_at is not None
        health = await sc.healthz()
        assert health["status"] == "ok" and health["store"]["state_lost_at"] is not None
        lost = [e for e in await sc.store.list_audit() if e["event"] == "state_lost"]
        assert len(lost) == 1
    assert all(r.status == 200 for r in sc.replies)


async def test_requests_served_during_an_outage_have_degraded_traces_after_recovery(
    farm: RedisFarm, prefix: str
) -> None:
    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS)
    async with serve_agent(cfg) as sc:
        await sc.chat("conv")
        redis.kill()
        rids = [f"outage-{i}" for i in range(3)]
        for rid in rids:
            assert (await sc.chat("conv", request_id=rid)).tier == DEGRADED
        redis.start()
        await eventually(lambda: sc.rt.gate.healthy, timeout=5, what="recovery")

        # Trace-only commits are re-sent after the gate reports healthy (they follow the
        # recovery, `StoreGate._probe_loop`), so they are waited for, not read at once.
        async def traced() -> list[Any] | None:
            got = [await sc.store.get_trace(rid) for rid in rids]
            return got if all(t is not None for t in got) else None
        traces = await eventually(traced, timeout=5, what="the degraded requests' traces")
        assert isinstance(traces, list)
        for trace in traces:
            assert trace["degraded"] is True
            assert trace["tier"]["reason"] == "degraded" and trace["committed"] is False


async def test_recovery_does_not_wait_for_the_load_to_stop(
    farm: RedisFarm, prefix: str
) -> None:
    """Requests keep arriving, degraded, while the held commits are re-sent after a restart:
    the gate reports healthy once the commits that write state are in, not when the hold is
    empty (which under sustained load it never is), and the traces of the degraded requests
    follow. Before, a restart under load kept the sidecar degraded until the load stopped."""
    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS)
    async with serve_agent(cfg) as sc:
        await sc.chat("conv")
        stop = asyncio.Event()
        served: list[str] = []

        async def load(i: int) -> None:
            n = 0
            while not stop.is_set() and n < 2000:  # bounded: at most 2,000 turns per client
                r = await sc.chat(f"load-{i}", f"step {n}", request_id=f"load-{i}-{n}",
                                  settle=False)
                assert r.status == 200, r
                served.append(r.tier)
                n += 1

        clients = [asyncio.create_task(load(i)) for i in range(16)]
        try:
            await eventually(lambda: len(served) > 50, timeout=10, what="load running")
            redis.kill()
            await eventually(lambda: not sc.rt.gate.healthy, timeout=5, what="degraded")
            await eventually(lambda: len(sc.rt.gate.pending) > 100, timeout=10,
                             what="degraded requests held")
            redis.start()
            up = time.monotonic()
            await eventually(lambda: sc.rt.gate.healthy, timeout=5,
                             what="healthy again while the load goes on")
            assert time.monotonic() - up < 3.0
            assert not stop.is_set() and all(not t.done() for t in clients)
        finally:
            stop.set()
            await asyncio.gather(*clients)
        await eventually(lambda: not sc.rt.gate.pending, timeout=10,
                         what="the held traces re-sent")
        assert sc.rt.gate.healthy and sc.rt.gate.dropped == 0


async def test_a_zero_warmup_lets_the_first_escalation_of_a_fresh_router_through(
    farm: RedisFarm, prefix: str
) -> None:
    cfg = make_config(redis_url=farm.server().url, prefix=prefix, warmup=0, share_cap=0.5)
    async with serve_agent(cfg) as sc:
        r = await sc.chat("first", tier="strong")
        assert (r.status, r.tier) == (200, "strong; reason=explicit")


def _stall(redis: RedisProc, how: str, seconds: float) -> asyncio.Task[object]:
    """Stall the server from a thread of its own (DEBUG SLEEP blocks its caller too)."""
    if how == "pause":
        redis.command("CLIENT", "PAUSE", int(seconds * 1000), "ALL")
        return asyncio.create_task(asyncio.sleep(seconds))
    return asyncio.create_task(asyncio.to_thread(redis.command, "DEBUG", "SLEEP", seconds))


@pytest.mark.parametrize("how", ["pause", "sleep"])
async def test_a_stalled_redis_costs_a_request_at_most_one_store_timeout(
    farm: RedisFarm, prefix: str, how: str
) -> None:
    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS)
    async with serve_agent(cfg) as sc:
        assert (await sc.chat("slow", tier="strong")).tier == "strong; reason=explicit"
        stall = _stall(redis, how, 1.5)
        if how == "sleep":  # CLIENT PAUSE holds from its reply; DEBUG SLEEP from a thread
            await eventually(lambda: asyncio.to_thread(redis_stalled, redis.port), 2,
                             what="the stall")
        started = time.monotonic()
        stalled = await asyncio.gather(*[sc.chat(f"slow-{i}") for i in range(8)],
                                       sc.chat("slow"))
        assert time.monotonic() - started < TIMEOUT_MS / 1000 + SLACK_S
        assert all(r.status == 200 and r.tier == DEGRADED for r in stalled), stalled
        assert all(r.elapsed_s < TIMEOUT_MS / 1000 + SLACK_S for r in stalled)
        later = [await sc.chat("slow") for _ in range(3)]  # still stalled: skipped at once
        assert all(r.tier == DEGRADED and r.elapsed_s < SLACK_S for r in later)
        await stall
        await eventually(lambda: sc.rt.gate.healthy, timeout=5, what="recovery after the stall")
        r = await sc.chat("slow")
        assert (r.status, r.tier, r.model) == (200, "strong; reason=explicit", STRONG_MODEL)
        assert (await session_state(sc, "slow")).state_lost_at is None  # nothing was lost
    assert all(r.status == 200 for r in sc.replies)


async def test_a_write_pause_delays_only_the_commit_which_then_applies_once(
    farm: RedisFarm, prefix: str
) -> None:
    """S18: reads are served, the post-success commit blocks past its timeout; the response is
    not held up by it, and the commit is re-sent after the pause and applies exactly once."""
    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=TIMEOUT_MS)
    async with serve_agent(cfg) as sc:
        await sc.chat("warm")
        redis.command("CLIENT", "PAUSE", 1500, "WRITE")
        paused_at = time.monotonic()
        r = await sc.chat("paused", tier="strong", request_id="client-paused-1")
        assert (r.status, r.tier, r.model) == (200, "strong; reason=explicit", STRONG_MODEL)
        assert r.elapsed_s < TIMEOUT_MS / 1000 + SLACK_S  # read served, answer not held back
        await eventually(lambda: sc.store.outcomes(r.request_id), 5, what="the commit's timeout")
        assert sc.store.outcomes(r.request_id) == ["StoreUnavailable"]
        assert time.monotonic() - paused_at < 1.5  # it failed inside the pause, by its timeout
        await eventually(lambda: sc.rt.gate.healthy, timeout=8, what="the held commit is re-sent")
        # A paused client's command never runs once its connection is dropped at the timeout,
        # so the re-send after the pause is the one that applies (DEBUG SLEEP is the other
        # branch: the original runs late and the re-send is a duplicate; test_exactly_once).
        outcomes = sc.store.outcomes(r.request_id)
        assert outcomes[0] == "StoreUnavailable" and outcomes[-1] == "applied", outcomes
        assert outcomes.count("applied") == 1
        state = await session_state(sc, "paused")
        assert state.tier is not None and state.tier["count"] == 1 and state.tier["turn"] == 1
        assert state.share.strong == 1 and state.share.total == 2
        trace = await sc.store.get_trace("client-paused-1")
        assert trace is not None and trace["committed"] is True
