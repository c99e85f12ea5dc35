"""`[[routes]]`, `[[inbound_keys]]` and `[budgets]`: dynamic routes and budgets (SPEC §17).

    [[inbound_keys]]
    name = "ci"
    token = "${ORCA_CI_TOKEN}"        # hashed (sha256) at load; never kept or shown in clear

    [budgets]                          # $ caps; per inbound key when keys are configured
    session_usd = 2.0
    day_usd = 50.0
    month_usd = 500.0

    [[routes]]
    name = "rollout"
    keys = ["ci"]                      # inbound key names; empty = every request
    endpoints = ["openai"]             # openai | anthropic | responses; empty = every endpoint
    models = ["gpt-*"]                 # globs on the request's `model`; empty = every model
    start = "ab"                       # the first node; default: the first node written

    [routes.nodes.ab]
    type = "split"                     # by session id, else prompt_cache_key, else request id
    branches = [{percent = 50, next = "new"}, {percent = 50, next = "old"}]

    [routes.nodes.new]
    type = "target"
    target = "openai:gpt-5-mini"       # a router (orca/<name>), a model or channel:model
    mode = "price"                     # price | latency | throughput (default: the router's)
    only = ["openai"]                  # channels allowed; `prefer` orders without narrowing
    fallbacks = ["gpt-4.1-mini"]       # at most 8, each re-selected in full
    affinity = true

Node types and their exits: `condition` (`field`, `op`, `value` / `number`; exits `on_true`,
`on_false`), `split` (`branches`), `budget` (`scope`, `window`, `requests` and/or `usd`; exits
`within`, `exceeded`), `target` and `deny` (`status`, `message`) end the walk.

A condition's `field` is a JSON pointer into the body (`/metadata/plan`, `/messages/0/role`),
`metadata.<name>` (the body's `metadata` object), `header:<name>` (case-insensitive), or one of
`session`, `model`, `endpoint`, `key` (the inbound key name). Ops: `eq` (the field's text
form equals `value`), `in` (`value` is an array), `glob`, `regex` (search, Python syntax),
`exists`, `lt` / `gt` (against `number`; a field that is not a number is false).

The graph is checked at load: unknown node names in exits, exits left open, cycles, nodes no
path reaches, unknown targets; every error names its node path (`routes[0].nodes.ab...`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from orca_cli.config.walk import Ctx, join_key, show
from orca_cli.immutable import immutable

if TYPE_CHECKING:
    from orca_cli.config.schema import Config

__all__ = [
    "CONDITION_OPS",
    "MAX_ROUTE_FALLBACKS",
    "NODE_TYPES",
    "BudgetsConfig",
    "InboundKey",
    "RouteConfig",
    "RouteNode",
    "SplitBranch",
    "check_routes",
    "exits_of",
    "hash_token",
    "post_inbound_key",
    "post_route",
    "post_route_node",
    "unserved_targets",
]

MAX_ROUTE_FALLBACKS = 8
NodeType = Literal["condition", "split", "budget", "target", "deny"]
NODE_TYPES: tuple[str, ...] = ("condition", "split", "budget", "target", "deny")
ConditionOp = Literal["eq", "in", "glob", "regex", "exists", "lt", "gt"]
CONDITION_OPS: tuple[str, ...] = ("eq", "in", "glob", "regex", "exists", "lt", "gt")
_SPECIAL_FIELDS = ("session", "model", "endpoint", "key")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def hash_token(token: str) -> str:
    """The sha256 hex digest an inbound token is kept and compared as."""
    return hashlib.sha256(token.encode()).hexdigest()


@immutable
class InboundKey:
    """`[[inbound_keys]]`: a team's token. `token` is emptied at load; only its hash stays."""

    name: str
    token: str = ""
    token_sha256: str = field(default="", metadata={"derived": True, "shown": False})


@immutable
class BudgetsConfig:
    """`[budgets]`: $ caps (0 = none). At 80 % the strong tier is denied, at 100 % refused."""

    session_usd: float = 0.0
    day_usd: float = 0.0
    month_usd: float = 0.0


