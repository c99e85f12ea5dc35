"""The route step of a live request (SPEC §17): the I/O around the pure walk.

Only a request matching a route with `budget` nodes reads anything here: those nodes'
counters, in one round trip, before the walk (the walk picks the target, so the counters
cannot wait for the store read that target decides). The `[budgets]` counters ride on the
turn's one store read (`turn.prepare`), and a route without budget nodes reads nothing.
"""

from __future__ import annotations

from typing import Any

from orca_cli.errors import Refusal
from orca_cli.proxy.runtime import Runtime
from orca_cli.turn.model import RequestHead
from orca_cli.turn.routes import LiveRoutes, Routed, route_facts

__all__ = ["deny_refusal", "route_step"]


async def route_step(rt: Runtime, live: LiveRoutes, head: RequestHead, body: dict[str, Any],
                     request_id: str) -> Routed:
    facts, sid = route_facts(live, rt.cfg, head, body, request_id=request_id,
                             now=rt.clock.now())
    needed = live.table.counters_needed(facts)
    counters = await rt.gate.read_counters(needed) if needed else {}
    return Routed(facts, live.table.evaluate(facts, counters), live.version, live.limits,
                  sid=sid)


def deny_refusal(routed: Routed) -> Refusal:
    """A `deny` node's answer: its status and message, in the inbound shape."""
    deny = routed.decision.deny
    assert deny is not None
    return Refusal(deny.status, deny.message, code="route_denied")
