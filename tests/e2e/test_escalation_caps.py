"""Explicit asks, the caps and dedupe through the real HTTP path (SPEC §6.2 class A, §6.3
hygiene, §6.4). Observed from the outside: headers, traces, audit, stored tier state."""

from __future__ import annotations

import pytest

from tests.e2e.tier_bodies import FIX_THE_BUILD, Conversation, build_failure
from tests.e2e.tier_kit import (
    BASE_MODELS,
    STRONG_MODEL,
    Launch,
    Reply,
    evals,
    ok,
    tier_config,
)
from tests.routing.bodies import HARD_PROSE, goroutine_dump, python_traceback


async def _trivial(st: object, conv: Conversation, i: int, session: str, **kw: str) -> Reply:
    return ok(await st.chat(conv.trivial_edit(i), session=session, **kw))  # type: ignore[attr-defined]


# --- class A: strong, once, base ---------------------------------------------------------------

async def test_explicit_strong_escalates_at_once_but_not_past_the_session_cap(
        launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    first = await _trivial(st, conv, 0, "ask-1")
    asked = await _trivial(st, conv, 1, "ask-1", tier="strong")
    kept = await _trivial(st, conv, 2, "ask-1")
    reset = await _trivial(st, conv, 3, "ask-1", tier="base")
    again = await _trivial(st, conv, 4, "ask-1", tier="strong")
    after = await _trivial(st, conv, 5, "ask-1")

    assert first.tier_header == "base; reason=default" and first.model in BASE_MODELS
    assert asked.tier_header == "strong; reason=explicit" and asked.model == STRONG_MODEL
    assert kept.tier_header == "strong; reason=explicit" and kept.model == STRONG_MODEL
    assert reset.tier_header == "base; reason=reset"
    assert reset.model == first.model  # the base pin survived the escalation
    assert again.tier_header == "base; reason=denied:session_cap"
    assert again.model == first.model
    assert after.tier_header == "base; reason=default"

    state = await st.state("ask-1")
    assert state is not None and (state.tier, state.escalation_count) == ("base", 1)
    events = [(e["event"], e["trigger"], e["reason"], e["request_id"]) for e in await st.audit()]
    assert events == [
        ("escalated", "explicit", "explicit", asked.request_id),
        ("reset", None, "reset", reset.request_id),
        ("denied_cap", "explicit", "denied:session_cap", again.request_id),
    ]
    assert all(e["actor"] == "client" for e in await st.audit())
    caps = evals(await st.trace(again))["caps"]
    assert caps["denied"] == "session_cap" and caps["session_count"] == 1


async def test_a_second_escalation_after_reset_when_the_cap_allows_two(launch: Launch) -> None:
    st = await launch(tier_config(escalation={"max_per_session": 2}))
    conv = Conversation()
    headers = [(await _trivial(st, conv, i, "ask-2", **kw)).tier_header for i, kw in enumerate(
        [{"tier": "strong"}, {"tier": "base"}, {"tier": "strong"}, {"tier": "base"},
         {"tier": "strong"}])]
    assert headers == ["strong; reason=explicit", "base; reason=reset",
                       "strong; reason=explicit", "base; reason=reset",
                       "base; reason=denied:session_cap"]
    state = await st.state("ask-2")
    assert state is not None and state.escalation_count == 2


@pytest.mark.parametrize("header_on_every_request", [True, False])
async def test_once_serves_the_agents_whole_turn_strong_counted_once(
        launch: Launch, header_on_every_request: bool) -> None:
    """An agent's turn is its user turn and the tool continuations that follow it (Claude
    Code sends its custom headers on every one of them): `once` serves them all strong on the
    strong pin, counts one transition and audits one event; the next user turn is base, and a
    `once` there is a new ask the cap denies."""
    from tests.e2e.tier_bodies import passing_tool_output

    st = await launch()
    conv = Conversation()
    first = await _trivial(st, conv, 0, "once-turn")
    ask = ok(await st.chat(conv.user_turn("rename x to count in utils.py"),
                           session="once-turn", tier="once"))
    conts = []
    for k in range(3):
        conts.append(ok(await st.chat(conv.tool_continuation(passing_tool_output(k)),
                                      session="once-turn",
                                      tier="once" if header_on_every_request else None)))
    conv.reply("Renamed.")
    after = await _trivial(st, conv, 2, "once-turn")
    again = await _trivial(st, conv, 3, "once-turn", tier="once")
    assert ask.tier_header == "strong; reason=once" and ask.model == STRONG_MODEL
    assert [c.tier_header for c in conts] == ["strong; reason=once"] * 3
    assert {c.model for c in conts} == {STRONG_MODEL}
    assert after.tier_header == "base; reason=default" and after.model == first.model
    assert again.tier_header == "base; reason=denied:session_cap"
    assert [e["event"] for e in await st.audit()] == ["once", "denied_cap"]
    state = await st.state("once-turn")
    assert state is not None and (state.tier, state.escalation_count) == ("base", 1)
    assert evals(await st.trace(conts[0]))["once_turn"] is True


async def test_once_serves_one_turn_strong_then_base_and_uses_the_cap(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    first = await _trivial(st, conv, 0, "once-1")
    boosted = await _trivial(st, conv, 1, "once-1", tier="once")
    back = await _trivial(st, conv, 2, "once-1")
    denied = await _trivial(st, conv, 3, "once-1", tier="once")
    assert boosted.tier_header == "strong; reason=once" and boosted.model == STRONG_MODEL
    assert back.tier_header == "base; reason=default" and back.model == first.model
    assert denied.tier_header == "base; reason=denied:session_cap"
    state = await st.state("once-1")
    assert state is not None and (state.tier, state.escalation_count) == ("base", 1)
    assert [e["event"] for e in await st.audit()] == ["once", "denied_cap"]


async def test_reset_inside_the_warm_window_clears_evidence_and_refunds_nothing(
        launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}"), session="rs"))
    conv.reply("Here is the analysis.")
    hard = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{python_traceback(6)}"),
                            session="rs"))
    assert hard.tier_header == "strong; reason=difficulty"
    conv.reply("Fixed.")
    reset = ok(await st.chat(conv.trivial_edit(0), session="rs", tier="base"))
    assert reset.tier_header == "base; reason=reset"
    state = await st.state("rs")
    assert state is not None
    assert (state.tier, state.streak, state.strikes, state.escalation_count) == (
        "base", 0, (), 1)
    conv.reply("Done.")
    hard_again = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(6)}"),
                                  session="rs"))
    conv.reply("Again.")
    capped = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{python_traceback(5)}"),
                              session="rs"))
    assert hard_again.tier_header == "base; reason=default"
    assert capped.tier_header == "base; reason=denied:session_cap"
    audit = await st.audit("denied_cap")
    assert [(e["trigger"], e["request_id"]) for e in audit] == [
        ("difficulty", capped.request_id)]


