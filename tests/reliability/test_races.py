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
