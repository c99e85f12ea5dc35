"""The same store on Redis Cluster (SPEC §9, RELIABILITY S34): no cross-slot command anywhere."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from orca_cli.clock import FakeClock
from orca_cli.state.base import (
    CommitBatch,
    IncrOp,
    ReadRequest,
    SetOp,
    ShareCounts,
    SlotRef,
    SlotWrite,
)
from tests.state.conftest import ClusterProcs, StoreEnv
from tests.state.test_store_contract import (
    ROUTER,
    SESSION,
    WORKSPACE,
    count,
    read_session,
    tier_write,
)

pytestmark = pytest.mark.slow


@pytest.fixture
async def cluster_env(own_cluster: ClusterProcs) -> AsyncIterator[StoreEnv]:
    env = StoreEnv("redis", FakeClock(), f"orcatest-{uuid.uuid4().hex[:12]}", own_cluster.url)
    env.mode = "cluster"
    try:
        yield env
    finally:
        for s in env.opened:
            await s.close()


async def test_reads_commits_scans_and_traces_work_across_the_cluster(
    cluster_env: StoreEnv,
) -> None:
    store = cluster_env.open()
    other = cluster_env.open()
    stale = await read_session(store)
    legacy = (IncrOp("share:1:s", 4, 60),)  # the per-hour keys before the share hash
    await other.commit(CommitBatch("old", (SlotWrite(ROUTER, legacy),
                                           SlotWrite(WORKSPACE, legacy))))
    results = await asyncio.gather(
        *[
            s.commit(
                CommitBatch(
                    f"r{i}",
                    (
                        tier_write(stale, ops=(SetOp("pin:base", "m", 60),)),
                        SlotWrite(ROUTER, (count(1),)),
                        SlotWrite(WORKSPACE, (count(1),)),
                        SlotWrite(
                            SlotRef.of_session("coding", f"x{i}"), (SetOp("pin:base", "n", 60),)
                        ),
                    ),
                    audit=({"router": "coding", "event": "escalated"},),
                    trace={"client_request_id": f"c{i}"},
                )
            )
            for i, s in enumerate([store, other] * 5)
        ]
    )
    assert all(r.results[0].status == "applied" for r in results)
    snap = await store.read(ReadRequest("coding", "s1", share_hours=(1,)))
    assert snap.tier is not None and snap.tier["count"] == 10
    # the legacy keys were folded into the hashes by this first windowed read
    assert snap.share == ShareCounts(4, 10) and snap.workspace_share == ShareCounts(4, 10)
    again = await other.read(ReadRequest("coding", "s1", share_hours=(1,)))
    assert again.share == ShareCounts(4, 10) and again.workspace_share == ShareCounts(4, 10)
    pins = await store.scan("session", key_prefix="pin:")
    assert {e.slot.session for e in pins} == {"s1"} | {f"x{i}" for i in range(10)}
    assert await store.get_trace("c3") == {"client_request_id": "c3"}
    assert len(await store.list_audit("coding")) == 10
    assert (await store.get(SESSION, "pin:base")) is not None
