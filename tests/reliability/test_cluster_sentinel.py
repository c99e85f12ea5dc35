"""Redis Cluster and Sentinel for real (SPEC §9; RELIABILITY S33, S34; issue item 9).

* Cluster: three `redis-server --cluster-enabled yes` nodes joined by `redis-cli --cluster
  create`. Sentinel: a primary, its replica and one `redis-server --sentinel` (quorum 1).
* The whole store contract suite (`tests/state/test_store_contract.py`) runs against both:
  its test functions are collected here again with an `env` fixture over these topologies,
  so any cross-slot command or a Sentinel-only difference fails a contract test by name.
* The escalation race of `race.py` runs through HTTP against both.
* A Sentinel failover (`SENTINEL FAILOVER`) in the middle of a conversation load: requests keep
  succeeding (degraded while the old primary is demoted), the sidecar follows the new primary
  by itself, and nothing is applied twice (writes the old primary took after the failover may
  be lost, as Sentinel documents; the store must never hold more than the clients were billed).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from orca_cli.clock import FakeClock
from orca_cli.config.schema import StateConfig
from orca_cli.routing.caps import window_hours
from orca_cli.state.base import ReadRequest, Store
from orca_cli.state.factory import open_store
from orca_cli.testing import eventually
from tests.redis_procs import ClusterProcs, RedisFarm, SentinelGroup
from tests.reliability.agent import ROUTER, Agent, Reply, make_config, serve_agent
from tests.reliability.race import quiesce, race_config, run_escalation_race
from tests.state import test_store_contract as contract
from tests.state.conftest import StoreEnv

pytestmark = pytest.mark.slow

# The contract suite, collected again in this module with this module's `env` and `store`.
globals().update({name: fn for name, fn in vars(contract).items()
                  if name.startswith("test_") and callable(fn)})


@pytest.fixture(scope="module")
def cluster(module_farm: RedisFarm) -> ClusterProcs:
    return module_farm.cluster()


@pytest.fixture(scope="module")
def sentinel(module_farm: RedisFarm) -> SentinelGroup:
    return module_farm.sentinel_group()


@dataclass
class TopologyEnv(StoreEnv):
    """A contract-suite environment whose stores reach Redis through a cluster or a sentinel."""

    sentinels: tuple[str, ...] = ()

    def open(self, **kw: Any) -> Store:
        cfg = StateConfig(backend="redis", redis_mode=self.mode,  # type: ignore[arg-type]
                          redis_url=self.url or StateConfig().redis_url,
                          sentinels=self.sentinels, key_prefix=self.prefix,
                          timeout_ms=kw.pop("timeout_ms", self.timeout_ms))
        store = open_store(cfg, clock=self.clock, trace_max=kw.pop("trace_max", 20000),
                           trace_ttl_s=kw.pop("trace_ttl_s", 86400), **kw)
        self.opened.append(store)
        return store


@pytest.fixture(params=["cluster", "sentinel"])
async def env(request: pytest.FixtureRequest) -> AsyncIterator[TopologyEnv]:
    prefix = f"orcarel-{uuid.uuid4().hex[:10]}"
    if request.param == "cluster":
        topo: ClusterProcs = request.getfixturevalue("cluster")
        e = TopologyEnv("redis", FakeClock(), prefix, topo.url, mode="cluster")
    else:
        group: SentinelGroup = request.getfixturevalue("sentinel")
        e = TopologyEnv("redis", FakeClock(), prefix, mode="sentinel",
                        sentinels=group.sentinels)
    try:
        yield e
    finally:
        for s in e.opened:
            await s.close()


@pytest.fixture
def store(env: TopologyEnv) -> Store:
    return env.open()


@pytest.fixture
def topology(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """make_config keywords that reach the module's cluster or sentinel group."""
    if request.param == "cluster":
        yield {"redis_mode": "cluster", "redis_url": request.getfixturevalue("cluster").url}
    else:
        group: SentinelGroup = request.getfixturevalue("sentinel")
        yield {"redis_mode": "sentinel", "sentinels": group.sentinels}


