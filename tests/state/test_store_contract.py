"""The store contract (SPEC §9): every test runs on the memory backend and on a real Redis."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orca_cli.errors import StoreUnavailable
from orca_cli.state import keys as K
from orca_cli.state.base import (
    CommitBatch,
    DelOp,
    ExpireAtLeastOp,
    HIncrManyOp,
    HIncrOp,
    IncrOp,
    PushOp,
    ReadRequest,
    SetOp,
    ShareCounts,
    SlotRef,
    SlotWrite,
    Snapshot,
    Store,
    WindowIncrOp,
    ZAddOp,
)
from tests.state.conftest import StoreEnv

SESSION = SlotRef.of_session("coding", "s1")
OTHER_SESSION = SlotRef.of_session("coding", "s2")
ROUTER = SlotRef.of_router("coding")
WORKSPACE = SlotRef("workspace")


def bump(doc: dict[str, Any] | None) -> dict[str, Any]:
    out = dict(doc or {})
    out["count"] = out.get("count", 0) + 1
    return out


def tier_write(
    snap: Snapshot, *, ops: tuple[Any, ...] = (), ttl: float = 60, slot: SlotRef = SESSION
) -> SlotWrite:
    return SlotWrite(
        slot,
        ops,
        mutate=bump,
        expected_version=snap.tier_version,
        tier_ttl_s=ttl,
        base_doc=snap.tier,
    )


async def read_session(store: Store, session: str = "s1", **kw: Any) -> Snapshot:
    return await store.read(ReadRequest("coding", session, **kw))


def count(hour: int, kind: str = "t", n: float = 1, *, ttl: float = 60,
          window: int = 24) -> WindowIncrOp:
    """One count into a slot's share window hash."""
    return WindowIncrOp(K.SHARE_KEY, hour, kind, n, window, ttl)


# --- tier document ----------------------------------------------------------------------------


async def test_an_empty_store_reads_as_defaults(store: Store) -> None:
    snap = await store.read(
        ReadRequest(
            "coding",
            "s1",
            share_hours=(1, 2),
            affinity_key="abc",
            linucb_arms=("m",),
            percentile_samples=10,
        )
    )
    assert snap.tier is None and snap.tier_version == 0
    assert snap.pins == {} and snap.channel_pins == {}
    assert snap.share == ShareCounts() and snap.workspace_share == ShareCounts()
    assert snap.affinity is None and snap.linucb == {"m": []} and snap.percentile_samples == ()
    assert snap.state_lost_at is None


async def test_each_tier_write_increments_the_store_maintained_version(store: Store) -> None:
    snap = await read_session(store)
    r1 = await store.commit(CommitBatch("r1", (tier_write(snap),)))
    assert r1.results[0].status == "applied" and r1.results[0].tier == {"v": 1, "count": 1}
    snap = await read_session(store)
    assert snap.tier_version == 1 and snap.tier == {"v": 1, "count": 1}
    await store.commit(CommitBatch("r2", (tier_write(snap),)))
    snap = await read_session(store)
    assert snap.tier_version == 2 and snap.tier is not None and snap.tier["count"] == 2


async def test_a_mutate_returning_none_deletes_the_tier_document(store: Store) -> None:
    await store.commit(CommitBatch("r1", (tier_write(await read_session(store)),)))
    snap = await read_session(store)
    drop = SlotWrite(
        SESSION,
        mutate=lambda doc: None,
        expected_version=snap.tier_version,
        base_doc=snap.tier,
        tier_ttl_s=60,
    )
    res = await store.commit(CommitBatch("r2", (drop,)))
    assert res.results[0].status == "applied" and res.results[0].tier is None
    assert (await read_session(store)).tier_version == 0


async def test_pins_and_channel_pins_read_back_per_tier(store: Store) -> None:
    chan = '{"channel":"sim-cheap","key_index":1,"key_fp":"abcd1234"}'
    ops = (
        SetOp("pin:base", "deepseek-chat", 60),
        SetOp("pin:strong", "claude-opus", 60),
        SetOp("chan:base", chan, 60),
    )
    await store.commit(CommitBatch("r1", (SlotWrite(SESSION, ops),)))
    snap = await read_session(store)
    assert snap.pins == {"base": "deepseek-chat", "strong": "claude-opus"}
    assert snap.channel_pins == {
        "base": {"channel": "sim-cheap", "key_index": 1, "key_fp": "abcd1234"}
    }
    assert (await read_session(store, "s2")).pins == {}