@immutable
class SplitBranch:
    percent: float
    next: str


@immutable
class RouteNode:
    """One node of a route's graph; which keys apply depends on `type` (module docstring)."""

    type: NodeType
    # condition
    field: str = ""
    op: ConditionOp = "eq"
    value: str | tuple[str, ...] = ""
    number: float | None = None
    on_true: str = ""
    on_false: str = ""
    # split
    branches: tuple[SplitBranch, ...] = ()
    # budget
    scope: Literal["key", "session", "route"] = "key"
    window: Literal["day", "week", "month"] = "day"
    requests: int = 0
    usd: float = 0.0
    within: str = ""
    exceeded: str = ""
    # target
    target: str = ""
    # "" keeps the router's; "weighted" is the older name of "balanced"
    mode: Literal["", "balanced", "weighted", "price", "latency", "throughput"] = ""
    only: tuple[str, ...] = ()
    prefer: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()
    affinity: bool = True
    # deny
    status: int = 403
    message: str = "this request is not allowed by the gateway's routes"


@immutable
class RouteConfig:
    name: str
    keys: tuple[str, ...] = ()
    endpoints: tuple[Literal["openai", "anthropic", "responses"], ...] = ()
    models: tuple[str, ...] = ()
    start: str = ""
    nodes: dict[str, RouteNode] = field(default_factory=dict)


_KEYS_BY_TYPE: dict[str, frozenset[str]] = {
    "condition": frozenset({"field", "op", "value", "number", "on_true", "on_false"}),
    "split": frozenset({"branches"}),
    "budget": frozenset({"scope", "window", "requests", "usd", "within", "exceeded"}),
    "target": frozenset({"target", "mode", "only", "prefer", "fallbacks", "affinity"}),
    "deny": frozenset({"status", "message"}),
}


def exits_of(node: RouteNode) -> tuple[tuple[str, str], ...]:
    """(exit key, node name) pairs of a node, in order; an empty name is an open exit."""
    if node.type == "condition":
        return (("on_true", node.on_true), ("on_false", node.on_false))
    if node.type == "budget":
        return (("within", node.within), ("exceeded", node.exceeded))
    if node.type == "split":
        return tuple((f"branches[{i}].next", b.next) for i, b in enumerate(node.branches))
    return ()


def post_route_node(n: RouteNode, raw: Mapping[str, Any], path: str, ctx: Ctx) -> RouteNode:
    """Keys of another node type, and each type's own field rules."""
    own = _KEYS_BY_TYPE.get(n.type, frozenset())
    for key in raw:
        if key != "type" and key not in own:
            ctx.error(join_key(path, key), f'is not a key of a "{n.type}" node; '
                      f"its keys: {', '.join(sorted(own))}")
    if n.type == "condition":
        _check_condition(n, raw, path, ctx)
    elif n.type == "split":
        _check_split(n, path, ctx)
    elif n.type == "budget" and n.requests <= 0 and n.usd <= 0:
        ctx.error(path, "a budget node needs `requests` or `usd` (> 0)")
    elif n.type == "target":
        if not n.target:
            ctx.error(join_key(path, "target"), "is required")
        if len(n.fallbacks) > MAX_ROUTE_FALLBACKS:
            ctx.error(join_key(path, "fallbacks"),
                      f"must list at most {MAX_ROUTE_FALLBACKS} models, got {len(n.fallbacks)}")
    elif n.type == "deny" and not 400 <= n.status <= 599:
        ctx.error(join_key(path, "status"), f"must be an HTTP error status in [400, 599], "
                  f"got {n.status}")
    return n


