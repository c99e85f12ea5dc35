"""A real uvicorn on 127.0.0.1:0: serving, the header deadline (slowloris), the concurrency cap."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import httpx
import pytest

from orca_cli.config.schema import ServerConfig
from orca_cli.proxy.server import (
    ServerStartError,
    bind_socket,
    bound_port,
    serve_in_background,
    stop_server,
)

Message = MutableMapping[str, Any]


class App:
    """A tiny raw ASGI app: `/slow` waits for `release`; everything else answers at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = asyncio.Event()
        self.started_up = False
        self.seen: list[dict[str, Any]] = []

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.started_up = True
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        self.seen.append({"client": scope["client"], "scheme": scope["scheme"],
                          "headers": dict(scope["headers"])})
        if scope["path"] == "/slow":
            self.entered.set()
            await self.release.wait()
        if scope["path"] == "/read":  # reads its whole body first
            while (await receive()).get("more_body"):
                pass
        body = b"hello " + scope["path"].encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/plain"),
                                (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def running(app: App, cfg: ServerConfig) -> AsyncIterator[int]:
    server, task = await serve_in_background(app, cfg, "127.0.0.1", 0)
    try:
        yield bound_port(server)
    finally:
        app.release.set()
        await stop_server(server, task)


@pytest.fixture
def app() -> App:
    return App()


@pytest.fixture
async def port(app: App) -> AsyncIterator[int]:
    async with running(app, ServerConfig(header_timeout_s=0.3, max_concurrency=8)) as p:
        yield p


async def test_serves_a_request_on_the_real_bound_port(app: App, port: int) -> None:
    assert port != 0 and app.started_up
    async with httpx.AsyncClient() as client:
        r = await client.get(f"http://127.0.0.1:{port}/healthz",
                             headers={"x-forwarded-for": "203.0.113.9",
                                      "x-forwarded-proto": "https"})
    assert r.status_code == 200 and r.text == "hello /healthz"
    assert "server" not in r.headers
    # X-Forwarded-* is never trusted: the peer stays the loopback socket.
    assert app.seen[0]["client"][0] == "127.0.0.1" and app.seen[0]["scheme"] == "http"


async def _read_until_closed(reader: asyncio.StreamReader, limit_s: float) -> bytes:
    async with asyncio.timeout(limit_s):
        return await reader.read()  # returns at EOF


async def test_half_sent_headers_are_cut_off_after_the_deadline(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-")
    await writer.drain()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    data = await _read_until_closed(reader, 3.0)
    waited = loop.time() - t0
    writer.close()
    assert data.startswith(b"HTTP/1.1 408 ")
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"content-length: %d" % len(body) in head.lower()
    assert waited >= 0.25  # not before the deadline (0.3 s)


async def test_a_connection_that_sends_nothing_is_cut_off_too(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = await _read_until_closed(reader, 3.0)
    writer.close()
    assert data.startswith(b"HTTP/1.1 408 ")


async def test_a_trickle_of_header_bytes_does_not_reset_the_deadline(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 200
    closed = False
    for byte in request:  # one byte every 20 ms: 4 s in all, far past the 0.3 s deadline
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except ConnectionError:
            closed = True
            break
        if reader.at_eof():
            closed = True
            break
        await asyncio.sleep(0.02)
    if not closed:
        closed = (await _read_until_closed(reader, 3.0)).startswith(b"HTTP/1.1 408 ")
    writer.close()
    assert closed


async def test_keep_alive_requests_each_get_a_fresh_deadline(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for _ in range(3):
        await asyncio.sleep(0.2)  # idle between requests, under keep-alive
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await writer.drain()
        async with asyncio.timeout(3):
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ")
            await reader.readexactly(len(b"hello /healthz"))
    writer.close()


async def test_over_the_concurrency_limit_is_503(app: App) -> None:
    """`max_concurrency` requests in flight are served; one past it gets 503."""
    async with (running(app, ServerConfig(header_timeout_s=5, max_concurrency=1)) as port,
                httpx.AsyncClient() as client):
        held = asyncio.create_task(client.get(f"http://127.0.0.1:{port}/slow"))
        async with asyncio.timeout(3):
            await app.entered.wait()
        async with httpx.AsyncClient() as other:
            refused = await other.get(f"http://127.0.0.1:{port}/fast")
        assert refused.status_code == 503
        app.release.set()
        first = await held
        assert first.status_code == 200 and first.text == "hello /slow"
        assert (await client.get(f"http://127.0.0.1:{port}/fast")).status_code == 200


async def test_a_pre_bound_socket_is_served(app: App) -> None:
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server, task = await serve_in_background(app, ServerConfig(), sock=sock)
    try:
        assert bound_port(server) == port
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"http://127.0.0.1:{port}/x")).text == "hello /x"
    finally:
        await stop_server(server, task)


async def test_a_port_in_use_is_a_start_error(app: App) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(ServerStartError):
            await serve_in_background(app, ServerConfig(), "127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()


async def test_an_answer_before_the_body_is_read_closes_the_connection(port: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /refused HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000\r\n\r\n{\"a\": 1")
    await writer.drain()
    data = await _read_until_closed(reader, 3.0)  # would hang if the connection stayed open
    writer.close()
    assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"hello /refused")


async def test_a_stalled_pipelined_request_lets_the_response_in_flight_finish(
    app: App, port: int
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /next HTTP/1.1\r\nHo")
    await writer.drain()
    async with asyncio.timeout(3):
        await app.entered.wait()
    await asyncio.sleep(0.4)  # past the 0.3 s deadline of the stalled second request
    assert not reader.at_eof()
    app.release.set()
    data = await _read_until_closed(reader, 3.0)
    writer.close()
    assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"hello /slow")
    assert b"408" not in data


async def _exchange(port: int, chunks: list[bytes], limit_s: float = 5.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for chunk in chunks:
            writer.write(chunk)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        return await _read_until_closed(reader, limit_s)
    finally:
        writer.close()


def _json_status(data: bytes) -> tuple[int, dict[str, Any]]:
    import orjson

    head, _, body = data.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower()
    return int(head.split(b" ", 2)[1]), orjson.loads(body)


async def test_a_megabyte_header_value_is_431_in_the_apis_shape(app: App, port: int) -> None:
    head = b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
    # Streamed in 8 KiB pieces, as an attacker would: refused long before 1 MB arrives.
    chunks = [head] + [b"a" * 8192] * 128
    status, doc = _json_status(await _exchange(port, chunks))
    assert status == 431 and doc["type"] == "error"  # /v1/messages: Anthropic's shape
    assert "64 KiB" in doc["error"]["message"]
    assert app.seen == []


async def test_too_many_header_fields_is_431(app: App, port: int) -> None:
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(300))
    data = await _exchange(port, [b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields
                                  + b"\r\n"])
    status, doc = _json_status(data)
    assert status == 431 and doc["error"]["type"]
    assert app.seen == []


async def test_a_large_body_behind_small_headers_is_not_a_header_overflow(
        app: App, port: int) -> None:
    body = b"x" * 300_000  # arrives in the same chunks as the headers
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(200))
    request = (b"POST /read HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n" % len(body)
               + fields + b"Connection: close\r\n\r\n" + body)
    data = await _exchange(port, [request])
    assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"hello /read")


async def test_a_header_split_at_its_blank_line_still_counts_right(app: App, port: int) -> None:
    body = b"y" * 100_000
    head = (b"POST /read HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n" % len(body))
    data = await _exchange(port, [head + b"\r", b"\n" + body])
    assert data.startswith(b"HTTP/1.1 200 ")


async def test_a_nul_in_a_header_is_a_json_400(app: App, port: int) -> None:
    data = await _exchange(port, [b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                  b"X-Bad: a\x00b\r\n\r\n"])
    status, doc = _json_status(data)
    assert status == 400 and doc["error"]["type"] == "invalid_request_error"
    assert app.seen == []


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    async with asyncio.timeout(3):
        head = await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(len(b"hello /healthz"))
    return head


async def test_an_idle_keep_alive_connection_closes_after_keep_alive_s(app: App) -> None:
    """`server.keep_alive_s` is the server's idle keep-alive: within it the same connection
    serves the next request, past it the server closes the connection."""
    async with running(app, ServerConfig(keep_alive_s=1)) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert (await _get(reader, writer)).startswith(b"HTTP/1.1 200 ")
        await asyncio.sleep(0.4)
        assert (await _get(reader, writer)).startswith(b"HTTP/1.1 200 ")
        async with asyncio.timeout(3):  # closed by the server about 1 s after that answer
            assert await reader.read(1) == b""
        writer.close()


def test_the_default_keep_alive_outlasts_the_common_clients_idle_expiry() -> None:
    """Clients close an idle connection first (httpx after 5 s, Node's undici after 4 s):
    the server's default keep-alive is longer, so no client sends a request on a connection
    the server is closing at that moment."""
    from orca_cli.proxy.server import build_server

    server = build_server(App(), ServerConfig(), host="127.0.0.1", port=0,
                          handle_signals=False)
    assert server.config.timeout_keep_alive == ServerConfig().keep_alive_s
    assert ServerConfig().keep_alive_s > max(httpx.Limits().keepalive_expiry or 0, 4)
