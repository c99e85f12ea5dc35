"""`eventually`: wait on a condition with a bounded deadline instead of a fixed sleep."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable

__all__ = ["eventually", "eventually_sync"]

Condition = Callable[[], object | Awaitable[object]]


async def eventually(condition: Condition, timeout: float = 10.0, step: float = 0.01, *,
                     what: str = "") -> object:
    """Poll `condition` (plain or async) until it returns something truthy, and return that.

    Past `timeout` seconds an AssertionError names `what` (or the condition). An exception
    the condition raises propagates at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if inspect.isawaitable(got):
            got = await got
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what or _name(condition)} did not happen within {timeout} s")
        await asyncio.sleep(step)


def eventually_sync(condition: Callable[[], object], timeout: float = 10.0,
                    step: float = 0.01, *, what: str = "") -> object:
    """`eventually` for synchronous code (a thread, a subprocess, a plain test)."""
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what or _name(condition)} did not happen within {timeout} s")
        time.sleep(step)


def _name(condition: object) -> str:
    return getattr(condition, "__qualname__", None) or repr(condition)
