"""The request trace (SPEC §8): written once at the end of every request, failures included.

It carries the keys of `orca explain --json` (SPEC §1.1a) and never prompt or response
content, nor key values (keys appear only by index and fingerprint). `orca explain` renders
this document as stored; nothing is recomputed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orca_cli import ALGORITHM_VERSION
from orca_cli.immutable import immutable
from orca_cli.routing.features import Delta
from orca_cli.routing.intents import Intent
from orca_cli.routing.route import RoutePlan

__all__ = ["TraceHead", "TraceResult", "build_trace", "intent_json", "refusal_trace"]


# Per intent class: its trace name and field names, read once.
_INTENT_FIELDS: dict[type, tuple[str, tuple[str, ...]]] = {}


def intent_json(intent: Intent) -> dict[str, Any]:
    cls = type(intent)
    layout = _INTENT_FIELDS.get(cls)
    if layout is None:
        layout = _INTENT_FIELDS[cls] = (cls.__name__,
                                        tuple(getattr(cls, "__dataclass_fields__", ())))
    out: dict[str, Any] = {"type": layout[0]}
    for name in layout[1]:
        value = getattr(intent, name)
        out[name] = list(value) if type(value) is tuple else value
    return out


@immutable
class TraceHead:
    """What the request was: ids, session, router, format, the name it asked for."""

    request_id: str
    client_request_id: str | None
    ts: float
    inbound_api: str
    requested_model: str
    session_id: str | None = None
    session_source: str | None = None
    router: str | None = None
    stream: bool = False


@immutable
class TraceResult:
    """What happened: what served, every attempt, usage and cost, the status."""

    status: int
    selected: dict[str, Any] | None = None
    attempts: Sequence[dict[str, Any]] = ()
    usage: dict[str, int] | None = None
    cost_usd: float = 0.0
    committed: bool = False
    degraded: bool = False
    error: str | None = None
    cache: str | None = None
    latency_ms: float = 0.0


def build_trace(head: TraceHead, delta: Delta | None, plan: RoutePlan | None,
                result: TraceResult) -> dict[str, Any]:
    """The trace document (the keys of `orca explain --json`), built in one dict: it is made
    for every request, so the decided and the undecided parts are separate paths rather than
    a test of `plan` per key."""
    doc: dict[str, Any] = {
        "request_id": head.request_id,
        "client_request_id": head.client_request_id,
        "ts": head.ts,
        "session_id": head.session_id,
        "session_source": head.session_source,
        "router": head.router,
        "inbound_api": head.inbound_api,
        "requested_model": head.requested_model,
        "stream": head.stream,
        "status": result.status,
        "error": result.error,
        "latency_ms": round(result.latency_ms, 3),
    }
    if plan is None:
        _undecided(doc, delta)
    else:
        _decided(doc, plan, delta)
    doc["selected"] = result.selected
    doc["attempts"] = list(result.attempts)
    doc["usage"] = result.usage
    doc["cost_usd"] = round(result.cost_usd, 8)
    doc["cache"] = result.cache
    doc["intents"] = [intent_json(i) for i in plan.decision.intents] if plan else []
    doc["committed"] = result.committed
    doc["degraded"] = result.degraded
    doc["algorithm_version"] = ALGORITHM_VERSION
    return doc


def _decided(doc: dict[str, Any], plan: RoutePlan, delta: Delta | None) -> None:
    """The routing decision's part: tier, difficulty, caps, pins, candidates, strategy."""
    decision = plan.decision
    ranking = plan.ranking
    doc["tier"] = {
        "decision": decision.tier,
        "reason": decision.reason,
        "trigger": decision.trigger or None,
        "denied": decision.denied or None,
        "evaluations": decision.evaluations,
        "shadow": decision.shadow,
        "t2": decision.t2,
    }
    doc["difficulty"] = _difficulty(delta, plan)
    doc["caps"] = _caps(plan)
    doc["pins"] = [p.to_json() for p in plan.pins]
    scores = ranking.scores if ranking else None
    doc["candidates"] = [
        {"model": c.model, "channel": c.channels[0].channel if c.channels else None,
         "score": scores.get(c.model) if scores is not None else None,
         "excluded": c.excluded, "reason": c.reason,
         "filtered": [list(f) for f in c.filtered] if c.filtered else []}
        for c in plan.candidates
    ]
    doc["strategy_note"] = ranking.note if ranking else None
    # The channel-ordering mode when the request set it (suffix, provider.sort,
    # routing.mode) rather than the router's (SPEC §20).
    if "mode" in plan.evidence:
        doc["mode"] = plan.evidence["mode"]
    # The auto router's decision (SPEC §16), only when a strategy explained itself.
    if ranking and ranking.explain:
        doc["auto"] = ranking.explain


def _undecided(doc: dict[str, Any], delta: Delta | None) -> None:
    """A request refused before routing: the decision's keys, all empty."""
    doc["tier"] = {"decision": None, "reason": None, "trigger": None, "denied": None,
                   "evaluations": {}, "shadow": None, "t2": None}
    doc["difficulty"] = _difficulty(delta, None)
    doc["caps"] = _caps(None)
    doc["pins"] = []
    doc["candidates"] = []
    doc["strategy_note"] = None


def _difficulty(delta: Delta | None, plan: RoutePlan | None) -> dict[str, Any]:
    """The delta's and the full transcript's scores, and why the full one is missing when a
    decided request has none."""
    full = plan.full if plan is not None else None
    doc: dict[str, Any] = {
        "delta": delta.difficulty.to_json() if delta is not None else None,
        "full": full.to_json() if full is not None else None,
    }
    if plan is not None and full is None:
        doc["full_skipped"] = plan.full_skipped
    doc["user_turn"] = delta.is_user_turn if delta is not None else None
    doc["tool_continuation"] = delta.is_tool_continuation if delta is not None else None
    return doc


def _caps(plan: RoutePlan | None) -> dict[str, Any]:
    if plan is None or plan.caps is None:
        return {"session_count": None, "share": None, "workspace_share": None, "warmup": None}
    # `to_trace` gives share, workspace_share, warmup and enabled, in that order
    evals = plan.decision.evaluations.get("caps")
    return {"session_count": evals.get("session_count") if evals else None,
            **plan.caps.to_trace()}


def refusal_trace(*, request_id: str, client_request_id: str | None, ts: float,
                  inbound_api: str, status: int, error: str,
                  requested_model: str | None = None, session_id: str | None = None,
                  session_source: str | None = None, latency_ms: float = 0.0
                  ) -> dict[str, Any]:
    """The trace of a request refused before routing (bad JSON, unknown model, a bad header):
    the same keys, nothing decided, nothing committed; the session when it named one."""
    head = TraceHead(request_id=request_id, client_request_id=client_request_id, ts=ts,
                     inbound_api=inbound_api, requested_model=requested_model or "",
                     session_id=session_id, session_source=session_source)
    return build_trace(head, None, None, TraceResult(status=status, error=error,
                                                     latency_ms=latency_ms))
