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

A strong session's sub-agents (`_sub_agent`): a conversation that opens under the session id
while the session is strong, with an easy ask (delta < t1 on its first request), is served
from the base tier, and so is every later request of it (remembered by the fingerprint of its
opening ask). The session stays strong for the conversation that earned it.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any

from orca_cli.config.schema import EscalationConfig
from orca_cli.immutable import immutable
from orca_cli.routing.caps import CapsView, share_denied
from orca_cli.routing.decimals import fixed_round
from orca_cli.routing.intents import (
    BaseConversation,
    ConsumePending,
    Deescalate,
    Escalate,
    Intent,
    OnceBoost,
    RecordTurn,
    Reset,
    Scope,
)
from orca_cli.routing.strikes import request_strike, signature_label
from orca_cli.routing.tiers import Ask, Tier, TierState

__all__ = ["TierDecision", "TurnSignals", "denial", "fresh_or_expired", "repeated_labels",
           "resolve_tier"]


@immutable
class TurnSignals:
    """What the request says about this turn (computed once per request)."""

    dedupe_key: str
    delta_score: float
    user_turn: bool  # the delta holds user-authored text
    signatures: tuple[str, ...] = ()  # normalised error signatures of the tool results
    # each signature's text, in step (`strikes.error_signatures`): only its
    # `strikes.signature_label` is ever shown
    signature_texts: tuple[str, ...] = ()
    ask: Ask | None = None  # X-OrcaRouter-Tier
    actor: str = "client"
    # The body holds no assistant message: a conversation's first request. On a session that
    # already has turns it is a side request under the same session id (an agent's title
    # request, a sub-agent's first ask) and is neutral for the difficulty streak.
    fresh: bool = False
    # The fingerprint of the conversation's opening ask (`wire.transcript.opening_fingerprint`),
    # read only while the session is strong; "" otherwise.
    conversation: str = ""


@immutable
class TierDecision:
    tier: Tier  # the tier this request is served from
    reason: str  # for `X-Orca-Session-Tier: <tier>; reason=<reason>`
    trigger: str = ""  # explicit | once | difficulty | strikes | "" (none)
    intents: tuple[Intent, ...] = ()
    denied: str = ""  # session_cap | share_cap | workspace_cap | no_candidate | budget
    evaluations: dict[str, Any] = field(default_factory=dict)
    shadow: dict[str, Any] | None = None  # {would, trigger} in shadow mode
    t2: float = 0.0
    state_tier: Tier = "base"  # the session's tier state after this request, if committed
    evaluated: bool = True  # a turn that runs strike evaluation (tier state kept)

    @property
    def header(self) -> str:
        return f"{self.tier}; reason={self.reason}"


# `round(x, 4)` of the evidence's figures, in float operations (`decimals`): a trace's every
# evaluation rounds two or three.
_round4 = fixed_round(4)


def fresh_or_expired(doc_state: TierState | None) -> TierState:
    return doc_state if doc_state is not None else TierState()


def _evaluate_b(st: TierState, sig: TurnSignals, esc: EscalationConfig, t2: float,
                dup: bool) -> dict[str, Any]:
    hard = sig.user_turn and sig.delta_score >= t2
    if dup or not sig.user_turn:
        streak = st.streak  # a retry adds nothing; tool continuations neither extend nor reset
    else:
        streak = st.streak + 1 if hard else 0
    ev = {"class": "B", "delta": _round4(sig.delta_score), "t2": _round4(t2),
          "user_turn": sig.user_turn, "hard": hard, "streak": streak, "needed": esc.streak,
          "fires": hard and streak >= esc.streak}
    if dup:
        ev["repeat"] = True  # the turn's dedupe key was seen: no step, say why
    return ev


def _evaluate_c(st: TierState, sig: TurnSignals, esc: EscalationConfig,
                dup: bool) -> dict[str, Any]:
    upcoming = st.turn + (0 if dup else 1)
    strike_now = not dup and request_strike(sig.signatures, st.signatures)
    count = st.strikes_in_window(esc.strike_window_turns, upcoming) + (1 if strike_now else 0)
    ev: dict[str, Any] = {"class": "C", "request_strike": strike_now, "strikes": count,
                          "needed": esc.strikes, "window_turns": esc.strike_window_turns,
                          "fires": count >= esc.strikes}
    if strike_now and sig.signature_texts:  # which failures came back (content-free kinds)
        ev["repeated"] = list(repeated_labels(sig, st))
    if dup:
        ev["repeat"] = True
    return ev


def repeated_labels(sig: TurnSignals, st: TierState) -> tuple[str, ...]:
    """What kinds of failure of this turn were seen before (`strikes.signature_label`), each
    once, in the turn's order."""
    seen = set(st.signatures)
    return tuple(dict.fromkeys(signature_label(text) for s, text
                               in zip(sig.signatures, sig.signature_texts) if s in seen))


