"""A scripted fake provider on 127.0.0.1:0 (RELIABILITY.md shared harness), in-process.

Each test sets `upstream.handler` to an aiohttp handler; the fixture records every request
(headers, body, peer port) and every handler that ended by cancellation or a failed write
(the client went away), so tests can assert that the upstream saw the cancel.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    peer_port: int


@dataclass
class FakeUpstream:
    base_url: str = ""
    handler: Handler | None = None
    requests: list[Seen] = field(default_factory=list)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    finished: int = 0

    def url(self, path: str = "/v1/chat/completions") -> str:
        return self.base_url + path


async def _default(request: web.Request) -> web.StreamResponse:
    return web.json_response({"ok": True})


@pytest.fixture
async def upstream() -> AsyncIterator[FakeUpstream]:
    fake = FakeUpstream()

    async def entry(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        peer = request.transport.get_extra_info("peername") if request.transport else None
        fake.requests.append(
            Seen(request.method, request.path, dict(request.headers), body, peer[1] if peer else 0)
        )
        try:
            resp = await (fake.handler or _default)(request)
        except (asyncio.CancelledError, ConnectionResetError):
            fake.disconnected.set()
            raise
        fake.finished += 1
        return resp

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", entry)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    fake.base_url = f"http://127.0.0.1:{port}"
    try:
        yield fake
    finally:
        await runner.cleanup()


@pytest.fixture
def closed_port() -> int:
    """A loopback port with nothing listening (connects are refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port
