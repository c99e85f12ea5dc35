"""One proxied request, end to end (SPEC §3): parse → read → score → resolve → select →
forward → commit → trace.

The decision is `routing.route.plan_route` (pure); this module only gathers its inputs, walks
the attempts (`proxy.forward`) and, after a billed success, commits the intents in the
request's own task once the last byte was sent (`state.plan.build_commit`). Every request
writes its trace, failures and refusals included. Bad input gets orca's own error in the
inbound API's shape and leaves no state behind.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from functools import partial
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import orjson

from orca_cli.config.schema import EscalationConfig
from orca_cli.errors import UnknownModel
from orca_cli.proxy.forward import ForwardResult, Inbound, forward
from orca_cli.proxy.guard import BodyTimeout, BodyTooLarge, ClientGone, read_body, send_error
from orca_cli.proxy.runtime import Runtime, new_request_id
from orca_cli.routing.caps import window_hours
from orca_cli.routing.candidates import key_fp as fingerprint
from orca_cli.routing.candidates import model_config
from orca_cli.routing.cost import request_cost
from orca_cli.routing.features import Delta
from orca_cli.routing.linucb import context_vector, linucb_increments, linucb_reward
from orca_cli.routing.route import Attempt, RouteInput, RoutePlan, plan_route
from orca_cli.routing.target import Target, resolve_target
from orca_cli.state.base import CommitBatch, DelOp, ReadRequest, SetOp, Snapshot
from orca_cli.state.plan import PlanContext, TurnOutcome, build_commit, settle_batch
from orca_cli.trace.build import build_trace, refusal_trace
from orca_cli.wire.session_id import SessionId, derive_session_id, resolve_session_id

__all__ = ["handle_generate"]

log = logging.getLogger("orca")

Api = Literal["openai", "anthropic"]
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

ASKS = ("strong", "once", "base")
AFFINITY_TTL_S = 900.0
AFFINITY_MAX_AGE_S = 86400.0
ONE_HOUR_MARKERS = (b'"ttl":"1h"', b'"ttl": "1h"')
PERCENTILE_SAMPLES = 1000
MAX_JSON_DEPTH = 254  # what orjson writes back (it reads 1024 levels)


def _headers(scope: Scope) -> list[tuple[str, str]]:
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]


def _too_deep(raw: bytes, body: dict[str, Any]) -> bool:
    """Nested deeper than orjson can write back: such a body parses, then breaks whatever
    re-encodes it (the forwarder adding `include_usage`, the sim hashing its messages). A body
    with fewer brackets cannot nest that deep and skips the check; a larger one pays one
    orjson encode, about a tenth of its parse."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return False
    try:
        orjson.dumps(body)
    except TypeError:
        return True
    return False


def _sessionless(body: Mapping[str, Any]) -> bool:
    routing = body.get("routing")
    return isinstance(routing, Mapping) and routing.get("session_affinity") is False


def _cache_aware_off(body: Mapping[str, Any]) -> bool:
    provider = body.get("provider")
    return isinstance(provider, Mapping) and provider.get("cache_aware_routing") is False