async def test_an_invalid_tier_header_is_a_400_that_writes_nothing(launch: Launch) -> None:
    st = await launch()
    reply = await st.chat(Conversation().trivial_edit(0), session="bad", tier="frontier")
    assert reply.status == 400
    assert "frontier" not in reply.body["error"]["message"]
    assert await st.state("bad") is None


# --- share caps --------------------------------------------------------------------------------

async def test_many_sessions_asking_strong_hold_the_share_at_the_cap(launch: Launch) -> None:
    """Every request asks strong. Warm-up lets the first 20 through; from then on each request
    is denied iff strong / total > 0.20 before it, continuing strong sessions included, and
    every denial is audited with its request id."""
    cap, warmup = 0.20, 20
    st = await launch(tier_config(escalation={"share_cap": cap, "warmup_requests": warmup,
                                              "max_per_session": 1}))
    strong = total = 0
    denied_ids: list[str] = []
    for s in range(70):
        conv = Conversation()
        for turn in range(2):
            reply = ok(await st.chat(conv.trivial_edit(turn), session=f"many-{s}", tier="strong"))
            over = total >= warmup and strong / total > cap
            if over:
                assert reply.tier_header == "base; reason=denied:share_cap", (s, turn)
                assert reply.model in BASE_MODELS
                denied_ids.append(reply.request_id)
            else:
                assert reply.tier == "strong", (s, turn, strong, total)
                assert reply.model == STRONG_MODEL
                strong += 1
            total += 1
    assert strong / total <= cap + 1 / total
    assert strong / total >= cap - 1 / total  # held at the cap, not starved below it
    audited = await st.audit("denied_cap")
    assert sorted(e["request_id"] for e in audited) == sorted(denied_ids)
    assert {e["reason"] for e in audited} == {"denied:share_cap"}
    snap = await st.snapshot("many-0")
    assert (snap.share.strong, snap.share.total) == (strong, total)
    trace = await st.trace(denied_ids[-1])
    assert trace["caps"]["share"]["cap"] == cap
    assert trace["caps"]["share"]["ratio"] > cap


