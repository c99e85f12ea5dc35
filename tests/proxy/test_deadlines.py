"""`proxy.deadlines`: asyncio.timeout's semantics on one loop timer per transport."""

from __future__ import annotations

import asyncio
import time

import pytest

from orca_cli.proxy.deadlines import Deadlines


async def test_a_wait_past_its_deadline_is_a_timeout_at_the_deadline() -> None:
    d = Deadlines()
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        async with d.after(0.05):
            await asyncio.sleep(5)
    assert 0.04 <= time.monotonic() - t0 < 1.0


async def test_a_wait_that_ends_in_time_is_never_cancelled_later() -> None:
    d = Deadlines()
    async with d.after(0.05) as dl:
        await asyncio.sleep(0)
    await asyncio.sleep(0.1)  # past the deadline it had: no stray cancellation arrives
    assert not dl.expired


async def test_a_shorter_deadline_after_a_longer_one_fires_at_its_own_time() -> None:
    d = Deadlines()
    long_done = asyncio.Event()

    async def long_wait() -> None:
        async with d.after(30):
            await long_done.wait()

    task = asyncio.create_task(long_wait())
    await asyncio.sleep(0)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        async with d.after(0.05):
            await asyncio.sleep(5)
    assert time.monotonic() - t0 < 1.0
    long_done.set()
    await asyncio.wait_for(task, 1)  # the long one was not touched


async def test_concurrent_deadlines_expire_each_at_its_own_time() -> None:
    d = Deadlines()
    ended: dict[float, float] = {}
    t0 = time.monotonic()

    async def wait(seconds: float) -> None:
        try:
            async with d.after(seconds):
                await asyncio.sleep(5)
        except TimeoutError:
            ended[seconds] = time.monotonic() - t0

    await asyncio.gather(*(wait(s) for s in (0.15, 0.05, 0.1)))
    assert ended[0.05] < ended[0.1] < ended[0.15] < 1.0
    assert ended[0.05] >= 0.04


async def test_an_outside_cancel_passes_through_as_cancellation() -> None:
    d = Deadlines()

    async def wait() -> None:
        async with d.after(30):
            await asyncio.sleep(5)

    task = asyncio.create_task(wait())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_loop_of_waits_arms_one_loop_timer() -> None:
    """The point of it: waits of one length share the timer armed for the first."""
    d = Deadlines()
    loop = asyncio.get_running_loop()
    before = len(loop._scheduled)  # type: ignore[attr-defined]
    for _ in range(200):
        async with d.after(30):
            await asyncio.sleep(0)
    assert len(loop._scheduled) - before <= 1  # type: ignore[attr-defined]


async def test_a_watch_rearmed_for_each_wait_times_out_only_the_wait_that_outlasts_it() -> None:
    d = Deadlines()
    w = d.watch()
    loop = asyncio.get_running_loop()
    before = len(loop._scheduled)  # type: ignore[attr-defined]
    for _ in range(200):  # waits that end in time: never expired, one loop timer for all
        w.arm(30)
        await asyncio.sleep(0)
        assert w.disarm() is False
    assert len(loop._scheduled) - before <= 1  # type: ignore[attr-defined]
    t0 = time.monotonic()
    w.arm(0.05)
    with pytest.raises(asyncio.CancelledError):
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            assert w.disarm() is True  # its own expiry: the caller's timeout
            raise
    assert 0.04 <= time.monotonic() - t0 < 1.0
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the expiry's cancel was taken back
    w.arm(0.05)  # armed again after an expiry, and ended in time
    await asyncio.sleep(0)
    assert w.disarm() is False
    await asyncio.sleep(0.1)  # past that deadline: no stray cancellation arrives


async def test_a_watch_lets_an_outside_cancel_pass() -> None:
    d = Deadlines()
    seen: list[bool] = []

    async def wait() -> None:
        w = d.watch()
        w.arm(30)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            seen.append(w.disarm())
            raise

    task = asyncio.create_task(wait())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == [False]
