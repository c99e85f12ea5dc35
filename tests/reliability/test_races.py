"""Escalation races through HTTP against one redis-server (issue item 5; RELIABILITY S16).

The scenario and its Jepsen-style checks live in `tests/reliability/race.py`; the Cluster and
Sentinel runs of the same race are in `test_cluster_sentinel.py`.
"""

from __future__ import annotations

import pytest

from tests.reliability.agent import serve_agent
from tests.reliability.race import race_config, run_escalation_race
from tests.reliability.redis_procs import RedisFarm

pytestmark = pytest.mark.slow


async def test_64_racing_escalations_near_the_share_cap_keep_every_cap_and_count(
    farm: RedisFarm, prefix: str
) -> None:
    redis = farm.server()
    async with serve_agent(race_config(redis_url=redis.url, prefix=prefix)) as sc:
        await run_escalation_race(sc)
        assert sc.store.faults == []
        assert sc.rt.gate.replayed == 0  # no commit needed a second try


async def test_a_hot_session_racing_across_two_sidecars_never_degrades_the_store(
        farm: RedisFarm, prefix: str) -> None:
    """Contention is no outage: two sidecars on one Redis, waves of 48 concurrent requests on
    one session. Their commits race on the session's compare-and-set; a storm is sent again,
    so no request is served degraded, neither gate goes down and nothing is left held."""
    import asyncio

    from tests.reliability.agent import make_config

    redis = farm.server()
    # a generous store timeout: nothing here may time out, only compare-and-sets conflict
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=5000)
    async with serve_agent(cfg) as a, serve_agent(cfg) as b:
        for wave in range(4):
            replies = await asyncio.gather(*[
                (a if i % 2 else b).chat("hot", tier="strong", settle=False,
                                         request_id=f"w{wave}-{i}") for i in range(48)])
            degraded = [r.tier for r in replies if "degraded" in r.tier]
            assert not degraded, f"wave {wave}: {len(degraded)} of 48 served degraded"
            assert a.rt.gate.healthy and b.rt.gate.healthy
        assert not a.rt.gate.pending and not b.rt.gate.pending
