"""Redis faults (RELIABILITY findings 1-4, S12-S17, S20-S21) against a redis-server of our own.

Elapsed-time checks here are bounds with generous slack (the store must give up near its
timeout instead of the ~4 s a default redis-py client stalls), not performance assertions.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis

from orca_cli.clock import FakeClock
from orca_cli.errors import StoreUnavailable
from orca_cli.state.base import CommitBatch, IncrOp, ReadRequest, SetOp, SlotRef, SlotWrite
from orca_cli.testing import eventually, free_port
from tests.redis_procs import RedisProc, stalled
from tests.state.conftest import StoreEnv
from tests.state.test_store_contract import ROUTER, read_session, tier_write

SLACK_S = 1.0


@pytest.fixture
async def own_env(own_redis: RedisProc) -> AsyncIterator[StoreEnv]:
    env = StoreEnv(
        "redis", FakeClock(), f"orcatest-{uuid.uuid4().hex[:12]}", own_redis.url, timeout_ms=100
    )
    try:
        yield env
    finally:
        for s in env.opened:
            await s.close()


async def _until_answered(call: Any, attempts: int = 5) -> Any:
    """The first call after a restart may fail on a pooled connection the server closed."""
    for _ in range(attempts - 1):
        try:
            return await call()
        except StoreUnavailable:
            await asyncio.sleep(0.05)
    return await call()


def _counter(server: RedisProc, env: StoreEnv) -> float:
    client = server.client()
    try:
        value = client.get(f"{env.prefix}:{{r:coding}}:hits")
        return float(value) if value is not None else 0.0
    finally:
        client.close()


async def test_an_unreachable_redis_fails_within_the_timeout() -> None:
    env = StoreEnv(
        "redis", FakeClock(), "orcatest-down", f"redis://127.0.0.1:{free_port()}/0", timeout_ms=100
    )
    store = env.open()
    try:
        for call in (
            lambda: store.read(ReadRequest("coding", "s1")),
            lambda: store.commit(CommitBatch("r1", (SlotWrite(ROUTER, (IncrOp("hits", 1, 60),)),))),
            store.ping,
        ):
            started = time.monotonic()
            with pytest.raises(StoreUnavailable, match="within 100 ms"):
                await call()
            assert time.monotonic() - started < 0.1 + SLACK_S
    finally:
        await store.close()


async def test_a_server_that_accepts_but_never_answers_times_out() -> None:
    writers: list[asyncio.StreamWriter] = []

    async def black_hole(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await reader.read(1 << 16)  # swallow the request, answer nothing

    server = await asyncio.start_server(black_hole, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    env = StoreEnv(
        "redis", FakeClock(), "orcatest-hole", f"redis://127.0.0.1:{port}/0", timeout_ms=100
    )
    store = env.open()
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await store.read(ReadRequest("coding", "s1"))
        assert time.monotonic() - started < 0.1 + SLACK_S
    finally:
        await store.close()
        for w in writers:
            w.close()
        server.close()
        await server.wait_closed()


async def test_a_stalled_redis_times_out_and_the_pool_recovers(
    own_redis: RedisProc, own_env: StoreEnv
) -> None:
    store = own_env.open()
    await store.commit(
        CommitBatch(
            "r1", (SlotWrite(SlotRef.of_session("coding", "s1"), (SetOp("pin:base", "m1", 60),)),)
        )
    )
    control = own_redis.client()
    try:
        control.execute_command("CLIENT", "PAUSE", 500)
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            await read_session(store)
        assert time.monotonic() - started < 0.45  # gave up at its timeout, not at the pause's end
    finally:
        control.close()
    async def answers() -> bool:
        return not await asyncio.to_thread(stalled, own_redis.port)

    await eventually(answers, 5, 0.02, what="the end of the pause")
    for _ in range(20):
        assert (await read_session(store)).pins == {"base": "m1"}


async def test_a_commit_with_an_unknown_outcome_applies_exactly_once(
    own_redis: RedisProc, own_env: StoreEnv
) -> None:
    store = own_env.open()
    snap = await read_session(store)
    batch = CommitBatch(
        "req-unknown", (tier_write(snap), SlotWrite(ROUTER, (IncrOp("hits", 1, 60),)))
    )
    control = own_redis.client()
    try:
        sleeper = asyncio.create_task(
            asyncio.to_thread(control.execute_command, "DEBUG", "SLEEP", "0.5")
        )
        await eventually(lambda: asyncio.to_thread(stalled, own_redis.port), 3,
                         what="the server asleep")
        with pytest.raises(StoreUnavailable):
            await store.commit(batch)
        await sleeper
    finally:
        control.close()
    # the timed-out commit did run on the server, once it woke up
    await eventually(lambda: _counter(own_redis, own_env) == 1, 5, what="the late commit")
    again = await store.commit(batch)  # the caller's retry after an unknown outcome
    assert [r.status for r in again.results] == ["duplicate", "duplicate"]
    assert _counter(own_redis, own_env) == 1
    assert (await read_session(store)).tier == {"v": 1, "count": 1}


async def test_a_restart_that_lost_state_is_detected_and_the_scripts_reload(
    own_redis: RedisProc, own_env: StoreEnv
) -> None:
    store = own_env.open()
    await store.commit(CommitBatch("r1", (SlotWrite(ROUTER, (IncrOp("hits", 1, 60),)),)))
    assert (await read_session(store)).state_lost_at is None
    own_redis.restart()
    own_env.clock.advance(10)
    snap = await _until_answered(lambda: read_session(store))
    assert snap.state_lost_at == own_env.clock.now()
    res = await store.commit(CommitBatch("r2", (SlotWrite(ROUTER, (IncrOp("hits", 1, 60),)),)))
    assert res.results[0].status == "applied" and _counter(own_redis, own_env) == 1
    assert [e["event"] for e in await store.list_audit()] == ["state_lost"]


async def test_a_restart_that_kept_its_data_is_still_flagged_by_the_new_run_id(
    own_redis: RedisProc, own_env: StoreEnv
) -> None:
    store = own_env.open()
    await store.ping()
    control = own_redis.client()
    try:
        control.save()  # dump.rdb in the server's dir: the restart reloads it
    finally:
        control.close()
    own_redis.restart()
    await _until_answered(store.ping)
    snap = await read_session(store)
    assert snap.state_lost_at is not None  # conservative: SPEC §9 "its run_id changed"
    lost = [e for e in await store.list_audit() if e["event"] == "state_lost"]
    assert len(lost) == 1 and lost[0]["reason"] == "run_id_changed"


async def test_flushed_scripts_are_reloaded_transparently(
    own_redis: RedisProc, own_env: StoreEnv
) -> None:
    store = own_env.open()
    await store.ping()
    control = own_redis.client()
    try:
        control.script_flush()
    finally:
        control.close()
    res = await store.commit(CommitBatch("r1", (SlotWrite(ROUTER, (IncrOp("hits", 1, 60),)),)))
    assert res.results[0].status == "applied" and res.round_trips == 3  # NOSCRIPT, load, re-send
    assert _counter(own_redis, own_env) == 1


async def test_cancelled_reads_never_hand_their_reply_to_the_next_reader(
    redis_env: StoreEnv,
) -> None:
    store = redis_env.open()
    sessions = [f"s{i}" for i in range(10)]
    await store.commit(
        CommitBatch(
            "r0",
            tuple(
                SlotWrite(SlotRef.of_session("coding", s), (SetOp("pin:base", f"model-{s}", 60),))
                for s in sessions
            ),
        )
    )
    rng = random.Random(7)
    for _ in range(300):
        task = asyncio.create_task(read_session(store, rng.choice(sessions)))
        await asyncio.sleep(rng.uniform(0, 0.0008))
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, StoreUnavailable):
            pass
        s = rng.choice(sessions)
        assert (await read_session(store, s)).pins == {"base": f"model-{s}"}


async def test_the_pool_is_bounded_and_waiters_give_up_at_the_timeout(
    own_redis: RedisProc, own_env: StoreEnv
) -> None:
    store = own_env.open(max_connections=4, timeout_ms=1000)
    snaps = await asyncio.gather(*[store.read(ReadRequest("coding", f"s{i}")) for i in range(50)])
    assert len(snaps) == 50
    control = own_redis.client()
    try:
        clients = control.client_list()
        assert len(clients) <= 4 + 1  # the store's pool plus this control connection
        quick = own_env.open(max_connections=4, timeout_ms=100)
        await quick.ping()
        # Long enough that every read below starts while it sleeps, on a loaded machine too;
        # its own connection waits for the reply longer than that.
        sleeper_client = redis.Redis.from_url(own_redis.url, socket_timeout=10)
        sleeper = asyncio.create_task(
            asyncio.to_thread(sleeper_client.execute_command, "DEBUG", "SLEEP", "2.0")
        )
        await eventually(lambda: asyncio.to_thread(stalled, own_redis.port), 3,
                         what="the server asleep")
        started = time.monotonic()
        outcomes = await asyncio.gather(
            *[quick.read(ReadRequest("coding", f"s{i}")) for i in range(20)], return_exceptions=True
        )
        assert all(isinstance(o, StoreUnavailable) for o in outcomes)
        assert time.monotonic() - started < 0.1 + SLACK_S
        await sleeper
        sleeper_client.close()
    finally:
        control.close()
    assert (await quick.read(ReadRequest("coding", "s1"))).tier is None