def _record(sig: TurnSignals, st: TierState, t2: float, scope: Scope = "main") -> RecordTurn:
    strike = request_strike(sig.signatures, st.signatures)
    # By position, in field order: a class called with keywords builds a dict of them first
    # (about twice the construction), once or twice on every evaluated request.
    return RecordTurn(
        sig.dedupe_key,  # dedupe_key
        sig.user_turn,  # user_turn
        sig.user_turn and sig.delta_score >= t2,  # hard
        sig.signatures,  # signatures
        strike,  # request_strike
        (),  # response_strikes: filled in after the response
        scope,  # scope
        not sig.fresh,  # history
        repeated_labels(sig, st) if strike else (),  # repeated
    )


@immutable
class _Ask:
    """Class A: the header's ask, else a pending operator ask (consumed when acted on)."""

    ask: Ask | None
    actor: str
    consume: tuple[Intent, ...] = ()
    note: str = ""  # a pending ask's `--reason`, carried to its audit event


def _explicit_ask(st: TierState, sig: TurnSignals) -> _Ask:
    if sig.ask is None and st.pending is not None:
        p = st.pending
        return _Ask(p.ask, p.actor, (ConsumePending(p.id),), p.reason)
    return _Ask(sig.ask, sig.actor)


@immutable
class _Engine:
    """Classes B and C as evaluated on this turn, and what shadow mode records beside them."""

    b: dict[str, Any]
    c: dict[str, Any]
    shadow: dict[str, Any] | None = None
    shadow_intents: tuple[Intent, ...] = ()


def _engine_triggers(st: TierState, sig: TurnSignals, esc: EscalationConfig, *, t2: float,
                     dup: bool, now: float, strong_window_s: float) -> _Engine:
    """B and C run on every evaluated turn (for the trace); in shadow mode on their own state,
    recording what they would have done."""
    if esc.mode != "shadow":
        return _Engine(_evaluate_b(st, sig, esc, t2, dup), _evaluate_c(st, sig, esc, dup))
    sh = st.shadow if st.shadow is not None else TierState(episode_started=now)
    b = _evaluate_b(sh, sig, esc, t2, dup)
    c = _evaluate_c(sh, sig, esc, dup)
    would = ""
    if sh.tier == "base" and sh.escalation_count < esc.max_per_session:
        would = "difficulty" if b["fires"] else "strikes" if c["fires"] else ""
    info = {"would": bool(would), "trigger": would or None,
            "tier": "strong" if would else sh.tier}
    intents: tuple[Intent, ...] = (_record(sig, sh, t2, "shadow"),)
    if would:
        intents += (Escalate(would, strong_window_s, "shadow", "shadow"),)
    return _Engine(b, c, info, intents)


def _deescalation(st: TierState, sig: TurnSignals, esc: EscalationConfig, ask: Ask | None,
                  now: float) -> tuple[dict[str, Any], bool]:
    """A strong session goes back to base when cold, easy and clean, unless asked otherwise."""
    cold = now - st.last_success > st.window_s
    ev = {"cold": cold, "clean_turns": st.clean_turns, "needed": esc.clean_turns,
          "delta": _round4(sig.delta_score), "t1": esc.t1}
    fires = (ask is None and cold and sig.delta_score < esc.t1
             and st.clean_turns >= esc.clean_turns)
    return ev, fires


def _sub_agent(st: TierState, sig: TurnSignals, esc: EscalationConfig,
               ask: Ask | None) -> tuple[dict[str, Any], tuple[Intent, ...]] | None:
    """A request of a strong session served from the base tier because it belongs to another
    conversation under the session id that opened with an easy ask — an agent's sub-agent sent
    to search, list or summarise (Claude Code's Explore and Codex's sub-agents name the main
    model; one that names an alias of a sessionless router is a side request instead). Its
    first request (no assistant message yet) is cache-cold on every model, so starting it on
    base costs no cache; once its fingerprint is remembered, its continuations follow it to
    base, where its cache is. A conversation that
    opens with an ask at or above t1, a known conversation's request with an explicit ask, and
    the conversation that escalated keep the strong tier. Only on a session whose requests
    carry their history (`TierState.history`): a client that sends each turn alone (or
    continues by `previous_response_id`) has no other conversation to tell apart. (evaluation,
    intents) or None."""
    if ask is not None or not sig.conversation:
        return None
    ev: dict[str, Any] = {"conversation": sig.conversation, "known": False,
                          "delta": _round4(sig.delta_score), "t1": esc.t1}
    if sig.conversation in st.conversations:
        return {**ev, "known": True}, ()
    if st.history and sig.fresh and sig.delta_score < esc.t1:
        return ev, (BaseConversation(sig.conversation),)
    return None


def _escalation(a: _Ask, eng: _Engine, esc: EscalationConfig,
                strong_window_s: float) -> tuple[str, Intent] | None:
    """The base session's transition to strong this turn, if any: (trigger, intent)."""
    if a.ask == "strong":
        return "explicit", Escalate("explicit", strong_window_s, a.actor, note=a.note)
    if a.ask == "once":
        return "once", OnceBoost(a.actor, a.note)
    if esc.mode == "auto" and (eng.b["fires"] or eng.c["fires"]):
        trigger = "difficulty" if eng.b["fires"] else "strikes"
        return trigger, Escalate(trigger, strong_window_s, "engine")
    return None


