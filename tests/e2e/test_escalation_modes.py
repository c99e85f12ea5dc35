"""Escalation modes, canary, percentile threshold, no candidate and the operator's pending asks
through the real HTTP path (SPEC §6.1, §6.2, §1.1 escalate/reset)."""

from __future__ import annotations

import dataclasses

import pytest

from orca_cli.config.schema import TranslationConfig
from tests.e2e.tier_bodies import FIX_THE_BUILD, Conversation, build_failure
from tests.e2e.tier_kit import (
    BASE_MODELS,
    STRONG_MODEL,
    Launch,
    Reply,
    TierStack,
    evals,
    ok,
    tier_config,
)
from tests.routing.bodies import HARD_PROSE, goroutine_dump, python_traceback


async def _loop(st: TierStack, sid: str, turns: int = 5) -> list[Reply]:
    conv = Conversation()
    out = []
    for turn in range(1, turns + 1):
        body = conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(turn) if turn > 1 else None)
        out.append(ok(await st.chat(body, session=sid)))
        conv.reply("Patched; rebuilding.")
    return out


async def _hard_pair(st: TierStack, sid: str) -> tuple[Reply, Reply]:
    conv = Conversation()
    first = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}"),
                             session=sid))
    conv.reply("Analysis.")
    second = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{python_traceback(6)}"),
                              session=sid))
    return first, second


async def test_shadow_mode_records_what_it_would_do_and_routes_nothing_strong(
        launch: Launch) -> None:
    st = await launch(tier_config(escalation={"mode": "shadow"}))
    replies = await _loop(st, "shadow-1")
    assert {r.tier_header for r in replies} == {"base; reason=shadow"}
    assert {r.model for r in replies} <= set(BASE_MODELS)
    would = [(await st.trace(r))["tier"]["shadow"] for r in replies]
    assert [w["would"] for w in would] == [False, False, False, True, False]
    assert would[3]["trigger"] == "strikes"
    state = await st.state("shadow-1")
    assert state is not None and state.tier == "base" and state.escalation_count == 0
    assert state.shadow is not None and (state.shadow.tier, state.shadow.trigger) == (
        "strong", "strikes")
    assert await st.stat("shadow_would_escalate") == 1
    assert [e for e in await st.audit() if e["event"] == "escalated"] == []


async def test_shadow_mode_keeps_class_a_live(launch: Launch) -> None:
    st = await launch(tier_config(escalation={"mode": "shadow"}))
    reply = ok(await st.chat(Conversation().trivial_edit(0), session="shadow-2", tier="strong"))
    assert reply.tier_header == "strong; reason=explicit" and reply.model == STRONG_MODEL


async def test_mode_off_keeps_no_tier_state_and_ignores_asks(launch: Launch) -> None:
    st = await launch(tier_config(escalation={"mode": "off"}))
    replies = await _loop(st, "off-1", turns=4)
    asked = ok(await st.chat(Conversation().trivial_edit(0), session="off-1", tier="strong"))
    assert {r.tier_header for r in [*replies, asked]} == {"base; reason=off"}
    assert await st.state("off-1") is None


async def test_out_of_canary_sessions_behave_as_off_and_count_in_the_share(
        launch: Launch) -> None:
    st = await launch(tier_config(escalation={"canary": 0.0}))
    first, second = await _hard_pair(st, "canary-1")
    asked = ok(await st.chat(Conversation().trivial_edit(0), session="canary-1", tier="strong"))
    assert {r.tier_header for r in (first, second, asked)} == {"base; reason=canary"}
    assert await st.state("canary-1") is None
    snap = await st.snapshot("canary-1")
    assert (snap.share.strong, snap.share.total) == (0, 3)


async def test_no_strong_candidate_for_the_format_is_denied_and_audited(launch: Launch) -> None:
    # A real Anthropic-format channel (a sim one speaks both formats); never called here.
    # With translation off it cannot serve a Chat Completions request (format_mismatch).
    cfg = tier_config(strong_channel={
        "type": "anthropic", "api": "anthropic", "base_url": "http://127.0.0.1:9",
        "keys": ["sk-ant-test-not-a-key"]})
    st = await launch(dataclasses.replace(cfg, translation=TranslationConfig(enabled=False)))
    reply = ok(await st.chat(Conversation().trivial_edit(0), session="nc", tier="strong"))
    assert reply.tier_header == "base; reason=denied:no_candidate"
    assert reply.model in BASE_MODELS
    audit = await st.audit("denied_cap")
    assert [(e["reason"], e["request_id"]) for e in audit] == [
        ("denied:no_candidate", reply.request_id)]
    state = await st.state("nc")
    assert state is not None and state.escalation_count == 0
    assert "sk-ant-test-not-a-key" not in repr(await st.trace(reply))


