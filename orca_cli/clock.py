"""Clocks. Nothing in `routing/` or `state/` calls `time.time()`: they are handed a Clock."""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "FakeClock", "SystemClock"]


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for deadlines and latencies)."""
        ...


class SystemClock:
    """The process's clocks: `now` is `time.time`, `monotonic` is `time.monotonic` — the C
    functions themselves, with no Python frame around the dozen reads a request makes."""

    now = staticmethod(time.time)
    monotonic = staticmethod(time.monotonic)


class FakeClock:
    """A clock tests and the replay harness move by hand."""

    def __init__(self, start: float = 1_786_000_000.0) -> None:
        self._now = start
        self._mono = 0.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock never goes back")
        self._now += seconds
        self._mono += seconds

    def set(self, when: float) -> None:
        self.advance(max(0.0, when - self._now))