# --- TTLs ---------------------------------------------------------------------------------------


async def test_keys_expire_after_their_ttl(env: StoreEnv, store: Store) -> None:
    await store.commit(CommitBatch("r1", (SlotWrite(SESSION, (SetOp("pin:base", "m", 0.3),)),)))
    assert (await read_session(store)).pins == {"base": "m"}
    await env.advance(0.5)
    assert (await read_session(store)).pins == {}
    assert await store.get(SESSION, "pin:base") is None


async def test_every_commit_slides_the_tier_ttl(env: StoreEnv, store: Store) -> None:
    await store.commit(CommitBatch("r1", (tier_write(await read_session(store), ttl=1.0),)))
    await env.advance(0.6)
    # A commit that only refreshes a pin still slides the tier document's TTL.
    refresh = SlotWrite(SESSION, (SetOp("pin:base", "m", 5),), tier_ttl_s=1.0)
    await store.commit(CommitBatch("r2", (refresh,)))
    await env.advance(0.6)
    assert (await read_session(store)).tier_version == 1  # 1.2 s after the first write
    await store.commit(CommitBatch("r3", (tier_write(await read_session(store), ttl=1.0),)))
    await env.advance(0.6)
    assert (await read_session(store)).tier_version == 2
    await env.advance(0.7)
    assert (await read_session(store)).tier is None  # 1.3 s after the last commit


async def test_expiry_starts_a_new_episode_even_for_a_stale_writer(
    env: StoreEnv, store: Store
) -> None:
    await store.commit(CommitBatch("r1", (tier_write(await read_session(store), ttl=0.3),)))
    stale = await read_session(store)
    await env.advance(0.5)
    res = await store.commit(CommitBatch("r2", (tier_write(stale, ttl=60),)))
    assert res.results[0].status == "applied"
    snap = await read_session(store)
    assert snap.tier == {"v": 1, "count": 1}


# --- concurrency and idempotency --------------------------------------------------------------


async def test_fifty_concurrent_commits_on_one_session_lose_no_update(store: Store) -> None:
    stale = await read_session(store)
    results = await asyncio.gather(
        *[store.commit(CommitBatch(f"r{i}", (tier_write(stale),))) for i in range(50)]
    )
    assert all(r.results[0].status == "applied" for r in results)
    snap = await read_session(store)
    assert snap.tier is not None and snap.tier["count"] == 50 and snap.tier_version == 50


async def test_a_stale_writer_reapplies_onto_the_fresh_document(store: Store) -> None:
    stale = await read_session(store)
    await store.commit(CommitBatch("r1", (tier_write(stale),)))
    res = await store.commit(CommitBatch("r2", (tier_write(stale),)))
    assert res.results[0].status == "applied" and res.results[0].tier == {"v": 2, "count": 2}


async def test_a_write_without_its_base_document_still_applies_onto_fresh_state(
    store: Store,
) -> None:
    await store.commit(CommitBatch("r1", (tier_write(await read_session(store)),)))
    blind = SlotWrite(SESSION, mutate=bump, expected_version=1, tier_ttl_s=60)
    res = await store.commit(CommitBatch("r2", (blind,)))
    assert res.results[0].tier == {"v": 2, "count": 2}


async def test_the_same_request_id_applies_once_in_every_slot(store: Store) -> None:
    batch = CommitBatch(
        "req-1",
        (
            tier_write(await read_session(store), ops=(SetOp("pin:base", "m", 60),)),
            SlotWrite(
                ROUTER,
                (
                    count(7),
                    HIncrOp("stats:7", "requests", 1, 60),
                    PushOp("pct", "0.5", 10, 60),
                    ZAddOp("recent", "s1", 5, 10, 60),
                ),
            ),
            SlotWrite(WORKSPACE, (count(7),)),
        ),
    )
    first = await store.commit(batch)
    again = await store.commit(batch)
    assert [r.status for r in first.results] == ["applied"] * 3
    assert [r.status for r in again.results] == ["duplicate"] * 3
    assert again.results[0].tier == {"v": 1, "count": 1}
    snap = await store.read(ReadRequest("coding", "s1", share_hours=(7,), percentile_samples=10))
    assert snap.tier_version == 1 and snap.share.total == 1 and snap.workspace_share.total == 1
    assert snap.percentile_samples == (0.5,)
    stats = await store.get(ROUTER, "stats:7")
    assert stats is not None and stats.value == {"requests": 1.0}


