"""The composition root: the one place a config becomes a served sidecar.

`create_app` assembles the pieces (store → `Runtime.build` → `GuardPolicy` → `OrcaApp` with
the admin handler) and `running` serves the result with uvicorn on a real loopback socket,
stopping it gracefully when the block ends. `orca serve`, `orca demo`, `orca replay --http`
and the test kit (`orca_cli.testing`) all build their sidecar here, so a new piece of the
request path is wired in once.

Choices: the store is opened from `cfg.state` unless one is passed; the admin API under
`/orca/v1/` is mounted only when an admin token is given (an empty token would refuse every
call anyway, and `orca demo` / `orca replay --http` have no operator).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from orca_cli.admin.http import admin_handler
from orca_cli.clock import Clock, SystemClock
from orca_cli.config.schema import Config
from orca_cli.proxy.app import OrcaApp
from orca_cli.proxy.guard import GuardPolicy
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.server import bind_socket, serve_in_background, stop_server
from orca_cli.proxy.transport import Transport
from orca_cli.state.base import Store
from orca_cli.state.factory import open_store

__all__ = ["Running", "create_app", "running"]


def create_app(cfg: Config, *, store: Store | None = None, clock: Clock | None = None,
               transports: Mapping[str, Transport] | None = None,
               admin_token: str | None = None, port: int | None = None) -> OrcaApp:
    """The ASGI app serving `cfg`.

    `store` defaults to the one `cfg.state` names; `transports` (channel name → transport)
    to `Runtime.build`'s (sim channels in process, the rest over aiohttp); `port` is the
    port the app is reached on (the guard's Host check names it; default `server.port`).
    """
    clock = clock or SystemClock()
    if store is None:
        store = open_store(cfg.state, clock=clock, trace_max=cfg.server.trace_max,
                           trace_ttl_s=cfg.server.trace_ttl_s)
    token = admin_token or ""
    rt = Runtime.build(cfg, store, clock=clock, transports=transports, admin_token=token)
    policy = GuardPolicy.from_config(
        cfg.server, port=cfg.server.port if port is None else port, admin_token=token,
        team_keys=tuple(k.token_sha256 for k in cfg.inbound_keys if k.token_sha256))
    return OrcaApp(rt, policy, admin=admin_handler if token else None)


@dataclass(frozen=True)
class Running:
    """A sidecar being served: where it listens and what serves it."""

    url: str
    host: str
    port: int
    app: OrcaApp
    served: Any  # the ASGI callable uvicorn runs (`app`, or `app` wrapped)

    @property
    def runtime(self) -> Runtime:
        return self.app.rt

    @property
    def admin_token(self) -> str:
        return self.app.rt.admin_token


@asynccontextmanager
async def running(cfg: Config, *, host: str = "127.0.0.1", port: int = 0,
                  store: Store | None = None, clock: Clock | None = None,
                  transports: Mapping[str, Transport] | None = None,
                  admin_token: str | None = None, log_level: str = "warning",
                  wrap: Callable[[OrcaApp], Any] | None = None) -> AsyncIterator[Running]:
    """Serve `cfg` on `host:port` (port 0: a free one) until the block ends.

    `wrap` puts ASGI middleware around the app (the test kit counts requests in flight).
    On exit the server shuts down gracefully: lifespan shutdown closes the transports.
    """
    sock = bind_socket(host, port)
    try:
        real_port = int(sock.getsockname()[1])
        app = create_app(cfg, store=store, clock=clock, transports=transports,
                         admin_token=admin_token, port=real_port)
        served = wrap(app) if wrap is not None else app
        server, task = await serve_in_background(served, cfg.server, host, real_port,
                                                 sock=sock, log_level=log_level)
    except BaseException:
        sock.close()
        raise
    shown = f"[{host}]" if ":" in host else host
    try:
        yield Running(f"http://{shown}:{real_port}", host, real_port, app, served)
    finally:
        await stop_server(server, task)
