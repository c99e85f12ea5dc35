"""Escalation races through HTTP against one redis-server (issue item 5; RELIABILITY S16).

The scenario and its Jepsen-style checks live in `tests/reliability/race.py`; the Cluster and
Sentinel runs of the same race are in `test_cluster_sentinel.py`.
"""

from __future__ import annotations

import pytest

from tests.redis_procs import RedisFarm
from tests.reliability.agent import serve_agent
from tests.reliability.race import race_config, run_escalation_race

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


async def test_a_burst_of_once_asks_across_two_sidecars_is_served_strong_at_most_once(
        farm: RedisFarm, prefix: str) -> None:
    """SPEC §6.4: `max_per_session` binds once-boosts whichever sidecar serves them. Each
    sidecar's in-flight table counts only its own; the transition is reserved in Redis too
    (`scripts.TRANSITION_RESERVE`), so a burst spread over two sidecars (or `--workers 2`)
    is served strong once, and every other ask of it is denied by the session cap."""
    import asyncio

    from tests.reliability.agent import make_config

    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, timeout_ms=5000, max_per_session=1)
    async with serve_agent(cfg) as a, serve_agent(cfg) as b:
        over = []
        for run in range(5):
            session = f"once-{run}"
            replies = await asyncio.gather(*[
                (a if i % 2 else b).chat(session, tier="once", settle=False,
                                         request_id=f"{session}-{i}") for i in range(40)])
            strong = [r for r in replies if r.served_strong]
            if len(strong) != 1:
                over.append((session, len(strong)))
            assert all("session_cap" in r.tier for r in replies if not r.served_strong), [
                r.tier for r in replies if not r.served_strong]
        assert not over, f"max_per_session = 1, once-boosts served strong: {over}"
        # every reservation was given back: a later ask on a fresh session is served
        later = await a.chat("once-after", tier="once", settle=False, request_id="after-1")
        assert later.served_strong
