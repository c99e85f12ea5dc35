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
from orca_cli.routing.features import Delta, Difficulty
from orca_cli.routing.intents import Intent
from orca_cli.routing.route import RoutePlan

__all__ = ["TraceHead", "TraceResult", "build_trace", "intent_json", "refusal_trace"]


def intent_json(intent: Intent) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(intent).__name__}
    for name in getattr(intent, "__dataclass_fields__", {}):
        value = getattr(intent, name)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


def _difficulty(d: Difficulty | None) -> dict[str, Any] | None:
    return None if d is None else d.to_json()


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
    """The trace document (the keys of `orca explain --json`)."""
    decision = plan.decision if plan is not None else None
    return {
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
        **_decision(plan, delta),
        "selected": result.selected,
        "attempts": list(result.attempts),
        "usage": result.usage,
        "cost_usd": round(result.cost_usd, 8),
        "cache": result.cache,
        "intents": [intent_json(i) for i in decision.intents] if decision else [],
        "committed": result.committed,
        "degraded": result.degraded,
        "algorithm_version": ALGORITHM_VERSION,
    }


def _decision(plan: RoutePlan | None, delta: Delta | None) -> dict[str, Any]:
    """The routing decision's part: tier, difficulty, caps, pins, candidates, strategy."""
    decision = plan.decision if plan is not None else None
    full = plan.full if plan is not None else None
    ranking = plan.ranking if plan is not None else None
    return {
        "tier": {
            "decision": decision.tier if decision else None,
            "reason": decision.reason if decision else None,
            "trigger": (decision.trigger or None) if decision else None,
            "denied": (decision.denied or None) if decision else None,
            "evaluations": decision.evaluations if decision else {},
            "shadow": decision.shadow if decision else None,
            "t2": decision.t2 if decision else None,
        },
        "difficulty": {
            "delta": _difficulty(delta.difficulty) if delta is not None else None,
            "full": _difficulty(full),
            **({"full_skipped": plan.full_skipped} if plan and full is None else {}),
            "user_turn": delta.is_user_turn if delta is not None else None,
            "tool_continuation": delta.is_tool_continuation if delta is not None else None,
        },
        "caps": _caps(plan),
        "pins": [p.to_json() for p in plan.pins] if plan else [],
        "candidates": [
            {"model": c.model, "channel": c.channels[0].channel if c.channels else None,
             "score": ranking.scores.get(c.model) if ranking else None,
             "excluded": c.excluded, "reason": c.reason,
             "filtered": [list(f) for f in c.filtered]}
            for c in (plan.candidates if plan else ())
        ],
        "strategy_note": ranking.note if ranking else None,
        # The channel-ordering mode when the request set it (suffix, provider.sort,
        # routing.mode) rather than the router's (SPEC §20).
        **({"mode": plan.evidence["mode"]} if plan and "mode" in plan.evidence else {}),
        # The auto router's decision (SPEC §16), only when a strategy explained itself.
        **({"auto": ranking.explain} if ranking and ranking.explain else {}),
    }


def _caps(plan: RoutePlan | None) -> dict[str, Any]:
    if plan is None or plan.caps is None:
        return {"session_count": None, "share": None, "workspace_share": None, "warmup": None}
    doc = plan.caps.to_trace()
    evals = plan.decision.evaluations.get("caps", {}) if plan.decision else {}
    return {"session_count": evals.get("session_count"), "share": doc.get("share"),
            "workspace_share": doc.get("workspace_share"), "warmup": doc.get("warmup"),
            "enabled": doc.get("enabled")}


def refusal_trace(*, request_id: str, client_request_id: str | None, ts: float,
                  inbound_api: str, status: int, error: str,
                  requested_model: str | None = None) -> dict[str, Any]:
    """The trace of a request refused before routing (bad JSON, unknown model, a bad header):
    the same keys, nothing decided, nothing committed."""
    head = TraceHead(request_id=request_id, client_request_id=client_request_id, ts=ts,
                     inbound_api=inbound_api, requested_model=requested_model or "")
    return build_trace(head, None, None, TraceResult(status=status, error=error))