async def test_the_workspace_cap_binds_a_router_under_its_own_cap(launch: Launch) -> None:
    st = await launch(tier_config(escalation={"share_cap": 1.0, "warmup_requests": 5},
                                  workspace_cap=0.25))
    reasons = []
    for s in range(12):
        reply = ok(await st.chat(Conversation().trivial_edit(s), session=f"ws-{s}",
                                 tier="strong"))
        reasons.append(reply.reason)
    assert reasons[:5] == ["explicit"] * 5
    assert "denied:workspace_cap" in reasons
    assert "denied:share_cap" not in reasons
    assert len(await st.audit("denied_cap")) == reasons.count("denied:workspace_cap")


# --- dedupe: a retried request never counts twice ---------------------------------------------

async def test_a_retried_request_id_never_strikes_twice(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    ok(await st.chat(conv.user_turn(FIX_THE_BUILD), session="retry-c", request_id="t1"))
    conv.reply("Building.")
    ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(2)),
                     session="retry-c", request_id="t2"))
    conv.reply("Patched.")
    body3 = conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(3))
    first = ok(await st.chat(body3, session="retry-c", request_id="t3"))
    retried = ok(await st.chat(body3, session="retry-c", request_id="t3"))
    assert first.tier_header == retried.tier_header == "base; reason=default"
    state = await st.state("retry-c")
    assert state is not None and len(state.strikes) == 1 and state.turn == 3
    conv.reply("Patched again.")
    fourth = ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(4)),
                              session="retry-c", request_id="t4"))
    assert fourth.tier_header == "strong; reason=strikes"
    # The client's id finds the trace of its latest attempt.
    assert (await st.trace("t3"))["client_request_id"] == "t3"


async def test_a_retried_hard_turn_is_one_streak_step(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    hard1 = conv.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}")
    replies = [ok(await st.chat(hard1, session="retry-b", request_id="h1")) for _ in range(3)]
    assert {r.tier_header for r in replies} == {"base; reason=default"}
    state = await st.state("retry-b")
    assert state is not None and state.streak == 1 and state.turn == 1
    conv.reply("Analysis.")
    second = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{python_traceback(6)}"),
                              session="retry-b", request_id="h2"))
    assert second.tier_header == "strong; reason=difficulty"


@pytest.mark.parametrize("kind", ["strike", "streak"])
async def test_one_request_id_on_every_request_still_counts_each_new_turn(
        launch: Launch, kind: str) -> None:
    """A fixed `X-Request-Id` (an agent's custom-header setting sends the same one on every
    request) repeats only a turn sent again, not every turn after the first."""
    st = await launch()
    conv = Conversation()
    rid = "my-run-1"
    if kind == "strike":
        turns = [conv.user_turn(FIX_THE_BUILD)]
        for n in (2, 3, 4):
            conv.reply("Patched.")
            turns.append(conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(n)))
        want = ["base; reason=default"] * 3 + ["strong; reason=strikes"]
    else:
        turns = [conv.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}")]
        conv.reply("Analysis.")
        turns.append(conv.user_turn(f"{HARD_PROSE}\n\n{python_traceback(6)}"))
        want = ["base; reason=default", "strong; reason=difficulty"]
    replies = [ok(await st.chat(body, session="fixed-id", request_id=rid)) for body in turns]
    assert [r.tier_header for r in replies] == want
    # A retry of the last turn under the same id is still one turn.
    state = await st.state("fixed-id")
    assert state is not None
    again = ok(await st.chat(turns[-1], session="fixed-id", request_id=rid))
    after = await st.state("fixed-id")
    assert after is not None and after.turn == state.turn
    assert (await st.trace(again))["client_request_id"] == rid