def _check_condition(n: RouteNode, raw: Mapping[str, Any], path: str, ctx: Ctx) -> None:
    f = n.field
    ok = (f.startswith("/") or f in _SPECIAL_FIELDS
          or (f.startswith("metadata.") and len(f) > 9) or (f.startswith("header:") and len(f) > 7))
    if not ok:
        ctx.error(join_key(path, "field"), 'must be a JSON pointer ("/metadata/plan"), '
                  '"metadata.<name>", "header:<name>", "session", "model", "endpoint" or "key", '
                  f"got {show(f)}")
    if n.op in ("lt", "gt"):
        if n.number is None:
            ctx.error(join_key(path, "number"), f'is required for op = "{n.op}"')
    elif n.op == "in":
        if not isinstance(n.value, tuple):
            ctx.error(join_key(path, "value"), 'must be an array for op = "in"')
    elif n.op != "exists":
        if isinstance(n.value, tuple) or "value" not in raw:
            ctx.error(join_key(path, "value"), f'must be a string for op = "{n.op}"')
        elif n.op == "regex":
            try:
                re.compile(n.value)
            except re.error as exc:
                ctx.error(join_key(path, "value"), f"is not a valid regex: {exc}")


def _check_split(n: RouteNode, path: str, ctx: Ctx) -> None:
    if not n.branches:
        ctx.error(join_key(path, "branches"), "must list at least one branch")
        return
    for i, b in enumerate(n.branches):
        if not 0 <= b.percent <= 100:
            ctx.error(f"{join_key(path, 'branches')}[{i}].percent",
                      f"must be in [0, 100], got {show(b.percent)}")
    total = sum(b.percent for b in n.branches)
    if abs(total - 100) > 1e-9:
        ctx.error(join_key(path, "branches"), f"percents must add up to 100, got {show(total)}")


def post_route(r: RouteConfig, raw: Mapping[str, Any], path: str, ctx: Ctx) -> RouteConfig:
    """The graph's shape: exits naming known nodes, none open, no cycle, all reachable."""
    if not _NAME.fullmatch(r.name):
        ctx.error(join_key(path, "name"),
                  f"must be letters, digits, '_', '.' or '-', got {show(r.name)}")
    npath = join_key(path, "nodes")
    if not r.nodes:
        ctx.error(npath, "must define at least one node")
        return r
    start = r.start or next(iter(r.nodes))
    if start not in r.nodes:
        ctx.error(join_key(path, "start"), f"names no node; nodes: {', '.join(r.nodes)}")
        return r
    r = dataclasses.replace(r, start=start)
    for name, node in r.nodes.items():
        for key, nxt in exits_of(node):
            where = f"{join_key(npath, name)}.{key}"
            if not nxt:
                ctx.error(where, f'exit left open: "{name}" needs a next node')
            elif nxt not in r.nodes:
                ctx.error(where, f'names no node "{nxt}"; nodes: {", ".join(r.nodes)}')
    _check_reach(r, npath, ctx)
    return r


def _check_reach(r: RouteConfig, npath: str, ctx: Ctx) -> None:
    """Depth-first from `start`: a back edge is a cycle (reported with its node path), a node
    never visited is unreachable."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        trail.append(name)
        for _key, nxt in exits_of(r.nodes[name]):
            if nxt not in r.nodes:
                continue
            if state.get(nxt) == 1:
                loop = trail[trail.index(nxt):] + [nxt]
                ctx.error(join_key(npath, name), "cycle: " + " -> ".join(loop))
            elif nxt not in state:
                visit(nxt, trail)
        trail.pop()
        state[name] = 2

    visit(r.start, [])
    for name in r.nodes:
        if name not in state:
            ctx.error(join_key(npath, name), f'is unreachable from start node "{r.start}"')


def post_inbound_key(k: InboundKey, raw: Mapping[str, Any], path: str, ctx: Ctx) -> InboundKey:
    """Keep the token's sha256 only; the clear token is dropped here."""
    if not _NAME.fullmatch(k.name):
        ctx.error(join_key(path, "name"),
                  f"must be letters, digits, '_', '.' or '-', got {show(k.name)}")
    if not k.token:
        optional = isinstance(raw.get("token"), str) and "${" in raw["token"]
        if not optional:
            ctx.error(join_key(path, "token"), "is required (and must not be empty)")
        return k
    return dataclasses.replace(k, token="", token_sha256=hash_token(k.token))