async def test_a_duplicate_slot_is_skipped_while_a_new_slot_applies(store: Store) -> None:
    await store.commit(CommitBatch("req-1", (SlotWrite(ROUTER, (count(1),)),)))
    res = await store.commit(
        CommitBatch(
            "req-1",
            (
                SlotWrite(ROUTER, (count(1),)),
                SlotWrite(WORKSPACE, (count(1),)),
            ),
        )
    )
    assert [r.status for r in res.results] == ["duplicate", "applied"]
    snap = await store.read(ReadRequest("coding", share_hours=(1,)))
    assert snap.share.total == 1 and snap.workspace_share.total == 1


# --- counters, lists, sets ----------------------------------------------------------------------


async def test_share_counters_roll_over_by_hour_bucket(env: StoreEnv, store: Store) -> None:
    """One hash per slot, a field per hour and kind; a read sums the window's hours only, and
    the whole window expires with its TTL."""
    h0, h1 = 1000, 1001
    ops = (count(h0, "t", 3, ttl=0.4), count(h0, "s", 1, ttl=0.4),
           count(h1, "t", 2, ttl=0.4), count(h1, "s", 0.5, ttl=0.4))
    await store.commit(CommitBatch("r1", (SlotWrite(ROUTER, ops), SlotWrite(WORKSPACE, ops))))
    only_h0 = await store.read(ReadRequest("coding", share_hours=(h0,)))
    assert only_h0.share == ShareCounts(1, 3) and only_h0.workspace_share == ShareCounts(1, 3)
    both = await store.read(ReadRequest("coding", share_hours=(h0, h1)))
    assert both.share == ShareCounts(1.5, 5) and both.workspace_share == ShareCounts(1.5, 5)
    assert (await store.read(ReadRequest("coding", share_hours=(999,)))).share == ShareCounts()
    only_h1 = await store.read(ReadRequest("coding", share_hours=(h1, h1 + 1)))
    assert only_h1.share == ShareCounts(0.5, 2)
    window = await store.get(ROUTER, K.SHARE_KEY)
    assert window is not None and window.value == {
        "1000:t": 3.0, "1000:s": 1.0, "1001:t": 2.0, "1001:s": 0.5, "w": 24.0}
    assert window.ttl_s is not None and 0 < window.ttl_s < 0.5
    await env.advance(0.6)
    after = await store.read(ReadRequest("coding", share_hours=(h0, h1)))
    assert after.share == ShareCounts() and after.workspace_share == ShareCounts()
    assert await store.get(ROUTER, K.SHARE_KEY) is None


async def test_a_share_window_drops_the_hours_no_writer_keeps(store: Store) -> None:
    """Buckets of hours <= hour - w go once the hash holds more than its window; w is the
    widest window a writer asked for, so a short-window writer never prunes a long window."""
    def ops(hour: int, window: int) -> tuple[WindowIncrOp, ...]:
        return count(hour, "t", window=window), count(hour, "s", window=window)

    await store.commit(CommitBatch("a", (SlotWrite(ROUTER, ops(10, 2) + ops(11, 2)),
                                         SlotWrite(WORKSPACE, ops(10, 24) + ops(11, 24)))))
    await store.commit(CommitBatch("b", (SlotWrite(ROUTER, (count(12, window=2),)),
                                         SlotWrite(WORKSPACE, (count(12, window=2),)))))
    router = await store.get(ROUTER, K.SHARE_KEY)
    assert router is not None and router.value == {"11:t": 1.0, "11:s": 1.0, "12:t": 1.0,
                                                   "w": 2.0}
    wide = await store.read(ReadRequest("coding", share_hours=(10, 11, 12)))
    assert wide.share == ShareCounts(1, 2) and wide.workspace_share == ShareCounts(2, 3)
    workspace = await store.get(WORKSPACE, K.SHARE_KEY)
    assert workspace is not None and workspace.value["w"] == 24.0 and "10:t" in workspace.value


