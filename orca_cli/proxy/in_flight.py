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
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orca_cli.routing.caps import NO_IN_FLIGHT, SessionInFlight
from orca_cli.routing.intents import Escalate, OnceBoost
from orca_cli.routing.route import RoutePlan
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import CommitResult

__all__ = ["InFlightTransitions", "Reservation"]

MAX_SESSIONS = 10_000  # sessions with a transition in flight or a count ahead of the store
# How long a commit's count stands in for a read that predates it: a read is never older than
# the store's timeout, and a tier document that expires takes its count with it.
FLOOR_TTL_S = 30.0
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


@dataclass(frozen=True, slots=True)
class Reservation:
    """One new transition decided for (router, session); given back with `release`."""

    key: Key
    escalate: bool


class InFlightTransitions:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self._max = max(1, max_sessions)
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()

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
