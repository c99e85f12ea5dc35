"""From a resolved decision and the request's outcome to one `CommitBatch` (SPEC §3 step 9).

Shared by the proxy and the replay harness, so both commit exactly the same way. Pure: it
builds the batch; the caller sends it in one `store.commit`.

* Only a billed success writes state: tier document (intents applied onto fresh state), pins,
  share counters, stats, percentile samples. Anything else writes just its trace, plus a
  `denied_cap` audit event when a cap suppressed an escalation (never silent).
* Pins (SPEC §5): the model pin of the tier that served, refreshed on every success, with the
  channel's cache window as TTL — except base pins of explicit sessions on a durable store,
  which last 30 days; while the session is strong every commit extends its base pin to at
  least `tier_ttl_s`. The channel pin `{channel, key_index, key_fp}` lives one cache window.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from orca_cli.config.schema import EscalationConfig
from orca_cli.routing.escalation import TierDecision
from orca_cli.routing.intents import Escalate, Intent, OnceBoost, RecordTurn, Reset, Deescalate
from orca_cli.state.apply import apply_intents
from orca_cli.state.base import (
    CommitBatch,
    ExpireAtLeastOp,
    HIncrOp,
    IncrOp,
    Op,
    PushOp,
    SetOp,
    SlotRef,
    SlotWrite,
    Snapshot,
    ZAddOp,
)

__all__ = ["TurnOutcome", "PlanContext", "build_commit", "LONG_PIN_S", "STATS_TTL_S",
           "RECENT_MAX", "audit_event"]

LONG_PIN_S = 30 * 86400
STATS_TTL_S = 8 * 86400
RECENT_MAX = 1000  # most recently active sessions kept per router
SHARE_TTL_PAD_S = 3600


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    billed_success: bool
    model: str | None = None
    channel: str | None = None
    key_index: int | None = None
    key_fp: str | None = None
    window_s: float = 300.0  # the serving channel's cache window (pin TTL)
    response_strikes: tuple[str, ...] = ()
    prompt_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class PlanContext:
    request_id: str
    router: str | None  # None for a concrete-model request
    session: str | None  # None when sessionless
    explicit_session: bool
    durable_store: bool  # Redis: explicit sessions get 30-day base pins
    esc: EscalationConfig
    now: float
    counts_strong_in_workspace: bool = False  # concrete strong-pool model (SPEC §1.3)
    percentile_sample: float | None = None  # a user turn's delta, for threshold = percentile
    linucb: Mapping[str, Sequence[float]] = field(default_factory=dict)  # arm -> increments
    affinity: tuple[str, Mapping[str, Any], float] | None = None  # (key, pin, ttl) sessionless
    actor: str = "client"


def audit_event(ctx: PlanContext, event: str, *, trigger: str = "", reason: str = "",
                actor: str = "") -> dict[str, Any]:
    return {"ts": ctx.now, "router": ctx.router or "", "session": ctx.session or "",
            "request_id": ctx.request_id, "event": event, "trigger": trigger or None,
            "reason": reason, "actor": actor or ctx.actor}


def _with_response(intents: Sequence[Intent], strikes: tuple[str, ...]) -> tuple[Intent, ...]:
    if not strikes:
        return tuple(intents)
    return tuple(replace(i, response_strikes=strikes) if isinstance(i, RecordTurn) else i
                 for i in intents)


def _transition_audit(ctx: PlanContext, intents: Sequence[Intent]) -> list[dict[str, Any]]:
    out = []
    for i in intents:
        if isinstance(i, Escalate) and i.scope == "main":
            out.append(audit_event(ctx, "escalated", trigger=i.trigger, reason=i.trigger,
                                   actor=i.actor))
        elif isinstance(i, OnceBoost):
            out.append(audit_event(ctx, "once", trigger="once", reason="once", actor=i.actor))
        elif isinstance(i, Reset):
            out.append(audit_event(ctx, "reset", reason="reset", actor=i.actor))
        elif isinstance(i, Deescalate) and i.scope == "main":
            out.append(audit_event(ctx, "deescalated", reason="deescalated", actor="engine"))
    return out


def build_commit(ctx: PlanContext, decision: TierDecision | None, snapshot: Snapshot,
                 outcome: TurnOutcome, *, trace: Mapping[str, Any] | None = None) -> CommitBatch:
    audit: list[dict[str, Any]] = []
    if decision is not None and decision.denied:
        audit.append(audit_event(ctx, "denied_cap", trigger=decision.trigger,
                                 reason=decision.reason))
    if not outcome.billed_success:
        return CommitBatch(ctx.request_id, (), tuple(audit), trace)

    served_strong = decision is not None and decision.tier == "strong"
    writes: list[SlotWrite] = []
    hour = int(ctx.now // 3600)
    share_ttl = ctx.esc.share_window_h * 3600 + SHARE_TTL_PAD_S

    if ctx.router is not None and ctx.session is not None:
        writes.append(_session_write(ctx, decision, snapshot, outcome))
        if decision is not None and decision.evaluated:
            audit.extend(_transition_audit(ctx, decision.intents))

    if ctx.router is not None:
        ops: list[Op] = [IncrOp(f"share:{hour}:t", 1, share_ttl)]
        if served_strong:
            ops.append(IncrOp(f"share:{hour}:s", 1, share_ttl))
        stats = f"stats:{hour}"
        ops += [HIncrOp(stats, "requests", 1, STATS_TTL_S),
                HIncrOp(stats, "prompt_tokens", outcome.prompt_tokens, STATS_TTL_S),
                HIncrOp(stats, "cached_tokens", outcome.cached_tokens, STATS_TTL_S),
                HIncrOp(stats, "cost_usd", outcome.cost_usd, STATS_TTL_S)]
        if served_strong:
            ops.append(HIncrOp(stats, "strong", 1, STATS_TTL_S))
        if decision is not None:
            if decision.denied:
                ops.append(HIncrOp(stats, f"denied:{decision.denied}", 1, STATS_TTL_S))
            for i in decision.intents:
                if isinstance(i, Escalate) and i.scope == "main":
                    ops.append(HIncrOp(stats, f"escalations:{i.trigger}", 1, STATS_TTL_S))
                elif isinstance(i, OnceBoost):
                    ops.append(HIncrOp(stats, "escalations:once", 1, STATS_TTL_S))
            if decision.shadow and decision.shadow.get("would"):
                ops.append(HIncrOp(stats, "shadow_would_escalate", 1, STATS_TTL_S))
        if ctx.percentile_sample is not None:
            ops.append(PushOp("pct", repr(round(ctx.percentile_sample, 6)), 1000, 30 * 86400))
        for arm, inc in ctx.linucb.items():
            ops.extend(HIncrOp(f"linucb:{arm}", str(j), v, 90 * 86400)
                       for j, v in enumerate(inc) if v)
        if ctx.session is not None:
            ops.append(ZAddOp("recent", ctx.session, ctx.now, RECENT_MAX, 7 * 86400))
        if ctx.affinity is not None:
            key, pin, ttl = ctx.affinity
            ops.append(SetOp(f"aff:{key}", orjson.dumps(dict(pin)).decode(), ttl))
        writes.append(SlotWrite(SlotRef.of_router(ctx.router), tuple(ops)))

    ws: list[Op] = [IncrOp(f"share:{hour}:t", 1, share_ttl)]
    if served_strong or ctx.counts_strong_in_workspace:
        ws.append(IncrOp(f"share:{hour}:s", 1, share_ttl))
    writes.append(SlotWrite(SlotRef("workspace"), tuple(ws)))
    return CommitBatch(ctx.request_id, tuple(writes), tuple(audit), trace)


def _session_write(ctx: PlanContext, decision: TierDecision | None, snapshot: Snapshot,
                   outcome: TurnOutcome) -> SlotWrite:
    assert ctx.router is not None and ctx.session is not None
    served = decision.tier if decision is not None else "base"
    ops: list[Op] = []
    if outcome.model:
        if served == "base" and ctx.explicit_session and ctx.durable_store:
            model_ttl = float(LONG_PIN_S)
        else:
            model_ttl = outcome.window_s
        ops.append(SetOp(f"pin:{served}", outcome.model, model_ttl))
    if outcome.channel is not None and outcome.key_index is not None:
        pin = {"channel": outcome.channel, "key_index": outcome.key_index,
               "key_fp": outcome.key_fp}
        ops.append(SetOp(f"chan:{served}", orjson.dumps(pin).decode(), outcome.window_s))
    mutate = None
    if decision is not None and decision.evaluated:
        intents = _with_response(decision.intents, outcome.response_strikes)
        mutate = functools.partial(_mutate, intents=intents, now=ctx.now, esc=ctx.esc)
        if decision.state_tier == "strong":
            ops.append(ExpireAtLeastOp("pin:base", ctx.esc.tier_ttl_s))
    return SlotWrite(SlotRef.of_session(ctx.router, ctx.session), tuple(ops), mutate=mutate,
                     expected_version=snapshot.tier_version, base_doc=snapshot.tier,
                     tier_ttl_s=ctx.esc.tier_ttl_s)


def _mutate(doc: dict[str, Any] | None, *, intents: tuple[Intent, ...], now: float,
            esc: EscalationConfig) -> dict[str, Any] | None:
    return apply_intents(doc, intents, now, esc)