async def handle_generate(rt: Runtime, scope: Scope, receive: Receive, send: Send, api: Api,
                          path: str, limit: int, deadline_s: float) -> None:
    start = rt.clock.monotonic()
    request_id = new_request_id()
    rid_header = (b"x-orca-request-id", request_id.encode())

    async def refuse(status: int, message: str, *, kind: str | None = None,
                     close: bool = False, extra: tuple[tuple[bytes, bytes], ...] = ()) -> None:
        await send_error(send, api, status, message, kind=kind,
                         extra_headers=(rid_header, *extra), close=close)
        rt.metrics.request(api, "", status, rt.clock.monotonic() - start, "")
        client_rid = next((v.decode("latin-1") for k, v in scope["headers"]
                           if k.lower() == b"x-request-id"), None)
        trace = refusal_trace(request_id=request_id, client_request_id=client_rid,
                              ts=rt.clock.now(), inbound_api=api, status=status, error=message)
        await rt.gate.commit(CommitBatch(request_id, trace=trace))
        if rt.request_log is not None:
            rt.request_log.emit(trace)

    try:
        raw = await read_body(receive, limit=limit, deadline_s=deadline_s)
    except BodyTooLarge as exc:
        return await refuse(413, str(exc), close=True)
    except BodyTimeout as exc:
        return await refuse(408, str(exc), close=True)
    except ClientGone:
        return
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return await refuse(400, f"the request body is not valid JSON: {exc}")
    if not isinstance(body, dict):
        return await refuse(400, "the request body must be a JSON object")
    if _too_deep(raw, body):
        return await refuse(400, f"the request body nests JSON deeper than {MAX_JSON_DEPTH} "
                                 "levels")
    model_field = body.get("model")
    if not isinstance(model_field, str) or not model_field.strip():
        return await refuse(400, "the `model` field is required: a router (orca/<name>), "
                                 "an alias or a configured model")
    try:
        target = resolve_target(model_field, rt.cfg)
    except UnknownModel as exc:
        return await refuse(404, str(exc))
    headers = _headers(scope)
    hmap = dict(headers)
    ask_raw = hmap.get("x-orcarouter-tier")
    ask = None
    if ask_raw is not None:
        ask = ask_raw.strip().lower()
        if ask not in ASKS:
            return await refuse(400, "X-OrcaRouter-Tier must be one of strong, once, base")
    await _serve(rt, scope, receive, send, api, path, raw, body, target, hmap, headers,
                 ask, request_id, start)


async def _serve(rt: Runtime, scope: Scope, receive: Receive, send: Send, api: Api, path: str,
                 raw: bytes, body: dict[str, Any], target: Target, hmap: dict[str, str],
                 headers: list[tuple[str, str]], ask: str | None, request_id: str,
                 start: float) -> None:
    cfg = rt.cfg
    now = rt.clock.now()
    router = cfg.routers.get(target.router) if target.router else None
    sid: SessionId | None = None
    if router is not None and router.session_aware and not _sessionless(body):
        sid = resolve_session_id(hmap, body, router=router.name, api=api)
    session = sid.id if sid is not None else None
    client_rid = hmap.get("x-request-id")
    delta = rt.scorer.delta(body, api)
    dedupe = ""
    if router is not None and session is not None:
        dedupe = ("c:" + client_rid[:128]) if client_rid else delta.dedupe_key(router.name, session)
    affinity_key = None
    if router is not None and session is None and not _cache_aware_off(body):
        affinity_key = derive_session_id(body, router=router.name, api=api)

    degraded = False
    snapshot = Snapshot()
    if router is not None or target.kind == "model":
        esc = router.escalation if router is not None else None
        req = ReadRequest(
            router=router.name if router is not None else "_direct",
            session=session,
            share_hours=window_hours(now, esc.share_window_h if esc else 24),
            affinity_key=affinity_key,
            linucb_arms=router.allowed_models if router and router.strategy == "linucb" else (),
            percentile_samples=(PERCENTILE_SAMPLES if esc and esc.threshold == "percentile"
                                else 0),
        )
        got = await rt.gate.read(req)
        if got is None:
            degraded = True
            if router is not None and session is not None:
                snapshot = rt.gate.degraded_pins.get(router.name, session)
        else:
            snapshot = got
    assert rt.health is not None
    healthy = rt.health.request_view()
    plan = plan_route(cfg, RouteInput(target=target, api=api, body=body, delta=delta,
                                      est_tokens=len(raw) // 4, session=session,
                                      ask=ask,  # type: ignore[arg-type]
                                      dedupe_key=dedupe, degraded=degraded),
                      snapshot, now=now, scorer=rt.scorer, healthy=healthy, rng=rt.rng)

    def orca_headers(att: Attempt | None) -> list[tuple[bytes, bytes]]:
        out = [(b"x-orca-request-id", request_id.encode()),
               (b"x-orca-session-tier", plan.decision.header.encode())]
        if att is not None:
            out += [(b"x-orca-model", att.model.encode()), (b"x-orca-channel", att.channel.encode())]
        return out

    stream = body.get("stream") is True
    res = ForwardResult()
    if plan.refusal is not None:
        status, kind, message = plan.refusal
        await send_error(send, api, status, message,
                         extra_headers=[*orca_headers(None), (b"x-should-retry", b"false")])
        res.status, res.own_error = status, message
    else:
        opts = body.get("stream_options")
        add_usage = (api == "openai" and stream and not (
            isinstance(opts, dict) and opts.get("include_usage") is True))
        max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        inb = Inbound(api=api, path=path, body=body, headers=headers, stream=stream,
                      add_include_usage=add_usage,
                      max_tokens=max_tokens if isinstance(max_tokens, int) else None,
                      orca_headers=orca_headers, healthy=healthy,
                      raw=raw, model_value=target.requested)
        res = await forward(rt, inb, plan.attempts, send, receive, start)
    await _finish(rt, api, raw, body, target, router.name if router else None, sid, client_rid,
                  delta, plan, res, degraded, snapshot, request_id, now, start, stream)