def denial(st: TierState, caps: CapsView, esc: EscalationConfig, *, new: bool,
           escalate: bool) -> str:
    """Every class obeys the caps (SPEC §6.4): the reason a strong tier is refused, or "".
    The session cap counts this sidecar's transitions of the session still in flight."""
    if new and caps.in_flight.session_count(st.escalation_count,
                                            escalate=escalate) >= esc.max_per_session:
        return "session_cap"
    if not caps.strong_available:
        return "no_candidate"
    if caps.budget_denied:
        return "budget"
    if caps.enabled:
        after_loss = caps.state_lost_at is not None
        if share_denied(caps.share, caps.share_cap, caps.warmup_requests, after_loss=after_loss):
            return "share_cap"
        if share_denied(caps.workspace_share, caps.workspace_cap, caps.warmup_requests,
                        after_loss=after_loss):
            return "workspace_cap"
    return ""


def resolve_tier(state: TierState | None, sig: TurnSignals, caps: CapsView,
                 esc: EscalationConfig, *, now: float, t2: float,
                 strong_window_s: float) -> TierDecision:
    """Decide this request's tier. `t2` is the effective delta gate (`caps.effective_t2`);
    `strong_window_s` the cache window of the strong tier's channel (recorded at escalation);
    `caps.strong_available` whether the strong tier has a candidate for the request.

    A repeated turn (its dedupe key already in the ring) adds no evidence to B or C, but its
    class A ask is acted on like any other: dedupe guards strikes and streaks, not asks."""
    st = state if state is not None else TierState(episode_started=now)
    if sig.fresh and sig.user_turn and st.turn > 0:
        sig = replace(sig, user_turn=False)  # a side request neither extends nor resets B
    a = _explicit_ask(st, sig)
    evals: dict[str, Any] = {"A": {"class": "A", "ask": a.ask,
                                   "actor": a.actor if a.ask else None,
                                   "fires": a.ask is not None}}
    if a.note:
        evals["A"]["note"] = a.note
    record = _record(sig, st, t2)

    def decide(tier: Tier, reason: str, trigger: str = "", extra: tuple[Intent, ...] = (),
               denied: str = "", state_tier: Tier | None = None,
               eng: _Engine | None = None) -> TierDecision:
        shadow_intents = eng.shadow_intents if eng is not None else ()
        intents = (record, *shadow_intents, *a.consume, *extra)
        # By position, in field order (`_record`): tier, reason, trigger, intents, denied,
        # evaluations, shadow, t2, state_tier.
        return TierDecision(tier, reason, trigger, intents, denied, evals,
                            eng.shadow if eng is not None else None, t2,
                            state_tier or st.tier)

    if a.ask == "base":  # a reset works even inside the warm window and refunds nothing
        return decide("base", "reset", "reset", (Reset(a.actor, a.note),),
                      state_tier="base")

    eng = _engine_triggers(st, sig, esc, t2=t2, dup=st.seen(sig.dedupe_key), now=now,
                           strong_window_s=strong_window_s)
    evals["B"], evals["C"] = eng.b, eng.c
    extra: tuple[Intent, ...] = ()
    if st.tier == "strong":
        evals["deescalation"], cold_and_clean = _deescalation(st, sig, esc, a.ask, now)
        if cold_and_clean:
            return decide("base", "deescalated", "", (Deescalate(),), state_tier="base",
                          eng=eng)
        side = _sub_agent(st, sig, esc, a.ask)
        if side is not None:
            evals["sub_agent"] = side[0]
            return decide("base", "sub_agent", "", side[1], eng=eng)
        trigger, new = (st.trigger or "explicit"), False
    elif (st.once_open and not sig.user_turn and not sig.fresh and a.ask in (None, "once")
          and not st.seen(sig.dedupe_key)):
        # A tool continuation of the user turn a `once` served strong: the same turn, served
        # strong again without a new transition (no count, no audit); the caps still bind.
        # A re-sent request is no continuation (a `once` on it counts again, SPEC §19), nor
        # is another conversation's opening request (a sub-agent's).
        evals["once_turn"] = True
        trigger, new = "once", False
    else:
        up = _escalation(a, eng, esc, strong_window_s)
        if up is None:
            return decide("base", "shadow" if esc.mode == "shadow" else "default", eng=eng)
        (trigger, transition), new = up, True
        extra = (transition,)

    denied = denial(st, caps, esc, new=new, escalate=trigger != "once")
    evals["caps"] = {"new_transition": new, "session_count": st.escalation_count,
                     "max_per_session": esc.max_per_session, "denied": denied or None}
    if caps.in_flight.transitions or caps.in_flight.count_floor > st.escalation_count:
        evals["caps"]["in_flight"] = caps.in_flight.transitions
        evals["caps"]["committed_count"] = caps.in_flight.count_floor
    if denied:
        return decide("base", f"denied:{denied}", trigger, denied=denied, eng=eng)
    return decide("strong", trigger, trigger, extra,
                  state_tier="base" if trigger == "once" else "strong", eng=eng)