@pytest.mark.parametrize("topology", ["cluster", "sentinel"], indirect=True)
async def test_the_escalation_race_holds_on_the_topology(
    topology: dict[str, Any], prefix: str
) -> None:
    async with serve_agent(race_config(prefix=prefix, **topology)) as sc:
        await run_escalation_race(sc, tag=prefix)
        assert sc.store.faults == []


# --- a Sentinel failover under load -----------------------------------------------------------

WORKERS = 8


async def _converse(sc: Agent, session: str, stop: asyncio.Event, turns: list[Reply]) -> None:
    """One agent: a turn every ~20 ms, asking strong on its third, until told to stop."""
    n = 0
    while not stop.is_set() and n < 2000:  # bounded either way
        n += 1
        turns.append(await sc.chat(session, tier="strong" if n == 3 else None))
        await asyncio.sleep(0.02)


def _served(turns: list[Reply], since: int) -> int:
    """Turns after the first `since` that were served from the store (not degraded)."""
    return sum(1 for r in turns[since:] if not r.tier.endswith("degraded"))


async def test_a_sentinel_failover_mid_run_keeps_serving_and_applies_nothing_twice(
    farm: RedisFarm, prefix: str
) -> None:
    group = farm.sentinel_group()
    # A 1 s store timeout, not 250 ms: on a loaded machine the agents, the sidecar, two
    # servers and a sentinel share two cores, and this test is about the failover's
    # correctness; the latency bounds are in test_store_faults_http.py.
    cfg = make_config(redis_mode="sentinel", sentinels=group.sentinels, prefix=prefix,
                      timeout_ms=1000, warmup=1)
    old_primary = group.primary
    async with serve_agent(cfg) as sc:
        stop = asyncio.Event()
        turns: dict[str, list[Reply]] = {f"fo-{i}": [] for i in range(WORKERS)}
        agents = [asyncio.create_task(_converse(sc, s, stop, t)) for s, t in turns.items()]
        await eventually(lambda: all(_served(t, 0) >= 3 for t in turns.values()), 30,
                         what="every agent is served three turns before the failover")
        failover_at = time.monotonic()
        await asyncio.to_thread(group.failover)
        # Sentinel demotes the old primary on its next INFO round (~10 s); until then the
        # sidecar may still write there. Keep the load on until it is a replica and every
        # agent was served (not degraded) from the new primary.
        await eventually(lambda: old_primary.command("ROLE")[0] == "slave", 60, 0.2,
                         what="the old primary is demoted")
        marks = {s: len(t) for s, t in turns.items()}
        await eventually(lambda: all(_served(t, marks[s]) >= 1 for s, t in turns.items()),
                         60, what="every agent is served from the new primary")
        stop.set()
        await asyncio.gather(*agents)
        await quiesce(sc)
        elapsed = time.monotonic() - failover_at

        replies = [r for t in turns.values() for r in t]
        assert replies and all(r.status == 200 for r in replies), elapsed
        assert group.master_port() == group.primary.port != old_primary.port
        hours = window_hours(sc.rt.clock.now(), 24)
        committed = [r for r in replies if not r.tier.endswith("degraded")]
        for session, t in turns.items():
            snap = await sc.store.inner.read(ReadRequest(ROUTER, session, share_hours=hours))
            mine = [r for r in t if not r.tier.endswith("degraded")]
            assert snap.tier is not None and snap.tier["turn"] <= len(mine)  # never twice
            assert snap.tier["count"] <= 1
        assert snap.share.total <= len(committed)
        assert snap.share.strong <= sum(r.served_strong for r in committed)
        # The sidecar wrote to the new primary after the demotion: those turns are there.
        for session, t in turns.items():
            after = [r for r in t[marks[session]:] if not r.tier.endswith("degraded")]
            assert after, session
            assert await sc.store.inner.get_trace(after[-1].request_id) is not None
        assert snap.state_lost_at is not None  # a new primary's run_id: flagged conservatively
        assert not sc.rt.gate.pending
        late = await sc.chat("fo-late", tier="strong")  # escalation resumes on the new primary
        assert (late.status, late.tier) == (200, "strong; reason=explicit")
