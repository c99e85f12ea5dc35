"""`apply_intents`: the one semantics of a commit, for both store backends (SPEC §6, §9).

Pure: (fresh tier document, intents, now, config) -> new tier document. The memory backend
calls it with no `await` around it; the Redis backend calls it on the document its Lua script
compared versions on, re-applying onto the fresh document after a conflict. Because every
intent states a goal rather than a delta taken from stale state, re-applying is safe:

* two racing identical escalations merge (the second finds the session strong: no-op);
* a stale writer cannot clobber a committed escalation (its intents land on the fresh doc);
* the per-session cap holds under races (an escalation finding the cap used is skipped);
* a repeated turn (dedupe key already in the ring) records no new evidence (turn counter,
  streak, strikes, clean turns, ring) but applies its transitions: asks are never swallowed.

Order: the turn record first (so the escalating turn's evidence is counted, then consumed),
then transitions, then the pending-ask bookkeeping.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orca_cli.config.schema import EscalationConfig
from orca_cli.routing.intents import (
    BaseConversation,
    ConsumePending,
    Deescalate,
    Escalate,
    Intent,
    OnceBoost,
    RecordTurn,
    Reset,
    SetPending,
)
from orca_cli.routing.tiers import (
    DEDUPE_RING,
    MAX_CONVERSATIONS,
    MAX_SIGNATURES,
    MAX_STRIKES_KEPT,
    Pending,
    Strike,
    TierState,
)

__all__ = ["apply_intents", "apply_to_state", "stored_form"]


_DECODE: Any = object()


def apply_intents(doc: dict[str, Any] | None, intents: Sequence[Intent], now: float,
                  esc: EscalationConfig, *, state: Any = _DECODE) -> dict[str, Any] | None:
    """The `mutate` a commit hands the store. Returns the new document. `state`: `doc`
    already decoded (`TierState.from_doc(doc)`), when the caller has it."""
    if state is _DECODE:
        state = TierState.from_doc(doc)
    return stored_form(apply_to_state(state, intents, now, esc))


def stored_form(state: TierState) -> dict[str, Any]:
    """The document a commit hands the store for `state`: its `to_doc` without `v`."""
    out = state.to_doc()
    out.pop("v", None)  # the store owns the version
    return out


def apply_to_state(state: TierState | None, intents: Sequence[Intent], now: float,
                   esc: EscalationConfig) -> TierState:
    st = state if state is not None else TierState(episode_started=now)
    main: list[Intent] = []
    shadow: list[Intent] = []
    for i in intents:
        scope = getattr(i, "scope", "main")
        if scope == "main":
            main.append(i)
        elif scope == "shadow":
            shadow.append(i)
    record = None
    transitions = False
    for i in main:
        if not isinstance(i, RecordTurn):
            transitions = True
        elif record is None:
            record = i
    # A repeated turn (its dedupe key already in the ring): its first attempt already counted
    # its evidence, so the turn records are skipped (streaks and strikes cannot be farmed by
    # re-sending a body) while its transitions still apply: an explicit ask is never
    # swallowed, and a `once` re-sent counts against `max_per_session` again.
    repeated = record is not None and st.seen(record.dedupe_key)
    if repeated:
        st = st.with_(last_success=max(st.last_success, now))
    elif record is not None:
        st = _record_turn(st, record, now, esc)
    if transitions:  # most turns are a record alone
        for intent in main:
            if not isinstance(intent, RecordTurn):  # recorded above
                st = _transition(st, intent, now, esc)
    if shadow:
        sh = st.shadow if st.shadow is not None else TierState(episode_started=now)
        srec = next((i for i in shadow if isinstance(i, RecordTurn)), None)
        if srec is not None and not repeated:
            sh = _record_turn(sh, srec, now, esc)
        for intent in shadow:
            if not isinstance(intent, RecordTurn):
                sh = _transition(sh, intent, now, esc)
        st = st.with_(shadow=sh)
    return st


def _record_turn(st: TierState, rec: RecordTurn, now: float, esc: EscalationConfig) -> TierState:
    turn = st.turn + 1
    streak = st.streak
    if rec.user_turn:
        streak = streak + 1 if rec.hard else 0
    kind = ("repeated_error" if rec.request_strike
            else rec.response_strikes[0] if rec.response_strikes else "")
    strikes = st.strikes
    if kind:  # at most one strike per turn: corroboration needs two turns
        strikes = strikes + (Strike(turn, now, kind, ", ".join(rec.repeated)
                                    if rec.request_strike else ""),)
    if strikes:
        oldest = turn - esc.strike_window_turns + 1
        strikes = tuple(s for s in strikes if s.turn >= oldest)[-MAX_STRIKES_KEPT:]
    else:
        strikes = ()  # what filtering none gives, without the generator
    sigs = st.signatures
    for s in rec.signatures:
        if s not in sigs:
            sigs = sigs + (s,)
    ring = (st.dedupe + (rec.dedupe_key,))[-DEDUPE_RING:]
    clean = st.clean_turns
    if st.tier == "strong":
        clean = 0 if kind else clean + 1
    # By position, in field order: every evaluated turn copies the state here, and `with_`
    # matching nine names costs about twice the construction (a test holds it to `with_`).
    return TierState(
        st.tier,  # tier
        st.escalation_count,  # escalation_count
        st.trigger,  # trigger
        st.reason,  # reason
        st.escalated_at,  # escalated_at
        st.window_s,  # window_s
        max(st.last_success, now),  # last_success
        clean,  # clean_turns
        streak,  # streak
        turn,  # turn
        strikes,  # strikes
        sigs[-MAX_SIGNATURES:],  # signatures
        ring,  # dedupe
        st.pending,  # pending
        st.conversations,  # conversations
        st.history or rec.history,  # history
        st.episode_started,  # episode_started
        st.shadow,  # shadow
        st.version,  # version
        # a new user turn closes a `once` turn (its boost, if any, reopens it)
        st.once_open and not rec.user_turn,  # once_open
    )


def _transition(st: TierState, intent: Intent, now: float, esc: EscalationConfig) -> TierState:
    if isinstance(intent, Escalate):
        if st.tier == "strong":
            return st  # racing identical escalations merge
        if st.escalation_count >= esc.max_per_session:
            return st  # the cap was used meanwhile: never exceeded
        return st.with_(tier="strong", escalation_count=st.escalation_count + 1,
                        trigger=intent.trigger, reason=intent.trigger, escalated_at=now,
                        window_s=intent.window_s, clean_turns=0, streak=0, strikes=(),
                        once_open=False)
    if isinstance(intent, OnceBoost):
        if st.escalation_count >= esc.max_per_session:
            return st
        return st.with_(escalation_count=st.escalation_count + 1, reason="once",
                        once_open=True)
    if isinstance(intent, Deescalate):
        if st.tier != "strong":
            return st
        return st.with_(tier="base", trigger="", reason="deescalated", clean_turns=0,
                        streak=0, strikes=())
    if isinstance(intent, Reset):
        return st.with_(tier="base", trigger="", reason="reset", streak=0, strikes=(),
                        signatures=(), clean_turns=0, pending=None, once_open=False)
    if isinstance(intent, SetPending):
        return st.with_(pending=Pending(intent.ask, intent.actor, intent.reason, now,
                                        intent.id))
    if isinstance(intent, ConsumePending):
        if st.pending is not None and st.pending.id == intent.id:
            return st.with_(pending=None)
        return st
    if isinstance(intent, BaseConversation):
        if intent.fingerprint in st.conversations:
            return st
        return st.with_(conversations=(*st.conversations,
                                       intent.fingerprint)[-MAX_CONVERSATIONS:])
    return st  # RecordTurn is handled before transitions
