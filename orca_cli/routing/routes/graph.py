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
from fnmatch import translate
from typing import TYPE_CHECKING, Any, Literal

from orca_cli.immutable import immutable
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


@immutable
class TargetSpec:
    target: str  # orca/<router>, a model, or channel:model
    mode: str = ""  # "" = the router's / channel weights
    only: tuple[str, ...] = ()
    prefer: tuple[str, ...] = ()
    fallbacks: tuple[str, ...] = ()
    affinity: bool = True


@immutable
class DenySpec:
    status: int
    message: str


@immutable
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


Step = Callable[[RequestFacts, Counters, list[str]], int]


@immutable
class _Node:
    """A compiled node: `step` gives the next node's index (None for target / deny)."""

    name: str
    kind: str
    step: Step | None = None
    budget: tuple[str, str] = ("", "")  # scope, window (for `counters_needed`)
    target: TargetSpec | None = None
    deny: DenySpec | None = None


@immutable
class _Route:
    name: str
    keys: frozenset[str]
    endpoints: frozenset[str]
    models: re.Pattern[str] | None
    start: int
    nodes: tuple[_Node, ...]
    budgets: tuple[tuple[str, str], ...] = ()  # distinct (scope, window) of its budget nodes

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

        def among(f: RequestFacts) -> bool:
            v = read(f)
            return (v in options) if type(v) is str else (v is not MISSING and text_of(v) in options)
        return among
    if op == "eq":
        def equal(f: RequestFacts) -> bool:
            v = read(f)
            return (v == value) if type(v) is str else (v is not MISSING and text_of(v) == value)
        return equal
    pattern = re.compile(translate(str(value)) if op == "glob" else str(value))
    find = pattern.match if op == "glob" else pattern.search
    return lambda f: (v := read(f)) is not MISSING and find(text_of(v)) is not None


def _condition_step(n: RouteNode, yes: int, no: int) -> Step:
    test = _test(n)

    def step(f: RequestFacts, counters: Counters, buckets: list[str]) -> int:
        return yes if test(f) else no
    return step


def _split_step(route: str, name: str, n: RouteNode, index: dict[str, int]) -> Step:
    cuts: list[tuple[int, int, str]] = []  # (upper bound in 1/10000, next node, bucket label)
    acc = 0.0
    for k, b in enumerate(n.branches):
        acc += b.percent
        cuts.append((round(acc * 100), index[b.next], f"{name}={k}"))
    last = cuts[-1]

    def step(f: RequestFacts, counters: Counters, buckets: list[str]) -> int:
        b = split_bucket(route, name, _sticky(f))
        hit = next((c for c in cuts if b < c[0]), last)
        buckets.append(hit[2])
        return hit[1]
    return step


def _budget_step(route: str, n: RouteNode, within: int, exceeded: int) -> Step:
    scope, window, max_requests, max_usd = n.scope, n.window, n.requests, n.usd

    def step(f: RequestFacts, counters: Counters, buckets: list[str]) -> int:
        spent = counters.get(counter_key(scope, scope_id(scope, f, route), window, f.now),
                             NO_SPEND)
        over = ((max_requests > 0 and spent.requests >= max_requests)
                or (max_usd > 0 and spent.usd >= max_usd))
        return exceeded if over else within
    return step


def _compile_node(route: str, n: RouteNode, name: str, index: dict[str, int]) -> _Node:
    if n.type == "condition":
        return _Node(name, n.type, _condition_step(n, index[n.on_true], index[n.on_false]))
    if n.type == "split":
        return _Node(name, n.type, _split_step(route, name, n, index))
    if n.type == "budget":
        step = _budget_step(route, n, index[n.within], index[n.exceeded])
        return _Node(name, n.type, step, budget=(n.scope, n.window))
    if n.type == "target":
        spec = TargetSpec(n.target, n.mode, n.only, n.prefer, n.fallbacks, n.affinity)
        return _Node(name, n.type, target=spec)
    return _Node(name, n.type, deny=DenySpec(n.status, n.message))


def _compile_route(r: RouteConfig) -> _Route:
    index = {name: i for i, name in enumerate(r.nodes)}
    nodes = tuple(_compile_node(r.name, n, name, index) for name, n in r.nodes.items())
    models = None
    if r.models:
        models = re.compile("|".join(f"(?:{translate(m)})" for m in r.models))
    budgets = tuple(dict.fromkeys(n.budget for n in nodes if n.kind == "budget"))
    return _Route(r.name, frozenset(r.keys), frozenset(r.endpoints), models,
                  index[r.start or next(iter(r.nodes))], nodes, budgets)


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


@immutable
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
        if r is None or not r.budgets:
            return ()
        return tuple([counter_key(scope, scope_id(scope, f, r.name), window, f.now)  # type: ignore[arg-type]
                      for scope, window in r.budgets])

    def evaluate(self, f: RequestFacts, counters: Counters) -> Decision:
        """Walk the first matching route. Pure: reads only `f` and `counters`."""
        r = self.match(f)
        if r is None:
            return NO_ROUTE
        path: list[str] = []
        buckets: list[str] = []
        nodes, i = r.nodes, r.start
        for _ in range(self.max_steps):
            n = nodes[i]
            path.append(n.name)
            if n.step is None:
                return Decision(n.kind, r.name, tuple(path), ",".join(buckets),  # type: ignore[arg-type]
                                n.target, n.deny)
            i = n.step(f, counters, buckets)
        return Decision("deny", r.name, tuple(path), ",".join(buckets), None,
                        DenySpec(500, f'route "{r.name}" did not reach a target'))


def compile_routes(routes: Sequence[RouteConfig] | Any) -> RouteTable:
    """The request path's form of validated `[[routes]]` (config order = match order)."""
    return RouteTable(tuple(_compile_route(r) for r in routes))
