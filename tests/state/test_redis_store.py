"""Redis-only behaviour: round trips, sidecars racing, state loss (SPEC §9, RELIABILITY S15-S16)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from orca_cli.clock import FakeClock
from orca_cli.errors import CommitConflict
from orca_cli.state.base import (
    CommitBatch,
    IncrOp,
    ReadRequest,
    SetOp,
    ShareCounts,
    SlotRef,
    SlotWrite,
)
from orca_cli.state.redis import RedisStore
from tests.state.conftest import StoreEnv
from tests.state.test_store_contract import ROUTER, count, read_session, tier_write


def redis_store(env: StoreEnv, **kw: Any) -> RedisStore:
    store = env.open(**kw)
    assert isinstance(store, RedisStore)
    return store


async def test_a_read_and_a_commit_are_one_round_trip_each(redis_env: StoreEnv) -> None:
    store = redis_store(redis_env)
    await store.ping()  # first contact: epoch, run_id, scripts
    before = store.round_trips
    snap = await store.read(
        ReadRequest(
            "coding",
            "s1",
            share_hours=(1, 2),
            affinity_key="a",
            linucb_arms=("m1", "m2"),
            percentile_samples=10,
        )
    )
    assert store.round_trips == before + 1
    res = await store.commit(
        CommitBatch(
            "r1",
            (
                tier_write(snap, ops=(SetOp("pin:base", "m", 60),)),
                SlotWrite(ROUTER, (count(1),)),
                SlotWrite(SlotRef("workspace"), (count(1),)),
            ),
            audit=({"router": "coding", "event": "escalated"},),
            trace={"n": 1},
        )
    )
    assert res.round_trips == 1 and store.round_trips == before + 2


async def test_a_stale_writer_from_another_sidecar_goes_through_the_conflict_path(
    redis_env: StoreEnv,
) -> None:
    a, b = redis_store(redis_env), redis_store(redis_env)
    stale = await read_session(a)
    await b.commit(CommitBatch("rb", (tier_write(stale),)))
    res = await a.commit(CommitBatch("ra", (tier_write(stale),)))
    assert res.results[0].attempts == 2 and res.round_trips == 2 and a.conflicts == 1
    assert res.results[0].tier == {"v": 2, "count": 2}


async def test_sidecars_racing_on_one_session_lose_no_acknowledged_update(
    redis_env: StoreEnv,
) -> None:
    stores = [redis_store(redis_env) for _ in range(4)]
    stale = await read_session(stores[0])

    async def worker(n: int, store: RedisStore) -> int:
        done = 0
        for i in range(10):
            await asyncio.sleep(random.uniform(0, 0.002))
            try:
                await store.commit(CommitBatch(f"w{n}-{i}", (tier_write(stale),)))
                done += 1
            except CommitConflict:
                pass  # a conflict storm is reported, and nothing of it applied
        return done

    acknowledged = sum(await asyncio.gather(*[worker(n, s) for n, s in enumerate(stores)]))
    snap = await read_session(stores[0])
    assert snap.tier is not None and snap.tier["count"] == acknowledged == snap.tier_version
    assert acknowledged >= 30
    assert sum(s.conflicts for s in stores) >= 3  # every sidecar's first commit was stale
    assert sum(s.conflict_storms for s in stores) == 40 - acknowledged


async def test_a_vanished_epoch_is_detected_audited_once_and_shared(redis_env: StoreEnv) -> None:
    store = redis_store(redis_env)
    assert (await read_session(store)).state_lost_at is None
    redis_env.clock.advance(5)
    client = redis_env.redis()
    try:
        client.delete(f"{redis_env.prefix}:epoch")
        snap = await read_session(store)
        assert snap.state_lost_at == redis_env.clock.now()
        assert client.exists(f"{redis_env.prefix}:epoch") == 1
    finally:
        client.close()
    redis_env.clock.advance(5)
    assert (await read_session(store)).state_lost_at == snap.state_lost_at
    lost = [e for e in await store.list_audit() if e["event"] == "state_lost"]
    assert len(lost) == 1 and lost[0]["actor"] == "store" and lost[0]["router"] == ""
    # A sidecar started later, and another that was running, both report the same loss.
    later = redis_store(redis_env)
    assert (await read_session(later)).state_lost_at == snap.state_lost_at
    assert len([e for e in await later.list_audit("coding") if e["event"] == "state_lost"]) == 1


async def test_keys_follow_the_spec_names_and_share_one_slot_per_session(
    redis_env: StoreEnv,
) -> None:
    from redis.crc import key_slot

    store = redis_store(redis_env)
    snap = await read_session(store)
    await store.commit(
        CommitBatch(
            "r1",
            (
                tier_write(snap, ops=(SetOp("pin:base", "m", 60), SetOp("chan:strong", "{}", 60))),
                SlotWrite(ROUTER, (count(1),)),
            ),
        )
    )
    p = redis_env.prefix
    client = redis_env.redis()
    try:
        names = set(client.scan_iter(match=f"{p}:*"))
    finally:
        client.close()
    session = {
        f"{p}:{{r:coding:s:s1}}:{k}" for k in ("tier", "pin:base", "chan:strong", "commit:r1")
    }
    router = {f"{p}:{{r:coding}}:{k}" for k in ("share", "commit:r1")}
    assert names == session | router | {f"{p}:epoch"}
    assert len({key_slot(k.encode()) for k in session}) == 1
    assert len({key_slot(k.encode()) for k in router}) == 1


async def test_a_commit_that_gives_up_waiting_for_its_session_leaves_the_holder_alone() -> None:
    store = RedisStore(
        lambda: None, mode="single", clock=FakeClock(), key_prefix="t", timeout_ms=50
    )
    async with store._gates_held(["slot"]) as held:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.01), store._gates_held(["slot"]):
                pass
        assert held["slot"].lock.locked() and held["slot"].users == 1
    assert store._gates == {}  # no gate outlives its last user


# --- the share window hash, and the per-hour keys before it -------------------------------------


def test_a_share_window_costs_the_read_the_same_arguments_whatever_its_length() -> None:
    from orca_cli.state import redis_cmds as C

    def sizes(hours: tuple[int, ...]) -> list[int]:
        cmds, _ = C.read_commands("orca", ReadRequest("coding", "s1", share_hours=hours))
        return [len(c) for c in cmds]

    assert sizes(tuple(range(100, 124))) == sizes((123,)) == sizes(tuple(range(1, 169)))


def _legacy(client: Any, prefix: str, tag: str, buckets: dict[str, float], ttl_ms: int) -> None:
    """The per-hour share keys an orca of the previous layout wrote (INCRBYFLOAT, PEXPIRE)."""
    for field, amount in buckets.items():
        key = f"{prefix}:{{{tag}}}:share:{field}"
        client.incrbyfloat(key, amount)
        client.pexpire(key, ttl_ms)


async def test_an_upgraded_sidecar_folds_the_per_hour_share_keys_into_the_window_once(
    redis_env: StoreEnv,
) -> None:
    p = redis_env.prefix
    old = {"5:s": 2, "5:t": 10, "7:s": 1, "7:t": 5, "2:t": 100}  # hour 2: outside the window
    client = redis_env.redis()
    try:
        _legacy(client, p, "r:coding", old, 60_000)
        _legacy(client, p, "w", old, 60_000)
        a, b = redis_store(redis_env), redis_store(redis_env)
        await a.commit(CommitBatch("new", (SlotWrite(ROUTER, (count(6, "s"), count(6))),)))
        window = ReadRequest("coding", share_hours=(5, 6, 7))
        # two sidecars' first reads race: whichever folds first, each count is taken once
        snaps = await asyncio.gather(a.read(window), b.read(window))
        assert [s.share for s in snaps] == [ShareCounts(4, 16)] * 2
        assert [s.workspace_share for s in snaps] == [ShareCounts(3, 15)] * 2
        left = sorted(k.rsplit(":", 2)[-2] + ":" + k.rsplit(":", 1)[-1]
                      for k in client.scan_iter(match=f"{p}:*share:*"))
        assert left == ["2:t", "2:t"]  # the window's keys are gone, the older hour waits
        assert 50_000 < client.pttl(f"{p}:{{w}}:share") <= 60_000  # outlives what it took in
        assert (await a.read(window)).share == ShareCounts(4, 16)  # no second fold
        wider = await b.read(ReadRequest("coding", share_hours=tuple(range(2, 8))))
        assert wider.share == ShareCounts(4, 116) and wider.workspace_share == ShareCounts(3, 115)
        assert not list(client.scan_iter(match=f"{p}:*share:*"))
        again = await a.read(ReadRequest("coding", share_hours=tuple(range(2, 8))))
        assert again.share == ShareCounts(4, 116)
    finally:
        client.close()


async def test_a_read_with_no_share_window_folds_nothing(redis_env: StoreEnv) -> None:
    client = redis_env.redis()
    try:
        _legacy(client, redis_env.prefix, "r:coding", {"5:t": 3}, 60_000)
        store = redis_store(redis_env)
        await store.read(ReadRequest("coding", "s1"))
        assert client.get(f"{redis_env.prefix}:{{r:coding}}:share:5:t") == "3"
        legacy = (IncrOp("share:5:s", 1, 60),)  # a legacy key written after the fold...
        await store.read(ReadRequest("coding", share_hours=(5,)))
        await store.commit(CommitBatch("late", (SlotWrite(ROUTER, legacy),)))
        # ...is not this process's to fold again: sidecars of one Redis upgrade together
        assert (await store.read(ReadRequest("coding", share_hours=(5,)))).share == \
            ShareCounts(0, 3)
    finally:
        client.close()


async def test_transition_reservations_count_across_sidecars(redis_env: StoreEnv) -> None:
    """`TRANSITION_RESERVE` (SPEC §6.4 across sidecars): once-boosts in flight count one each,
    escalations in flight one in all (racing escalations join), the stored count beside
    them; a reservation given back or lapsed leaves room again."""
    a, b = redis_store(redis_env), redis_store(redis_env)

    async def reserve(store: RedisStore, session: str, rid: str, *, escalate: bool = False,
                      cap: int = 2, ttl: float = 60) -> bool:
        return await store.reserve_transition("coding", session, rid, escalate=escalate,
                                              max_count=cap, ttl_s=ttl)

    assert await reserve(a, "s1", "o1") and await reserve(b, "s1", "o2")
    assert not await reserve(a, "s1", "o3")  # two once-boosts in flight: the cap of 2
    await b.release_transition("coding", "s1", "o2")
    assert await reserve(a, "s1", "o3")

    assert await reserve(a, "s2", "e1", escalate=True, cap=1)
    assert await reserve(b, "s2", "e2", escalate=True, cap=1)  # joins the escalation
    assert not await reserve(b, "s2", "o1", cap=1)  # the escalation in flight counts one
    await a.release_transition("coding", "s2", "e1")
    await b.release_transition("coding", "s2", "e2")
    stale = await read_session(a, "s2")
    await a.commit(CommitBatch("c1", (tier_write(stale, slot=SlotRef.of_session("coding",
                                                                               "s2")),)))
    assert not await reserve(b, "s2", "o2", cap=1)  # the stored count (1) is the cap
    assert await reserve(b, "s2", "o2", cap=2)

    assert await reserve(a, "s3", "o1", cap=1, ttl=0.2)
    assert not await reserve(b, "s3", "o2", cap=1)
    await redis_env.advance(0.3)  # a request that never gave it back: it lapses
    assert await reserve(b, "s3", "o2", cap=1)
