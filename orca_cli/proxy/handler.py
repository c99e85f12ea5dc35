"""One proxied request, end to end (SPEC §3): intake → prepare → read → decide → forward →
settle → commit.

The pure steps are `orca_cli.turn` (`prepare`, `decide`, `settle`); this module does the I/O
between them: the store read, the upstream attempts (`proxy.forward`), and the commit, awaited
in the request's own task once the last byte was sent. Every request writes its trace,
failures and refusals included. Bad input gets orca's own error in the inbound API's shape and
leaves no state behind.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import replace
from typing import Any

from orca_cli.errors import Refusal
from orca_cli.proxy.forward import Inbound, forward
from orca_cli.proxy.guard import ClientGone, GuardPolicy, send_error
from orca_cli.proxy.in_flight import Reservation, followed_pins
from orca_cli.proxy.intake import IntakeError, read_json
from orca_cli.proxy.routes_live import deny_refusal, route_step
from orca_cli.proxy.runtime import Runtime, new_request_id
from orca_cli.routing.candidates import Healthy
from orca_cli.routing.route import Attempt, RoutePlan
from orca_cli.state.base import CommitResult
from orca_cli.turn import Arrival, RequestHead, Turn, decide, prepare, refused, settle
from orca_cli.types import ClientLink, Receive, Send

__all__ = ["handle_generate", "serve_turn"]

log = logging.getLogger("orca")


async def handle_generate(rt: Runtime, policy: GuardPolicy, head: RequestHead, receive: Receive,
                          send: Send) -> None:
    start = rt.clock.monotonic()
    request_id = new_request_id()
    try:
        raw, body = await read_json(receive, policy, head.client)
    except IntakeError as exc:
        unread = Arrival(request_id, b"", {}, rt.clock.now(), start)
        return await _refuse(rt, head, send, Refusal(exc.status, str(exc)), unread,
                             close=exc.close)
    except ClientGone:
        return
    arrival = Arrival(request_id, raw, body, rt.clock.now(), start)
    routed = None
    if rt.live_routes is not None:  # SPEC §17: routes, inbound keys or budgets are set
        routed = await route_step(rt, rt.live_routes, head, body, request_id)
        if routed.decision.kind == "deny":
            return await _refuse(rt, head, send, deny_refusal(routed), arrival,
                                 route=routed.trace())
    prepared = prepare(rt.cfg, rt.scorer, head, arrival, routed=routed)
    if isinstance(prepared, Refusal):
        return await _refuse(rt, head, send, prepared, arrival)
    if head.client is not None:  # orca's own server
        return await serve_turn(rt, prepared, head.client, send)
    client = ClientLink()  # another ASGI server: a task waits for `http.disconnect`
    watcher = asyncio.ensure_future(_watch_disconnect(receive, client))
    try:
        await serve_turn(rt, prepared, client, send)
    finally:
        watcher.cancel()


async def _watch_disconnect(receive: Receive, client: ClientLink) -> None:
    while (await receive()).get("type") != "http.disconnect":
        pass
    client.fire()


async def _refuse(rt: Runtime, head: RequestHead, send: Send, refusal: Refusal,
                  arrival: Arrival, *, close: bool = False,
                  route: dict[str, Any] | None = None) -> None:
    await send_error(send, head.api, refusal, close=close,
                     extra_headers=((b"x-orca-request-id", arrival.request_id.encode()),))
    took = rt.clock.monotonic() - arrival.started
    rt.metrics.request(head.api, "", refusal.status, took, "")
    batch = refused(head, refusal, arrival, route, latency_ms=took * 1000)
    rt.emit_trace(batch.trace)
    await rt.gate.commit(batch)


async def _classify(rt: Runtime, turn: Turn) -> None:
    """The auto router's model classifier (SPEC §16) for a turn of an auto router, a child
    request through orca, bounded by `classifier_timeout_ms`; on any failure the strategy
    classifies locally."""
    auto = rt.cfg.auto
    if auto.classifier == "local" or turn.delta is None or turn.purpose is not None:
        return
    from orca_cli.proxy.auto_classifier import classify_for_auto
    from orca_cli.proxy.child import ChildClassifier

    turn.classification = await classify_for_auto(ChildClassifier(rt, turn.routed), auto, turn.body,
                                                  turn.delta, parent_request_id=turn.request_id)


async def serve_turn(rt: Runtime, turn: Turn, client: ClientLink, send: Send) -> None:
    """A prepared turn from the store read to its commit (a client's or a child request)."""
    await rt.gate.read_turn(turn)
    if turn.router is not None and turn.router.strategy == "auto":
        await _classify(rt, turn)
    assert rt.health is not None
    healthy = rt.health.request_view()
    # No await from the in-flight view to the reservation (`proxy.in_flight`).
    key = ((turn.router.name, turn.session)
           if turn.router is not None and turn.session is not None and turn.side is None
           else None)
    read, followed = turn.snapshot, None
    if key is not None:
        turn.in_flight = rt.in_flight.view(key, read.tier, turn.started)
        followed = rt.in_flight.follow(key, read, turn.started)
        if followed is not None:  # another request of the session picked in flight
            turn.snapshot = followed
    plan = decide(rt.cfg, turn, scorer=rt.scorer, healthy=healthy, rng=rt.rng,
                  measured=rt.measured.figures)
    held = pick = None
    shared = False  # the transition is also reserved in the store, across sidecars
    if key is not None:
        held = rt.in_flight.reserve(key, plan)
        if held is not None:
            shared, plan = await _reserve_shared(rt, turn, key, held, plan, healthy)
            if not shared:
                held = None
        if followed is not None:
            plan = turn.plan = followed_pins(plan, read, followed)
        else:
            pick = rt.in_flight.pick(key, plan, read, rt.cfg.compiled.key_fps)
    result: CommitResult | None = None
    try:
        tier_header = plan.decision.header.encode()
        rid = turn.request_id.encode()

        def orca_headers(att: Attempt | None) -> list[tuple[bytes, bytes]]:
            out = [(b"x-orca-request-id", rid), (b"x-orca-session-tier", tier_header)]
            if att is not None:
                out += [(b"x-orca-model", att.model.encode()), (b"x-orca-channel", att.channel.encode())]
            return out

        if plan.refusal is not None:
            status, kind, message = plan.refusal
            retry, limited = (_held_back(rt, plan) if kind == "no_candidate" else (0, True))
            if retry:
                # Every key that could serve waits out its provider's Retry-After: the client
                # is told when to come back, not that retrying is pointless — as a rate limit
                # (429) when a provider said so, else as the overload it was (503).
                if limited:
                    status, kind = 429, "rate_limited"
                    why = "is rate-limited by its provider"
                else:
                    status, kind = 503, "overloaded"
                    why = "was told by its provider to wait (overloaded)"
                message = f"every key that can serve this request {why}; retry after {retry} s"
                extra = [(b"retry-after", str(retry).encode())]
            else:
                extra = [(b"x-should-retry", b"false")]
            # The refusal's kind is the OpenAI-shape `code` (`workspace_cap`, `no_candidate`,
            # `context_length_exceeded`); Anthropic's type follows the status.
            await send_error(send, turn.api, status, message, code=kind,
                             extra_headers=[*orca_headers(None), *extra])
            turn.outcome.status, turn.outcome.own_error = status, message
            turn.outcome.own_kind = kind
        else:
            inb = Inbound.of(turn, rt.cfg.server, orca_headers, healthy)
            await forward(rt, inb, plan.attempts, send, client, turn.outcome, turn.started)
            att = turn.outcome.served
            if key is not None and pick is None and att is not None:
                turn.pin_superseded = rt.in_flight.superseded(
                    key, plan.decision.tier, att.model, att.channel, att.key_index)
        result = await _finish(rt, turn)
    finally:
        if held is not None:
            rt.in_flight.release(held, result, rt.clock.monotonic())
            if shared and key is not None:
                await rt.gate.release_transition(*key, turn.request_id)
        if pick is not None:
            rt.in_flight.end_pick(pick, rt.clock.monotonic())


async def _reserve_shared(rt: Runtime, turn: Turn, key: tuple[str, str], held: Reservation,
                          plan: RoutePlan, healthy: Healthy) -> tuple[bool, RoutePlan]:
    """The plan's new transition reserved in the store as well (sidecars or `--workers`
    sharing a Redis each keep their own in-flight table): (reserved, the plan). When the cap
    leaves no room across the sidecars, the local reservation is given back and the request
    decided again as at the cap (`denied:session_cap`): a burst of `once` asks spread over
    workers is served strong once, not once per worker."""
    router = turn.router
    assert router is not None
    esc = router.escalation
    ttl = rt.cfg.server.total_timeout_s + 60  # outlives the request; given back at its end
    if await rt.gate.reserve_transition(*key, turn.request_id, escalate=held.escalate,
                                        max_count=esc.max_per_session, ttl_s=ttl):
        return True, plan
    rt.in_flight.release(held, None, rt.clock.monotonic())
    turn.in_flight = replace(turn.in_flight, count_floor=esc.max_per_session)
    again = decide(rt.cfg, turn, scorer=rt.scorer, healthy=healthy, rng=rt.rng,
                   measured=rt.measured.figures)
    return False, again


def _held_back(rt: Runtime, plan: RoutePlan) -> tuple[int, bool]:
    """Whole seconds until the first key of a refused plan's candidates may be tried again
    after an upstream's `Retry-After` (0 when none is waiting on one: the breaker benched
    them, or they were never usable), and whether that key waits out a rate limit (429)
    rather than an overload (503, 529)."""
    health = rt.health
    assert health is not None
    slots = rt.cfg.compiled.key_slots
    waits = [(w, channel, i)
             for c in plan.candidates if c.excluded == "unhealthy"
             for channel, why in c.filtered if why == "unhealthy"
             for i, _ in slots.get(channel, ())
             if (w := health.retry_after_remaining(channel, i)) > 0]
    if not waits:
        return 0, True
    wait, channel, i = min(waits)
    return math.ceil(wait), health.retry_after_status(channel, i) == 429


async def _finish(rt: Runtime, turn: Turn) -> CommitResult | None:
    """Commit after a billed success (awaited here, after the last byte), then the trace.
    The commit's result; None when it was held for the store."""
    latency_ms = (rt.clock.monotonic() - turn.started) * 1000
    done = settle(rt.cfg, turn, durable=rt.gate.store.backend == "redis",
                  latency_ms=latency_ms)
    rt.emit_trace(done.batch.trace)
    rt.measured.after(turn.outcome, done.usage.output_tokens if done.usage else 0, turn.stream)
    result = await rt.gate.commit(done.batch, follow_up=done.follow_up)
    scope = turn.pin_router
    if done.degraded_pin is not None and scope is not None and turn.session:
        model, chan, window = done.degraded_pin
        rt.gate.degraded_pins.put(scope, turn.session, model, chan, window)
    router = turn.router_name or ""
    tier = turn.plan.decision.tier if turn.plan is not None else ""
    rt.metrics.request(turn.api, router, turn.outcome.shown_status, latency_ms / 1000, tier)
    if done.usage is not None:
        rt.metrics.tokens(router, done.usage.prompt_tokens, done.usage.cached_tokens,
                          done.cost)
    return result