async def test_a_repeated_turn_says_so_in_its_trace(launch: Launch) -> None:
    st = await launch()
    body = Conversation().user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}")
    first = ok(await st.chat(body, session="repeat-says", request_id="r1"))
    again = ok(await st.chat(body, session="repeat-says", request_id="r1"))
    assert "repeat" not in evals(await st.trace(first))["B"]
    ev = evals(await st.trace(again))
    assert ev["B"]["repeat"] is True and ev["C"]["repeat"] is True


@pytest.mark.parametrize("kind", ["strike", "streak"])
async def test_a_resent_turn_without_a_request_id_dedupes_on_its_body(
        launch: Launch, kind: str) -> None:
    """No X-Request-Id: the dedupe key is the hash of (router, session, messages, delta)."""
    st = await launch()
    conv = Conversation()
    if kind == "strike":
        ok(await st.chat(conv.user_turn(FIX_THE_BUILD), session="resend"))
        conv.reply("Building.")
        ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(2)),
                         session="resend"))
        conv.reply("Patched.")
        body = conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(3))
    else:
        body = conv.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}")
    replies = [ok(await st.chat(body, session="resend")) for _ in range(3)]
    assert {r.tier_header for r in replies} == {"base; reason=default"}
    state = await st.state("resend")
    assert state is not None
    assert (len(state.strikes), state.streak) == ((1, 0) if kind == "strike" else (0, 1))


# --- a repeated body never swallows an explicit ask (SPEC §19) --------------------------------

@pytest.mark.parametrize("request_id", [None, "same-id"])
async def test_a_resent_once_counts_against_the_cap_and_says_so(
        launch: Launch, request_id: str | None) -> None:
    st = await launch()
    conv = Conversation()
    body = conv.trivial_edit(0)
    plain = ok(await st.chat(body, session="re-once", request_id=request_id))
    replies = [ok(await st.chat(body, session="re-once", tier="once", request_id=request_id))
               for _ in range(3)]
    assert plain.tier_header == "base; reason=default"
    assert [r.tier_header for r in replies] == [
        "strong; reason=once", "base; reason=denied:session_cap",
        "base; reason=denied:session_cap"]
    assert [r.model == STRONG_MODEL for r in replies] == [True, False, False]
    state = await st.state("re-once")
    assert state is not None and (state.tier, state.escalation_count, state.turn) == ("base", 1, 1)
    assert [e["event"] for e in await st.audit()] == ["once", "denied_cap", "denied_cap"]
    assert (await st.trace(replies[1].request_id))["tier"]["reason"] == "denied:session_cap"


async def test_a_resent_once_under_a_larger_cap_counts_every_strong_turn(
        launch: Launch) -> None:
    st = await launch(tier_config(escalation={"max_per_session": 2}))
    body = Conversation().trivial_edit(0)
    replies = [ok(await st.chat(body, session="re-once-2", tier="once")) for _ in range(4)]
    assert [r.reason for r in replies] == ["once", "once", "denied:session_cap",
                                           "denied:session_cap"]
    state = await st.state("re-once-2")
    assert state is not None and state.escalation_count == 2
    assert [e["event"] for e in await st.audit()].count("once") == 2


