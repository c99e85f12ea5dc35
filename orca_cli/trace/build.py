"""The request trace (SPEC §8): written once at the end of every request, failures included.

It carries the keys of `orca explain --json` (SPEC §1.1a) and never prompt or response
content, nor key values (keys appear only by index and fingerprint). `orca explain` renders
this document as stored; nothing is recomputed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from orca_cli import ALGORITHM_VERSION
from orca_cli.immutable import immutable

# For the annotations only: the request log (`trace.log`, which `orca requests` imports) reads
# `Trace` without loading the router.
if TYPE_CHECKING:
    from orca_cli.routing.candidates import Candidate
    from orca_cli.routing.caps import CapsView
    from orca_cli.routing.escalation import TierDecision
    from orca_cli.routing.features import Delta, Difficulty
    from orca_cli.routing.intents import Intent
    from orca_cli.routing.route import RoutePlan
    from orca_cli.routing.route_types import PinRead
    from orca_cli.routing.strategies.base import Ranking

__all__ = ["AttemptJson", "Trace", "TraceHead", "TraceResult", "build_trace", "intent_json",
           "refusal_trace"]


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


class AttemptJson(Protocol):
    """An upstream attempt as the trace lists it (`turn.model.AttemptRecord`)."""

    def to_json(self) -> dict[str, Any]: ...


@immutable
class TraceResult:
    """What happened: what served, every attempt, usage and cost, the status."""

    status: int
    selected: dict[str, Any] | None = None
    attempts: Sequence[AttemptJson] = ()  # listed (`to_json`) when the document is built
    usage: dict[str, int] | None = None
    cost_usd: float = 0.0
    committed: bool = False
    degraded: bool = False
    error: str | None = None
    cache: str | None = None
    latency_ms: float = 0.0


def build_trace(head: TraceHead, delta: Delta | None, plan: RoutePlan | None,
                result: TraceResult) -> dict[str, Any]:
    """The trace document (the keys of `orca explain --json`), built at once."""
    return Trace(head, delta, plan, result).document()


# The keys only the whole document holds: `Trace.get` builds it for one of these, and answers
# every other key (the request log's, the store's index) from what it was made with.
_BUILT_KEYS = frozenset({"difficulty", "caps", "pins", "candidates", "strategy_note", "mode",
                         "auto", "attempts", "intents", "algorithm_version"})
_ABSENT: Any = object()


class Trace(Mapping[str, Any]):
    """A request's trace document, built from its parts the first time it is read in full.

    Every request has a trace and most are never read: the request log reads a dozen of its
    top-level fields, the store indexes it by id and time. Those fields are answered from the
    parts (`get`); the rest of the document — the difficulty figures, caps, pins, candidates
    and intents, about 90k interpreter instructions of dicts, rounding and `to_json` a
    request, and on the memory store its JSON text too — is built when something reads it
    whole: `orca explain`, `orca requests`, an exporter, or the Redis store's commit, which
    sends its text. What it is built from is immutable once the request has settled and is
    content-free (the delta's difficulty figures, never its texts), so a trace built later
    reads as it would have at the end of its request (`tests/trace/test_lazy_trace.py` holds
    it to that), and the parts are let go once it is built. On the memory store a trace not
    read yet holds about 4.4 KB of parts where its text takes 2.5 KB (README, "Traces are
    built when read")."""

    # `_parts`: what the rest of the document is built from, None once it is built; `_top`:
    # the top-level fields, then the whole document.
    __slots__ = ("_parts", "_top")

    def __init__(self, head: TraceHead, delta: Delta | None, plan: RoutePlan | None,
                 result: TraceResult, extras: dict[str, Any] | None = None) -> None:
        decision = plan.decision if plan is not None else None
        # The top-level fields in the document's order (extras last, in their own order).
        top: dict[str, Any] = {
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
            "tier": ({"decision": decision.tier, "reason": decision.reason,
                      "trigger": decision.trigger or None, "denied": decision.denied or None,
                      "evaluations": decision.evaluations, "shadow": decision.shadow,
                      "t2": decision.t2} if decision is not None else
                     {"decision": None, "reason": None, "trigger": None, "denied": None,
                      "evaluations": {}, "shadow": None, "t2": None}),
            "selected": result.selected,
            "usage": result.usage,
            "cost_usd": round(result.cost_usd, 8),
            "cache": result.cache,
            "committed": result.committed,
            "degraded": result.degraded,
        }
        if extras:
            top.update(extras)
        self._top = top
        self._parts: tuple[Any, ...] | None = (
            None if delta is None else delta.difficulty,
            None if delta is None else delta.is_user_turn,
            None if delta is None else delta.is_tool_continuation,
            None if delta is None else delta.compacted,
            None if plan is None else _PlanFacts(
                plan.decision, plan.full, plan.full_skipped, plan.caps, plan.pins,
                plan.candidates, plan.ranking, plan.evidence.get("mode", _ABSENT)),
            result.attempts, extras)

    @property
    def built(self) -> bool:
        """Whether the whole document was built (its parts let go)."""
        return self._parts is None

    def document(self) -> dict[str, Any]:
        """The whole trace document, built once; plain JSON data, shared: read-only."""
        parts = self._parts
        if parts is not None:
            self._top = self._build(parts)
            self._parts = None
        return self._top

    def _build(self, parts: tuple[Any, ...]) -> dict[str, Any]:
        difficulty, user_turn, tool_continuation, compacted, plan, attempts, extras = parts
        t = self._top
        doc = {key: t[key] for key in _HEAD_KEYS}
        doc["tier"] = t["tier"]
        doc["difficulty"] = _difficulty(difficulty, user_turn, tool_continuation, compacted,
                                        plan)
        if plan is None:
            _undecided(doc)
        else:
            _decided(doc, plan)
        doc["selected"] = t["selected"]
        doc["attempts"] = [a.to_json() for a in attempts]
        doc["usage"] = t["usage"]
        doc["cost_usd"] = t["cost_usd"]
        doc["cache"] = t["cache"]
        doc["intents"] = [intent_json(i) for i in plan.decision.intents] if plan else []
        doc["committed"] = t["committed"]
        doc["degraded"] = t["degraded"]
        doc["algorithm_version"] = ALGORITHM_VERSION
        if extras:
            doc.update(extras)
        return doc

    @property
    def fields(self) -> dict[str, Any]:
        """The top-level fields known without building the document: every key of it but
        the built ones (difficulty, caps, pins, candidates, attempts, intents, ...), as a
        plain dict (the whole document once built). Read-only."""
        return self._top

    @property
    def attempt_count(self) -> int:
        """How many upstream attempts the trace lists, without building it."""
        parts = self._parts
        if parts is None:
            return len(self.document()["attempts"])
        return len(parts[5])

    def get(self, key: str, default: Any = None) -> Any:
        value = self._top.get(key, _ABSENT)
        if value is not _ABSENT:
            return value
        if self._parts is None or key not in _BUILT_KEYS:
            return default
        return self.document().get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.document()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._top or (key in _BUILT_KEYS and key in self.document())

    def __iter__(self) -> Iterator[str]:
        return iter(self.document())

    def __len__(self) -> int:
        return len(self.document())

    def __repr__(self) -> str:
        return f"Trace({self.document()!r})"


_HEAD_KEYS = ("request_id", "client_request_id", "ts", "session_id", "session_source", "router",
              "inbound_api", "requested_model", "stream", "status", "error", "latency_ms")


@immutable
class _PlanFacts:
    """What a trace reads of its `RoutePlan`, held until the document is built: not the
    plan's tier state, attempts or evidence, which the trace does not show."""

    decision: TierDecision
    full: Difficulty | None
    full_skipped: str | None
    caps: CapsView | None
    pins: tuple[PinRead, ...]
    candidates: tuple[Candidate, ...]
    ranking: Ranking | None
    mode: Any  # the request's channel-ordering mode (`evidence["mode"]`); _ABSENT: none


def _decided(doc: dict[str, Any], plan: _PlanFacts) -> None:
    """The routing decision's part: caps, pins, candidates, strategy."""
    ranking = plan.ranking
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
    if plan.mode is not _ABSENT:
        doc["mode"] = plan.mode
    # The auto router's decision (SPEC §16), only when a strategy explained itself.
    if ranking and ranking.explain:
        doc["auto"] = ranking.explain


def _undecided(doc: dict[str, Any]) -> None:
    """A request refused before routing: the decision's keys, all empty."""
    doc["caps"] = _caps(None)
    doc["pins"] = []
    doc["candidates"] = []
    doc["strategy_note"] = None


def _difficulty(difficulty: Difficulty | None, user_turn: bool | None,
                tool_continuation: bool | None, compacted: bool | None,
                plan: _PlanFacts | None) -> dict[str, Any]:
    """The delta's and the full transcript's scores, and why the full one is missing when a
    decided request has none; `compacted`: the turn follows an agent's compaction summary
    (`wire.transcript.Turn.compacted`), so the delta is what came after it."""
    full = plan.full if plan is not None else None
    doc: dict[str, Any] = {
        "delta": difficulty.to_json() if difficulty is not None else None,
        "full": full.to_json() if full is not None else None,
    }
    if plan is not None and full is None:
        doc["full_skipped"] = plan.full_skipped
    doc["user_turn"] = user_turn
    doc["tool_continuation"] = tool_continuation
    doc["compacted"] = compacted
    return doc


def _caps(plan: _PlanFacts | None) -> dict[str, Any]:
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