async def _finish(rt: Runtime, api: Api, raw: bytes, body: dict[str, Any], target: Target,
                  router_name: str | None, sid: SessionId | None, client_rid: str | None,
                  delta: Delta, plan: RoutePlan, res: ForwardResult, degraded: bool,
                  snapshot: Snapshot, request_id: str, now: float, start: float,
                  stream: bool) -> None:
    """Commit after a billed success (awaited here, after the last byte), then the trace."""
    cfg = rt.cfg
    att = res.served
    usage = res.tap.usage if res.tap is not None else None
    cost = 0.0
    window = 300.0
    key_fp = ""
    if att is not None:
        ch = cfg.channel(att.channel)
        window = float(ch.cache_ttl_s) if ch is not None else 300.0
        # Anthropic's cache_control `ttl: "1h"` (the OpenAI format has no such field)
        if api == "anthropic" and b'"1h"' in raw and any(m in raw for m in ONE_HOUR_MARKERS):
            window = max(window, 3600.0)
        key_fp = fingerprint(ch, att.key_index)
        if usage is not None:
            cost = request_cost(usage, api, model_config(att.model, cfg))
    billed = res.billed_success
    session = sid.id if sid is not None else None
    router = cfg.routers.get(router_name) if router_name else None
    esc = router.escalation if router is not None else EscalationConfig()
    strikes = res.tap.signals() if (billed and res.tap is not None) else ()
    if esc is not None and not degraded:
        ctx = PlanContext(
            request_id=request_id, router=router_name, session=session,
            explicit_session=bool(sid and sid.explicit),
            durable_store=rt.gate.store.backend == "redis", esc=esc, now=now,
            base_state=plan.tier_state,
            counts_strong_in_workspace=plan.counts_strong_in_workspace,
            percentile_sample=(delta.score if esc.threshold == "percentile"
                               and delta.is_user_turn else None),
            linucb=_linucb(rt, router, plan, att, billed, bool(strikes), delta),
            affinity=_affinity(snapshot, att, key_fp, usage, session, router_name, raw, body,
                               api, now),
        )
        outcome = TurnOutcome(
            billed_success=billed, model=att.model if att else None,
            channel=att.channel if att else None, key_index=att.key_index if att else None,
            key_fp=key_fp, window_s=window, response_strikes=tuple(strikes),
            prompt_tokens=usage.prompt_tokens if usage else 0,
            cached_tokens=usage.cached_tokens if usage else 0,
            cache_write_tokens=usage.cache_write_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0, cost_usd=cost)
        batch = build_commit(ctx, plan.decision, snapshot, outcome, settle_transitions=True)
        batch = _with_dropped_pins(batch, plan, res, router_name, session)
        trace = _trace(rt, request_id, client_rid, now, sid, router_name, api, target, stream,
                       delta, plan, res, usage, cost, billed and bool(batch.writes), degraded,
                       key_fp, start)
        # Racing identical escalations merge: only the commit that changed the tier audits it.
        # The settle runs once the result is known, after a re-send too if the commit is held.
        await rt.gate.commit(replace(batch, trace=trace),
                             follow_up=partial(settle_batch, ctx, batch))
        if rt.request_log is not None:
            rt.request_log.emit(trace)
    elif degraded:
        # Only the trace: no tier state, pins or counters while degraded. The gate holds it
        # and writes it once the store answers again (SPEC §8: every request has a trace).
        trace = _trace(rt, request_id, client_rid, now, sid, router_name, api, target, stream,
                       delta, plan, res, usage, cost, False, True, key_fp, start)
        await rt.gate.commit(CommitBatch(request_id, trace=trace))
        if rt.request_log is not None:
            rt.request_log.emit(trace)
    if degraded and billed and att is not None and router_name and session:
        rt.gate.degraded_pins.put(router_name, session, att.model,
                                  {"channel": att.channel, "key_index": att.key_index,
                                   "key_fp": key_fp}, window)
    tier = plan.decision.tier
    rt.metrics.request(api, router_name or "", res.status, rt.clock.monotonic() - start, tier)
    if usage is not None:
        rt.metrics.tokens(router_name or "", usage.prompt_tokens, usage.cached_tokens, cost)


