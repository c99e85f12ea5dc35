"""Dynamic routes, inbound keys and budgets on a live request (SPEC §17). Pure.

    live = LiveRoutes.of(cfg, table, version)   # None: nothing configured, nothing to do
    facts = route_facts(live, head, body, request_id=..., now=...)
    routed = Routed(facts, live.table.evaluate(facts, counters), live.version, live.limits)

`LiveRoutes` is what a sidecar applies now: the compiled route table (the config's own
`[[routes]]`, or the version deployed in the store), the `[[inbound_keys]]` by token hash and
the `[budgets]` limits. A sidecar with none of them holds no `LiveRoutes` and its request path
does nothing more than check for one.

The request's inbound key is the first credential it presents — `Authorization: Bearer`,
`x-api-key`, `X-Orca-Token` — whose sha256 names a configured key. A credential that names
none is not refused here: the request has no key name (a route's `key` field does not exist,
its budgets count under `-`); refuse such requests with a route whose `condition` on `key`
ends in a `deny` node, as the README's example does. Tokens are never logged: only the key's
name reaches a trace.

The facts' session id is the request's own (SPEC §1.4), resolved as the turn resolves it: an
explicit id as the client sent it, else the id derived under the scope the request's own
`model` names (its router, or a concrete model's `keys.direct_router` pin scope; `orca` for
a name that resolves to nothing). `Routed.sid` carries it on, and the turn keeps it even when
the route retargets the request, so a split keeps a conversation on one branch, and
`session_usd`, `orca budget`, `orca requests` and a 429 all name the one id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from orca_cli.errors import UnknownModel
from orca_cli.immutable import immutable
from orca_cli.routing.route_types import RoutePlan
from orca_cli.routing.routes.budget import (
    BUDGET_OK,
    BudgetCheck,
    Counters,
    check_budgets,
    config_budget_counters,
    spend_keys,
)
from orca_cli.routing.routes.facts import RequestFacts
from orca_cli.routing.routes.graph import Decision, RouteTable
from orca_cli.routing.target import resolve_target
from orca_cli.state import keys as K
from orca_cli.state.base import HIncrManyOp, Op, SlotWrite
from orca_cli.state.budgets import effective_limits, ttl_of
from orca_cli.state.keys import direct_router
from orca_cli.types import Headers
from orca_cli.wire.session_id import SessionId, resolve_session_id

if TYPE_CHECKING:
    from orca_cli.config.schema import Config
    from orca_cli.turn.model import RequestHead

__all__ = ["BUDGET_NAMES", "LiveRoutes", "Routed", "route_facts", "session_scope"]

BUDGET_NAMES = ("session_usd", "day_usd", "month_usd")
_NO_SCOPE = "orca"  # the scope a derived id hashes when the `model` field names nothing


@immutable
class LiveRoutes:
    table: RouteTable
    version: int  # 0 = the config's own [[routes]]
    keys: Mapping[str, str]  # token sha256 (hex) -> [[inbound_keys]] name
    limits: Mapping[str, float]  # the [budgets] limits set (> 0)

    @classmethod
    def of(cls, cfg: Config, table: RouteTable, version: int = 0) -> LiveRoutes | None:
        keys = {k.token_sha256: k.name for k in cfg.inbound_keys if k.token_sha256}
        limits = {n: float(getattr(cfg.budgets, n)) for n in BUDGET_NAMES
                  if getattr(cfg.budgets, n) > 0}
        if not table.routes and not keys and not limits:
            return None
        return cls(table, version, keys, limits)

    def key_name(self, headers: Headers) -> str | None:
        """The name of the first configured key the request's credentials carry, or None."""
        if not self.keys:
            return None
        for name, value in headers:
            if name == "authorization":
                scheme, _, token = value.partition(" ")
                if scheme.lower() != "bearer":
                    continue
            elif name == "x-api-key" or name == "x-orca-token":
                token = value
            else:
                continue
            token = token.strip()
            if token:
                found = self.keys.get(hashlib.sha256(token.encode()).hexdigest())
                if found is not None:
                    return found
        return None


def session_scope(cfg: Config, model: object) -> str:
    """The scope a derived session id hashes, as `turn.prepare` derives it for the request's
    own `model`: its router's name (an alias resolved), a concrete model's pin scope
    (`keys.direct_router`), else `orca` (a name the route may still retarget)."""
    if not isinstance(model, str) or not model.strip():
        return _NO_SCOPE
    try:
        target = resolve_target(model, cfg)
    except UnknownModel:
        return _NO_SCOPE
    if target.router is not None:
        return target.router
    return direct_router(target.model) if target.model is not None else _NO_SCOPE


def route_facts(live: LiveRoutes, cfg: Config, head: RequestHead, body: Mapping[str, Any], *,
                request_id: str, now: float) -> tuple[RequestFacts, SessionId]:
    """The request as a route sees it (its key, endpoint, model, headers, body and session),
    and its session id (SPEC §1.4), which the turn keeps (`Routed.sid`)."""
    hmap = head.header_map()
    model = body.get("model")
    sid = resolve_session_id(hmap, body, router=session_scope(cfg, model), api=head.api)
    facts = RequestFacts(head.api, model if isinstance(model, str) else "", hmap, body, sid.id,
                         live.key_name(head.headers), request_id, now)
    return facts, sid