async def test_a_share_window_ttl_is_extended_never_shortened(env: StoreEnv,
                                                              store: Store) -> None:
    await store.commit(CommitBatch("a", (SlotWrite(ROUTER, (count(5, ttl=60),)),)))
    await store.commit(CommitBatch("b", (SlotWrite(ROUTER, (count(5, ttl=0.4),)),)))
    await env.advance(0.6)
    assert (await store.read(ReadRequest("coding", share_hours=(5,)))).share == ShareCounts(0, 2)
    window = await store.get(ROUTER, K.SHARE_KEY)
    assert window is not None and window.ttl_s is not None and 50 < window.ttl_s <= 60


async def test_share_reads_follow_every_write_between_them(env: StoreEnv, store: Store) -> None:
    """Reads between commits see each increment, a pruned bucket, a deleted window and an
    expiring one (the embedded store keeps the window's sums between reads)."""
    window = ReadRequest("coding", share_hours=(10, 11, 12))
    assert (await store.read(window)).share == ShareCounts()
    await store.commit(CommitBatch("a", (SlotWrite(ROUTER, (count(11, "t", 2, window=1),
                                                              count(11, "s", 1, window=1))),)))
    assert (await store.read(window)).share == ShareCounts(1, 2)
    await store.commit(CommitBatch("b", (SlotWrite(ROUTER, (count(9, "t", 5, window=1),)),)))
    assert (await store.read(window)).share == ShareCounts(1, 2)  # hour 9 is outside
    # Hour 12 with a one-hour window: hours <= 11 leave the hash (more than 2·1 + 1 fields).
    await store.commit(CommitBatch("c", (SlotWrite(ROUTER, (count(12, "t", 1, window=1),)),)))
    assert (await store.read(window)).share == ShareCounts(0, 1)
    assert (await store.read(ReadRequest("coding", share_hours=(12,)))).share == ShareCounts(0, 1)
    await store.commit(CommitBatch("d", (SlotWrite(ROUTER, (DelOp(K.SHARE_KEY),)),)))
    assert (await store.read(window)).share == ShareCounts()
    await store.commit(CommitBatch("e", (SlotWrite(ROUTER, (count(10, "s", 1, ttl=0.4),)),)))
    assert (await store.read(window)).share == ShareCounts(1, 0)
    await env.advance(0.6)  # the window's hash expires
    assert (await store.read(window)).share == ShareCounts()


async def test_a_workspace_read_can_be_skipped(store: Store) -> None:
    await store.commit(CommitBatch("r1", (SlotWrite(WORKSPACE, (count(1),)),)))
    snap = await store.read(ReadRequest("coding", share_hours=(1,), workspace=False))
    assert snap.workspace_share == ShareCounts()
    assert (await store.read(ReadRequest("coding", share_hours=(1,)))).workspace_share.total == 1


async def test_linucb_vectors_read_from_hash_increments_or_json(store: Store) -> None:
    ops = (
        HIncrOp(K.linucb_key("m1"), "0", 1.5, 60),
        HIncrOp(K.linucb_key("m1"), "2", 2, 60),
        HIncrOp(K.linucb_key("m1"), "0", 0.25, 60),
        SetOp(K.linucb_key("m2"), "[1, 2.5]", 60),
    )
    await store.commit(CommitBatch("r1", (SlotWrite(ROUTER, ops),)))
    snap = await store.read(ReadRequest("coding", linucb_arms=("m1", "m2", "m3")))
    assert snap.linucb == {"m1": [1.75, 0.0, 2.0], "m2": [1.0, 2.5], "m3": []}


