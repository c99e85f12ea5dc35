"""Tier state: the only escalation memory of a session (SPEC §6.1).

A session is pinned to a model *within a tier*; this small document says which tier the
session is in and why, and carries the evidence the triggers corroborate (difficulty streak,
strikes, seen error signatures), the dedupe ring, a pending operator ask and the counters the
caps read. It is stored as a JSON document (`to_doc` / `from_doc`); the store owns its version
field `v`. It expires with a sliding TTL (`tier_ttl_s`); expiry starts a new episode.
"""

from __future__ import annotations

from typing import Any, Literal

from orca_cli.immutable import immutable, replaced

__all__ = [
    "DEDUPE_RING",
    "MAX_CONVERSATIONS",
    "MAX_SIGNATURES",
    "MAX_STRIKES_KEPT",
    "Ask",
    "Pending",
    "Strike",
    "Tier",
    "TierState",
    "empty_state",
]

Tier = Literal["base", "strong"]
Ask = Literal["strong", "once", "base"]

DEDUPE_RING = 64  # SPEC §6.1: the last 64 dedupe keys
MAX_SIGNATURES = 32  # error signatures remembered for request-side strikes
MAX_STRIKES_KEPT = 16  # strikes older than the window are dropped at commit anyway
MAX_CONVERSATIONS = 16  # sub-agent conversations served from base under a strong session


@immutable
class Strike:
    turn: int  # the evaluated-turn index the strike was committed on
    ts: float
    kind: str  # "repeated_error", "malformed_tool_json", "empty_answer", "refusal", "truncated"
    what: str = ""  # a repeated error's kinds of failure (`strikes.signature_label`), content-free

    def to_doc(self) -> list[Any]:
        return [self.turn, self.ts, self.kind, self.what] if self.what else [
            self.turn, self.ts, self.kind]

    @staticmethod
    def from_doc(doc: Any) -> Strike:
        return Strike(int(doc[0]), float(doc[1]), str(doc[2]),
                      str(doc[3]) if len(doc) > 3 else "")


@immutable
class Pending:
    """An operator's ask (`orca escalate [--once]`, `orca reset`) awaiting the next request."""

    ask: Ask
    actor: str
    reason: str
    at: float
    id: str  # unique per ask: consumed only by a commit that resolved this very ask

    def to_doc(self) -> dict[str, Any]:
        return {"ask": self.ask, "actor": self.actor, "reason": self.reason, "at": self.at,
                "id": self.id}

    @staticmethod
    def from_doc(doc: Any) -> Pending | None:
        if not isinstance(doc, dict) or doc.get("ask") not in ("strong", "once", "base"):
            return None
        return Pending(doc["ask"], str(doc.get("actor", "")), str(doc.get("reason", "")),
                       float(doc.get("at", 0.0)), str(doc.get("id", "")))


