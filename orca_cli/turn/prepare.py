"""The pure steps before and at the decision: `prepare` (the request's facts) and `decide`
(the routing plan over the store snapshot). No I/O: the handler reads the store between them.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from orca_cli.config.schema import Config
from orca_cli.errors import Refusal, UnknownModel
from orca_cli.routing.candidates import Healthy
from orca_cli.routing.caps import window_hours
from orca_cli.routing.escalation import TierDecision
from orca_cli.routing.features import Delta, Scorer
from orca_cli.routing.modes import NO_MEASURES, Measured, read_prefs
from orca_cli.routing.route import (
    RouteInput,
    RoutePlan,
    plan_route,
    reachable_window,
    reaches_blind,
)
from orca_cli.routing.side import match_housekeeping
from orca_cli.routing.target import Mode, Target, resolve_target
from orca_cli.routing.tiers import Ask
from orca_cli.state.base import ReadRequest
from orca_cli.state.keys import direct_router
from orca_cli.turn.model import Arrival, RequestHead, Turn
from orca_cli.turn.routes import Routed
from orca_cli.types import MAPPING, Api
from orca_cli.wire.body_check import body_problem, type_name
from orca_cli.wire.estimate import estimate_tokens, needs_vision
from orca_cli.wire.session_id import SessionId, derive_session_id, resolve_session_id
from orca_cli.wire.side_facts import side_facts

__all__ = ["ASKS", "MAX_JSON_DEPTH", "decide", "model_problem", "prepare", "response_key"]

ASKS: tuple[Ask, ...] = ("strong", "once", "base")
PERCENTILE_SAMPLES = 1000
MAX_JSON_DEPTH = 254  # what orjson writes back (it reads 1024 levels)


def _too_deep(raw: bytes, body: dict[str, Any]) -> bool:
    """Nested deeper than orjson can write back: such a body parses, then breaks whatever
    re-encodes it. Writing it back is the test: it costs about half of counting the body's
    brackets (two byte passes), and a body orjson parsed fails to write only by nesting. A
    body built another way (the replay, tests) may fail for another reason (an integer past
    64 bits); one with too few brackets to nest that deep is then not refused for depth."""
    try:
        orjson.dumps(body)
    except TypeError:
        return raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH
    return False


def model_problem(value: object) -> str:
    """The 400 for a `model` field that is missing, empty or not a string."""
    what = "a router (orca/<name>), an alias or a configured model"
    if value is None:
        return f"the `model` field is required: {what}"
    if isinstance(value, str):
        return f"the `model` field is empty: name {what}"
    return f"the `model` field must be a string naming {what}, not {type_name(value)}"


def response_key(response_id: str) -> str:
    """Where a Responses answer's (channel, key, model) is recorded: `r:` + its id's hash
    (ids are the provider's; hashing keeps any of them a safe store key)."""
    return "r:" + hashlib.sha256(response_id.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def _sessionless(body: Mapping[str, Any]) -> bool:
    routing = body.get("routing")  # mostly absent: settled without a type check
    return (routing is not None and isinstance(routing, MAPPING)
            and routing.get("session_affinity") is False)


def cache_aware_off(body: Mapping[str, Any]) -> bool:
    provider = body.get("provider")  # mostly absent: settled without a type check
    return (provider is not None and isinstance(provider, MAPPING)
            and provider.get("cache_aware_routing") is False)


def _ask(head: RequestHead) -> Ask | None | Refusal:
    if head.tier_ask is None:
        return None
    ask = head.tier_ask.strip().lower()
    if ask not in ASKS:
        return Refusal(400, "X-OrcaRouter-Tier must be one of strong, once, base")
    return ask


def prepare(cfg: Config, scorer: Scorer, head: RequestHead, arrival: Arrival, *,
            routed: Routed | None = None, delta: Delta | None = None) -> Turn | Refusal:
    """The request's facts: what it names, its session, its latest turn's score, and what the
    decision needs read from the store. A `Refusal` for input orca cannot serve. `routed`:
    the route step (SPEC §17), whose target replaces the `model` field for routing.

    `delta`: the latest turn's score when the caller already has it for this body (the replay
    scores each request once and reuses it at every sweep point); None scores it here. The
    score depends on the body and the scorer only, so either way the turn is the same."""
    raw, body = arrival.raw, arrival.body
    if _too_deep(raw, body):
        return Refusal(400, f"the request body nests JSON deeper than {MAX_JSON_DEPTH} levels")
    model_field = body.get("model")
    if not isinstance(model_field, str) or not model_field.strip():
        return Refusal(400, model_problem(model_field))
    try:
        target = (resolve_target(model_field, cfg) if routed is None or routed.target is None
                  else routed_target(cfg, routed, model_field))
    except UnknownModel as exc:
        return Refusal(404, str(exc), code="model_not_found")
    problem = body_problem(head.api, body)
    if problem is not None:
        return Refusal(400, problem)
    ask = _ask(head)
    if isinstance(ask, Refusal):
        return ask
    prefs = read_prefs(body)
    if isinstance(prefs, str):
        return Refusal(400, prefs)
    # The required fields by position, the others set after: a class called with keywords
    # builds a dict of them first.
    turn = Turn(arrival.request_id, head.api, head.path, raw, body, head.headers, target,
                arrival.now, arrival.started)
    turn.client_request_id, turn.ask, turn.prefs = head.client_request_id, ask, prefs
    router = cfg.routers.get(target.router) if target.router else None
    turn.router = router
    turn.routed = routed
    if router is not None:
        if router.session_aware and not _sessionless(body) and (
                routed is None or routed.affinity):
            turn.sid = _session(head, body, router.name, turn.api, routed)
            _side(cfg, turn)
        elif target.via_alias is not None and not _sessionless(body) and (
                routed is None or routed.target is None):
            _alias_side(cfg, turn, head, routed)
    elif target.model is not None:
        # SPEC §1.3: a concrete model keeps its conversation on one channel and key, by the
        # same session chain as a router (derived under the model's own pin slots).
        turn.direct = direct_router(target.model)
        if not _sessionless(body) and (routed is None or routed.affinity):
            turn.sid = _session(head, body, turn.direct, turn.api, routed)
    turn.delta = delta if delta is not None else scorer.delta(body, turn.api)
    router, session = turn.router, turn.session  # a side request may have moved them
    previous = body.get("previous_response_id") if turn.api == "responses" else None
    if not isinstance(previous, str):
        previous = None
    if router is not None and session is not None and turn.side is None:
        turn.dedupe_key = turn.delta.dedupe_key(
            router.name, session, client_request_id=turn.client_request_id,
            continues=previous or "")
    scope = router.name if router is not None else turn.direct
    if (scope is not None and session is None and (turn.side is None or turn.side_alias)
            and not cache_aware_off(body) and (routed is None or routed.affinity)):
        turn.affinity_key = derive_session_id(body, router=scope, api=turn.api)
    if previous and router is not None:
        # The stored response's record (SPEC §13.1): read where an affinity pin is read.
        turn.affinity_key = response_key(previous)
        turn.previous_response = previous
    turn.read = _read_request(turn)
    return turn


def _session(head: RequestHead, body: Mapping[str, Any], scope: str, api: Api,
             routed: Routed | None) -> SessionId:
    """SPEC §1.4. A routed request keeps its route step's id (`Routed.sid`), whatever
    target the route picked: its budgets and its trace name one session."""
    if routed is not None and routed.sid is not None:
        return routed.sid
    return resolve_session_id(head.header_map(), body, router=scope, api=api)


def _side(cfg: Config, turn: Turn) -> None:
    """A side request (SPEC §14.1) goes to `[routing] side_router` without its session, or,
    with none configured, stays on its router reading the session's base pin, read-only."""
    if not cfg.housekeeping or turn.router is None or turn.sid is None:
        return
    tools = turn.body.get("tools")
    if tools and isinstance(tools, list) and cfg.compiled.housekeeping_no_tools:
        # An agent's real turn declares its tools: when every rule wants none (the compiled
        # config checked them once), no rule can match and nothing more is read.
        return
    f = side_facts(turn.body, turn.api)
    rule = match_housekeeping(cfg.housekeeping, f.system_text, f.has_tools, f.max_tokens,
                              first_instruction=f.first_instruction, schema_keys=f.schema_keys)
    if rule is None:
        return
    turn.side, turn.side_of = rule.name, (turn.router.name, turn.sid)
    name = cfg.routing.side_router
    if not name:
        return
    try:
        target = resolve_target(name, cfg)
    except UnknownModel:
        return  # validated at load; a config built in code may still name nothing
    if target.router is None:
        return
    turn.target = replace(target, requested=turn.target.requested)
    turn.router, turn.sid = cfg.routers[target.router], None


def _alias_side(cfg: Config, turn: Turn, head: RequestHead, routed: Routed | None) -> None:
    """SPEC §14.1: a model name aliased to a sessionless router (Claude Code's
    `claude-haiku-*` housekeeping, and sub-agents given `CLAUDE_CODE_SUBAGENT_MODEL`) is a
    side request of the session the
    request names by its headers or body — its trace and `orca requests --session` show it,
    it answers `reason=side` — and still served without one: no pin or tier state of the
    session is read or written. Its own conversation keeps its cache affinity on the
    sessionless router, as any sessionless request's. Its figures count in the session's
    `side_requests` when the config has one session-aware router (the session's, then);
    with several, which one the session belongs to is not in the request. A request naming
    no session (an id derived from its conversation names none) is no side request."""
    sid = _session(head, turn.body, turn.target.router or "", turn.api, routed)
    if not sid.explicit:
        return
    owners = cfg.compiled.session_routers
    turn.side = f"alias {turn.target.via_alias}"
    turn.side_alias = True
    turn.side_of = (owners[0] if len(owners) == 1 else "", sid)


def _read_request(turn: Turn) -> ReadRequest | None:
    router = turn.router
    if router is None and turn.target.kind != "model":
        return None
    esc = router.escalation if router is not None else None
    routed = turn.routed
    # By position, in field order: a class called with keywords builds a dict of them first.
    return ReadRequest(
        router.name if router is not None else turn.direct or "",  # router
        turn.session,  # session
        window_hours(turn.now, esc.share_window_h if esc else 24),  # share_hours
        True,  # workspace
        turn.affinity_key,  # affinity_key
        router.allowed_models if router and router.strategy == "linucb" else (),  # linucb_arms
        PERCENTILE_SAMPLES if esc and esc.threshold == "percentile" else 0,  # percentile_samples
        routed.read_counters() if routed is not None else (),  # budget_counters
        routed.read_limits() if routed is not None else (),  # budget_limits
    )


# A route target's `mode` (`weighted` is `balanced`'s older name)
_TARGET_MODE: dict[str, Mode] = {"balanced": "balanced", "weighted": "balanced", "price": "price",
                                 "latency": "latency", "throughput": "throughput"}


def routed_target(cfg: Config, routed: Routed, requested: str) -> Target:
    """A route's target (SPEC §17) in place of the `model` field: the client's name stays the
    requested one (the reply's `model` per `[server] response_model`), the node's mode
    overrides the router's."""
    spec = routed.decision.target
    assert spec is not None
    target = replace(resolve_target(spec.target, cfg), requested=requested)
    mode = _TARGET_MODE.get(spec.mode)
    return replace(target, mode=mode) if mode is not None else target


def decide(cfg: Config, turn: Turn, *, scorer: Scorer, healthy: Healthy,
           rng: random.Random, measured: Measured = NO_MEASURES) -> RoutePlan:
    """The routing plan over the snapshot the handler read into the turn (SPEC §3 3-6).
    `measured`: the sidecar's latency / throughput figures (SPEC §20)."""
    if turn.routed is not None:
        return _decide_routed(cfg, turn, turn.routed, scorer=scorer, healthy=healthy, rng=rng,
                              measured=measured)
    plan = plan_route(cfg, _route_input(cfg, turn, measured), turn.snapshot, now=turn.now,
                      scorer=scorer, healthy=healthy, rng=rng)
    turn.plan = plan
    return plan


def _route_input(cfg: Config, turn: Turn, measured: Measured, budget_denied: bool = False,
                 route_fallbacks: tuple[str, ...] = ()) -> RouteInput:
    assert turn.delta is not None
    # SPEC §14.3: a body whose bytes fit the window of every model the target can reach is
    # not scanned for inline media.
    est = estimate_tokens(turn.raw, turn.body,
                          fits=reachable_window(cfg, turn.target, route_fallbacks))
    # A model the request can reach reads no images: is there one in the conversation?
    images = (reaches_blind(cfg, turn.target, route_fallbacks)
              and needs_vision(turn.body))
    # By position, in field order: a class called with keywords builds a dict of them first
    # (twenty here, on every request).
    return RouteInput(
        turn.target,  # target
        turn.api,  # api
        turn.body,  # body
        turn.delta,  # delta
        est,  # est_tokens
        turn.session,  # session
        None if turn.side else turn.ask,  # ask
        turn.dedupe_key,  # dedupe_key
        turn.degraded,  # degraded
        turn.full,  # full
        turn.side is not None,  # side
        turn.previous_response is not None,  # previous_response
        turn.classification,  # classification
        {},  # latency_ms
        budget_denied,  # budget_denied
        route_fallbacks,  # route_fallbacks
        turn.prefs,  # prefs
        measured,  # measured
        turn.in_flight,  # in_flight
        images,  # images
    )


def _decide_routed(cfg: Config, turn: Turn, routed: Routed, *, scorer: Scorer,
                   healthy: Healthy, rng: random.Random, measured: Measured) -> RoutePlan:
    """SPEC §17: the `[budgets]` verdict first (100 %: refused; 80 %: no strong tier), then
    the plan with the route target's fallbacks and channel policy."""
    check = routed.check(turn.snapshot.budgets, turn.snapshot.budget_limits)
    if check.verdict == "refuse":
        turn.plan = _budget_refusal(turn, check.message)
        return turn.plan
    inp = _route_input(cfg, turn, measured, budget_denied=check.verdict == "deny_strong",
                       route_fallbacks=routed.fallback_models(cfg))
    plan = plan_route(cfg, inp, turn.snapshot, now=turn.now, scorer=scorer, healthy=healthy,
                      rng=rng)
    turn.plan = routed.channel_policy(plan)
    return turn.plan


def _budget_refusal(turn: Turn, message: str) -> RoutePlan:
    """A `[budgets]` budget is spent (SPEC §17): 429 naming it, the spend and the command
    that raises it (the handler adds `x-should-retry: false`)."""
    decision = TierDecision(tier="base", reason="denied:budget", denied="budget",
                            evaluated=False)
    return RoutePlan(turn.router, decision, (), (), refusal=(429, "budget_exceeded", message))
