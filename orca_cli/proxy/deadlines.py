"""Deadlines for the upstream waits without a loop timer per wait (SPEC §7, §12).

`asyncio.timeout` pushes a timer handle into the event loop's heap on every use and cancels
it when the wait ends in time, as nearly every wait does; an attempt needs several (the
response headers, each body read), and the cancelled handles stay in the heap until they
reach its top. `Deadlines` keeps the live deadlines of one loop in a set and arms a single
loop timer at the earliest of them: entering a deadline later than that timer, as nearly
every one is (the waits of one sidecar share their lengths), arms nothing, and leaving one
disarms nothing. When the timer fires it cancels the tasks whose deadline passed and re-arms
at the next one; a timer left for deadlines that are gone finds none due and re-arms or stops. A `Deadline` is an
async context manager with `asyncio.timeout`'s semantics: the block's `CancelledError` from
its own expiry becomes `TimeoutError`, any other cancellation passes through.
"""

from __future__ import annotations

import asyncio
import math
from types import TracebackType
from typing import Self

__all__ = ["Deadline", "Deadlines", "Watch"]

_RESOLUTION_S = 1e-6


class Watch:
    """One deadline armed anew for each wait of a loop of short waits (a stream's body reads):
    `arm(seconds)` before a wait, `disarm()` after it, on every path. `disarm()` says whether
    this watch's own expiry cancelled the wait, so the caller turns that `CancelledError` into
    its timeout and lets any other cancellation pass. A `Deadline` per wait means the same
    with an object and two coroutine calls more per wait; a watch costs neither, which counts
    once per event of a token-paced stream."""

    __slots__ = ("_cancelling", "_owner", "_task", "expired", "when")

    def __init__(self, owner: Deadlines) -> None:
        self._owner = owner
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self.expired = False
        self.when = math.inf

    def arm(self, seconds: float) -> None:
        """Expire `seconds` from now, cancelling the task that armed it."""
        owner = self._owner
        task = asyncio.current_task(owner.running_loop())
        if task is None:
            raise RuntimeError("a deadline is armed only inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self.expired = False
        owner.enter(self, seconds)

    def disarm(self) -> bool:
        """End the wait; True when this watch's expiry cancelled it (the cancellation the
        expiry requested is taken back, as `asyncio.timeout` does)."""
        self._owner.leave(self)
        if not self.expired:
            return False
        assert self._task is not None
        return self._task.uncancel() <= self._cancelling

    def _expire(self) -> None:
        self.expired = True
        assert self._task is not None
        self._task.cancel()


class Deadline(Watch):
    """`seconds` from entering the block, for the task that entered it."""

    __slots__ = ("_seconds",)

    def __init__(self, owner: Deadlines, seconds: float) -> None:
        super().__init__(owner)
        self._seconds = seconds

    async def __aenter__(self) -> Self:
        self.arm(self._seconds)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.disarm() and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc


class Deadlines:
    """The live deadlines of one event loop and the one timer at the earliest of them."""

    __slots__ = ("_live", "_loop", "_timer", "_timer_at")

    def __init__(self) -> None:
        self._live: set[Watch] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def after(self, seconds: float) -> Deadline:
        """A deadline `seconds` after its block is entered."""
        return Deadline(self, seconds)

    def watch(self) -> Watch:
        """A deadline to arm before each of a loop's waits (`Watch`)."""
        return Watch(self)

    def running_loop(self) -> asyncio.AbstractEventLoop:
        """The loop this runs on. Known once seen running: `asyncio.get_running_loop()` (and
        `current_task()` without its loop) makes a `getpid` syscall on every call."""
        loop = self._loop
        if loop is None or not loop.is_running():  # a first use, or a new loop (tests)
            loop = asyncio.get_running_loop()
            self._loop, self._timer, self._timer_at = loop, None, math.inf
            self._live.clear()  # the old loop's deadlines went with it
        return loop

    def enter(self, d: Watch, seconds: float) -> None:
        loop = self._loop
        assert loop is not None  # `running_loop` ran first
        self._live.add(d)
        d.when = when = loop.time() + seconds
        if when < self._timer_at:  # earlier than the armed timer: arm it here instead
            self._arm(when)

    def leave(self, d: Watch) -> None:
        self._live.discard(d)

    def _arm(self, when: float) -> None:
        assert self._loop is not None
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = self._loop.call_at(when, self._fire), when

    def _fire(self) -> None:
        self._timer, self._timer_at = None, math.inf
        assert self._loop is not None
        now = self._loop.time() + _RESOLUTION_S  # the loop runs a timer that early
        following = math.inf
        for d in list(self._live):
            if d.when <= now:
                self._live.discard(d)
                d._expire()
            elif d.when < following:
                following = d.when
        if following < math.inf:
            self._arm(following)