async def test_the_percentile_gate_takes_over_after_200_user_turns(launch: Launch) -> None:
    """Absolute t2 = 0.75 is above a hard turn with a paste (≈ 0.71): with fewer than 200
    samples two hard turns stay base; once 200 trivial user turns are recorded the gate is
    their 90th percentile, floored at t1 + 0.05 = 0.40, and the same two turns escalate."""
    st = await launch(tier_config(escalation={"threshold": "percentile", "t2": 0.75,
                                              "percentile": 0.90}))
    early = await _hard_pair(st, "pct-early")
    assert [r.reason for r in early] == ["default", "default"]
    for i in range(198):
        ok(await st.chat(Conversation().trivial_edit(i), session=f"pct-fill-{i}"))
    late = await _hard_pair(st, "pct-late")
    assert [r.reason for r in late] == ["default", "difficulty"]
    t2 = (await st.trace(late[1]))["tier"]["t2"]
    assert abs(t2 - 0.40) < 1e-9


async def test_a_pending_once_from_the_operator_serves_the_next_turn_strong(
        launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    first = ok(await st.chat(conv.trivial_edit(0), session="op-1"))
    asked = await st.admin("POST", "sessions/coding/op-1/escalate",
                           {"once": True, "reason": "stuck", "actor": "cli"})
    assert asked.status_code == 200, asked.text
    boosted = ok(await st.chat(conv.trivial_edit(1), session="op-1"))
    after = ok(await st.chat(conv.trivial_edit(2), session="op-1"))
    assert boosted.tier_header == "strong; reason=once" and boosted.model == STRONG_MODEL
    assert after.tier_header == "base; reason=default" and after.model == first.model
    state = await st.state("op-1")
    assert state is not None and state.pending is None and state.escalation_count == 1
    assert [(e["event"], e["actor"]) for e in await st.audit()] == [("once", "cli")]
    # The operator's words travel with the ask to what it did.
    assert [e.get("note") for e in await st.audit()] == ["stuck"]
    assert evals(await st.trace(boosted))["A"]["note"] == "stuck"


@pytest.mark.parametrize("ask", ["escalate", "reset"])
async def test_an_operator_asks_reason_is_in_its_audit_event(launch: Launch, ask: str) -> None:
    st = await launch()
    conv = Conversation()
    ok(await st.chat(conv.trivial_edit(0), session="op-why"))
    if ask == "reset":
        ok(await st.chat(conv.trivial_edit(1), session="op-why", tier="strong"))
    asked = await st.admin("POST", f"sessions/coding/op-why/{ask}",
                           {"reason": "audit: stuck", "actor": "cli"})
    assert asked.status_code == 200, asked.text
    ok(await st.chat(conv.trivial_edit(2), session="op-why"))
    event = (await st.audit())[-1]
    assert (event["event"], event["actor"], event.get("note")) == (
        "escalated" if ask == "escalate" else "reset", "cli", "audit: stuck")


async def test_a_pending_once_survives_a_failed_request(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    ok(await st.chat(conv.trivial_edit(0), session="op-2"))
    asked = await st.admin("POST", "sessions/coding/op-2/escalate", {"once": True})
    assert asked.status_code == 200, asked.text
    st.set_faults("sim-strong", status=503, rate=1.0)
    body = conv.trivial_edit(1)
    failed = await st.chat(body, session="op-2")
    assert failed.status == 503
    state = await st.state("op-2")
    assert state is not None and state.pending is not None and state.pending.ask == "once"
    st.set_faults("sim-strong", status=0, rate=0.0)
    boosted = ok(await st.chat(body, session="op-2"))
    assert boosted.tier_header == "strong; reason=once"
    state = await st.state("op-2")
    assert state is not None and state.pending is None


async def test_an_operator_reset_takes_effect_on_the_next_request(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    first = ok(await st.chat(conv.trivial_edit(0), session="op-3"))
    assert ok(await st.chat(conv.trivial_edit(1), session="op-3", tier="strong")).tier == "strong"
    reset = await st.admin("POST", "sessions/coding/op-3/reset", {"actor": "cli"})
    assert reset.status_code == 200, reset.text
    back = ok(await st.chat(conv.trivial_edit(2), session="op-3"))
    assert back.tier_header == "base; reason=reset" and back.model == first.model
    assert [(e["event"], e["actor"]) for e in await st.audit()][-1] == ("reset", "cli")
