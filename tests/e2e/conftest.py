"""A real `orca serve` stack on a real port: uvicorn + raw ASGI app + memory store + sim
channels (the upstream edge we cannot reach), driven by the official SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from orca_cli.admin.http import admin_handler
from orca_cli.clock import SystemClock
from orca_cli.config.load import loads
from orca_cli.config.schema import Config
from orca_cli.config.template import example_text
from orca_cli.proxy.app import OrcaApp
from orca_cli.proxy.guard import GuardPolicy
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.server import bind_socket, serve_in_background, stop_server
from orca_cli.state.memory import MemoryStore


@dataclass
class Sidecar:
    base: str
    rt: Runtime
    token: str
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)


def example_config(**overrides: str) -> Config:
    return loads(example_text(), source="example")


@pytest.fixture
async def sidecar() -> AsyncIterator[Sidecar]:
    cfg = example_config()
    clock = SystemClock()
    store = MemoryStore(clock=clock)
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    rt = Runtime.build(cfg, store, clock=clock, admin_token="admin-secret")
    app = OrcaApp(rt, GuardPolicy.from_config(cfg.server, port=port, admin_token="admin-secret"),
                  admin=admin_handler)
    server, task = await serve_in_background(app, cfg.server, "127.0.0.1", port, sock=sock)
    try:
        sc = Sidecar(f"http://127.0.0.1:{port}", rt, "admin-secret")
        yield sc
    finally:
        for close in sc.closers:
            await close()
        await stop_server(server, task)
