"""A sidecar for tier and escalation stories: any config, a memory or a real Redis store, and a
`FakeClock` the test moves between turns (cache windows, tier TTL, share buckets).

Everything between the client and the simulated upstream is the real code: uvicorn, the guard,
the handler, `plan_route`, `resolve_tier`, the relay, `build_commit` and the store. A test
observes only from the outside: response headers, stored traces, audit events and the state
read back through the store interface.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx
import orjson
import pytest
import tomli_w

from orca_cli.clock import FakeClock
from orca_cli.config.load import loads
from orca_cli.config.schema import Config, StateConfig
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.sim import SimTransport
from orca_cli.routing.caps import window_hours
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import ReadRequest, Snapshot, Store
from orca_cli.state.factory import open_store
from orca_cli.state.memory import MemoryStore
from orca_cli.testing import Sidecar, closed_port, sidecar
from tests.state.conftest import REDIS_URL, delete_prefix, require_redis

__all__ = [
    "BASE_MODELS",
    "REDIS_URL",
    "ROUTER",
    "STRONG_MODEL",
    "Launch",
    "Reply",
    "TierStack",
    "backend",
    "closed_port_store",
    "evals",
    "launch",
    "ok",
    "test_store",
    "tier_config",
    "tier_stack",
]

ROUTER = "coding"
BASE_MODELS = ("base-weak", "base-mid")
STRONG_MODEL = "frontier"
ADMIN_TOKEN = "tier-admin-secret"


def _sim_channel(name: str, models: list[str], **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "type": "sim", "api": "openai",
                           "keys": [f"{name}-key-1"], "models": models, "latency_ms": 0,
                           "cache_ttl_s": 300}
    doc.update(extra)
    return doc


def _merge(into: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = copy.deepcopy(v)
    return into


def tier_config(*, escalation: Mapping[str, Any] | None = None,
                router: Mapping[str, Any] | None = None,
                workspace_cap: float = 1.0,
                base_faults: Mapping[str, Any] | None = None,
                strong_channel: Mapping[str, Any] | None = None,
                base_channel: Mapping[str, Any] | None = None,
                extra: Mapping[str, Any] | None = None) -> Config:
    """One router `coding`: base tier `base-weak` (weak band) and `base-mid` (mid band) on
    channel `sim-base`, strong tier `frontier` on `sim-strong`; one key each, no fallback
    models, so what served is unambiguous. The full-transcript banding is t1 = 0.45 /
    t2 = 0.90: a short opener lands on `base-weak`, a transcript holding a hard debugging
    turn on `base-mid`. The workspace cap is off (1.0) unless a test asks for it;
    `strong_channel` and `base_channel` override fields of the tiers' channels (e.g. `api`);
    `extra` adds top-level
    tables (`routes`, `inbound_keys`, `budgets`, ...)."""
    base = _sim_channel("sim-base", list(BASE_MODELS), **(base_channel or {}))
    if base_faults:
        base["faults"] = dict(base_faults)
    doc: dict[str, Any] = {
        "channels": [base,
                     _sim_channel("sim-strong", [STRONG_MODEL], **(strong_channel or {}))],
        "models": {
            "base-weak": {"input": 0.27, "output": 1.10, "quality": 0.60,
                          "context_window": 128000},
            "base-mid": {"input": 1.00, "output": 5.00, "quality": 0.75,
                         "context_window": 200000},
            STRONG_MODEL: {"input": 15.0, "output": 75.0, "quality": 0.95,
                           "context_window": 200000},
        },
        "routers": {ROUTER: {
            "strategy": "gated_adaptive", "mode": "price", "session_aware": True,
            "allowed_models": [*BASE_MODELS, STRONG_MODEL],
            "weak_pool": ["base-weak"], "mid_pool": ["base-mid"],
            "strong_pool": [STRONG_MODEL], "t1": 0.45, "t2": 0.90,
            "escalation": {"mode": "auto", "t2": 0.55, "t1": 0.35, "streak": 2,
                           "strikes": 2, "strike_window_turns": 6, "max_per_session": 1,
                           "share_cap": 0.20, "warmup_requests": 20, "clean_turns": 3,
                           "tier_ttl_s": 14400},
        }},
        "workspace": {"share_cap": workspace_cap},
    }
    r = doc["routers"][ROUTER]
    if router:
        _merge(r, router)
    if escalation:
        _merge(r["escalation"], escalation)
    if extra:
        _merge(doc, extra)
    return loads(tomli_w.dumps(doc), source="tier-test", environ={})


@dataclass(frozen=True)
class Reply:
    status: int
    headers: httpx.Headers
    body: Any

    @property
    def tier_header(self) -> str:
        return self.headers.get("x-orca-session-tier", "")

    @property
    def tier(self) -> str:
        return self.tier_header.split(";", 1)[0].strip()

    @property
    def reason(self) -> str:
        _, _, rest = self.tier_header.partition("reason=")
        return rest.strip()

    @property
    def model(self) -> str | None:
        return self.headers.get("x-orca-model")

    @property
    def request_id(self) -> str:
        return self.headers["x-orca-request-id"]


@dataclass
class TierStack:
    """A tier story's view of a served sidecar: turns on a fake clock, state read back."""

    sidecar: Sidecar
    clock: FakeClock
    step_s: float = 1.0  # the fake clock moves this much before each request (turn order)

    @property
    def base_url(self) -> str:
        return self.sidecar.url

    @property
    def rt(self) -> Runtime:
        return self.sidecar.rt

    @property
    def http(self) -> httpx.AsyncClient:
        return self.sidecar.http

    @property
    def store(self) -> Store:
        return self.rt.gate.store

    async def chat(self, body: Mapping[str, Any], *, session: str | None = None,
                   tier: str | None = None, request_id: str | None = None,
                   stream: bool = False) -> Reply:
        """One OpenAI chat request; a stream is read to its end (the commit follows it)."""
        if self.step_s:
            self.clock.advance(self.step_s)
        headers: dict[str, str] = {"authorization": "Bearer agent-key"}
        if session is not None:
            headers["x-orca-session"] = session
        if tier is not None:
            headers["x-orcarouter-tier"] = tier
        if request_id is not None:
            headers["x-request-id"] = request_id
        payload = dict(body)
        if stream:
            payload["stream"] = True
        async with self.http.stream("POST", "/v1/chat/completions", json=payload,
                                    headers=headers) as resp:
            raw = await resp.aread()
        await self.sidecar.idle()  # its commit (and any racer's) has landed
        parsed: Any = raw.decode(errors="replace")
        if not stream:
            try:
                parsed = orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass
        return Reply(resp.status_code, resp.headers, parsed)

    async def snapshot(self, session: str, router: str = ROUTER) -> Snapshot:
        """What a request of `session` would read now (share counters of the last 24 h)."""
        return await self.store.read(ReadRequest(
            router=router, session=session, share_hours=window_hours(self.clock.now(), 24)))

    async def state(self, session: str, router: str = ROUTER) -> TierState | None:
        """The session's tier state as the store holds it (None: no tier state)."""
        return TierState.from_doc((await self.snapshot(session, router)).tier)

    async def trace(self, reply_or_id: Reply | str) -> Mapping[str, Any]:
        rid = reply_or_id.request_id if isinstance(reply_or_id, Reply) else reply_or_id
        found = await self.store.get_trace(rid)
        assert found is not None, f"no trace stored for {rid}"
        return found

    async def audit(self, event: str | None = None,
                    router: str = ROUTER) -> list[Mapping[str, Any]]:
        events = await self.store.list_audit(router)
        return [e for e in events if event is None or e["event"] == event]

    async def admin(self, method: str, path: str, body: Any = None) -> httpx.Response:
        """The operator's side: the admin API under /orca/v1/ with the admin token."""
        return await self.sidecar.admin(method, path, body)

    async def stat(self, name: str, router: str = ROUTER) -> float:
        """One field of the router's hourly stats, summed over the hours the store holds."""
        entries = await self.store.scan("router", router=router, key_prefix="stats:")
        return sum(float(e.value.get(name, 0)) for e in entries if isinstance(e.value, dict))

    def sim(self, channel: str) -> SimTransport:
        t = self.rt.transports[channel]
        assert isinstance(t, SimTransport)
        return t

    def set_faults(self, channel: str, **faults: Any) -> None:
        """Change what a simulated upstream does from now on (the upstream edge only)."""
        sim = self.sim(channel)
        sim.channel = replace(sim.channel, faults=replace(sim.channel.faults, **faults))