def _trace(rt: Runtime, request_id: str, client_rid: str | None, now: float,
           sid: SessionId | None, router: str | None, api: Api, target: Target, stream: bool,
           delta: Delta, plan: RoutePlan, res: ForwardResult, usage: Any, cost: float,
           committed: bool, degraded: bool, key_fp: str, start: float) -> dict[str, Any]:
    att = res.served
    cached = usage.cached_tokens if usage else 0
    return build_trace(
        request_id=request_id, client_request_id=client_rid, ts=now,
        session_id=sid.id if sid else None, session_source=sid.source if sid else None,
        router=router, inbound_api=api, requested_model=target.requested, stream=stream,
        delta=delta, plan=plan,
        selected=({"model": att.model, "channel": att.channel, "key_index": att.key_index,
                   "key_fp": key_fp} if att else None),
        attempts=[a.to_json() for a in res.attempts],
        usage=({"prompt_tokens": usage.prompt_tokens, "cached_tokens": usage.cached_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "output_tokens": usage.output_tokens} if usage else None),
        cost_usd=cost, status=res.status, committed=committed, degraded=degraded,
        error=res.own_error, cache=("warm" if cached > 0 else "cold") if usage else None,
        latency_ms=(rt.clock.monotonic() - start) * 1000)


def _linucb(rt: Runtime, router: Any, plan: RoutePlan, att: Attempt | None, billed: bool,
            strike: bool, delta: Delta) -> dict[str, list[float]]:
    """The bandit's update for the arm that served, applied only at commit (SPEC §6.6)."""
    if router is None or router.strategy != "linucb" or att is None or plan.ranking is None:
        return {}
    cfg = rt.cfg
    prices = [model_config(m, cfg) for m in plan.ranking.ordered]
    dearest = max((p.input + p.output for p in prices), default=0.0)
    mine = model_config(att.model, cfg)
    reward = linucb_reward(billed, strike, mine.input + mine.output, dearest,
                           router.linucb_cost_weight)
    x = context_vector(delta.difficulty.values, cfg.difficulty)
    return {att.model: linucb_increments(x, reward)}


def _affinity(snapshot: Snapshot, att: Attempt | None, key_fp: str, usage: Any,
              session: str | None, router: str | None, raw: bytes, body: dict[str, Any],
              api: Api, now: float) -> tuple[str, dict[str, Any], float] | None:
    """Sessionless cache-aware affinity: pin the prefix to the channel+key that reported a
    real cache read, 15 min, refreshed on each further read, for at most 24 h (SPEC §5)."""
    if session is not None or router is None or att is None or usage is None:
        return None
    if usage.cached_tokens <= 0 or _cache_aware_off(body):
        return None
    prior = snapshot.affinity
    since = now
    if prior and prior.get("channel") == att.channel and prior.get("key_index") == att.key_index:
        since = float(prior.get("since", now))
        if now - since > AFFINITY_MAX_AGE_S:
            return None
    key = derive_session_id(body, router=router, api=api)
    return key, {"channel": att.channel, "key_index": att.key_index, "key_fp": key_fp,
                 "since": since}, AFFINITY_TTL_S


def _with_dropped_pins(batch: CommitBatch, plan: RoutePlan, res: ForwardResult,
                       router: str | None, session: str | None) -> CommitBatch:
    """Delete the pins dropped on read (SPEC §5) that this commit does not rewrite. A followed
    pin whose upstream failed while another served is simply replaced by the fresh pin the
    commit sets. Only with a billed success; pins are read for the served tier only."""
    if router is None or session is None or not res.billed_success or not batch.writes:
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
