"""Tier state over time and under failure, through the real HTTP path (SPEC §6.1, §6.5, §3
step 9, §8, §9): de-escalation only when cold, the sliding tier TTL, failed upstreams that
write no state, a store outage served `degraded`, racing escalations that merge."""

from __future__ import annotations

import asyncio

import pytest

from orca_cli.clock import FakeClock
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.sim.transport import SimResponse
from orca_cli.proxy.transport import Timeouts, UpstreamRequest
from orca_cli.testing import eventually
from tests.e2e.tier_bodies import FIX_THE_BUILD, Conversation, build_failure
from tests.e2e.tier_kit import (
    BASE_MODELS,
    STRONG_MODEL,
    Launch,
    Reply,
    TierStack,
    closed_port_store,
    evals,
    ok,
    tier_config,
)
from tests.e2e.translation.kit import explained
from tests.routing.bodies import HARD_PROSE, goroutine_dump, python_traceback

WINDOW_S = 300  # the sim channels' cache window (cache_ttl_s)


async def _trivial(st: TierStack, conv: Conversation, i: int, session: str,
                   **kw: str) -> Reply:
    return ok(await st.chat(conv.trivial_edit(i), session=session, **kw))


# --- de-escalation -----------------------------------------------------------------------------

async def test_deescalation_only_when_cold_after_clean_turns_below_t1_to_the_exact_base_model(
        launch: Launch) -> None:
    st = await launch()
    conv, sid = Conversation(), "cool-1"
    first = await _trivial(st, conv, 0, sid)
    assert first.model == "base-weak"  # a short opener: the weak band
    hard = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}"),
                            session=sid, tier="strong"))
    conv.reply("Here is the analysis.")
    assert hard.tier_header == "strong; reason=explicit" and hard.model == STRONG_MODEL
    warm1 = await _trivial(st, conv, 1, sid)  # clean turn 1
    warm2 = await _trivial(st, conv, 2, sid)  # clean turn 2
    assert {warm1.tier_header, warm2.tier_header} == {"strong; reason=explicit"}

    st.clock.advance(WINDOW_S + 1)  # cold, but only 2 clean turns since the escalation
    cold_early = await _trivial(st, conv, 3, sid)  # clean turn 3
    assert cold_early.tier_header == "strong; reason=explicit"
    assert evals(await st.trace(cold_early))["deescalation"]["cold"] is True

    st.clock.advance(WINDOW_S + 1)  # cold and 3 clean turns, but a hard delta (>= t1)
    cold_hard = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{python_traceback(6)}"),
                                 session=sid))
    conv.reply("Fixed the lock order.")
    assert cold_hard.tier_header == "strong; reason=explicit"

    warm3 = await _trivial(st, conv, 4, sid)  # 4 clean turns, low delta, but warm
    assert warm3.tier_header == "strong; reason=explicit"

    st.clock.advance(WINDOW_S + 1)
    back = await _trivial(st, conv, 5, sid)
    assert back.tier_header == "base; reason=deescalated"
    assert back.model == first.model
    after = await _trivial(st, conv, 6, sid)
    assert after.tier_header == "base; reason=default" and after.model == first.model

    # Without its pin the same transcript would have gone to the mid band: the pin did it.
    fresh = ok(await st.chat(conv.trivial_edit(7), session="cool-fresh"))
    assert fresh.model == "base-mid" != first.model

    state = await st.state(sid)
    assert state is not None and (state.tier, state.escalation_count) == ("base", 1)
    events = [(e["event"], e["request_id"]) for e in await st.audit()]
    assert events == [("escalated", hard.request_id), ("deescalated", back.request_id)]


