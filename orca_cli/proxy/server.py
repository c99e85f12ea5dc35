"""The ASGI server the sidecar runs on: uvicorn with httptools, plus what it lacks (SPEC §11).

uvicorn bounds keep-alive idleness but not the time a client may take to send its request
headers, so a client that trickles one header byte at a time (slowloris) holds a connection,
and a concurrency slot, for as long as it likes. `HeaderDeadlineProtocol` closes a connection
whose request headers are not complete within `server.header_timeout_s` of the connection
opening or of the first byte of the next request. The body's own deadline is
`guard.read_body`'s, since only the application knows when it wants the body.

Other choices, each for §11: `proxy_headers` off (X-Forwarded-* is never trusted), no
WebSocket support, no `server:` header, access log off (the app logs what it decides),
`log_config=None` so starting a server never rewires the process's logging.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib.util
import signal
import socket
import threading
from collections.abc import Generator
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from orca_cli.config.schema import ServerConfig
from orca_cli.types import CLIENT_EXTENSION, ClientLink
from orca_cli.wire.errors import error_body

__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_HEADER_FIELDS",
    "HeaderDeadlineProtocol",
    "ServerStartError",
    "bind_socket",
    "bound_port",
    "build_server",
    "collect_as_a_server",
    "serve_in_background",
    "stop_server",
]

MAX_HEADER_BYTES = 64 * 1024  # request line and headers, in all (SPEC §18)
MAX_HEADER_FIELDS = 256
LINGER_S = 1.0  # how long a refused connection's remaining bytes are read and dropped
_TIMEOUT_TEXT = b"request headers not received within server.header_timeout_s"
_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"content-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\n"
    b"connection: close\r\n"
    b"\r\n" % len(_TIMEOUT_TEXT)
) + _TIMEOUT_TEXT


class ServerStartError(RuntimeError):
    """The server did not start: the address was in use, or the app's lifespan failed."""


def _raw_response(status: bytes, body: bytes) -> bytes:
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)) + body


