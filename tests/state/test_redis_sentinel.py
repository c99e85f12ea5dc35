"""The same store under Sentinel (SPEC §9): the primary is found through the sentinel."""

from __future__ import annotations

import uuid

from orca_cli.clock import FakeClock
from orca_cli.config.schema import StateConfig
from orca_cli.state.base import CommitBatch, ReadRequest, SetOp, SlotWrite
from orca_cli.state.factory import open_store
from tests.redis_procs import SentinelGroup
from tests.state.test_store_contract import ROUTER, SESSION, count, read_session, tier_write


async def test_a_store_behind_a_sentinel_reads_and_commits(own_sentinel: SentinelGroup) -> None:
    cfg = StateConfig(
        backend="redis",
        redis_mode="sentinel",
        sentinel_service="mymaster",
        sentinels=own_sentinel.sentinels,
        timeout_ms=1000,
        key_prefix=f"orcatest-{uuid.uuid4().hex[:12]}",
    )
    store = open_store(cfg, clock=FakeClock())
    try:
        snap = await read_session(store)
        res = await store.commit(
            CommitBatch(
                "r1",
                (
                    tier_write(snap, ops=(SetOp("pin:base", "m", 60),)),
                    SlotWrite(ROUTER, (count(1),)),
                ),
            )
        )
        assert [r.status for r in res.results] == ["applied", "applied"]
        snap = await store.read(ReadRequest("coding", "s1", share_hours=(1,)))
        assert snap.tier_version == 1 and snap.pins == {"base": "m"} and snap.share.total == 1
        assert (await store.get(SESSION, "pin:base")) is not None
        await store.ping()
    finally:
        await store.close()
    client = own_sentinel.primary.client()
    try:
        assert client.exists(f"{cfg.key_prefix}:{{r:coding:s:s1}}:tier") == 1
    finally:
        client.close()