@immutable
class TierState:
    tier: Tier = "base"
    escalation_count: int = 0  # base->strong transitions and once-boosts this episode
    trigger: str = ""  # what escalated it: explicit | difficulty | strikes (repeated while strong)
    reason: str = "default"  # the reason of the last tier change
    escalated_at: float = 0.0
    window_s: float = 0.0  # the provider cache window recorded at escalation
    last_success: float = 0.0  # last billed success of this session
    clean_turns: int = 0  # strike-free evaluated turns since escalation
    streak: int = 0  # consecutive user turns with delta >= T2
    turn: int = 0  # evaluated turns committed this episode
    strikes: tuple[Strike, ...] = ()
    signatures: tuple[str, ...] = ()  # normalised error signatures seen in earlier turns
    dedupe: tuple[str, ...] = ()  # ring of the last DEDUPE_RING dedupe keys
    pending: Pending | None = None
    # Fingerprints of the conversations that opened with an easy ask while the session was
    # strong (an agent's sub-agents): served from the base tier (`escalation._sub_agent`).
    conversations: tuple[str, ...] = ()
    # An evaluated turn of this episode carried its conversation's history (an assistant
    # message): the session is an agent's, so a request without history is another conversation.
    history: bool = False
    episode_started: float = 0.0
    shadow: TierState | None = None  # mode = "shadow": triggers B and C run on this state
    version: int = 0  # the store's `v`; read-only here
    # The latest user turn was served strong by a `once` (SPEC §6.2: "this turn only"): its
    # tool continuations, more work on the same ask, are served strong too, uncounted.
    once_open: bool = False

    # --- derived views ----------------------------------------------------------------
    def strikes_in_window(self, window_turns: int, upcoming_turn: int) -> int:
        """Strikes committed within the last `window_turns` evaluated turns, counting the turn
        about to be evaluated (`upcoming_turn`) as the newest of the window."""
        if not self.strikes:  # most sessions: no generator built
            return 0
        oldest = upcoming_turn - window_turns + 1
        return sum(1 for s in self.strikes if s.turn >= oldest)

    def seen(self, dedupe_key: str) -> bool:
        return dedupe_key in self.dedupe

    # This state with `changes` (a commit copies it once or twice: `immutable.replaced`).
    with_ = replaced

    # --- codec --------------------------------------------------------------------------
    def to_doc(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "tier": self.tier,
            "count": self.escalation_count,
            "trigger": self.trigger,
            "reason": self.reason,
            "esc_at": self.escalated_at,
            "window": self.window_s,
            "last_ok": self.last_success,
            "clean": self.clean_turns,
            "streak": self.streak,
            "turn": self.turn,
            "strikes": [s.to_doc() for s in self.strikes],
            "sigs": list(self.signatures),
            "dedupe": list(self.dedupe),
            "pending": self.pending.to_doc() if self.pending else None,
            "started": self.episode_started,
        }
        if self.conversations:
            doc["convs"] = list(self.conversations)
        if self.history:
            doc["hist"] = True
        if self.shadow is not None:
            doc["shadow"] = self.shadow.to_doc()
        if self.version:
            doc["v"] = self.version
        if self.once_open:
            doc["once"] = True
        return doc

    @staticmethod
    def from_doc(doc: dict[str, Any] | None) -> TierState | None:
        """Decode a stored document; a malformed one is treated as absent (new episode)."""
        if not isinstance(doc, dict):
            return None
        try:
            shadow_doc = doc.get("shadow")
            # Most documents hold no strike, signature, conversation or pending ask: an
            # empty list (what `to_doc` writes) decodes to () without a pass over it.
            strikes = doc.get("strikes", _NONE)
            sigs = doc.get("sigs", _NONE)
            convs = doc.get("convs", _NONE)
            pending = doc.get("pending")
            # By position, in field order: matching nineteen keywords costs about three times
            # the construction itself, on every request that reads a session.
            return TierState(
                "strong" if doc.get("tier") == "strong" else "base",  # tier
                int(doc.get("count", 0)),  # escalation_count
                str(doc.get("trigger", "")),  # trigger
                str(doc.get("reason", "default")),  # reason
                float(doc.get("esc_at", 0.0)),  # escalated_at
                float(doc.get("window", 0.0)),  # window_s
                float(doc.get("last_ok", 0.0)),  # last_success
                int(doc.get("clean", 0)),  # clean_turns
                int(doc.get("streak", 0)),  # streak
                int(doc.get("turn", 0)),  # turn
                () if strikes == _NONE else tuple(map(Strike.from_doc, strikes)),  # strikes
                () if sigs == _NONE else _texts(sigs),  # signatures
                _texts(doc.get("dedupe", ())),  # dedupe
                None if pending is None else Pending.from_doc(pending),  # pending
                () if convs == _NONE else _texts(convs),  # conversations
                doc.get("hist") is True,  # history
                float(doc.get("started", 0.0)),  # episode_started
                # shadow
                TierState.from_doc(shadow_doc) if isinstance(shadow_doc, dict) else None,
                int(doc.get("v", 0)),  # version
                doc.get("once") is True,  # once_open
            )
        except (TypeError, ValueError, IndexError):
            return None


# A document's empty list (and an absent key's default): only `[]` compares equal to it, and
# it decodes to () as any empty list does.
_NONE: list[Any] = []


def _texts(items: Any) -> tuple[str, ...]:
    """`tuple(map(str, items))`, where the items of a decoded document are text already:
    `str.join` checks them all in C (the dedupe ring holds 64) and raises on anything else,
    which then goes through `str`."""
    values = tuple(items)
    try:
        "".join(values)
    except TypeError:
        return tuple(map(str, values))
    return values


_EMPTY = TierState()


def empty_state(now: float) -> TierState:
    return _EMPTY.with_(episode_started=now)

