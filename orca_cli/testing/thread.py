"""A sidecar served from a thread of its own, for synchronous tests (a CLI runner, a script)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from orca_cli.clock import SystemClock
from orca_cli.compose import Running, running
from orca_cli.config.schema import Config, StateConfig
from orca_cli.state.factory import open_store

__all__ = ["sidecar_thread"]


@contextmanager
def sidecar_thread(cfg: Config, *, state: StateConfig | None = None,
                   admin_token: str | None = None,
                   start_timeout: float = 10.0) -> Iterator[Running]:
    """Serve `cfg` over `state` (default `cfg.state`) on 127.0.0.1:<free port> from a thread
    with its own event loop; stopped gracefully when the block ends."""
    ready = threading.Event()
    box: list[Running] = []
    errors: list[BaseException] = []
    loop_box: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    async def main() -> None:
        stop = asyncio.Event()
        loop_box.append((asyncio.get_running_loop(), stop))
        clock = SystemClock()
        store = open_store(state or cfg.state, clock=clock)
        async with running(cfg, store=store, clock=clock, admin_token=admin_token) as served:
            box.append(served)
            ready.set()
            await stop.wait()

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - surfaced to the caller below
            errors.append(exc)
            ready.set()

    thread = threading.Thread(target=run, name="orca-test-sidecar", daemon=True)
    thread.start()
    try:
        if not ready.wait(start_timeout):
            raise RuntimeError(f"the sidecar did not start within {start_timeout} s")
        if errors:
            raise errors[0]
        yield box[0]
    finally:
        if loop_box:
            loop, stop = loop_box[0]
            loop.call_soon_threadsafe(stop.set)
        thread.join(15)
