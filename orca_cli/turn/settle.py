"""`settle`: a finished turn becomes its commit batch and its trace (SPEC §3 steps 9-10, §8).

Pure: the handler (and the replay) await the commit it returns. A billed success commits the
decision's intents, the pins and counters; a refusal or an upstream failure commits only the
trace; a degraded store gets the trace alone, held until the store answers again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from orca_cli.config.schema import Config, EscalationConfig, RouterConfig
from orca_cli.errors import Refusal
from orca_cli.immutable import immutable
from orca_cli.routing.candidates import key_fp as fingerprint
from orca_cli.routing.candidates import model_config
from orca_cli.routing.cost import request_cost
from orca_cli.routing.linucb import context_vector, linucb_increments, linucb_reward
from orca_cli.routing.modes import channel_price
from orca_cli.routing.route import Attempt, RoutePlan
from orca_cli.state import keys as K
from orca_cli.state.base import CommitBatch, CommitResult, DelOp, SetOp, SlotRef, SlotWrite
from orca_cli.state.plan import (
    PlanContext,
    TurnOutcome,
    build_commit,
    figures_ops,
    settle_batch,
    stats_ops,
)
from orca_cli.trace.build import Trace, TraceHead, TraceResult, refusal_trace
from orca_cli.turn.model import Arrival, Outcome, RequestHead, Turn
from orca_cli.turn.prepare import response_key
from orca_cli.wire.request_facts import one_hour_cache
from orca_cli.wire.session_id import resolve_session_id
from orca_cli.wire.usage import Usage

__all__ = ["FollowUp", "Served", "Settled", "refused", "settle"]

FollowUp = Callable[[CommitResult], "CommitBatch | None"]

AFFINITY_TTL_S = 900.0
AFFINITY_MAX_AGE_S = 86400.0
DEFAULT_WINDOW_S = 300.0
STORED_RESPONSE_TTL_S = 30 * 86400.0


@immutable
class Served:
    """The facts of the attempt that served, for the commit and the trace."""

    usage: Usage | None = None
    cost: float = 0.0
    window_s: float = DEFAULT_WINDOW_S
    key_fp: str = ""


@immutable
class Settled:
    batch: CommitBatch  # the trace rides on it
    follow_up: FollowUp | None = None  # what depends on the commit's result
    # Degraded store, billed success: the pin to remember in process (model, channel pin).
    degraded_pin: tuple[str, dict[str, Any], float] | None = None
    usage: Usage | None = None
    cost: float = 0.0


def _served(cfg: Config, turn: Turn) -> Served:
    att, tap = turn.outcome.served, turn.outcome.tap
    if att is None:
        return Served()
    ch = cfg.channel(att.channel)
    window = float(ch.cache_ttl_s) if ch is not None else DEFAULT_WINDOW_S
    # Anthropic's cache_control `ttl: "1h"` (the OpenAI formats have no such field)
    if turn.api == "anthropic" and one_hour_cache(turn.body):
        window = max(window, 3600.0)
    usage = tap.usage if tap is not None else None
    # SPEC §20: at the serving channel's price of the model (its `prices` override)
    cost = (request_cost(usage, turn.api, channel_price(att.model, att.channel, cfg))
            if usage else 0.0)
    return Served(usage, cost, window, fingerprint(ch, att.key_index))


def settle(cfg: Config, turn: Turn, *, durable: bool, latency_ms: float) -> Settled:
    """The commit and trace of a turn whose plan was made and whose forwarding finished."""
    plan = turn.plan
    assert plan is not None
    out = turn.outcome
    sv = _served(cfg, turn)
    router = turn.router
    esc = router.escalation if router is not None else EscalationConfig()
    billed = out.billed_success
    if turn.side is not None and not turn.side_alias:
        return _side_settle(cfg, turn, sv, latency_ms)
    if turn.degraded:
        trace = _trace(turn, sv, committed=False, latency_ms=latency_ms)
        pin = None
        if turn.degraded and billed and out.served is not None and turn.session:
            att = out.served
            pin = (att.model, {"channel": att.channel, "key_index": att.key_index,
                               "key_fp": sv.key_fp}, sv.window_s)
        return Settled(CommitBatch(turn.request_id, trace=trace), degraded_pin=pin,
                       usage=sv.usage, cost=sv.cost)
    strikes = out.tap.signals() if (billed and out.tap is not None) else ()
    ctx = _context(cfg, turn, esc, sv, billed=billed, strike=bool(strikes), durable=durable)
    usage = sv.usage
    served = out.served
    # By position, in field order (as the plan context and the trace's parts): matching
    # keywords costs about three times the construction, on every request.
    outcome = TurnOutcome(
        billed,  # billed_success
        served.model if served else None,  # model
        served.channel if served else None,  # channel
        served.key_index if served else None,  # key_index
        sv.key_fp,  # key_fp
        sv.window_s,  # window_s
        tuple(strikes),  # response_strikes
        usage.prompt_tokens if usage else 0,  # prompt_tokens
        usage.cached_tokens if usage else 0,  # cached_tokens
        usage.cache_write_tokens if usage else 0,  # cache_write_tokens
        usage.output_tokens if usage else 0,  # output_tokens
        sv.cost,  # cost_usd
        400 <= out.status < 500 and out.status not in (408, 429))  # client_error
    # A billed success always writes (the workspace's share count at least), so the trace
    # says committed for it, and rides on the batch from the start.
    trace = _trace(turn, sv, committed=billed, latency_ms=latency_ms)
    batch = build_commit(ctx, plan.decision, turn.snapshot, outcome, trace=trace,
                         settle_transitions=True)
    assert batch.writes or not billed
    batch = _with_dropped_pins(batch, plan, out, turn.pin_router, turn.session)
    if turn.pin_superseded:
        batch = _without_pin_writes(batch, plan.decision.tier)
    if turn.routed is not None and billed:  # SPEC §17: budget spend, once per request
        batch = replace(batch, writes=(*batch.writes, turn.routed.spend_write(sv.cost)))
    if turn.side_alias:  # served as any sessionless request, counted in its session's figures
        batch = replace(batch, writes=(*batch.writes, *_side_figures(cfg, turn, sv)))
    # Racing identical escalations merge: only the commit that changed the tier audits it.
    # The settle runs once the result is known, after a re-send too if the commit is held.
    return Settled(batch, partial(settle_batch, ctx, batch), None, usage, sv.cost)


def _side_settle(cfg: Config, turn: Turn, sv: Served, latency_ms: float) -> Settled:
    """A side request writes nothing of its session but the count of its figures, and the
    serving router's hourly figures (`orca stats`)."""
    writes: tuple[SlotWrite, ...] = ()
    usage = sv.usage
    if turn.side_of is not None and turn.outcome.billed_success and not turn.degraded:
        outcome = _side_outcome(sv)
        writes = _side_figures(cfg, turn, sv)
        if turn.router is not None:
            writes += (SlotWrite(SlotRef.of_router(turn.router.name),
                                 tuple(stats_ops(int(turn.now // 3600), outcome, side=True))),)
    if turn.routed is not None and turn.outcome.billed_success and not turn.degraded:
        writes = (*writes, turn.routed.spend_write(sv.cost))
    trace = _trace(turn, sv, committed=bool(writes), latency_ms=latency_ms)
    return Settled(CommitBatch(turn.request_id, writes, trace=trace), usage=usage, cost=sv.cost)


def _side_outcome(sv: Served) -> TurnOutcome:
    usage = sv.usage
    return TurnOutcome(
        billed_success=True, prompt_tokens=usage.prompt_tokens if usage else 0,
        cached_tokens=usage.cached_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0, cost_usd=sv.cost)


def _side_figures(cfg: Config, turn: Turn, sv: Served) -> tuple[SlotWrite, ...]:
    """A billed side request's count in its session's figures, when the session's router is
    known (`Turn.side_of`)."""
    if turn.side_of is None or not turn.outcome.billed_success or turn.degraded:
        return ()
    router_name, session = turn.side_of[0], turn.side_of[1].id
    router = cfg.routers.get(router_name)
    if router is None:
        return ()
    return (SlotWrite(SlotRef.of_session(router_name, session),
                      figures_ops(_side_outcome(sv), float(router.escalation.tier_ttl_s),
                                  side=True)),)


def _context(cfg: Config, turn: Turn, esc: EscalationConfig, sv: Served, *, billed: bool,
             strike: bool, durable: bool) -> PlanContext:
    plan = turn.plan
    assert plan is not None and turn.delta is not None
    delta = turn.delta
    return PlanContext(
        turn.request_id,  # request_id
        turn.router_name,  # router
        turn.session,  # session
        bool(turn.sid and turn.sid.explicit),  # explicit_session
        durable,  # durable_store
        esc,  # esc
        turn.now,  # now
        plan.counts_strong_in_workspace,  # counts_strong_in_workspace
        (delta.score if esc.threshold == "percentile" and delta.is_user_turn
         else None),  # percentile_sample
        _linucb(cfg, turn.router, plan, turn.outcome.served, billed, strike, turn),  # linucb
        _stored_response(cfg, turn, sv, durable) or _affinity(turn, sv),  # affinity
        "client",  # actor
        plan.tier_state,  # base_state
        turn.target.model if turn.direct is not None else None,  # direct
    )


def _trace(turn: Turn, sv: Served, *, committed: bool, latency_ms: float) -> Trace:
    out, usage = turn.outcome, sv.usage
    att = out.served
    sid = turn.sid
    side = turn.side_of[1] if not sid and turn.side_of else None
    if sid is None and side is None and turn.routed is not None and turn.routed.sid is not None \
            and turn.routed.sid.explicit:
        # a route's sessionless target: the session the request named, its budgets' session
        side = turn.routed.sid
    head = TraceHead(
        turn.request_id,  # request_id
        turn.client_request_id,  # client_request_id
        turn.now,  # ts
        turn.api,  # inbound_api
        turn.target.requested,  # requested_model
        sid.id if sid else side.id if side else None,  # session_id
        sid.source if sid else side.source if side else None,  # session_source
        turn.router_name,  # router
        turn.stream)  # stream
    result = TraceResult(
        out.shown_status,  # status
        ({"model": att.model, "channel": att.channel, "key_index": att.key_index,
          "key_fp": sv.key_fp} if att else None),  # selected
        tuple(out.attempts),  # attempts
        (_usage_doc(usage) if usage else None),  # usage
        sv.cost,  # cost_usd
        committed,  # committed
        turn.degraded,  # degraded
        _error(turn, latency_ms),  # error
        ("warm" if usage.cached_tokens > 0 else "cold") if usage else None,  # cache
        latency_ms)  # latency_ms
    # The trace's own keys after the decision's, in this order, when the request has them.
    extras: dict[str, Any] = {}
    if turn.side is not None:
        extras["side"] = {"rule": turn.side}
    if turn.purpose is not None:
        extras["purpose"], extras["parent_request_id"] = turn.purpose, turn.parent_request_id
    if out.own_kind is not None:
        extras["error_kind"] = out.own_kind
    if out.translation is not None and att is not None:
        extras["translation"] = out.translation
    if turn.routed is not None:
        extras["route"] = turn.routed.trace()
    return Trace(head, turn.delta, turn.plan, result, extras or None)


def _error(turn: Turn, latency_ms: float) -> str | None:
    """The trace's `error`: orca's own answer's message, else what cut the answer short — the
    client hanging up, or an upstream stream that failed after its first byte (SPEC §7: a
    failure, though its 200 was sent). Content-free: an attempt's error is its class."""
    out = turn.outcome
    if out.own_error is not None:
        return out.own_error
    if out.cancelled:
        return f"the client closed the connection after {latency_ms:.0f} ms"
    if out.served is None or out.tap is None or not turn.stream:
        return None
    broke = out.attempts[-1].error  # the attempt that served is the last one made
    if broke is not None:
        return f"the upstream stream broke after the first byte: {broke}"
    if not (out.tap.completed or out.tap.error_finish):  # its client got an error event
        return "the upstream stream ended before its final event"
    if out.tap.error_finish:  # the upstream's own error event ended it
        kind = out.tap.error_kind
        return "the upstream ended the stream with an error event" + (f" ({kind})" if kind
                                                                       else "")
    return None


def refused(head: RequestHead, refusal: Refusal, arrival: Arrival,
            route: dict[str, Any] | None = None, *, latency_ms: float = 0.0) -> CommitBatch:
    """The trace-only commit of a request refused before routing (`route`: the route step
    of a request a `deny` node refused). It names the session the request gave explicitly
    (SPEC §1.4's chain, so `orca requests --session` finds it); one that would only be
    derived is left out: it hashes the router, which a refused request may not have."""
    sid = resolve_session_id(head.header_map(), arrival.body, router="", api=head.api)
    named = sid if sid.explicit else None
    trace = refusal_trace(request_id=arrival.request_id,
                          client_request_id=head.client_request_id, ts=arrival.now,
                          inbound_api=head.api, status=refusal.status, error=refusal.message,
                          requested_model=arrival.requested_model,
                          session_id=named.id if named else None,
                          session_source=named.source if named else None,
                          latency_ms=latency_ms)
    if route is not None:
        trace["route"] = route
    return CommitBatch(arrival.request_id, trace=trace)


def _linucb(cfg: Config, router: RouterConfig | None, plan: RoutePlan, att: Attempt | None,
            billed: bool, strike: bool, turn: Turn) -> dict[str, list[float]]:
    """The bandit's update for the arm that served, applied only at commit (SPEC §6.6)."""
    if router is None or router.strategy != "linucb" or att is None or plan.ranking is None:
        return {}
    assert turn.delta is not None
    prices = [model_config(m, cfg) for m in plan.ranking.ordered]
    dearest = max((p.input + p.output for p in prices), default=0.0)
    mine = model_config(att.model, cfg)
    reward = linucb_reward(billed, strike, mine.input + mine.output, dearest,
                           router.linucb_cost_weight)
    x = context_vector(turn.delta.difficulty.values, cfg.difficulty)
    return {att.model: linucb_increments(x, reward)}


def _stored_response(cfg: Config, turn: Turn, sv: Served,
                     durable: bool) -> tuple[str, dict[str, Any], float] | None:
    """A Responses answer the provider stored (`store` not false): record which channel, key
    and model made it, so a later `previous_response_id` is served there (SPEC §13.1) — 30
    days on a durable store, the traces' lifetime in memory. Recorded where affinity pins
    live; on such a turn of a sessionless request this record takes the affinity's place."""
    att, tap = turn.outcome.served, turn.outcome.tap
    if (turn.api != "responses" or att is None or tap is None or turn.router is None
            or turn.body.get("store") is False):
        return None  # (a concrete model's request does not follow a previous response)
    rid = tap.response_head().get("id")
    if not isinstance(rid, str) or not rid or not turn.outcome.billed_success:
        return None
    ttl = STORED_RESPONSE_TTL_S if durable else float(cfg.server.trace_ttl_s)
    return response_key(rid), {"channel": att.channel, "key_index": att.key_index,
                               "key_fp": sv.key_fp, "model": att.model}, ttl


def _affinity(turn: Turn, sv: Served) -> tuple[str, dict[str, Any], float] | None:
    """Sessionless cache-aware affinity: pin the prefix to the channel+key that reported a
    real cache read, 15 min, refreshed on each further read, for at most 24 h (SPEC §5)."""
    att, usage = turn.outcome.served, sv.usage
    key = turn.affinity_key  # derived once, by `prepare`, for a router's or a concrete model's
    if key is None or turn.previous_response is not None:
        return None  # that key names a stored response's record, not a prefix
    if att is None or usage is None:
        return None
    if usage.cached_tokens <= 0:
        return None
    prior = turn.snapshot.affinity
    since = turn.now
    if prior and prior.get("channel") == att.channel and prior.get("key_index") == att.key_index:
        since = float(prior.get("since", turn.now))
        if turn.now - since > AFFINITY_MAX_AGE_S:
            return None
    return key, {"channel": att.channel, "key_index": att.key_index, "key_fp": sv.key_fp,
                 "since": since}, AFFINITY_TTL_S


def _without_pin_writes(batch: CommitBatch, tier: str) -> CommitBatch:
    """The batch without its session write's model and channel pins of `tier`: a request
    served on a pin another request of the session has since replaced writes the figures of
    its turn, never the old pin back over the new one (the last commit would win)."""
    keys = (K.pin_key(tier), K.chan_key(tier))
    writes = tuple(replace(w, ops=tuple(op for op in w.ops
                                        if not (isinstance(op, SetOp) and op.key in keys)))
                   if w.slot.kind == "session" else w for w in batch.writes)
    return replace(batch, writes=writes)


def _with_dropped_pins(batch: CommitBatch, plan: RoutePlan, out: Outcome,
                       router: str | None, session: str | None) -> CommitBatch:
    """Delete the pins dropped on read (SPEC §5) that this commit does not rewrite. A followed
    pin whose upstream failed while another served is simply replaced by the fresh pin the
    commit sets. Only with a billed success; pins are read for the served tier only."""
    if (not plan.dropped_pins or router is None or session is None or not out.billed_success
            or not batch.writes):
        return batch
    sets = {op.key for w in batch.writes for op in w.ops if isinstance(op, SetOp)}
    drops = [d for d in plan.dropped_pins if d not in sets]
    if not drops:
        return batch
    first, *rest = batch.writes
    if first.slot.kind != "session":
        return batch
    first = replace(first, ops=first.ops + tuple(DelOp(d) for d in drops))
    return replace(batch, writes=(first, *rest))


def _usage_doc(usage: Usage) -> dict[str, Any]:
    """The trace's `usage`: the token counts, and `speed: "fast"` for a fast-mode answer."""
    doc: dict[str, Any] = {"prompt_tokens": usage.prompt_tokens,
                           "cached_tokens": usage.cached_tokens,
                           "cache_write_tokens": usage.cache_write_tokens,
                           "output_tokens": usage.output_tokens}
    if usage.fast:
        doc["speed"] = "fast"
    return doc