async def _over_capacity(scope: Any, receive: Any, send: Any) -> None:
    """Past `server.max_concurrency` (uvicorn's `limit_concurrency`): 503 in the JSON shape of
    the API the path names, with `Retry-After: 1` (SPEC §1.2, RELIABILITY S28), where uvicorn
    answers plain text."""
    from orca_cli.proxy.intake import api_of_path

    body = error_body(api_of_path(str(scope.get("path", ""))), 503,
                      "orca is at server.max_concurrency open connections and requests; "
                      "retry shortly")
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _path_of(head: bytes) -> str:
    """The path of a request line (`POST /v1/messages HTTP/1.1`), or "" when unreadable."""
    parts = head.split(b"\r\n", 1)[0].split(b" ")
    if len(parts) < 2:
        return ""
    return parts[1].split(b"?", 1)[0].decode("latin-1")


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline on receiving each request's headers, a
    bound on their size, and refusals in the inbound API's JSON shape (SPEC §11, §18).

    The timer is armed when the connection opens and again at the first byte of each later
    request, and disarmed when the headers are complete; a head that arrives whole in one
    chunk, as nearly every one does, arms no timer at all. When it fires between requests the
    connection gets a 408 and is closed; when a response is still in flight (a pipelined
    request stalled behind it) that response finishes and the connection closes after it.

    Header bytes and lines are counted as they arrive, before the parser sees them (one
    `find` and one `count` per chunk, in C): past `MAX_HEADER_BYTES` or `MAX_HEADER_FIELDS`
    the request gets 431 and the connection is closed, so neither a 1 MB header value nor
    10,000 fields is ever accumulated. A request the parser refuses (bad framing, a NUL in a
    header) gets 400 in the JSON shape of the API its path names, not text.
    """

    header_timeout_s: ClassVar[float] = 10.0
    _header_timer: asyncio.TimerHandle | None = None
    _in_head: bool = True
    _head_bytes: int = 0
    _head_lines: int = 0
    _head_tail: bytes = b""
    _head_start: bytes = b""

    _discarding: bool = False
    _head_open: bool = False  # a request's head has begun and is not complete
    _link: ClientLink

    def _unsupported_upgrade_warning(self) -> None:
        """The app answers a WebSocket upgrade itself (426, `proxy.app`); uvicorn's warning,
        which tells the operator to install a WebSocket library, is not for orca's log."""

    def data_received(self, data: bytes) -> None:
        if self._discarding:
            return  # a refused request's rest, read and dropped until the linger ends
        if self._in_head and not self._head_fits(data):
            self._refuse(b"431 Request Header Fields Too Large", 431,
                         f"request headers are too large: at most {MAX_HEADER_BYTES // 1024} "
                         f"KiB and {MAX_HEADER_FIELDS} fields")
            return
        super().data_received(data)
        if self._head_open and self._header_timer is None and not self._discarding:
            self._arm()  # a request's head began in this chunk and is not complete yet

    def _head_fits(self, data: bytes) -> bool:
        if not self._head_start:
            self._head_start = data[:512]
        end = data.find(b"\r\n\r\n")
        if end < 0 and self._head_tail:  # the blank line split across two chunks
            joined = (self._head_tail + data[:3]).find(b"\r\n\r\n")
            if joined >= 0:
                end = max(0, joined - len(self._head_tail))
        size = len(data) if end < 0 else end
        self._head_bytes += size
        self._head_lines += data.count(b"\n", 0, size)
        self._head_tail = data[-3:] if end < 0 else b""
        if end >= 0:
            self._in_head = False
        return self._head_bytes <= MAX_HEADER_BYTES and self._head_lines <= MAX_HEADER_FIELDS

    def _next_head(self) -> None:
        self._in_head = True
        self._head_bytes = self._head_lines = 0
        self._head_tail = self._head_start = b""

    def _refuse(self, status_line: bytes, status: int, message: str) -> None:
        from orca_cli.proxy.intake import api_of_path

        api = api_of_path(_path_of(self._head_start))
        self._disarm()
        transport = self.transport
        if transport.is_closing():
            return
        transport.write(_raw_response(status_line, error_body(api, status, message)))
        # A lingering close: closing with the client's bytes still unread would reset the
        # connection and could destroy the answer before the client reads it. Send FIN,
        # drop what still arrives, and close after a short linger.
        self._discarding = True
        if transport.can_write_eof():
            transport.write_eof()
        self.loop.call_later(LINGER_S, transport.close)

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        # uvicorn's own over-capacity answer is text: orca's speaks the inbound format
        super()._start_asgi_task(cycle, _over_capacity if app is service_unavailable else app)

    def send_400_response(self, msg: str) -> None:
        self._refuse(b"400 Bad Request", 400, f"the request could not be parsed as HTTP/1.1: "
                                              f"{msg}")

    def on_message_complete(self) -> None:
        self._link.body_complete = True
        super().on_message_complete()
        self._next_head()

    @classmethod
    def with_timeout(cls, timeout_s: float) -> type[HeaderDeadlineProtocol]:
        """A subclass bound to `timeout_s` (uvicorn builds protocols from a class)."""
        return type(cls.__name__, (cls,), {"header_timeout_s": float(timeout_s)})

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._link = ClientLink()
        # ASGI extension info is a dict: one per connection, shared by its requests' scopes
        self._extensions: dict[str, dict[object, object]] = {
            CLIENT_EXTENSION: {"link": self._link}}
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)
        cycle = self.cycle
        if cycle is None or not cycle.response_complete:
            self._link.fire()
        else:  # answered: only a request still to start hears of it
            self._link.lost = True

    def on_message_begin(self) -> None:
        self._link.body_complete = False
        self._head_open = True  # the deadline is armed after the chunk, if still needed
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if not self._head_start:
            self._head_start = b"GET " + url

    def on_headers_complete(self) -> None:
        self._head_open = False
        self._disarm()
        self._in_head = False
        self.scope["extensions"] = self._extensions
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        cycle = self.cycle
        if cycle is not None and cycle.more_body and not self.transport.is_closing():
            # Answered before the body was all read (a refusal): the rest is of no use,
            # and a client trickling it must not keep the connection.
            self.transport.close()
        super().on_response_complete()

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._on_header_deadline)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _on_header_deadline(self) -> None:
        self._header_timer = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.keep_alive = False
            return
        if self._head_start:  # a request began: answered in the JSON shape its path names
            self._refuse(b"408 Request Timeout", 408, _TIMEOUT_TEXT.decode())
            return
        self.transport.write(_REQUEST_TIMEOUT)
        self.transport.close()