@dataclass(slots=True)
class Routed:
    """One request's route step: its facts, the walk's decision, the budgets' verdict."""

    facts: RequestFacts
    decision: Decision
    version: int
    limits: Mapping[str, float]
    budget: BudgetCheck = BUDGET_OK  # set by `decide` from the snapshot's counters
    # The route step's session id: the turn uses it (SPEC §1.4), so the budget counters and
    # the request's trace name one id, whichever target the route picked.
    sid: SessionId | None = None
    # A child request's (SPEC §16): the request it serves, whose budgets it counts in.
    parent_request_id: str | None = None

    @property
    def affinity(self) -> bool:
        """Whether the target keeps session pins and affinity (a target node's `affinity`)."""
        t = self.decision.target
        return t is None or t.affinity

    @property
    def target(self) -> str | None:
        """What serves the request instead of its `model` (a router, model or channel:model)."""
        d = self.decision
        return d.target.target if d.kind == "target" and d.target is not None else None

    def for_child(self, request_id: str) -> Routed:
        """The route step of a child request orca makes for this request (the auto router's
        model classifier, SPEC §16): billed and counted like any request, in this request's
        budgets — the same inbound key, session and route — under the child's own request id
        (its own commit marker: counted once). No target and no fallbacks: the child is
        served as it names its model; the `[budgets]` verdict still applies to it."""
        decision = Decision("none", self.decision.route)
        return Routed(replace(self.facts, request_id=request_id), decision, self.version,
                      self.limits, sid=None, parent_request_id=self.facts.request_id)

    def read_counters(self) -> tuple[str, ...]:
        """The `[budgets]` counters the store read fetches with everything else."""
        if not self.limits:
            return ()
        return tuple(config_budget_counters(self.facts).values())

    def read_limits(self) -> tuple[str, ...]:
        """The `orca budget raise` overrides that may apply (`<name>:<key>`)."""
        key = self.facts.key_name or "-"
        return tuple(f"{name}:{key}" for name in self.limits)

    def check(self, counters: Counters, raised: Mapping[str, float]) -> BudgetCheck:
        """The `[budgets]` verdict over the snapshot's counters and raised limits."""
        if not self.limits:
            return BUDGET_OK
        limits = effective_limits(self.limits, raised, self.facts.key_name)
        self.budget = check_budgets(limits, self.facts, counters)
        return self.budget

    def spend_counters(self) -> tuple[str, ...]:
        """Every counter a billed success adds its cost to (SPEC §17, once per request)."""
        return spend_keys(self.facts, self.decision.route)

    def fallback_models(self, cfg: Config) -> tuple[str, ...]:
        """The target node's `fallbacks` as model ids (each validated at load)."""
        spec = self.decision.target
        if spec is None or not spec.fallbacks:
            return ()
        out: list[str] = []
        for name in spec.fallbacks:
            try:
                t = resolve_target(name, cfg)
            except UnknownModel:
                continue  # a config built in code may name nothing
            if t.model is not None:
                out.append(t.model)
        return tuple(out)

    def channel_policy(self, plan: RoutePlan) -> RoutePlan:
        """The target node's `only` (attempts on those channels alone) and `prefer` (those
        channels first, after a pinned or affinity attempt, which holds the prompt cache)."""
        spec = self.decision.target
        if spec is None or not (spec.only or spec.prefer) or plan.refusal is not None:
            return plan
        attempts = plan.attempts
        if spec.only:
            attempts = tuple(a for a in attempts if a.channel in spec.only)
            if not attempts:
                return replace(plan, attempts=(), refusal=(
                    503, "no_candidate", f"no channel the route allows ({', '.join(spec.only)})"
                    " can serve this request"))
        if spec.prefer:
            rank = {ch: i for i, ch in enumerate(spec.prefer)}
            held = tuple(a for a in attempts[:1] if a.source in ("pin", "affinity"))
            rest = sorted(attempts[len(held):], key=lambda a: (
                a.source == "drained", rank.get(a.channel, len(rank))))  # drained: still last
            attempts = (*held, *rest)
        return replace(plan, attempts=attempts)

    def spend_write(self, cost_usd: float) -> SlotWrite:
        """A billed success's spend: 1 request and its billed cost into every counter, in the
        `{budgets}` slot of the request's one commit, whose marker counts it exactly once."""
        ops: list[Op] = []
        for c in self.spend_counters():
            key, ttl = K.budget_counter_key(c), ttl_of(c)
            ops.append(HIncrManyOp(key, (("requests", 1), ("usd", cost_usd)), ttl))
        return SlotWrite(K.BUDGETS, tuple(ops))

    def trace(self) -> dict[str, Any]:
        d, b = self.decision, self.budget
        out: dict[str, Any] = {
            "route": d.route or None, "version": self.version, "decision": d.kind,
            "path": list(d.path), "bucket": d.bucket or None, "key": self.facts.key_name,
            "target": self.target,
        }
        if d.deny is not None:
            out["deny"] = {"status": d.deny.status, "message": d.deny.message}
        if b.verdict != "ok":
            out["budget"] = {"verdict": b.verdict, "name": b.name, "counter": b.counter,
                             "spent_usd": round(b.spent, 6), "limit_usd": b.limit}
        return out