async def test_a_strike_resets_the_clean_turn_count(launch: Launch) -> None:
    st = await launch()
    conv, sid = Conversation(), "cool-2"
    ok(await st.chat(conv.user_turn(FIX_THE_BUILD), session=sid, tier="strong"))
    conv.reply("Building.")
    for n in (1, 2):  # the second of these strikes (repeated error) while strong
        ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(n)),
                         session=sid))
        conv.reply("Patched.")
    state = await st.state(sid)
    assert state is not None and state.tier == "strong" and state.clean_turns == 0
    await _trivial(st, conv, 0, sid)
    await _trivial(st, conv, 1, sid)
    st.clock.advance(WINDOW_S + 1)
    still = await _trivial(st, conv, 2, sid)  # cold, low delta, 2 clean turns < 3
    assert still.tier_header == "strong; reason=explicit"
    st.clock.advance(WINDOW_S + 1)
    back = await _trivial(st, conv, 3, sid)
    assert back.tier_header == "base; reason=deescalated"


# --- a strong session's sub-agents -------------------------------------------------------------

async def test_a_sub_agent_of_a_strong_session_is_served_from_base_with_its_continuations(
        launch: Launch) -> None:
    """A search sub-agent under the session id (its own system prompt and opening ask) does
    not inherit the strong tier; its continuation stays on its model and key; the main
    conversation stays strong, and a sub-agent handed hard work inherits it."""
    st = await launch()
    main, sid = Conversation(), "sub-1"
    ok(await st.chat(main.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}"), session=sid))
    main.reply("The promote path upgrades the lock without rechecking.")
    hard = ok(await st.chat(main.user_turn(f"{HARD_PROSE}\n\n{python_traceback(6)}"),
                            session=sid))
    main.reply("Here is the fix.")
    assert hard.tier_header == "strong; reason=difficulty"

    search = Conversation(system="You are a search agent. Report file paths and lines.")
    first = ok(await st.chat(search.user_turn("Find every caller of loadConfig."),
                             session=sid))
    assert first.tier_header == "base; reason=sub_agent" and first.model in BASE_MODELS
    cont = ok(await st.chat(search.tool_continuation("internal/config/load.go:12"),
                            session=sid))
    assert cont.tier_header == "base; reason=sub_agent" and cont.model == first.model
    trace = await st.trace(cont)
    assert evals(trace)["sub_agent"]["known"] is True
    text = explained(trace)  # what `orca explain` prints
    assert "sub-agent: a conversation already served from base" in text

    back = await _trivial(st, main, 0, sid)
    assert back.tier_header == "strong; reason=difficulty" and back.model == STRONG_MODEL
    worker = Conversation(system="You are a worker agent.")
    handed = ok(await st.chat(worker.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(6)}"),
                              session=sid))
    assert handed.tier_header == "strong; reason=difficulty"
    state = await st.state(sid)
    assert state is not None and state.tier == "strong" and len(state.conversations) == 1
    assert [e["event"] for e in await st.audit()] == ["escalated"]


# --- the sliding tier TTL ----------------------------------------------------------------------

async def test_the_tier_ttl_slides_and_its_expiry_starts_a_new_episode(
        launch: Launch, backend: str) -> None:
    # Redis expires on its own clock: there the fake clock and real time move together, and
    # each sliding step leaves 0.4 ttl of margin for a slow request on a loaded machine.
    ttl = 3
    st = await launch(tier_config(escalation={"tier_ttl_s": ttl}))
    st.step_s = 0.0

    async def wait(seconds: float) -> None:
        st.clock.advance(seconds)
        if backend == "redis":
            await asyncio.sleep(seconds)  # the passage of time under test, not a wait for work

    async def expired() -> bool:
        return await st.state(sid) is None

    conv, sid = Conversation(), "ttl-1"
    assert (await _trivial(st, conv, 0, sid, tier="strong")).reason == "explicit"
    await wait(ttl * 0.6)
    assert (await _trivial(st, conv, 1, sid)).tier_header == "strong; reason=explicit"
    await wait(ttl * 0.6)  # 1.2 ttl after the escalation, 0.6 after the last commit
    assert (await _trivial(st, conv, 2, sid)).tier_header == "strong; reason=explicit"
    st.clock.advance(ttl + 0.3)
    await eventually(expired, ttl + 10, 0.05, what="the tier state's expiry")
    after = await _trivial(st, conv, 3, sid)
    assert after.tier_header == "base; reason=default"
    again = await _trivial(st, conv, 4, sid, tier="strong")  # a new episode: count 0
    assert again.tier_header == "strong; reason=explicit"
    state = await st.state(sid)
    assert state is not None and state.escalation_count == 1


