"""A session's transitions this sidecar has decided and not yet committed (SPEC §6.4).

A burst of concurrent requests of one session each read the store before any of them commits.
Every `once` of such a burst would then be served strong: the count checked again at commit
(`state.apply`) stays within `max_per_session`, but the strong turns were already served. So
the sidecar keeps, per (router, session), the transitions it has decided and not committed,
and the highest escalation count it has seen its own commits reach; the decision counts both
(`routing.caps.SessionInFlight`). A read that still predates this sidecar's last commit (a
Redis read answered before a racing commit landed) is covered by that count.

The view is taken and the reservation made on the event loop without an await between the
decision and the reservation, so two requests of one sidecar cannot both pass a cap of one.
Sidecars sharing one Redis each keep their own table: across them, transitions decided in
the same instant before either commits are not seen by each other (the stored count still
never exceeds the cap).

The same holds for a session's first pick of a tier (SPEC §5, §16): concurrent first turns
of a new session (an agent's parallel sub-agents under one session id) each read no pin, and
a strategy that ranks per request (`auto`'s workloads, `gated_adaptive`'s bands) or a weighted
key draw would start them on different models or keys, each on a cold cache. So the first
request that decides a tier with no pin records its model, channel and key (`pick`), and a
request of the session that reads no pin of that tier while the pick is in flight, or up to
`PICK_GRACE_S` after it ended (a read that predates its commit), follows it as if the store
had the pin (`follow`); its trace says so (`reason: in_flight`).

A pin the routing dropped (a transcript grown past the pinned model's window, a channel that
no longer serves it) is no pin either: the request that dropped it picks again, and records
the pin it replaces; a concurrent request that still reads that old pin follows the new pick
instead of dropping the pin and drawing a model and key of its own (the session would spread
over several keys, each cold).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from orca_cli.routing.caps import NO_IN_FLIGHT, SessionInFlight
from orca_cli.routing.intents import Escalate, OnceBoost
from orca_cli.routing.route import RoutePlan
from orca_cli.routing.snapshot import Snapshot
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import CommitResult

__all__ = ["InFlightTransitions", "Pick", "Reservation", "followed_pins"]

MAX_SESSIONS = 10_000  # sessions with a transition in flight or a count ahead of the store
# How long a commit's count stands in for a read that predates it: a read is never older than
# the store's timeout, and a tier document that expires takes its count with it.
FLOOR_TTL_S = 30.0
# How long an ended first pick still stands in for a read without the pin: a read is never
# older than the store's timeout.
PICK_GRACE_S = 5.0
Key = tuple[str, str]  # (router, session)


def _stored_count(tier_doc: Mapping[str, Any] | None) -> int:
    """The escalation count of a tier document, as the decision decodes it (0 without one,
    or for one the decoder refuses). Read only for a session with an entry here."""
    state = TierState.from_doc(dict(tier_doc)) if tier_doc is not None else None
    return state.escalation_count if state is not None else 0


@dataclass(slots=True)
class _Entry:
    onces: int = 0
    escalations: int = 0  # requests in flight that take the session to strong
    floor: int = 0  # the escalation count this sidecar's latest commit stored
    floor_until: float = 0.0  # monotonic time after which `floor` no longer counts


@dataclass(slots=True)
class _Picked:
    model: str
    channel_pin: dict[str, Any]  # {channel, key_index, key_fp}, as the store keeps it
    live: int = 1  # requests that made the pick and are still in flight
    until: float = float("inf")  # monotonic; set when the last of them ended
    # The pin the pick replaces (model, channel, key index) when the routing dropped one;
    # a read that still holds it follows the pick.
    replaces: tuple[str, str, int] | None = None


@dataclass(frozen=True, slots=True)
class Pick:
    """A first pick of (router, session, tier) this request made; given back with
    `end_pick`."""

    key: tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Reservation:
    """One new transition decided for (router, session); given back with `release`."""

    key: Key
    escalate: bool


class InFlightTransitions:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._max = max(1, max_sessions)
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._picks: OrderedDict[tuple[str, str, str], _Picked] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def view(self, key: Key, tier_doc: Mapping[str, Any] | None,
             now: float) -> SessionInFlight:
        """What the decision of a request of this session counts beside the stored count
        (`tier_doc`: the session's tier document as the request read it; `now`: monotonic)."""
        e = self._entries.get(key)
        if e is None:
            return NO_IN_FLIGHT
        floor = e.floor if now < e.floor_until else 0
        if not (e.onces or e.escalations) and floor <= _stored_count(tier_doc):
            del self._entries[key]  # the store has caught up with this sidecar
            return NO_IN_FLIGHT
        return SessionInFlight(e.onces, e.escalations > 0, floor)

    def reserve(self, key: Key, plan: RoutePlan) -> Reservation | None:
        """Count the plan's new transition (an escalation, or a once-boost it serves strong)
        as in flight; None when the plan makes none."""
        if plan.decision.tier != "strong":
            return None
        kind = next((i for i in plan.decision.intents
                     if type(i) is OnceBoost or (type(i) is Escalate and i.scope == "main")),
                    None)
        if kind is None:
            return None
        e = self._entries.get(key)
        if e is None:
            while len(self._entries) >= self._max:
                self._entries.popitem(last=False)
            e = self._entries[key] = _Entry()
        else:
            self._entries.move_to_end(key)
        escalate = type(kind) is Escalate
        if escalate:
            e.escalations += 1
        else:
            e.onces += 1
        return Reservation(key, escalate)

    def release(self, r: Reservation, committed: CommitResult | None, now: float) -> None:
        """The request is over. `committed`: its commit's result when it wrote the session
        (its count then stands in for older reads for FLOOR_TTL_S); None when it wrote
        nothing (failed upstream, degraded) or was held for the store to apply later."""
        e = self._entries.get(r.key)
        if e is None:
            return  # pushed out by the bound: nothing left to count
        if r.escalate:
            e.escalations -= 1
        else:
            e.onces -= 1
        tier = next((s.tier for s in committed.results if s.slot.kind == "session"),
                    None) if committed is not None else None
        if tier is not None:
            e.floor, e.floor_until = _stored_count(tier), now + FLOOR_TTL_S
        if not (e.onces or e.escalations) and (e.floor == 0 or now >= e.floor_until):
            del self._entries[r.key]

    # --- first picks -------------------------------------------------------------------------

    def follow(self, key: Key, snapshot: Snapshot, now: float) -> Snapshot | None:
        """`snapshot` with the pins of the tiers it lacks and another request of the session
        picked in flight (`now`: monotonic); None when there is nothing to follow (the common
        case: one lookup per tier, on an empty table)."""
        picks = self._picks
        if not picks:
            return None
        pins: dict[str, str] | None = None
        chans: dict[str, Mapping[str, Any]] = {}
        for tier in ("base", "strong"):
            p = picks.get((*key, tier))
            if p is None:
                continue
            if not p.live and now >= p.until:
                del picks[(*key, tier)]  # ended: the table drains back to empty
                continue
            if tier in snapshot.pins and (p.replaces is None
                                          or _held(snapshot, tier) != p.replaces):
                continue  # the tier's pin, not one a pick in flight replaces
            if pins is None:
                pins, chans = dict(snapshot.pins), dict(snapshot.channel_pins)
            pins[tier] = p.model
            chans[tier] = p.channel_pin
        if pins is None:
            return None
        return replace(snapshot, pins=pins, channel_pins=chans)

    def pick(self, key: Key, plan: RoutePlan, snapshot: Snapshot,
             key_fps: Mapping[str, Mapping[int, str]]) -> Pick | None:
        """Record the plan's first attempt as the session's pick of its tier when the
        session had no pin of that tier; None otherwise (a pinned session: the common case)."""
        tier = plan.decision.tier
        if not plan.attempts or plan.refusal is not None:
            return None
        replaces = None
        if tier in snapshot.pins:
            for read in plan.pins:
                if read.status == "dropped" and read.tier == tier:
                    break
            else:
                return None  # a pinned session that kept its pin: the common case
            replaces = _held(snapshot, tier)
        att = plan.attempts[0]
        pk = (*key, tier)
        p = self._picks.get(pk)
        if p is not None and p.replaces == replaces:  # the same pick: join it
            p.live += 1
            p.until = float("inf")
            return Pick(pk)
        # A first pick, or a new one replacing a dropped pin (any earlier pick is that pin)
        while len(self._picks) >= self._max:
            self._picks.popitem(last=False)
        fp = key_fps.get(att.channel, {}).get(att.key_index, "")
        self._picks[pk] = _Picked(att.model, {"channel": att.channel,
                                              "key_index": att.key_index, "key_fp": fp},
                                  replaces=replaces)
        return Pick(pk)

    def superseded(self, key: Key, tier: str, model: str, channel: str, key_index: int) -> bool:
        """Whether what served (model, channel, key index) is the pin a pick in flight (or in
        its grace) replaced: a request that served on it must not write it back."""
        if not self._picks:
            return False
        p = self._picks.get((*key, tier))
        return p is not None and p.replaces == (model, channel, key_index)

    def end_pick(self, pick: Pick, now: float) -> None:
        p = self._picks.get(pick.key)
        if p is None:
            return
        p.live = max(0, p.live - 1)  # a re-pick replaced the entry its own pick made
        if not p.live:
            p.until = now + PICK_GRACE_S


def _held(snapshot: Snapshot, tier: str) -> tuple[str, str, int]:
    """The tier's pin as read: (model, channel, key index); "" and -1 where absent."""
    chan = snapshot.channel_pins.get(tier) or {}
    index = chan.get("key_index")
    return (snapshot.pins.get(tier, ""), str(chan.get("channel", "")),
            index if isinstance(index, int) else -1)


def followed_pins(plan: RoutePlan, before: Snapshot, after: Snapshot) -> RoutePlan:
    """The plan with the pins a request followed from another's pick in flight marked so in
    its trace (`reason: in_flight`): the store did not have them (or had the ones the pick
    replaces)."""
    tiers = {t for t in ("base", "strong") if _held(before, t) != _held(after, t)}
    pins = tuple(replace(p, reason="in_flight")
                 if p.status == "hit" and p.kind in ("model", "channel") and p.tier in tiers
                 else p for p in plan.pins)
    return replace(plan, pins=pins) if pins != plan.pins else plan