async def test_one_op_increments_several_fields_of_a_hash(env: StoreEnv, store: Store) -> None:
    """`HIncrManyOp`: every field added to, in one op, onto what `HIncrOp` wrote; its TTL set
    once; a non-finite amount refused before anything is written."""
    await store.commit(CommitBatch("r1", (SlotWrite(ROUTER, (HIncrOp("stats:1", "requests", 2, 60),)),)))
    fields = (("requests", 1), ("cost_usd", 0.25), ("requests", 1))
    await store.commit(CommitBatch("r2", (SlotWrite(ROUTER, (HIncrManyOp("stats:1", fields, 0.4),)),)))
    entry = await store.get(ROUTER, "stats:1")
    assert entry is not None and entry.value == {"requests": 4.0, "cost_usd": 0.25}
    assert entry.ttl_s is not None and 0 < entry.ttl_s < 1  # the op's TTL, not the first 60 s
    with pytest.raises(ValueError, match="finite"):
        await store.commit(CommitBatch("r3", (SlotWrite(
            ROUTER, (HIncrManyOp("stats:2", (("a", 1), ("b", float("nan"))), 60),)),)))
    assert await store.get(ROUTER, "stats:2") is None
    await env.advance(0.6)
    assert await store.get(ROUTER, "stats:1") is None


async def test_percentile_samples_are_the_newest_first_within_the_cap(store: Store) -> None:
    for i in range(5):
        await store.commit(
            CommitBatch(f"r{i}", (SlotWrite(ROUTER, (PushOp("pct", f"0.{i}", 3, 60),)),))
        )
    snap = await store.read(ReadRequest("coding", percentile_samples=2))
    assert snap.percentile_samples == (0.4, 0.3)
    entry = await store.get(ROUTER, "pct")
    assert entry is not None and entry.value == [0.4, 0.3, 0.2]


async def test_a_sorted_set_keeps_the_highest_scores(store: Store) -> None:
    for i, (member, score) in enumerate([("a", 3), ("b", 1), ("c", 2), ("a", 0.5)]):
        await store.commit(
            CommitBatch(f"r{i}", (SlotWrite(ROUTER, (ZAddOp("recent", member, score, 2, 60),)),))
        )
    entry = await store.get(ROUTER, "recent")
    # b (lowest) was trimmed when c arrived; re-adding a moves it, it does not duplicate it
    assert entry is not None and entry.value == [["a", 0.5], ["c", 2.0]]


async def test_expire_at_least_extends_but_never_shortens(store: Store) -> None:
    await store.commit(
        CommitBatch(
            "r1",
            (
                SlotWrite(
                    SESSION,
                    (
                        SetOp("pin:base", "m", 1),
                        SetOp("pin:strong", "s", 50),
                        ExpireAtLeastOp("pin:base", 20),
                        ExpireAtLeastOp("pin:strong", 5),
                        ExpireAtLeastOp("chan:base", 20),
                    ),
                ),
            ),
        )
    )
    base, strong = await store.get(SESSION, "pin:base"), await store.get(SESSION, "pin:strong")
    assert base is not None and base.ttl_s is not None and 15 < base.ttl_s <= 20
    assert strong is not None and strong.ttl_s is not None and 45 < strong.ttl_s <= 50
    assert await store.get(SESSION, "chan:base") is None


async def test_a_delete_op_removes_the_key(store: Store) -> None:
    await store.commit(CommitBatch("r1", (SlotWrite(SESSION, (SetOp("pin:strong", "s", 60),)),)))
    await store.commit(CommitBatch("r2", (SlotWrite(SESSION, (DelOp("pin:strong"),)),)))
    assert (await read_session(store)).pins == {}


async def test_affinity_pins_read_for_sessionless_requests(store: Store) -> None:
    pin = '{"channel":"c","key_index":0,"key_fp":"ffff0000"}'
    await store.commit(
        CommitBatch("r1", (SlotWrite(ROUTER, (SetOp(K.affinity_key("ab12"), pin, 60),)),))
    )
    snap = await store.read(ReadRequest("coding", affinity_key="ab12"))
    assert snap.affinity == {"channel": "c", "key_index": 0, "key_fp": "ffff0000"}
    assert (await store.read(ReadRequest("coding", affinity_key="other"))).affinity is None


