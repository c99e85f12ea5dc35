"""An orca upgraded onto a Redis that holds the per-hour share keys of the layout before the
share window hash (`share:<hour>:s|t`, one key per bucket) keeps the window's strong share:
its first read folds them into the hash, so the share cap is not bypassed, and a second
sidecar of the same Redis counts them once, not twice (SPEC §6.4, §9)."""

from __future__ import annotations

import time

import pytest

from orca_cli.routing.caps import window_hours
from orca_cli.state.base import ReadRequest, ShareCounts
from tests.redis_procs import RedisFarm
from tests.reliability.agent import ROUTER, make_config, serve_agent

pytestmark = pytest.mark.slow


async def test_an_upgraded_sidecar_keeps_the_strong_share_the_old_keys_counted(
    farm: RedisFarm, prefix: str
) -> None:
    redis = farm.server()
    cfg = make_config(redis_url=redis.url, prefix=prefix, share_cap=0.2, warmup=10)
    hour = window_hours(time.time(), 24)[-1]
    # What the previous layout left in this window: 30 strong of 100, four hours apart.
    for h, strong, total in ((hour - 4, 20, 60), (hour, 10, 40)):
        for kind, n in (("s", strong), ("t", total)):
            redis.command("SET", f"{prefix}:{{r:{ROUTER}}}:share:{h}:{kind}", n, "PX", 3_600_000)
    async with serve_agent(cfg) as one, serve_agent(cfg) as two:
        first = await one.chat("upgraded", tier="strong")
        assert first.tier == "base; reason=denied:share_cap", first
        second = await two.chat("other", tier="strong")
        assert second.tier == "base; reason=denied:share_cap", second
        snap = await two.store.inner.read(
            ReadRequest(ROUTER, share_hours=window_hours(two.rt.clock.now(), 24)))
        assert snap.share == ShareCounts(30, 102)  # the old counts once, and both requests
        assert redis.command("KEYS", f"{prefix}:*share:*") == []
