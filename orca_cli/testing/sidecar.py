"""A sidecar on a real loopback port for tests, built by the composition root.

`async with sidecar(cfg) as sc:` serves `cfg` through `orca_cli.compose.running` (uvicorn,
the guard, the handler, routing, the store: the production code) and gives an HTTP client
pointed at it. The sidecar commits after the last byte reached the client, so a client can
read its answer before the commit landed; `await sc.settled(request_id)` (or `await
sc.idle()`) waits, bounded, until the request's handler has returned.

One server can serve many configs in turn: `async with sc.use(cfg2): ...` swaps the runtime
(its own store, transports, health and metrics) for the block, which costs nothing next to a
server start.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson

from orca_cli.clock import Clock
from orca_cli.compose import Running, create_app, running
from orca_cli.config.schema import Config
from orca_cli.proxy.app import OrcaApp
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.transport import Transport
from orca_cli.state.base import Store
from orca_cli.testing.wait import eventually
from orca_cli.types import Message, Receive, Scope, Send

__all__ = ["ADMIN_TOKEN", "Sidecar", "Tracker", "sidecar"]

ADMIN_TOKEN = "orca-test-admin-token"
# The client drops a pooled connection after this long idle: well under the server's
# keep-alive timeout (`server.keep_alive_s`, which a test may set low), so it never sends a
# request on a connection the server is closing at that moment (such a request fails with a
# ReadError on a loaded machine, where the two clocks drift apart).
CLIENT_KEEPALIVE_S = 2.0


class Tracker:
    """ASGI middleware that knows which requests are still inside the app, and which
    request ids have finished (the handler returned: its commit was sent or handed over)."""

    def __init__(self, app: OrcaApp) -> None:
        self.app: Any = app
        self.inflight = 0
        self.finished: set[str] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        rid = ""

        async def watch(message: Message) -> None:
            nonlocal rid
            if message.get("type") == "http.response.start":
                for k, v in message.get("headers") or ():
                    if bytes(k).lower() == b"x-orca-request-id":
                        rid = bytes(v).decode("latin-1")
            await send(message)

        self.inflight += 1
        self._idle.clear()
        try:
            await self.app(scope, receive, watch)
        finally:
            self.inflight -= 1
            if rid:
                self.finished.add(rid)
            if self.inflight == 0:
                self._idle.set()

    async def idle(self, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            await self._idle.wait()


class Sidecar:
    """A served sidecar and a client for it (`http`, base URL `url`)."""

    def __init__(self, served: Running, tracker: Tracker, http: httpx.AsyncClient) -> None:
        self.served = served
        self.tracker = tracker
        self.http = http
        # Closed when the sidecar stops, before it: SDK clients a test made for it.
        self.closers: list[Callable[[], Awaitable[object]]] = []

    @property
    def url(self) -> str:
        return self.served.url

    base = url

    @property
    def port(self) -> int:
        return self.served.port

    @property
    def app(self) -> OrcaApp:
        return self.served.app

    @property
    def rt(self) -> Runtime:
        return self.served.app.rt

    @property
    def store(self) -> Store:
        return self.rt.gate.store

    @property
    def admin_token(self) -> str:
        return self.rt.admin_token

    async def settled(self, request_id: str, timeout: float = 10.0) -> None:
        """Wait until the request `request_id` has left the app (its commit was sent)."""
        await eventually(lambda: request_id in self.tracker.finished, timeout,
                         what=f"the end of request {request_id}", step=0.002)

    async def idle(self, timeout: float = 10.0) -> None:
        """Wait until no request is inside the app."""
        await self.tracker.idle(timeout)

    @property
    def auth(self) -> dict[str, str]:
        """The headers that carry the admin token."""
        return {"authorization": f"Bearer {self.admin_token}"}

    async def admin(self, method: str, path: str, body: Any = None) -> httpx.Response:
        """The admin API under /orca/v1/, with the admin token."""
        return await self.http.request(method, "/orca/v1/" + path.lstrip("/"), json=body,
                                       headers=self.auth)

    async def healthz(self) -> dict[str, Any]:
        return dict(orjson.loads((await self.http.get("/healthz")).content))

    @asynccontextmanager
    async def use(self, cfg: Config, *, store: Store | None = None,
                  transports: Mapping[str, Transport] | None = None,
                  clock: Clock | None = None) -> AsyncIterator[Sidecar]:
        """Serve `cfg` (its own store, transports, health and metrics) until the block ends."""
        fresh = create_app(cfg, store=store if store is not None else _memory(clock),
                           clock=clock, transports=transports,
                           admin_token=self.admin_token or None, port=self.port)
        app = self.served.app
        before = (app.rt, app.policy, app.admin)
        app.rt, app.policy, app.admin = fresh.rt, fresh.policy, fresh.admin
        try:
            yield self
        finally:
            app.rt, app.policy, app.admin = before
            await fresh.rt.aclose()


def _memory(clock: Clock | None) -> Store:
    from orca_cli.clock import SystemClock
    from orca_cli.state.memory import MemoryStore

    return MemoryStore(clock=clock or SystemClock())


@asynccontextmanager
async def sidecar(cfg: Config | None = None, *, store: Store | None = None,
                  clock: Clock | None = None,
                  transports: Mapping[str, Transport] | None = None,
                  admin_token: str | None = ADMIN_TOKEN, timeout: float = 30.0,
                  max_connections: int = 128) -> AsyncIterator[Sidecar]:
    """Serve `cfg` (default: built-in defaults, no channels) on 127.0.0.1:<free port>.

    The store defaults to a memory store (pass one opened from `cfg.state` for Redis). The
    admin API is on with `admin_token` (None: off). Stopped gracefully on exit.
    """
    cfg = cfg if cfg is not None else Config()
    if store is None:
        from orca_cli.clock import SystemClock
        from orca_cli.state.memory import MemoryStore

        clock = clock or SystemClock()
        store = MemoryStore(clock=clock, trace_max=cfg.server.trace_max,
                            trace_ttl_s=cfg.server.trace_ttl_s)
    limits = httpx.Limits(max_connections=max_connections,
                          max_keepalive_connections=max_connections,
                          keepalive_expiry=CLIENT_KEEPALIVE_S)
    async with running(cfg, store=store, clock=clock, transports=transports,
                       admin_token=admin_token, wrap=Tracker) as served:
        tracker = served.served
        assert isinstance(tracker, Tracker)
        async with httpx.AsyncClient(base_url=served.url, timeout=timeout,
                                     limits=limits) as http:
            sc = Sidecar(served, tracker, http)
            try:
                yield sc
            finally:
                for close in sc.closers:
                    await close()