async def test_a_type_clash_raises_store_unavailable_and_applies_nothing_in_that_slot(
    store: Store,
) -> None:
    await store.commit(CommitBatch("r1", (SlotWrite(ROUTER, (HIncrOp("stats:1", "n", 1, 60),)),)))
    with pytest.raises(StoreUnavailable):
        await store.commit(
            CommitBatch(
                "r2", (SlotWrite(ROUTER, (SetOp("aff:x", "{}", 60), IncrOp("stats:1", 1, 60))),)
            )
        )
    assert await store.get(ROUTER, "aff:x") is None
    assert await store.get(ROUTER, "commit:r2") is None


async def test_invalid_writes_are_refused_before_anything_is_sent(store: Store) -> None:
    with pytest.raises(ValueError, match="ttl_s must be > 0"):
        await store.commit(CommitBatch("r1", (SlotWrite(ROUTER, (SetOp("aff:x", "{}", 0),)),)))
    with pytest.raises(ValueError, match="session slot"):
        await store.commit(CommitBatch("r1", (SlotWrite(ROUTER, mutate=bump),)))
    assert await store.scan("all") == []


# --- operator side ------------------------------------------------------------------------------


async def test_scan_finds_exactly_the_keys_written(store: Store) -> None:
    await store.commit(
        CommitBatch(
            "r1",
            (
                SlotWrite(
                    SESSION, (SetOp("pin:base", "m", 60), SetOp("chan:base", '{"channel":"c"}', 60))
                ),
                SlotWrite(OTHER_SESSION, (SetOp("pin:strong", "s", 60),)),
                SlotWrite(SlotRef.of_session("review", "s1"), (SetOp("pin:base", "r", 60),)),
                SlotWrite(ROUTER, (count(5, n=2),)),
                SlotWrite(WORKSPACE, (count(5, n=2),)),
            ),
        )
    )
    pins = await store.scan("session", router="coding", key_prefix="pin:")
    assert {(e.slot, e.key, e.value) for e in pins} == {
        (SESSION, "pin:base", "m"),
        (OTHER_SESSION, "pin:strong", "s"),
    }
    s1 = await store.scan("session", router="coding", session="s1")
    assert {e.key for e in s1} == {"pin:base", "chan:base", "commit:r1"}
    assert next(e for e in s1 if e.key == "chan:base").value == {"channel": "c"}
    routers = await store.scan("router")
    assert {(e.slot, e.key) for e in routers} == {(ROUTER, "share"), (ROUTER, "commit:r1")}
    share = next(e for e in routers if e.key == "share")
    assert share.value == {"5:t": 2.0, "w": 24.0}
    assert share.ttl_s is not None and 50 < share.ttl_s <= 60
    assert {e.key for e in await store.scan("workspace", key_prefix="share")} == {"share"}
    everything = await store.scan("all")
    assert len(everything) == 11  # 6 values + 5 commit markers, and not the epoch
    assert {e.slot.kind for e in everything} == {"session", "router", "workspace"}


async def test_scan_lists_the_budget_slot(store: Store) -> None:
    """`orca budget` lists every counter and raised limit through the store's own scan."""
    await store.commit(CommitBatch("b1", (SlotWrite(K.BUDGETS, (
        SetOp(K.budget_limit_key("day_usd:-"), "2.5", 600),
        HIncrManyOp(K.budget_counter_key("day:2026-12-05"), (("requests", 1), ("usd", 0.25)),
                    600))),),))
    found = await store.scan("budgets")
    assert {(e.slot, e.key) for e in found} == {
        (K.BUDGETS, K.budget_limit_key("day_usd:-")),
        (K.BUDGETS, K.budget_counter_key("day:2026-12-05")),
        (K.BUDGETS, "commit:b1")}
    assert {e.key for e in await store.scan("budgets", key_prefix="limit:")} == {
        K.budget_limit_key("day_usd:-")}


async def test_get_returns_one_entry_or_none(store: Store) -> None:
    await store.commit(CommitBatch("r1", (SlotWrite(SESSION, (SetOp("pin:base", "m", 60),)),)))
    entry = await store.get(SESSION, "pin:base")
    assert entry is not None and (entry.slot, entry.key, entry.value) == (SESSION, "pin:base", "m")
    assert await store.get(SESSION, "pin:strong") is None