class _GracefulServer(uvicorn.Server):
    """uvicorn's server, stopped gracefully by SIGINT or SIGTERM, whose `serve()` then returns.

    uvicorn re-raises a captured signal once it has shut down, so that the default action
    follows. For SIGTERM that action kills the process at once: after the lifespan shutdown
    (the request log and the store were closed) but before the owner's own clean-up, such as
    removing the sidecar record, with exit status 143. Here the stop is already complete, so
    the signal is not raised again and the owner finishes normally."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signals reach only the main thread
            return
        stops = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self.handle_exit) for sig in stops}
        # An `orca serve --workers` worker starts with the stop signals blocked, so that one
        # sent while it started is taken here, by the handler, as a graceful stop (a no-op
        # where they were not blocked).
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)


class _QuietServer(uvicorn.Server):
    """A server that leaves signal handling to its owner (tests, an embedding process)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def collect_as_a_server() -> None:
    """The cyclic collector as a serving process runs it, called once start-up is done. What
    start-up built (config, modules, the runtime) lives as long as the process: frozen, out
    of the collector's scans. A request allocates a few hundred objects and frees nearly all
    by reference counting, so the youngest generation is collected every 20,000 allocations
    rather than 700 (measured: 15-24 µs a request in collections at the default, 5-6)."""
    gc.freeze()
    gc.set_threshold(20_000, 50, 100)


def build_server(
    app: Any,
    server_cfg: ServerConfig,
    *,
    host: str,
    port: int,
    log_level: str = "warning",
    handle_signals: bool = True,
) -> uvicorn.Server:
    """A uvicorn server for `app`, configured for §11; run it with `.run()` or `.serve()`.

    `limit_concurrency` answers 503 past `server.max_concurrency` open connections or
    in-flight requests (uvicorn counts both). An idle keep-alive connection is closed after
    `server.keep_alive_s` (uvicorn's own default, 5 s, equals httpx's idle expiry: a client
    could send its next request just as the server closes). `port` 0 binds any free port;
    read it back with `bound_port` once started.
    """
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=HeaderDeadlineProtocol.with_timeout(server_cfg.header_timeout_s),
        loop="uvloop" if importlib.util.find_spec("uvloop") is not None else "auto",
        ws="none",
        lifespan="on",
        interface="asgi3",
        # uvicorn refuses a request once the connections reach its limit, counting the one
        # the request came on: + 1, so `max_concurrency` requests are served, not one fewer
        limit_concurrency=server_cfg.max_concurrency + 1,
        timeout_keep_alive=server_cfg.keep_alive_s,
        access_log=False,
        log_config=None,
        log_level=log_level,
        proxy_headers=False,
        server_header=False,
    )
    return _GracefulServer(config) if handle_signals else _QuietServer(config)


def bind_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A bound TCP socket, for callers that must know the port before the app is built
    (a `GuardPolicy` names it); pass it to `serve_in_background(sock=...)`. `reuse_port`
    (`orca serve --workers`): SO_REUSEPORT, so each worker binds a listener of its own to the
    same port and the kernel spreads new connections across them."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted sockets only for TCP-typed
    # listeners, and without it every keep-alive response waits ~40 ms for Nagle.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def bound_port(server: uvicorn.Server) -> int:
    """The port a started server listens on (the real one when it was asked for port 0)."""
    for listener in server.servers:
        for sock in listener.sockets or ():
            return int(sock.getsockname()[1])
    raise ServerStartError("the server is not listening yet; wait for server.started")


async def serve_in_background(
    app: Any,
    server_cfg: ServerConfig,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    sock: socket.socket | None = None,
    log_level: str = "warning",
    start_timeout_s: float = 10.0,
) -> tuple[uvicorn.Server, asyncio.Task[None]]:
    """Start a server on the running loop and return once it accepts connections.

    Stop it with `stop_server`. A failed start (address in use, lifespan startup failure)
    raises `ServerStartError` here instead of uvicorn's `sys.exit` tearing down the loop.
    """
    server = build_server(app, server_cfg, host=host, port=port, log_level=log_level,
                          handle_signals=False)
    sockets = [sock] if sock is not None else None

    async def run() -> None:
        try:
            await server.serve(sockets=sockets)
        except SystemExit as exc:
            raise ServerStartError(f"the server on {host}:{port} did not start "
                                   f"(exit status {exc.code})") from None

    task = asyncio.get_running_loop().create_task(run(), name=f"orca-server-{host}:{port}")
    try:
        async with asyncio.timeout(start_timeout_s):
            while not server.started:
                if task.done():
                    task.result()
                    raise ServerStartError(f"the server on {host}:{port} exited during startup")
                await asyncio.sleep(0.005)
    except BaseException:
        if not task.done():
            server.should_exit = True
            task.cancel()
        raise
    return server, task


async def stop_server(server: uvicorn.Server, task: asyncio.Task[None],
                      timeout_s: float = 10.0) -> None:
    """Ask a background server to shut down gracefully, forcing it after `timeout_s`."""
    server.should_exit = True
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.shield(task)
    except TimeoutError:
        server.force_exit = True
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
