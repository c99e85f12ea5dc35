"""Pure resolve -> apply stories (SPEC §6). The HTTP-level stories live in tests/proxy."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from orca_cli.config.schema import EscalationConfig
from orca_cli.routing.caps import CapsView, ShareView, effective_t2, in_canary, share_denied
from orca_cli.routing.escalation import TierDecision, TurnSignals, resolve_tier
from orca_cli.routing.intents import RecordTurn, SetPending
from orca_cli.routing.strikes import error_signatures
from orca_cli.routing.tiers import TierState
from orca_cli.state.apply import apply_intents, apply_to_state

ESC = EscalationConfig()
NO_CAPS = CapsView(enabled=False)


@dataclass
class Session:
    esc: EscalationConfig = ESC
    state: TierState | None = None
    now: float = 1_000_000.0
    n: int = 0

    def turn(self, delta: float, *, user: bool = True, sigs: tuple[str, ...] = (),
             ask: str | None = None, caps: CapsView = NO_CAPS, key: str | None = None,
             commit: bool = True, response_strikes: tuple[str, ...] = (),
             gap_s: float = 30.0, strong_available: bool = True,
             fresh: bool = False, conv: str = "main") -> TierDecision:
        self.n += 1
        self.now += gap_s
        strong = self.state is not None and self.state.tier == "strong"
        sig = TurnSignals(dedupe_key=key or f"k{self.n}", delta_score=delta, user_turn=user,
                          signatures=sigs, ask=ask, fresh=fresh,  # type: ignore[arg-type]
                          conversation=conv if strong else "")
        if not strong_available:
            caps = replace(caps, strong_available=False)
        d = resolve_tier(self.state, sig, caps, self.esc, now=self.now, t2=self.esc.t2,
                         strong_window_s=300)
        if commit:
            intents = tuple(replace(i, response_strikes=response_strikes)
                            if isinstance(i, RecordTurn) else i for i in d.intents)
            doc = apply_intents(self.state.to_doc() if self.state else None, intents, self.now,
                                self.esc)
            self.state = TierState.from_doc(doc)
        return d


def compile_error(line: int, col: int) -> str:
    return (f"# build\n./internal/store/cache.go:{line}:{col}: undefined: lookupEntry\n"
            f"goroutine {line * 7} [running]:\nmain.main() 0x{line * 4099:x}\nexit status 2\n")


def test_failure_loop_escalates_by_strikes_on_turn_4_never_by_difficulty() -> None:
    s = Session()
    assert s.turn(0.21).tier == "base"
    tiers = []
    for t in range(2, 7):
        d = s.turn(0.26, sigs=error_signatures([compile_error(40 + t, t)]))
        tiers.append((t, d.tier, d.reason))
    assert tiers[0][1:] == ("base", "default")  # turn 2: first sighting, no strike
    assert tiers[1][1:] == ("base", "default")  # turn 3: one strike
    assert tiers[2][1:] == ("strong", "strikes")  # turn 4: two strikes -> served strong now
    assert all(t[1:] == ("strong", "strikes") for t in tiers[3:])  # continuing repeats trigger
    assert s.state is not None and s.state.escalation_count == 1


def test_changing_line_numbers_and_addresses_give_one_signature() -> None:
    assert error_signatures([compile_error(10, 2)]) == error_signatures([compile_error(99, 31)])
    assert error_signatures(["all tests passed"]) == ()


def test_difficulty_needs_two_consecutive_user_turns_and_tool_turns_are_neutral() -> None:
    s = Session()
    assert s.turn(0.21).tier == "base"
    assert s.turn(0.72).tier == "base"  # first hard user turn
    assert s.turn(0.10, user=False).tier == "base"  # tool continuation: neither extends nor resets
    d = s.turn(0.72)
    assert (d.tier, d.reason) == ("strong", "difficulty")


def test_easy_hard_easy_hard_never_escalates() -> None:
    s = Session()
    for delta in (0.72, 0.2, 0.72, 0.2, 0.72):
        assert s.turn(delta).tier == "base"


def test_one_strike_plus_one_hard_turn_is_not_corroboration() -> None:
    s = Session()
    s.turn(0.2, sigs=error_signatures([compile_error(1, 1)]))
    s.turn(0.2, sigs=error_signatures([compile_error(2, 2)]))  # strike 1
    assert s.turn(0.72).tier == "base"  # hard turn 1: B streak 1, C still 1 strike


def test_explicit_strong_at_once_but_not_past_the_session_cap() -> None:
    s = Session()
    d = s.turn(0.2, ask="strong")
    assert (d.tier, d.reason) == ("strong", "explicit")
    s.turn(0.2, ask="base")
    d = s.turn(0.2, ask="strong")
    assert (d.tier, d.reason, d.denied) == ("base", "denied:session_cap", "session_cap")
    assert s.state is not None and s.state.escalation_count == 1


def test_once_serves_one_turn_strong_and_counts_against_the_cap() -> None:
    s = Session()
    d = s.turn(0.2, ask="once")
    assert (d.tier, d.reason, d.state_tier) == ("strong", "once", "base")
    assert s.state is not None and s.state.tier == "base" and s.state.escalation_count == 1
    assert s.turn(0.2).tier == "base"
    assert s.turn(0.2, ask="once").reason == "denied:session_cap"


def test_once_covers_the_tool_continuations_of_its_turn_and_no_further() -> None:
    """SPEC §6.2 "this turn only": an agent's turn is its user turn and the tool
    continuations after it. They are served strong uncounted (no transition, so no audit and
    no cap), with or without the ask again; the next user turn closes the once turn."""
    s = Session()
    assert s.turn(0.2, ask="once").reason == "once"
    for ask in ("once", None):
        d = s.turn(0.2, user=False, ask=ask)
        assert (d.tier, d.reason, d.state_tier) == ("strong", "once", "base")
        assert not any(type(i).__name__ in ("OnceBoost", "Escalate") for i in d.intents)
        assert d.evaluations["once_turn"] is True
    assert s.state is not None and s.state.escalation_count == 1 and s.state.once_open
    assert s.turn(0.2).tier == "base"  # a new user turn: the once turn is over
    assert s.state is not None and not s.state.once_open
    assert s.turn(0.2, user=False).tier == "base"


def test_a_resent_request_or_another_conversation_is_no_continuation_of_a_once_turn() -> None:
    s = Session()
    s.turn(0.2, ask="once", key="ask-1")
    # the same request again (its dedupe key seen): a `once` on it is a new, counted ask
    assert s.turn(0.2, user=False, ask="once", key="ask-1").reason == "denied:session_cap"
    # a sub-agent's opening request under the session: not the once turn's work
    assert s.turn(0.2, user=False, fresh=True).tier == "base"


def test_the_once_turns_continuations_still_obey_the_share_caps() -> None:
    s = Session()
    assert s.turn(0.2, ask="once").reason == "once"
    d = s.turn(0.2, user=False, caps=CapsView(share=ShareView(10, 20)))
    assert (d.tier, d.reason) == ("base", "denied:share_cap")


def test_a_reset_closes_a_once_turn() -> None:
    s = Session()
    s.turn(0.2, ask="once")
    assert s.turn(0.2, user=False, ask="base").reason == "reset"
    assert s.turn(0.2, user=False).tier == "base"


def test_pending_once_is_used_up_by_the_next_billed_success_only() -> None:
    s = Session()
    s.turn(0.2)
    doc = apply_intents(s.state.to_doc() if s.state else None,
                        [SetPending("once", "cli", "stuck", "p1")], s.now, ESC)
    s.state = TierState.from_doc(doc)
    failed = s.turn(0.2, commit=False)  # a failed request leaves the ask pending
    assert failed.tier == "strong" and s.state is not None and s.state.pending is not None
    ok = s.turn(0.2)
    assert ok.reason == "once" and s.state.pending is None
    assert s.turn(0.2).tier == "base"


def test_reset_inside_the_warm_window_refunds_nothing() -> None:
    s = Session()
    s.turn(0.2, ask="strong")
    d = s.turn(0.2, ask="base", gap_s=1)
    assert (d.tier, d.reason) == ("base", "reset")
    assert s.state is not None and s.state.tier == "base" and s.state.escalation_count == 1


def test_deescalation_only_when_cold_clean_and_easy() -> None:
    s = Session()
    s.turn(0.2, ask="strong")
    for _ in range(3):
        assert s.turn(0.2, gap_s=10).tier == "strong"  # warm: never automatically
    assert s.turn(0.5, gap_s=400).tier == "strong"  # cold but delta >= t1
    d = s.turn(0.2, gap_s=400)
    assert (d.tier, d.reason) == ("base", "deescalated")


def test_deescalation_needs_clean_turns_since_escalation() -> None:
    s = Session()
    s.turn(0.2, ask="strong")
    s.turn(0.2, gap_s=10, response_strikes=("empty_answer",))
    assert s.turn(0.2, gap_s=400).tier == "strong"  # only 1 clean turn


def test_retried_turn_never_double_counts() -> None:
    s = Session()
    sigs = error_signatures([compile_error(1, 1)])
    s.turn(0.2, sigs=sigs)
    s.turn(0.2, sigs=sigs, key="retry")
    s.turn(0.2, sigs=sigs, key="retry")  # the same client request id again
    assert s.state is not None and len(s.state.strikes) == 1 and s.state.turn == 2


# --- a repeated body never swallows an explicit ask (SPEC §19) ------------------------------

def test_a_repeated_once_counts_against_the_cap_and_is_then_denied() -> None:
    s = Session()
    s.turn(0.2, key="same")
    first = s.turn(0.2, ask="once", key="same")
    again = s.turn(0.2, ask="once", key="same")
    third = s.turn(0.2, ask="once", key="same")
    assert (first.tier, first.reason) == ("strong", "once")
    assert (again.tier, again.reason) == ("base", "denied:session_cap")
    assert (third.tier, third.reason) == ("base", "denied:session_cap")
    assert s.state is not None and s.state.escalation_count == 1 and s.state.turn == 1


def test_a_repeated_once_counts_each_time_it_is_served_strong() -> None:
    s = Session(esc=replace(ESC, max_per_session=3))
    served = [s.turn(0.2, ask="once", key="same") for _ in range(5)]
    assert [d.tier for d in served] == ["strong"] * 3 + ["base"] * 2
    assert s.state is not None and s.state.escalation_count == 3 and s.state.turn == 1


def test_a_repeated_base_reset_takes_effect() -> None:
    s = Session()
    s.turn(0.2, key="t1")
    s.turn(0.2, ask="strong", key="t2")
    assert s.state is not None and s.state.tier == "strong"
    d = s.turn(0.2, ask="base", key="t2")  # the same body, now with a reset
    assert (d.tier, d.reason, d.state_tier) == ("base", "reset", "base")
    assert s.state is not None and s.state.tier == "base" and s.state.reason == "reset"
    assert s.state.turn == 2  # the repeated turn records no new evidence


def test_a_repeated_strong_ask_escalates() -> None:
    s = Session()
    s.turn(0.2, key="t1")
    d = s.turn(0.2, ask="strong", key="t1")
    assert (d.tier, d.reason) == ("strong", "explicit")
    assert s.state is not None and s.state.tier == "strong" and s.state.escalation_count == 1
    assert s.state.turn == 1


def test_a_pending_ask_is_consumed_by_a_repeated_turn() -> None:
    s = Session()
    s.turn(0.2, key="t1")
    doc = apply_intents(s.state.to_doc() if s.state else None,
                        [SetPending("strong", "cli", "stuck", "p1")], s.now, ESC)
    s.state = TierState.from_doc(doc)
    d = s.turn(0.2, key="t1")
    assert (d.tier, d.reason) == ("strong", "explicit")
    assert s.state is not None and s.state.tier == "strong" and s.state.pending is None


def test_a_repeated_turn_still_adds_no_strike_or_streak() -> None:
    s = Session()
    sigs = error_signatures([compile_error(1, 1)])
    s.turn(0.2, sigs=sigs, key="a")
    s.turn(0.9, sigs=sigs, key="b")
    for _ in range(4):
        s.turn(0.9, sigs=sigs, key="b")
    assert s.state is not None
    assert (s.state.turn, len(s.state.strikes), s.state.streak) == (2, 1, 1)


def test_a_side_request_under_the_session_id_neither_extends_nor_resets_the_streak() -> None:
    s = Session()
    s.turn(0.72, fresh=True)  # the session's first request: an ordinary user turn
    s.turn(0.1, fresh=True)  # a title request or a sub-agent's first ask
    assert s.state is not None and s.state.streak == 1
    d = s.turn(0.72)
    assert (d.tier, d.reason) == ("strong", "difficulty")
    t = Session()
    t.turn(0.72)
    t.turn(0.1)  # the same easy turn inside the main conversation resets it
    assert t.state is not None and t.state.streak == 0


def test_a_sub_agent_opening_easy_under_a_strong_session_is_served_from_base() -> None:
    """Its first request (no assistant message yet) is cold on every model; its fingerprint is
    remembered, so its continuations follow it to base; the session stays strong."""
    s = Session()
    s.turn(0.2)
    s.turn(0.72)
    assert s.turn(0.72).tier == "strong"
    d = s.turn(0.22, fresh=True, conv="sub-1")  # "find every caller of load_config"
    assert (d.tier, d.reason, d.state_tier) == ("base", "sub_agent", "strong")
    assert d.evaluations["sub_agent"]["known"] is False
    assert s.state is not None and s.state.conversations == ("sub-1",)
    d = s.turn(0.37, user=False, conv="sub-1")  # its file read, above t1: still its own
    assert (d.tier, d.reason) == ("base", "sub_agent")
    assert d.evaluations["sub_agent"]["known"] is True
    assert s.turn(0.2, conv="main").tier == "strong"  # the conversation that escalated
    assert s.state.tier == "strong" and s.state.escalation_count == 1


def test_a_new_conversation_with_a_hard_opening_or_an_ask_keeps_the_strong_tier() -> None:
    s = Session()
    s.turn(0.2, ask="strong")
    d = s.turn(0.6, fresh=True, conv="worker")  # a sub-agent handed the hard part
    assert (d.tier, d.reason) == ("strong", "explicit")
    assert s.turn(0.2, user=False, conv="worker").tier == "strong"
    s.turn(0.2, fresh=True, conv="explorer")
    assert s.turn(0.2, conv="explorer").reason == "sub_agent"
    d = s.turn(0.2, conv="explorer", ask="strong")  # asked for: a class A ask is obeyed
    assert (d.tier, d.reason) == ("strong", "explicit")
    assert s.turn(0.2, fresh=True, conv="").tier == "strong"  # no opening ask to name it


def test_a_client_that_sends_each_turn_alone_has_no_sub_agents() -> None:
    """Every request without history (an SDK sending only the new message): no conversation
    to tell apart, so an easy turn of its strong session stays strong."""
    s = Session()
    s.turn(0.2, ask="strong", fresh=True)
    d = s.turn(0.2, fresh=True, conv="turn-2")
    assert (d.tier, d.reason) == ("strong", "explicit")
    assert s.state is not None and not s.state.history and s.state.conversations == ()


def test_a_cold_clean_session_deescalates_rather_than_serving_one_sub_agent_base() -> None:
    s = Session()
    s.turn(0.2, ask="strong")
    for _ in range(3):
        s.turn(0.2)
    d = s.turn(0.2, fresh=True, conv="sub", gap_s=400)
    assert (d.tier, d.reason) == ("base", "deescalated")
    assert s.state is not None and s.state.tier == "base" and s.state.conversations == ()


def test_remembered_sub_agents_survive_the_document_and_are_bounded() -> None:
    s = Session()
    s.turn(0.2, ask="strong")
    for i in range(20):
        s.turn(0.1, fresh=True, conv=f"c{i}")
        s.turn(0.1, fresh=True, conv=f"c{i}", key=f"again{i}")  # the same opening: no copy
    assert s.state is not None
    assert s.state.conversations == tuple(f"c{i}" for i in range(4, 20))
    assert TierState.from_doc(s.state.to_doc()) == s.state
    assert "convs" not in TierState().to_doc()


def test_racing_identical_escalations_merge_and_a_stale_writer_cannot_clobber() -> None:
    base = TierState(turn=3, streak=1)
    sig = TurnSignals("a", 0.72, True)
    d1 = resolve_tier(base, sig, NO_CAPS, ESC, now=10, t2=0.55, strong_window_s=300)
    d2 = resolve_tier(base, replace(sig, dedupe_key="b"), NO_CAPS, ESC, now=10, t2=0.55,
                      strong_window_s=300)
    st = apply_to_state(base, d1.intents, 10, ESC)
    st = apply_to_state(st, d2.intents, 11, ESC)  # resolved on the stale snapshot
    assert st.tier == "strong" and st.escalation_count == 1
    stale = resolve_tier(base, TurnSignals("c", 0.1, True), NO_CAPS, ESC, now=10, t2=0.55,
                         strong_window_s=300)
    st = apply_to_state(st, stale.intents, 12, ESC)
    assert st.tier == "strong"


def test_share_cap_denies_after_warmup_with_strictly_greater() -> None:
    assert not share_denied(ShareView(10, 19), 0.2, 20, after_loss=False)  # warm-up
    assert not share_denied(ShareView(4, 20), 0.2, 20, after_loss=False)  # 0.2 is not > 0.2
    assert share_denied(ShareView(5, 20), 0.2, 20, after_loss=False)
    assert share_denied(ShareView(0, 19), 0.2, 20, after_loss=True)  # inverted warm-up
    s = Session()
    caps = CapsView(share=ShareView(5, 20))
    d = s.turn(0.2, ask="strong", caps=caps)
    assert (d.tier, d.reason) == ("base", "denied:share_cap")
    assert s.state is not None and s.state.tier == "base" and s.state.escalation_count == 0


def test_continuing_strong_session_over_the_cap_is_served_base_state_unchanged() -> None:
    s = Session()
    s.turn(0.2, ask="strong")
    d = s.turn(0.2, caps=CapsView(workspace_share=ShareView(50, 100)))
    assert (d.tier, d.reason) == ("base", "denied:workspace_cap")
    assert s.state is not None and s.state.tier == "strong"


def test_no_strong_candidate_for_the_format_is_denied() -> None:
    d = Session().turn(0.2, ask="strong", strong_available=False)
    assert (d.tier, d.reason) == ("base", "denied:no_candidate")


def test_shadow_mode_routes_nothing_strong_for_b_and_c_but_records_would() -> None:
    s = Session(esc=replace(ESC, mode="shadow"))
    s.turn(0.72)
    d = s.turn(0.72)
    assert (d.tier, d.reason) == ("base", "shadow")
    assert d.shadow == {"would": True, "trigger": "difficulty", "tier": "strong"}
    assert s.state is not None and s.state.shadow is not None and s.state.shadow.tier == "strong"
    assert s.state.tier == "base"
    assert s.turn(0.2, ask="strong").tier == "strong"  # Class A stays live


def test_percentile_threshold_and_canary() -> None:
    samples = [i / 1000 for i in range(1000)]
    assert effective_t2(threshold="percentile", t2=0.55, t1=0.35, percentile=0.9,
                        samples=samples[:199]) == 0.55
    assert abs(effective_t2(threshold="percentile", t2=0.55, t1=0.35, percentile=0.9,
                            samples=samples) - 0.899) < 0.002
    assert effective_t2(threshold="percentile", t2=0.55, t1=0.35, percentile=0.9,
                        samples=[0.1] * 300) == pytest.approx(0.4)
    ids = [f"s{i}" for i in range(2000)]
    in_10 = {i for i in ids if in_canary("r", i, 0.1)}
    in_50 = {i for i in ids if in_canary("r", i, 0.5)}
    assert in_10 <= in_50 and 100 < len(in_10) < 300 and 850 < len(in_50) < 1150


@pytest.mark.parametrize("strong,total", [(0.0, 0.0), (0.0, 40.0), (-0.0, 40.0), (0.0, -3.0),
                                          (1.0, 3.0), (7.0, 9.0), (2.0, 2.0), (1e-9, 1.0)])
def test_caps_trace_ratio_is_its_rounding_whether_zero_or_not(strong: float,
                                                               total: float) -> None:
    """The trace's ratios skip `round` for a zero; they equal `round(ratio, 6)`, sign included."""
    share = ShareView(strong, total)
    trace = CapsView(share=share, workspace_share=share).to_trace()
    want = round(share.ratio, 6)
    for part in ("share", "workspace_share"):
        got = trace[part]["ratio"]  # type: ignore[index]
        assert (got, repr(got)) == (want, repr(want))