async def test_traces_are_found_by_orca_id_and_by_client_id(store: Store) -> None:
    trace = {"request_id": "orca-1", "client_request_id": "client-abc", "router": "coding"}
    await store.commit(CommitBatch("orca-1", trace=trace))
    assert await store.get_trace("orca-1") == trace
    assert await store.get_trace("client-abc") == trace
    assert await store.get_trace("nope") is None


async def test_trace_max_evicts_the_oldest_traces(env: StoreEnv) -> None:
    store = env.open(trace_max=3)
    for i in range(5):
        env.clock.advance(1)
        await store.commit(CommitBatch(f"t{i}", trace={"client_request_id": f"c{i}", "n": i}))
    assert [await store.get_trace(f"t{i}") is not None for i in range(5)] == [
        False,
        False,
        True,
        True,
        True,
    ]
    assert await store.get_trace("c1") is None and await store.get_trace("c4") == {
        "client_request_id": "c4",
        "n": 4,
    }
    assert {e.key for e in await store.scan("traces", key_prefix="cid:")} == {
        "cid:c2",
        "cid:c3",
        "cid:c4",
    }


async def test_traces_expire_after_trace_ttl(env: StoreEnv) -> None:
    store = env.open(trace_ttl_s=0.4)
    await store.commit(CommitBatch("t1", trace={"client_request_id": "c1"}))
    assert await store.get_trace("c1") is not None
    await env.advance(0.6)
    assert await store.get_trace("t1") is None and await store.get_trace("c1") is None


async def test_audit_lists_newest_last_filtered_by_router_and_since(
    env: StoreEnv, store: Store
) -> None:
    t0 = env.clock.now()
    events = (
        {"ts": t0 + 2, "router": "coding", "event": "escalated", "session": "s1"},
        {"ts": t0 + 1, "router": "review", "event": "denied_cap"},
        {"ts": t0 + 3, "router": "coding", "event": "reset", "actor": "cli"},
    )
    await store.commit(CommitBatch("r1", audit=events))
    listed = await store.list_audit()
    assert [e["event"] for e in listed] == ["denied_cap", "escalated", "reset"]
    assert set(listed[0]) >= {
        "ts",
        "router",
        "session",
        "request_id",
        "event",
        "trigger",
        "reason",
        "actor",
    }
    assert listed[0]["request_id"] == "r1"
    assert [e["event"] for e in await store.list_audit("coding")] == ["escalated", "reset"]
    assert [e["event"] for e in await store.list_audit(since=t0 + 2)] == ["escalated", "reset"]
    await store.commit(CommitBatch("r1", audit=events))  # a re-sent commit adds nothing
    assert len(await store.list_audit()) == 3


async def test_audit_streams_are_bounded_by_count_and_age(env: StoreEnv) -> None:
    store = env.open(audit_max=5)
    now = env.clock.now()
    old = {"ts": now - 8 * 86400, "router": "coding", "event": "escalated"}
    await store.commit(CommitBatch("r0", audit=(old,)))
    assert await store.list_audit("coding") == []
    for i in range(8):
        await store.commit(
            CommitBatch(f"r{i + 1}", audit=({"ts": now + i, "router": "coding", "event": "once"},))
        )
    assert [e["request_id"] for e in await store.list_audit("coding")] == [
        f"r{i}" for i in range(4, 9)
    ]


async def test_read_and_commit_are_each_counted_as_one_call(store: Store) -> None:
    snap = await store.read(
        ReadRequest(
            "coding",
            "s1",
            share_hours=(1, 2, 3),
            affinity_key="a",
            linucb_arms=("m",),
            percentile_samples=5,
        )
    )
    assert (store.reads, store.commits) == (1, 0)
    await store.commit(
        CommitBatch(
            "r1",
            (
                tier_write(snap, ops=(SetOp("pin:base", "m", 60),)),
                SlotWrite(ROUTER, (count(1),)),
                SlotWrite(WORKSPACE, (count(1),)),
            ),
            audit=({"router": "coding", "event": "escalated"},),
            trace={"n": 1},
        )
    )
    assert (store.reads, store.commits) == (1, 1)