# --- failed upstreams write no tier state ------------------------------------------------------

async def test_a_failed_upstream_writes_no_tier_state_but_its_trace(launch: Launch) -> None:
    st = await launch(tier_config(base_faults={"status": 500, "rate": 1.0}))
    reply = await st.chat(Conversation().trivial_edit(0), session="fail-1", request_id="c-1")
    assert reply.status == 500
    assert reply.body["error"]["message"] == "sim: simulated upstream error"  # unmodified
    assert reply.tier_header == "base; reason=default"
    snap = await st.snapshot("fail-1")
    assert snap.tier is None and not snap.pins and not snap.channel_pins
    assert (snap.share.strong, snap.share.total) == (0, 0)
    trace = await st.trace(reply)
    assert trace["status"] == 500 and trace["committed"] is False
    assert [a["status"] for a in trace["attempts"]] == [500]
    assert (await st.trace("c-1"))["request_id"] == reply.request_id
    assert await st.audit() == []


async def test_a_failed_strong_ask_consumes_nothing(launch: Launch) -> None:
    st = await launch()
    conv, sid = Conversation(), "fail-2"
    first = await _trivial(st, conv, 0, sid)
    st.set_faults("sim-strong", status=503, rate=1.0)
    body = conv.trivial_edit(1)
    failed = await st.chat(body, session=sid, tier="strong")
    assert failed.status == 503 and failed.tier_header == "strong; reason=explicit"
    state = await st.state(sid)
    assert state is not None and (state.tier, state.escalation_count, state.turn) == (
        "base", 0, 1)
    assert (await st.trace(failed))["committed"] is False
    st.set_faults("sim-strong", status=0, rate=0.0)
    retried = ok(await st.chat(body, session=sid, tier="strong"))
    assert retried.tier_header == "strong; reason=explicit"
    state = await st.state(sid)
    assert state is not None and (state.tier, state.escalation_count, state.turn) == (
        "strong", 1, 2)
    assert [e["event"] for e in await st.audit()] == ["escalated"]
    assert first.model in BASE_MODELS


async def test_failed_turns_neither_strike_nor_advance_the_window(launch: Launch) -> None:
    st = await launch()
    conv, sid = Conversation(), "fail-3"
    ok(await st.chat(conv.user_turn(FIX_THE_BUILD), session=sid))
    conv.reply("Building.")
    for n in (2, 3):
        ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(n)),
                         session=sid))
        conv.reply("Patched.")
    before = await st.state(sid)
    assert before is not None and len(before.strikes) == 1
    body = conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(4))
    st.set_faults("sim-base", status=500, rate=1.0)  # the turn would escalate: fail both tiers
    st.set_faults("sim-strong", status=500, rate=1.0)
    for _ in range(2):
        failed = await st.chat(body, session=sid)
        assert failed.status == 500
    assert await st.state(sid) == before  # no strike, no turn, no dedupe key
    st.set_faults("sim-base", status=0, rate=0.0)
    st.set_faults("sim-strong", status=0, rate=0.0)
    retried = ok(await st.chat(body, session=sid))  # the same turn, answered this time
    assert retried.tier_header == "strong; reason=strikes"


async def test_an_error_finish_reason_is_no_turn(launch: Launch) -> None:
    st = await launch()
    conv, sid = Conversation(), "fail-4"
    await _trivial(st, conv, 0, sid)
    before = await st.state(sid)
    st.set_faults("sim-base", finish_reason="error")
    await st.chat(conv.trivial_edit(1), session=sid)
    assert await st.state(sid) == before


async def test_truncated_answers_strike_and_escalate_the_next_request(launch: Launch) -> None:
    """Response-side strikes count at their own commit, so they affect the next request."""
    st = await launch()
    conv, sid = Conversation(), "trunc"
    st.set_faults("sim-base", finish_reason="length")
    replies = []
    for i in range(3):
        body = conv.trivial_edit(i)
        body["max_tokens"] = 2048
        replies.append(ok(await st.chat(body, session=sid)))
    assert [r.tier_header for r in replies] == [
        "base; reason=default", "base; reason=default", "strong; reason=strikes"]
    state = await st.state(sid)
    assert state is not None and [s.kind for s in state.strikes] == []  # escalation clears


