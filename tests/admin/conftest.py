"""Admin fixtures: the store contract fixtures (memory and a real Redis on db 15), the example
config, and `drive`, which runs one routed turn through the same read -> resolve -> commit path
the proxy uses, so operator calls see state a real request would have written."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from orca_cli.clock import SystemClock
from orca_cli.config.load import loads
from orca_cli.config.schema import Config, StateConfig
from orca_cli.config.template import example_text
from orca_cli.routing.caps import CapsView, ShareView, window_hours
from orca_cli.routing.escalation import TierDecision, TurnSignals, resolve_tier
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import ReadRequest, Store
from orca_cli.state.factory import open_store
from orca_cli.state.plan import PlanContext, TurnOutcome, build_commit
from orca_cli.testing import Sidecar, sidecar
from tests.state.conftest import delete_prefix, env, redis_url, store  # noqa: F401 - fixtures reused

ROUTER = "coding"


@pytest.fixture
def cfg() -> Config:
    return loads(example_text(), source="example")


async def drive(st: Store, cfg: Config, session: str, *, now: float, rid: str,
                ask: str | None = None, delta: float = 0.1, router: str = ROUTER,
                cost: float = 0.001, cached: int = 0) -> TierDecision:
    """One billed-success turn of `session`: read, resolve, commit (as `proxy.handler`)."""
    esc = cfg.routers[router].escalation
    snap = await st.read(ReadRequest(router=router, session=session,
                                     share_hours=window_hours(now, esc.share_window_h)))
    caps = CapsView(share=ShareView(snap.share.strong, snap.share.total),
                    workspace_share=ShareView(snap.workspace_share.strong,
                                              snap.workspace_share.total),
                    share_cap=esc.share_cap, workspace_cap=cfg.workspace.share_cap,
                    warmup_requests=esc.warmup_requests)
    decision = resolve_tier(TierState.from_doc(snap.tier),
                            TurnSignals(f"k-{rid}", delta, True, ask=ask),  # type: ignore[arg-type]
                            caps, esc, now=now, t2=esc.t2, strong_window_s=300)
    model = "gpt-4.1" if decision.tier == "strong" else "deepseek-chat"
    ctx = PlanContext(request_id=rid, router=router, session=session, explicit_session=True,
                      durable_store=st.backend == "redis", esc=esc, now=now)
    outcome = TurnOutcome(True, model=model, channel="sim-cheap", key_index=0,
                          key_fp="abcd1234", window_s=300, prompt_tokens=100,
                          cached_tokens=cached, output_tokens=10, cost_usd=cost)
    trace: dict[str, Any] = {"request_id": rid, "client_request_id": f"client-{rid}",
                             "ts": now, "router": router, "session_id": session,
                             "tier": {"decision": decision.tier, "reason": decision.reason}}
    await st.commit(build_commit(ctx, decision, snap, outcome, trace=trace))
    return decision


# --- a real sidecar with the admin API, over both store backends ------------------------------

ADMIN_TOKEN = "admin-test-token"


@contextlib.asynccontextmanager
async def sidecar_on(cfg: Config, state: StateConfig, token: str) -> AsyncIterator[Sidecar]:
    """A sidecar serving `cfg` with the admin API (`token`) over `state`'s store; a Redis
    store's keys (its `key_prefix`) are deleted afterwards."""
    clock = SystemClock()
    try:
        async with sidecar(cfg, store=open_store(state, clock=clock), clock=clock,
                           admin_token=token) as sc:
            yield sc
    finally:
        if state.backend == "redis":
            delete_prefix(state.redis_url, state.key_prefix)


@pytest.fixture(params=["memory", "redis"])
async def admin_sidecar(request: pytest.FixtureRequest, cfg: Config) -> AsyncIterator[Sidecar]:
    prefix = f"orcatest-{uuid.uuid4().hex[:12]}"
    url = request.getfixturevalue("redis_url") if request.param == "redis" else ""
    state = StateConfig(backend=request.param, redis_url=url or StateConfig().redis_url,
                        key_prefix=prefix, timeout_ms=2000)
    async with sidecar_on(cfg, state, ADMIN_TOKEN) as sc:
        yield sc