def check_routes(
    cfg: Config, ctx: Ctx, target_problem: Callable[[str], str | None]
) -> None:
    """Cross-references: unique route and key names, keys naming `[[inbound_keys]]`, targets
    and fallbacks naming a router, model or channel:model, `only` / `prefer` naming channels."""
    _unique(cfg.inbound_keys, "inbound_keys", ctx)
    _unique(cfg.routes, "routes", ctx)
    hashes: dict[str, int] = {}
    for i, k in enumerate(cfg.inbound_keys):
        if k.token_sha256 and k.token_sha256 in hashes:
            ctx.error(f"inbound_keys[{i}].token",
                      f"is the same token as inbound_keys[{hashes[k.token_sha256]}]")
        hashes.setdefault(k.token_sha256, i)
    key_names = [k.name for k in cfg.inbound_keys]
    channels = {ch.name for ch in cfg.channels}
    for i, r in enumerate(cfg.routes):
        rpath = f"routes[{i}]"
        for j, key in enumerate(r.keys):
            if key not in key_names:
                ctx.error(f"{rpath}.keys[{j}]", f'names no [[inbound_keys]] "{key}"; keys: '
                          f"{', '.join(key_names) or 'none'}")
        for name, node in r.nodes.items():
            if node.type != "target":
                continue
            npath = join_key(f"{rpath}.nodes", name)
            for at, m in _targets_of(npath, node):
                why = target_problem(m) if m else None
                if why:
                    ctx.error(at, why)
            for key in ("only", "prefer"):
                for j, ch in enumerate(getattr(node, key)):
                    if ch not in channels:
                        ctx.error(f"{join_key(npath, key)}[{j}]", f'names no channel "{ch}"')


def _unique(items: tuple[Any, ...], table: str, ctx: Ctx) -> None:
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        if item.name in first:
            ctx.error(f"{table}[{i}].name",
                      f'duplicate name "{item.name}" (also {table}[{first[item.name]}])')
        first.setdefault(item.name, i)


def unserved_targets(cfg: Config) -> list[tuple[str, str]]:
    """(node path, why) of the target nodes' targets and fallbacks that no enabled channel
    serves: a `channel:model` on a disabled channel, a model every channel of which is
    disabled. Valid config, yet such a branch is never served as written: its request falls
    to the target's fallbacks or is refused (`orca routes check` warns)."""
    out: list[tuple[str, str]] = []
    for i, r in enumerate(cfg.routes):
        for name, node in r.nodes.items():
            if node.type != "target":
                continue
            for at, m in _targets_of(join_key(f"routes[{i}].nodes", name), node):
                why = _unserved(cfg, m)
                if why:
                    out.append((at, why))
    return out


def _targets_of(npath: str, node: RouteNode) -> Iterator[tuple[str, str]]:
    """(key path, model) of a target node's target and each of its fallbacks."""
    yield join_key(npath, "target"), node.target
    for j, m in enumerate(node.fallbacks):
        yield f"{join_key(npath, 'fallbacks')}[{j}]", m


def _unserved(cfg: Config, target: str) -> str | None:
    if not target:
        return None
    name = target.removeprefix("orca/")
    router = cfg.routers.get(name)
    if router is not None:
        models = router.allowed_models or tuple(m for c in cfg.channels for m in c.models)
        if models and not any(c.enabled and m in c.models for m in models for c in cfg.channels):
            return f'no enabled channel serves a model of router "{name}": it is never served'
        return None
    if target.startswith("orca/"):
        return None
    head, sep, rest = target.partition(":")
    ch = cfg.channel(head) if sep else None
    if ch is not None and not ch.enabled:
        return f'channel "{ch.name}" is disabled: "{target}" is never served'
    model = rest if ch is not None else target
    listing = [c for c in cfg.channels if model in c.models]
    if listing and not any(c.enabled for c in listing):
        names = ", ".join(c.name for c in listing)
        return f'every channel of "{model}" ({names}) is disabled: it is never served'
    return None
