"""`resolve_tier`: the Frontier Escalation decision (SPEC §6). Pure; writes nothing.

A function of (tier state snapshot, turn signals, caps snapshot, config, clock reading) that
returns the tier this request is served from, the reason, every trigger's evaluation for the
trace, and the intents to apply at commit. The tier is resolved *before* any pin is read;
a trigger that completes on this request serves this request strong.

Triggers, ranked by trust (SPEC §6.2):
  A explicit  header `X-OrcaRouter-Tier` or a pending operator ask; fires at n = 1
  B difficulty  delta ≥ T2 on 2 consecutive *user* turns (tool continuations are neutral)
  C strikes   2 strikes inside the last `strike_window_turns` evaluated turns
B and C corroborate only within their own class. Every class obeys the caps (SPEC §6.4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orca_cli.config.schema import EscalationConfig
from orca_cli.routing.caps import CapsView, share_denied
from orca_cli.routing.intents import (
    ConsumePending,
    Deescalate,
    Escalate,
    Intent,
    OnceBoost,
    RecordTurn,
    Reset,
)
from orca_cli.routing.strikes import request_strike
from orca_cli.routing.tiers import Ask, Tier, TierState

__all__ = ["TurnSignals", "TierDecision", "resolve_tier", "fresh_or_expired"]


@dataclass(frozen=True, slots=True)
class TurnSignals:
    """What the request says about this turn (computed once per request)."""

    dedupe_key: str
    delta_score: float
    user_turn: bool  # the delta holds user-authored text
    signatures: tuple[str, ...] = ()  # normalised error signatures of the tool results
    ask: Ask | None = None  # X-OrcaRouter-Tier
    actor: str = "client"


@dataclass(frozen=True, slots=True)
class TierDecision:
    tier: Tier  # the tier this request is served from
    reason: str  # for `X-Orca-Session-Tier: <tier>; reason=<reason>`
    trigger: str = ""  # explicit | once | difficulty | strikes | "" (none)
    intents: tuple[Intent, ...] = ()
    denied: str = ""  # session_cap | share_cap | workspace_cap | no_candidate
    evaluations: dict[str, Any] = field(default_factory=dict)
    shadow: dict[str, Any] | None = None  # {would, trigger} in shadow mode
    t2: float = 0.0
    state_tier: Tier = "base"  # the session's tier state after this request, if committed
    evaluated: bool = True  # a turn that runs strike evaluation (tier state kept)

    @property
    def header(self) -> str:
        return f"{self.tier}; reason={self.reason}"


def fresh_or_expired(doc_state: TierState | None) -> TierState:
    return doc_state if doc_state is not None else TierState()


def _evaluate_b(st: TierState, sig: TurnSignals, esc: EscalationConfig, t2: float,
                dup: bool) -> dict[str, Any]:
    hard = sig.user_turn and sig.delta_score >= t2
    if dup or not sig.user_turn:
        streak = st.streak  # a retry adds nothing; tool continuations neither extend nor reset
    else:
        streak = st.streak + 1 if hard else 0
    return {"class": "B", "delta": round(sig.delta_score, 4), "t2": round(t2, 4),
            "user_turn": sig.user_turn, "hard": hard, "streak": streak, "needed": esc.streak,
            "fires": hard and streak >= esc.streak}


def _evaluate_c(st: TierState, sig: TurnSignals, esc: EscalationConfig,
                dup: bool) -> dict[str, Any]:
    upcoming = st.turn + (0 if dup else 1)
    strike_now = not dup and request_strike(sig.signatures, st.signatures)
    count = st.strikes_in_window(esc.strike_window_turns, upcoming) + (1 if strike_now else 0)
    return {"class": "C", "request_strike": strike_now, "strikes": count,
            "needed": esc.strikes, "window_turns": esc.strike_window_turns,
            "fires": count >= esc.strikes}


def _record(sig: TurnSignals, st: TierState, t2: float, scope: str = "main") -> RecordTurn:
    return RecordTurn(
        dedupe_key=sig.dedupe_key,
        user_turn=sig.user_turn,
        hard=sig.user_turn and sig.delta_score >= t2,
        signatures=sig.signatures,
        request_strike=request_strike(sig.signatures, st.signatures),
        scope=scope,  # type: ignore[arg-type]
    )


def resolve_tier(
    state: TierState | None,
    sig: TurnSignals,
    caps: CapsView,
    esc: EscalationConfig,
    *,
    now: float,
    t2: float,
    strong_window_s: float,
    strong_available: bool,
) -> TierDecision:
    """Decide this request's tier. `t2` is the effective delta gate (`caps.effective_t2`);
    `strong_window_s` the cache window of the strong tier's channel (recorded at escalation);
    `strong_available` whether the strong tier has a candidate speaking the inbound format."""
    st = state if state is not None else TierState(episode_started=now)
    dup = st.seen(sig.dedupe_key)
    pending = st.pending
    ask: Ask | None = sig.ask
    actor = sig.actor
    consume: tuple[Intent, ...] = ()
    if ask is None and pending is not None:
        ask, actor = pending.ask, pending.actor
        consume = (ConsumePending(pending.id),)
    evals: dict[str, Any] = {"A": {"class": "A", "ask": ask, "actor": actor if ask else None,
                                   "fires": ask is not None}}
    record = _record(sig, st, t2)
    shadow_info: dict[str, Any] | None = None
    shadow_intents: tuple[Intent, ...] = ()

    def decide(tier: Tier, reason: str, trigger: str = "", extra: tuple[Intent, ...] = (),
               denied: str = "", state_tier: Tier | None = None) -> TierDecision:
        intents = (record,) + shadow_intents + consume + extra
        return TierDecision(tier=tier, reason=reason, trigger=trigger, intents=intents,
                            denied=denied, evaluations=evals, shadow=shadow_info, t2=t2,
                            state_tier=state_tier or st.tier)

    # Class A: a reset works even inside the warm window and refunds nothing.
    if ask == "base":
        return decide("base", "reset", "reset", (Reset(actor),), state_tier="base")

    # B and C are evaluated on every evaluated turn (for the trace), in shadow on its own state.
    if esc.mode == "shadow":
        sh = st.shadow if st.shadow is not None else TierState(episode_started=now)
        b = _evaluate_b(sh, sig, esc, t2, dup)
        c = _evaluate_c(sh, sig, esc, dup)
        would = ""
        if sh.tier == "base" and sh.escalation_count < esc.max_per_session:
            would = "difficulty" if b["fires"] else "strikes" if c["fires"] else ""
        shadow_info = {"would": bool(would), "trigger": would or None,
                       "tier": "strong" if would else sh.tier}
        shadow_intents = (_record(sig, sh, t2, "shadow"),)
        if would:
            shadow_intents += (Escalate(would, strong_window_s, "shadow", "shadow"),)
    else:
        b = _evaluate_b(st, sig, esc, t2, dup)
        c = _evaluate_c(st, sig, esc, dup)
    evals["B"], evals["C"] = b, c

    transition: Intent | None = None
    if st.tier == "strong":
        cold = now - st.last_success > st.window_s
        evals["deescalation"] = {"cold": cold, "clean_turns": st.clean_turns,
                                 "needed": esc.clean_turns, "delta": round(sig.delta_score, 4),
                                 "t1": esc.t1}
        if (ask is None and cold and sig.delta_score < esc.t1
                and st.clean_turns >= esc.clean_turns):
            return decide("base", "deescalated", "", (Deescalate(),), state_tier="base")
        trigger, new = (st.trigger or "explicit"), False
    elif ask == "strong":
        trigger, new = "explicit", True
        transition = Escalate("explicit", strong_window_s, actor)
    elif ask == "once":
        trigger, new = "once", True
        transition = OnceBoost(actor)
    elif esc.mode == "auto" and (b["fires"] or c["fires"]):
        trigger = "difficulty" if b["fires"] else "strikes"
        new = True
        transition = Escalate(trigger, strong_window_s, "engine")
    else:
        return decide("base", "shadow" if esc.mode == "shadow" else "default")

    # Every class obeys the caps.
    denied = ""
    if new and st.escalation_count >= esc.max_per_session:
        denied = "session_cap"
    elif not strong_available:
        denied = "no_candidate"
    elif caps.enabled:
        after_loss = caps.state_lost_at is not None
        if share_denied(caps.share, caps.share_cap, caps.warmup_requests, after_loss=after_loss):
            denied = "share_cap"
        elif share_denied(caps.workspace_share, caps.workspace_cap, caps.warmup_requests,
                          after_loss=after_loss):
            denied = "workspace_cap"
    evals["caps"] = {"new_transition": new, "session_count": st.escalation_count,
                     "max_per_session": esc.max_per_session, "denied": denied or None}
    if denied:
        return decide("base", f"denied:{denied}", trigger, denied=denied)
    extra: tuple[Intent, ...] = (transition,) if transition is not None else ()
    state_tier: Tier = "base" if trigger == "once" else "strong"
    return decide("strong", trigger, trigger, extra, state_tier=state_tier)