@asynccontextmanager
async def test_store(backend: str, clock: FakeClock) -> AsyncIterator[Store]:
    """A memory store on the fake clock, or a RedisStore on db 15 under a unique key prefix
    whose keys are deleted afterwards. Redis unreachable skips (fails under CI=true)."""
    if backend == "memory":
        mem = MemoryStore(clock=clock)
        try:
            yield mem
        finally:
            await mem.close()
        return
    require_redis()
    prefix = f"orca-tier-{uuid.uuid4().hex[:12]}"
    # A generous store timeout: these stories are about tiers, not about a loaded machine's
    # Redis latency (a store timeout would serve `degraded`; test_a_redis_outage covers it).
    store = open_store(StateConfig(backend="redis", redis_url=REDIS_URL, key_prefix=prefix,
                                   timeout_ms=2000), clock=clock)
    try:
        yield store
    finally:
        await store.close()
        delete_prefix(REDIS_URL, prefix)


test_store.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def closed_port_store(clock: FakeClock) -> Store:
    """A RedisStore pointed at a loopback port nothing listens on (connections refused)."""
    return open_store(StateConfig(backend="redis",
                                  redis_url=f"redis://127.0.0.1:{closed_port()}/15",
                                  key_prefix="orca-down", timeout_ms=100), clock=clock)


@asynccontextmanager
async def tier_stack(cfg: Config, store: Store, clock: FakeClock) -> AsyncIterator[TierStack]:
    """A sidecar on a real loopback port (port 0) over `store`, timed by `clock`."""
    gates = []
    try:
        async with sidecar(cfg, store=store, clock=clock, admin_token=ADMIN_TOKEN) as sc:
            gates.append(sc.rt.gate)
            yield TierStack(sc, clock)
    finally:
        for gate in gates:  # stop the recovery probe a test left running
            if gate._probe is not None:
                gate._probe.cancel()


Launch = Callable[..., Awaitable[TierStack]]


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def launch(backend: str) -> AsyncIterator[Launch]:
    """`await launch(cfg)` starts a sidecar over a fresh store of this backend (several per
    test are fine: each gets its own store, clock and port)."""
    async with AsyncExitStack() as stack:

        async def start(cfg: Config | None = None) -> TierStack:
            clock = FakeClock()
            store = await stack.enter_async_context(test_store(backend, clock))
            return await stack.enter_async_context(
                tier_stack(cfg or tier_config(), store, clock))

        yield start


def ok(reply: Reply) -> Reply:
    assert reply.status == 200, (reply.status, reply.body)
    return reply


def evals(trace: Mapping[str, Any]) -> dict[str, Any]:
    """Every trigger's evaluation as the trace recorded it (keys A, B, C, caps, ...)."""
    return dict(trace["tier"]["evaluations"])
