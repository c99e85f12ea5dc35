"""Dynamic routes (SPEC §17): compile `[[routes]]` once, walk them per request, no I/O.

    table = compile_routes(cfg.routes)                # once per config / deployed version
    needed = table.counters_needed(facts)             # budget counters the walk may read
    decision = table.evaluate(facts, counters)        # pure; counters read by the caller

The first route whose `keys`, `endpoints` and `models` all match the request is walked from
its start node; no matching route is `Decision("none")` (the request routes as without
routes). A split is sticky per session id, else per body `prompt_cache_key`, else per request
id, hashed with the route and node names, so a cached conversation keeps its branch.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import translate
from typing import TYPE_CHECKING, Any, Literal

from orca_cli.routing.routes.budget import NO_SPEND, Counters, counter_key, scope_id
from orca_cli.routing.routes.facts import (
    MISSING,
    RequestFacts,
    field_reader,
    number_of,
    text_of,
)

if TYPE_CHECKING:
    from orca_cli.config.routes import RouteConfig, RouteNode

__all__ = ["Decision", "DenySpec", "RouteTable", "TargetSpec", "compile_routes", "split_bucket"]

Test = Callable[[RequestFacts], bool]


@dataclass(frozen=True, slots=True)
class TargetSpec:
    target: str  # orca/<router>, a model, or channel:model
    mode: str = ""  # "" = the router's / channel weights
    only: tuple[str, ...] = ()
    prefer: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()
    affinity: bool = True


@dataclass(frozen=True, slots=True)
class DenySpec:
    status: int
    message: str


@dataclass(frozen=True, slots=True)
class Decision:
    """The walk's outcome. `path` names the nodes visited; `bucket` is `<node>=<branch>` per
    split passed (comma-separated), for the trace."""

    kind: Literal["target", "deny", "none"]
    route: str = ""
    path: tuple[str, ...] = ()
    bucket: str = ""
    target: TargetSpec | None = None
    deny: DenySpec | None = None


NO_ROUTE = Decision("none")


@dataclass(frozen=True, slots=True)
class _Node:
    name: str
    kind: str
    test: Test | None = None  # condition
    exits: tuple[int, ...] = ()  # condition: (true, false); budget: (within, exceeded)
    cuts: tuple[int, ...] = ()  # split: cumulative upper bounds in 1/10000
    budget: tuple[str, str, int, float] = ("", "", 0, 0.0)  # scope, window, requests, usd
    target: TargetSpec | None = None
    deny: DenySpec | None = None


@dataclass(frozen=True, slots=True)
class _Route:
    name: str
    keys: frozenset[str]
    endpoints: frozenset[str]
    models: re.Pattern[str] | None
    start: int
    nodes: tuple[_Node, ...]

    def matches(self, f: RequestFacts) -> bool:
        if self.keys and f.key_name not in self.keys:
            return False
        if self.endpoints and f.endpoint not in self.endpoints:
            return False
        return self.models is None or self.models.match(f.model) is not None


def _test(n: RouteNode) -> Test:
    read, op, value = field_reader(n.field), n.op, n.value
    if op == "exists":
        return lambda f: read(f) not in (MISSING, None)
    if op in ("lt", "gt"):
        bound = float(n.number or 0.0)
        sign = -1.0 if op == "lt" else 1.0

        def cmp(f: RequestFacts) -> bool:
            x = number_of(read(f))
            return x is not None and sign * (x - bound) > 0
        return cmp
    if op == "in":
        options = frozenset(value if isinstance(value, tuple) else (value,))
        return lambda f: (v := read(f)) is not MISSING and text_of(v) in options
    if op == "eq":
        return lambda f: (v := read(f)) is not MISSING and text_of(v) == value
    pattern = re.compile(translate(str(value)) if op == "glob" else str(value))
    find = pattern.match if op == "glob" else pattern.search
    return lambda f: (v := read(f)) is not MISSING and find(text_of(v)) is not None


def _compile_route(r: RouteConfig) -> _Route:
    index = {name: i for i, name in enumerate(r.nodes)}
    nodes: list[_Node] = []
    for name, n in r.nodes.items():
        if n.type == "condition":
            nodes.append(_Node(name, "condition", _test(n), (index[n.on_true], index[n.on_false])))
        elif n.type == "budget":
            nodes.append(_Node(name, "budget", exits=(index[n.within], index[n.exceeded]),
                               budget=(n.scope, n.window, n.requests, n.usd)))
        elif n.type == "split":
            cuts, acc = [], 0.0
            for b in n.branches:
                acc += b.percent
                cuts.append(round(acc * 100))
            exits = tuple(index[b.next] for b in n.branches)
            nodes.append(_Node(name, "split", exits=exits, cuts=tuple(cuts)))
        elif n.type == "target":
            spec = TargetSpec(n.target, n.mode, n.only, n.prefer, n.fallbacks, n.affinity)
            nodes.append(_Node(name, "target", target=spec))
        else:
            nodes.append(_Node(name, "deny", deny=DenySpec(n.status, n.message)))
    models = None
    if r.models:
        models = re.compile("|".join(f"(?:{translate(m)})" for m in r.models))
    return _Route(r.name, frozenset(r.keys), frozenset(r.endpoints), models,
                  index[r.start or next(iter(r.nodes))], tuple(nodes))


def split_bucket(route: str, node: str, sticky: str) -> int:
    """A stable bucket in [0, 10000) for (route, node, sticky id)."""
    h = hashlib.blake2b(f"{route}\0{node}\0{sticky}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") % 10000


def _sticky(f: RequestFacts) -> str:
    if f.session_id:
        return "s:" + f.session_id
    pck = f.body.get("prompt_cache_key")
    if isinstance(pck, str) and pck:
        return "p:" + pck
    return "r:" + f.request_id


@dataclass(frozen=True, slots=True)
class RouteTable:
    routes: tuple[_Route, ...]
    max_steps: int = 64  # a validated graph is acyclic; this bounds a hand-built one

    def match(self, f: RequestFacts) -> _Route | None:
        for r in self.routes:
            if r.matches(f):
                return r
        return None

    def counters_needed(self, f: RequestFacts) -> tuple[str, ...]:
        """The counter names the matched route's budget nodes may read (any path)."""
        r = self.match(f)
        if r is None:
            return ()
        return tuple(dict.fromkeys(
            counter_key(n.budget[0], scope_id(n.budget[0], f, r.name), n.budget[1], f.now)  # type: ignore[arg-type]
            for n in r.nodes if n.kind == "budget"))

    def evaluate(self, f: RequestFacts, counters: Counters) -> Decision:
        """Walk the first matching route. Pure: reads only `f` and `counters`."""
        r = self.match(f)
        if r is None:
            return NO_ROUTE
        path: list[str] = []
        buckets: list[str] = []
        i = r.start
        for _ in range(self.max_steps):
            n = r.nodes[i]
            path.append(n.name)
            if n.kind == "target" or n.kind == "deny":
                return Decision(n.kind, r.name, tuple(path), ",".join(buckets),  # type: ignore[arg-type]
                                n.target, n.deny)
            i = _step(r, n, f, counters, buckets)
        return Decision("deny", r.name, tuple(path), ",".join(buckets), None,
                        DenySpec(500, f'route "{r.name}" did not reach a target'))


def _step(r: _Route, n: _Node, f: RequestFacts, counters: Counters, buckets: list[str]) -> int:
    if n.kind == "condition":
        assert n.test is not None
        return n.exits[0] if n.test(f) else n.exits[1]
    if n.kind == "split":
        b = split_bucket(r.name, n.name, _sticky(f))
        k = next((k for k, cut in enumerate(n.cuts) if b < cut), len(n.cuts) - 1)
        buckets.append(f"{n.name}={k}")
        return n.exits[k]
    scope, window, max_requests, max_usd = n.budget
    spent = counters.get(counter_key(scope, scope_id(scope, f, r.name), window, f.now),  # type: ignore[arg-type]
                         NO_SPEND)
    over = ((max_requests > 0 and spent.requests >= max_requests)
            or (max_usd > 0 and spent.usd >= max_usd))
    return n.exits[1] if over else n.exits[0]


def compile_routes(routes: Sequence[RouteConfig] | Any) -> RouteTable:
    """The request path's form of validated `[[routes]]` (config order = match order)."""
    return RouteTable(tuple(_compile_route(r) for r in routes))