async def test_a_resent_body_with_a_base_reset_takes_effect(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    ok(await st.chat(conv.trivial_edit(0), session="re-base"))
    body = conv.trivial_edit(1)
    asked = ok(await st.chat(body, session="re-base", tier="strong"))
    reset = ok(await st.chat(body, session="re-base", tier="base"))
    after = ok(await st.chat(conv.trivial_edit(2), session="re-base"))
    assert asked.tier_header == "strong; reason=explicit"
    assert reset.tier_header == "base; reason=reset" and reset.model != STRONG_MODEL
    assert after.tier_header == "base; reason=default" and after.model != STRONG_MODEL
    state = await st.state("re-base")
    assert state is not None and (state.tier, state.escalation_count) == ("base", 1)
    assert [e["event"] for e in await st.audit()] == ["escalated", "reset"]
    assert (await st.trace(reset.request_id))["tier"]["reason"] == "reset"


async def test_a_resent_body_with_a_strong_ask_escalates(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    body = conv.trivial_edit(0)
    plain = ok(await st.chat(body, session="re-strong"))
    asked = ok(await st.chat(body, session="re-strong", tier="strong"))
    kept = ok(await st.chat(conv.trivial_edit(1), session="re-strong"))
    assert plain.tier_header == "base; reason=default"
    assert asked.tier_header == "strong; reason=explicit" and asked.model == STRONG_MODEL
    assert kept.tier_header == "strong; reason=explicit" and kept.model == STRONG_MODEL
    state = await st.state("re-strong")
    assert state is not None and (state.tier, state.escalation_count, state.turn) == (
        "strong", 1, 2)
    assert [e["event"] for e in await st.audit()] == ["escalated"]


async def test_a_pending_operator_ask_is_used_by_a_resent_body(launch: Launch) -> None:
    st = await launch()
    body = Conversation().trivial_edit(0)
    ok(await st.chat(body, session="re-op"))
    asked = await st.admin("POST", "sessions/coding/re-op/escalate",
                           {"once": True, "reason": "stuck", "actor": "cli"})
    assert asked.status_code == 200, asked.text
    boosted = ok(await st.chat(body, session="re-op"))
    again = ok(await st.chat(body, session="re-op"))
    assert boosted.tier_header == "strong; reason=once" and boosted.model == STRONG_MODEL
    assert again.tier_header == "base; reason=default"
    state = await st.state("re-op")
    assert state is not None and state.pending is None and state.escalation_count == 1
    assert [(e["event"], e["actor"]) for e in await st.audit()] == [("once", "cli")]


# --- concurrent asks of one session (SPEC §6.4: caps bind the client's own asks) -------------

async def _burst(st: object, bodies: list[dict[str, object]], session: str,
                 tier: str) -> list[Reply]:
    """All in flight at once (the strong channel answers after 300 ms), each its own turn."""
    import asyncio

    async def one(body: dict[str, object]) -> Reply:
        resp = await st.http.post(  # type: ignore[attr-defined]
            "/v1/chat/completions", json=body,
            headers={"authorization": "Bearer agent-key", "x-orca-session": session,
                     "x-orcarouter-tier": tier})
        return Reply(resp.status_code, resp.headers, resp.json())

    replies = await asyncio.gather(*(one(b) for b in bodies))
    await st.sidecar.idle()  # type: ignore[attr-defined]
    return [ok(r) for r in replies]


@pytest.mark.parametrize("cap", [1, 2])
async def test_concurrent_once_asks_are_served_strong_only_up_to_the_session_cap(
        launch: Launch, cap: int) -> None:
    st = await launch(tier_config(escalation={"max_per_session": cap},
                                  strong_channel={"latency_ms": 300}))
    conv = Conversation()
    ok(await st.chat(conv.trivial_edit(0), session="burst-once"))
    replies = await _burst(st, [conv.trivial_edit(i) for i in range(1, 9)], "burst-once", "once")
    strong = [r for r in replies if r.tier_header == "strong; reason=once"]
    assert len(strong) == cap and all(r.model == STRONG_MODEL for r in strong)
    assert sorted(r.tier_header for r in replies if r not in strong) == [
        "base; reason=denied:session_cap"] * (8 - cap)
    state = await st.state("burst-once")
    assert state is not None and (state.tier, state.escalation_count) == ("base", cap)
    events = [e["event"] for e in await st.audit()]
    assert events.count("once") == cap and events.count("denied_cap") == 8 - cap
    # The denied ones say why: the transitions in flight beside the stored count.
    denied = next(r for r in replies if r not in strong)
    caps = evals(await st.trace(denied))["caps"]
    assert caps["denied"] == "session_cap" and caps["in_flight"] + caps["session_count"] >= cap


async def test_concurrent_strong_asks_escalate_once_and_all_serve_strong(launch: Launch) -> None:
    st = await launch(tier_config(strong_channel={"latency_ms": 300}))
    conv = Conversation()
    ok(await st.chat(conv.trivial_edit(0), session="burst-strong"))
    replies = await _burst(st, [conv.trivial_edit(i) for i in range(1, 7)], "burst-strong",
                           "strong")
    assert {r.tier_header for r in replies} == {"strong; reason=explicit"}
    state = await st.state("burst-strong")
    assert state is not None and (state.tier, state.escalation_count) == ("strong", 1)
    assert [e["event"] for e in await st.audit()] == ["escalated"]

