"""The sidecar's housekeeping: started by the app's lifespan, it sweeps an idle memory store
(no commit needed) and stops with the lifespan shutdown."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orca_cli.clock import FakeClock
from orca_cli.config.schema import Config
from orca_cli.proxy import runtime as R
from orca_cli.proxy.app import OrcaApp
from orca_cli.proxy.guard import GuardPolicy
from orca_cli.proxy.runtime import Runtime
from orca_cli.state.base import CommitBatch, SetOp, SlotRef, SlotWrite
from orca_cli.state.memory import MemoryStore


async def test_the_lifespan_runs_housekeeping_that_sweeps_an_idle_store(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R, "HOUSEKEEPING_INTERVAL_S", 0.01)
    clock = FakeClock()
    store = MemoryStore(clock=clock, sweep_every=10**9, sweep_interval_s=60)
    await store.commit(CommitBatch("r0", (SlotWrite(SlotRef.of_session("coding", "a"),
                                                    (SetOp("pin:base", "m", 5),)),)))
    cfg = Config()
    rt = Runtime.build(cfg, store, clock=clock, transports={})
    app = OrcaApp(rt, GuardPolicy.from_config(cfg.server, port=8787, admin_token="t" * 32))
    inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    sent: list[str] = []

    async def send(msg: dict[str, Any]) -> None:
        sent.append(msg["type"])

    life = asyncio.create_task(app({"type": "lifespan"}, inbox.get, send))
    await inbox.put({"type": "lifespan.startup"})
    for _ in range(100):
        if sent:
            break
        await asyncio.sleep(0.01)
    assert sent == ["lifespan.startup.complete"]
    task = rt._housekeeping
    assert task is not None and not task.done()
    await asyncio.sleep(0.05)
    assert len(store) == 2  # nothing expired yet: the pin and the commit marker stay
    clock.advance(86_401)  # both expired, and a sweep is due; no request arrives
    for _ in range(100):
        if len(store) == 0:
            break
        await asyncio.sleep(0.01)
    assert len(store) == 0
    await inbox.put({"type": "lifespan.shutdown"})
    await asyncio.wait_for(life, 5)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert task.cancelled() and rt._housekeeping is None