async def test_a_short_max_tokens_truncation_never_strikes(launch: Launch) -> None:
    st = await launch()
    conv, sid = Conversation(), "short"
    for i in range(4):
        body = conv.trivial_edit(i)
        body["max_tokens"] = 5
        reply = ok(await st.chat(body, session=sid))
        assert reply.body["choices"][0]["finish_reason"] == "length"
        assert reply.tier_header == "base; reason=default"
    state = await st.state(sid)
    assert state is not None and state.strikes == ()


# --- a store outage mid-session ----------------------------------------------------------------

@pytest.mark.parametrize("backend", [pytest.param("redis", marks=pytest.mark.redis)])
async def test_a_redis_outage_mid_session_serves_base_degraded_and_recovers(
        launch: Launch) -> None:
    st = await launch()
    conv, sid = Conversation(), "outage"
    first = await _trivial(st, conv, 0, sid)
    assert (await _trivial(st, conv, 1, sid, tier="strong")).reason == "explicit"
    before = await st.state(sid)
    real = st.rt.gate.store
    down = closed_port_store(FakeClock())
    st.rt.gate.store = down
    try:
        during = [await _trivial(st, conv, i, sid) for i in (2, 3, 4)]
        assert {r.tier_header for r in during} == {"base; reason=degraded"}
        assert {r.model for r in during} <= set(BASE_MODELS)
        assert during[1].model == during[0].model  # kept on one model in process meanwhile
        assert not st.rt.gate.healthy
    finally:
        st.rt.gate.store = real
        await down.close()
    await _until_healthy(st.rt)
    assert await st.state(sid) == before  # nothing written meanwhile, nothing lost
    after = await _trivial(st, conv, 5, sid)
    assert after.tier_header == "strong; reason=explicit" and after.model == STRONG_MODEL
    reset = await _trivial(st, conv, 6, sid, tier="base")
    assert reset.model == first.model


async def _until_healthy(rt: Runtime, timeout_s: float = 10.0) -> None:
    await eventually(lambda: rt.gate.healthy, timeout_s, 0.05, what="the store is healthy again")


# --- racing identical escalations --------------------------------------------------------------

async def test_racing_identical_escalations_merge_into_one(launch: Launch) -> None:
    st = await launch()
    conv, sid = Conversation(), "race"
    first = await _trivial(st, conv, 0, sid)
    body = conv.trivial_edit(1)
    # Every racer reads base before any commits: the strong upstream answers none of them until
    # all eight have reached it (a request commits after its answer). A fixed stall instead let
    # a racer that a loaded machine delayed read the first one's commit.
    racers = 8
    sim = st.sim("sim-strong")
    all_in = asyncio.Barrier(racers)
    send = sim.send

    async def held(req: UpstreamRequest, timeouts: Timeouts) -> SimResponse:
        await asyncio.wait_for(all_in.wait(), 10.0)
        return await send(req, timeouts)

    sim.send = held  # type: ignore[method-assign]
    try:
        replies = await asyncio.gather(*(st.chat(body, session=sid, tier="strong",
                                                 request_id=f"race-{i}") for i in range(racers)))
    finally:
        del sim.send  # the class's own method again
    assert {r.status for r in replies} == {200}
    assert {r.tier_header for r in replies} == {"strong; reason=explicit"}
    for r in replies:  # each one resolved a transition of its own ...
        intents = [i["type"] for i in (await st.trace(r))["intents"]]
        assert "Escalate" in intents
    state = await st.state(sid)  # ... and they merged into one
    assert state is not None
    assert (state.tier, state.escalation_count, state.turn) == ("strong", 1, 9)
    assert len(await st.audit("escalated")) == 1  # one transition, one event, one count
    assert await st.stat("escalations:explicit") == 1
    assert await st.stat("strong") == 8
    reset = await _trivial(st, conv, 2, sid, tier="base")
    assert reset.model == first.model
