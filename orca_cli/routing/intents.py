"""Intents: what a resolution wants written, applied only at commit (SPEC §3 step 9, §6).

`resolve_tier` returns intents and writes nothing. After a billed success, `state/apply.py`
applies them onto the *fresh* tier document (never onto the snapshot the resolution saw), so a
stale writer cannot clobber a committed escalation and two racing identical escalations merge.
Each intent is therefore written to be re-applicable: it states a goal ("be strong, counted
once"), not a delta computed from stale state.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from orca_cli.immutable import immutable

__all__ = [
    "BaseConversation",
    "ConsumePending",
    "Deescalate",
    "Escalate",
    "Intent",
    "OnceBoost",
    "RecordTurn",
    "Reset",
    "Scope",
    "SetPending",
]

Scope = Literal["main", "shadow"]


@immutable
class Escalate:
    """base -> strong. A no-op on a state already strong (merge); skipped when the fresh
    state has already used `max_per_session` (the per-session cap holds under races)."""

    trigger: str  # explicit | difficulty | strikes
    window_s: float  # the provider cache window of the strong tier, recorded for de-escalation
    actor: str = "client"
    scope: Scope = "main"
    note: str = ""  # the operator's `--reason` of the pending ask it resolves


@immutable
class OnceBoost:
    """One turn served strong; the tier stays base; counts one against `max_per_session`."""

    actor: str = "client"
    note: str = ""  # the operator's `--reason` of the pending ask it resolves


@immutable
class Deescalate:
    scope: Scope = "main"


@immutable
class BaseConversation:
    """Remember a conversation (its opening-ask fingerprint) that opened with an easy ask
    under a strong session: its requests are served from the base tier. Idempotent."""

    fingerprint: str


@immutable
class Reset:
    """Back to base; streak, strikes and pending cleared; count, base pin and ring kept."""

    actor: str = "client"
    note: str = ""  # the operator's `--reason` of the pending ask it resolves


@immutable
class SetPending:
    """An operator's ask written by `orca escalate` / `orca reset` (never by a request)."""

    ask: Literal["strong", "once", "base"]
    actor: str
    reason: str
    id: str


@immutable
class ConsumePending:
    """Clear the pending ask this resolution acted on (only if it is still that ask)."""

    id: str


@immutable
class RecordTurn:
    """An evaluated, billed-success turn: advances the turn counter, the streak (user turns
    only), strike decay, the clean-turn counter, the dedupe ring and the seen signatures.
    Skipped when its dedupe key is already in the ring (a repeated turn); the other intents
    of that commit still apply."""

    dedupe_key: str
    user_turn: bool
    hard: bool  # delta >= the effective T2
    signatures: tuple[str, ...] = ()
    request_strike: bool = False
    response_strikes: tuple[str, ...] = ()  # filled in after the response (SPEC §3 step 8)
    scope: Scope = "main"
    history: bool = False  # the body carried its conversation's history (an assistant message)
    # a request strike's repeated failures by kind (`strikes.signature_label`): content-free
    repeated: tuple[str, ...] = ()


Intent: TypeAlias = (
    Escalate | OnceBoost | Deescalate | Reset | SetPending | ConsumePending | RecordTurn
    | BaseConversation
)
