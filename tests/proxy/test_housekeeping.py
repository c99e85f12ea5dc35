"""The sidecar's housekeeping: started by the app's lifespan, it sweeps an idle memory store
(no commit needed) and stops with the lifespan shutdown."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orca_cli.clock import FakeClock
from orca_cli.compose import create_app
from orca_cli.config.schema import Config
from orca_cli.proxy import runtime as R
from orca_cli.state.base import CommitBatch, SetOp, SlotRef, SlotWrite
from orca_cli.state.memory import MemoryStore
from orca_cli.testing import eventually


class _Lifespan:
    """Drives an app's ASGI lifespan as a server would: startup, then shutdown."""

    def __init__(self, app: Any) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.sent: list[str] = []
        self.task = asyncio.create_task(app({"type": "lifespan"}, self.inbox.get, self._send))

    async def _send(self, msg: dict[str, Any]) -> None:
        self.sent.append(msg["type"])

    async def start(self) -> None:
        await self.inbox.put({"type": "lifespan.startup"})
        await eventually(lambda: self.sent, 5, what="the lifespan startup")

    async def stop(self) -> None:
        await self.inbox.put({"type": "lifespan.shutdown"})
        await asyncio.wait_for(self.task, 5)


async def test_the_lifespan_runs_housekeeping_that_sweeps_an_idle_store(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(R, "HOUSEKEEPING_INTERVAL_S", 0.01)
    clock = FakeClock()
    store = MemoryStore(clock=clock, sweep_every=10**9, sweep_interval_s=60)
    await store.commit(CommitBatch("r0", (SlotWrite(SlotRef.of_session("coding", "a"),
                                                    (SetOp("pin:base", "m", 5),)),)))
    cfg = Config()
    ticks: list[float] = []
    sweep_if_due = store.sweep_if_due

    def counted() -> Any:
        ticks.append(clock.now())
        return sweep_if_due()

    monkeypatch.setattr(store, "sweep_if_due", counted)
    app = create_app(cfg, store=store, clock=clock, transports={}, port=8787)
    rt = app.rt
    life = _Lifespan(app)
    await life.start()
    assert life.sent == ["lifespan.startup.complete"]
    task = rt._housekeeping
    assert task is not None and not task.done()
    await eventually(lambda: len(ticks) >= 3, 5, what="three housekeeping rounds")
    assert len(store) == 2  # nothing expired yet: the pin and the commit marker stay
    clock.advance(86_401)  # both expired, and a sweep is due; no request arrives
    await eventually(lambda: len(store) == 0, 5, what="the idle sweep")
    await life.stop()
    assert life.sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert task.cancelled() and rt._housekeeping is None


async def test_the_lifespan_shutdown_writes_the_request_logs_queued_lines() -> None:
    import io

    from orca_cli.trace.build import refusal_trace
    from orca_cli.trace.log import RequestLog

    app = create_app(Config(), store=MemoryStore(clock=FakeClock()), transports={}, port=8787)
    out = io.StringIO()
    sink = RequestLog(out, fmt="json")
    app.rt.trace_sinks.append(sink.emit)
    app.rt.on_close.append(sink.close)
    life = _Lifespan(app)
    await life.start()
    app.rt.emit_trace(refusal_trace(request_id="req_0123456789abcdef", client_request_id=None,
                                    ts=0.0, inbound_api="openai", status=400, error="bad"))
    assert out.getvalue() == ""  # queued for the next write
    await life.stop()  # before the log's flush period ends
    assert '"request_id":"req_0123456789abcdef"' in out.getvalue()
