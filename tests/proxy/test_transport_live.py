"""Both real transports against a loopback fake provider (SPEC §7, RELIABILITY S1, S2, S7-S11)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from orca_cli.proxy.aiohttp_transport import AiohttpTransport
from orca_cli.proxy.httpx_transport import HttpxTransport
from orca_cli.proxy.transport import (
    Timeouts,
    Transport,
    UpstreamConnectError,
    UpstreamRequest,
    UpstreamStreamError,
    UpstreamTimeout,
    filter_response_headers,
)
from orca_cli.testing import FakeUpstream

KINDS = ["aiohttp", "httpx"]


@pytest.fixture(params=KINDS)
async def transport(request: pytest.FixtureRequest) -> AsyncIterator[Transport]:
    t: Transport = AiohttpTransport() if request.param == "aiohttp" else HttpxTransport()
    try:
        yield t
    finally:
        await t.aclose()


def timeouts(
    *, connect: float = 5, first_byte: float = 5, idle: float = 5, total: float = 10
) -> Timeouts:
    return Timeouts(connect, first_byte, idle, time.monotonic() + total)


def request(url: str, body: bytes = b'{"model":"m"}', *, stream: bool = False) -> UpstreamRequest:
    headers = (
        ("content-type", "application/json"),
        ("authorization", "Bearer sk-test"),
        ("accept-encoding", "gzip"),
    )
    return UpstreamRequest("POST", url, headers, body, "ch", 0, stream)


async def test_status_headers_and_body_pass_through(
    transport: Transport, upstream: FakeUpstream
) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        return web.Response(
            status=429,
            body=b'{"error":{"message":"slow down","type":"rate_limit_error"}}',
            headers={
                "content-type": "application/json",
                "retry-after": "2",
                "set-cookie": "a=b",
                "x-ratelimit-remaining-requests": "0",
            },
        )

    upstream.handler = handler
    body = b'{"model":"m","messages":[]}' + b" " * 10_000
    resp = await transport.send(request(upstream.endpoint(), body), timeouts())
    try:
        assert resp.status == 429
        assert await resp.read() == b'{"error":{"message":"slow down","type":"rate_limit_error"}}'
        kept = dict(filter_response_headers(resp.headers))
        assert kept["retry-after"] == "2"
        assert kept["x-ratelimit-remaining-requests"] == "0"
        assert "set-cookie" not in kept and "content-length" not in kept
    finally:
        await resp.aclose()
        await resp.aclose()  # twice is safe
    seen = upstream.seen[0]
    assert seen.raw == body  # forwarded byte for byte
    assert seen.headers["Authorization"] == "Bearer sk-test"
    assert (
        seen.headers["Accept-Encoding"] == "identity"
    )  # never compressed: the taps read clear text


async def test_stream_chunks_arrive_as_sent(transport: Transport, upstream: FakeUpstream) -> None:
    got_first = asyncio.Event()

    async def handler(req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(req)
        await resp.write(b'data: {"n":1}\n\n')
        # The second event is sent only once the client holds the first: a buffering
        # transport would never see it and the test would time out.
        await asyncio.wait_for(got_first.wait(), 5)
        await resp.write(b'data: {"n":2}\n\n')
        await resp.write_eof()
        return resp

    upstream.handler = handler
    resp = await transport.send(request(upstream.endpoint(), stream=True), timeouts())
    received: list[bytes] = []
    async with asyncio.timeout(5):
        async for chunk in resp.chunks():
            received.append(chunk)
            got_first.set()
    await resp.aclose()
    assert received[0] == b'data: {"n":1}\n\n'
    assert b"".join(received) == b'data: {"n":1}\n\ndata: {"n":2}\n\n'
    assert upstream.finished == 1


async def test_refused_connect_fails_fast_as_connect_error(
    transport: Transport, closed_port: int
) -> None:
    async with asyncio.timeout(5):  # connect_s is 30: only a fast failure finishes in time
        with pytest.raises(UpstreamConnectError) as info:
            await transport.send(
                request(f"http://127.0.0.1:{closed_port}/v1/chat/completions"),
                timeouts(connect=30, first_byte=30, total=60),
            )
    assert info.value.retryable and info.value.local_origin


async def test_first_byte_timeout(transport: Transport, upstream: FakeUpstream) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        await asyncio.sleep(10)
        return web.Response()

    upstream.handler = handler
    with pytest.raises(UpstreamTimeout) as info:
        await transport.send(request(upstream.endpoint()), timeouts(first_byte=0.2))
    assert info.value.phase == "first_byte"
    assert info.value.retryable


async def test_deadline_shorter_than_first_byte_reports_total(
    transport: Transport, upstream: FakeUpstream
) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        await asyncio.sleep(10)
        return web.Response()

    upstream.handler = handler
    with pytest.raises(UpstreamTimeout) as info:
        await transport.send(request(upstream.endpoint()), timeouts(first_byte=5, total=0.2))
    assert info.value.phase == "total"
    assert not info.value.retryable


async def test_idle_timeout_mid_stream(transport: Transport, upstream: FakeUpstream) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(req)
        await resp.write(b"data: 1\n\n")
        await asyncio.sleep(10)
        return resp

    upstream.handler = handler
    resp = await transport.send(request(upstream.endpoint(), stream=True), timeouts(idle=0.3))
    received: list[bytes] = []
    with pytest.raises(UpstreamTimeout) as info:
        async for chunk in resp.chunks():
            received.append(chunk)
    await resp.aclose()
    assert info.value.phase == "idle"
    assert not info.value.retryable  # a byte was already handed out
    assert received == [b"data: 1\n\n"]


async def test_dribbling_stream_is_ended_by_the_deadline(
    transport: Transport, upstream: FakeUpstream
) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(req)
        for _ in range(100):
            await resp.write(b":")
            await asyncio.sleep(0.05)
        return resp

    upstream.handler = handler
    resp = await transport.send(request(upstream.endpoint(), stream=True), timeouts(idle=1, total=0.6))
    with pytest.raises(UpstreamTimeout) as info:
        async for _ in resp.chunks():
            pass
    await resp.aclose()
    assert info.value.phase == "total"


async def test_aclose_mid_stream_cancels_the_upstream_handler(
    transport: Transport, upstream: FakeUpstream
) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await resp.prepare(req)
        for i in range(50):
            await resp.write(f"data: {i}\n\n".encode())
            await asyncio.sleep(0.02)
        return resp

    upstream.handler = handler
    resp = await transport.send(request(upstream.endpoint(), stream=True), timeouts())
    async for _ in resp.chunks():
        break
    await resp.aclose()
    await asyncio.wait_for(upstream.gone.wait(), 3)
    assert upstream.finished == 0


async def test_connection_drop_mid_body_is_a_stream_error(
    transport: Transport, upstream: FakeUpstream
) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
        resp.content_length = 1000
        await resp.prepare(req)
        await resp.write(b"data: partial\n\n")
        await asyncio.sleep(0.05)
        assert req.transport is not None
        req.transport.abort()
        return resp

    upstream.handler = handler
    resp = await transport.send(request(upstream.endpoint(), stream=True), timeouts())
    received: list[bytes] = []
    with pytest.raises(UpstreamStreamError) as info:
        async for chunk in resp.chunks():
            received.append(chunk)
    await resp.aclose()
    assert b"".join(received) == b"data: partial\n\n"
    assert not info.value.retryable


async def test_close_before_headers_is_a_retryable_connect_error(
    transport: Transport, upstream: FakeUpstream
) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        assert req.transport is not None
        req.transport.abort()
        await asyncio.sleep(1)
        return web.Response()

    upstream.handler = handler
    with pytest.raises(UpstreamConnectError) as info:
        await transport.send(request(upstream.endpoint()), timeouts())
    assert info.value.retryable


async def test_sequential_requests_reuse_one_pooled_connection(
    transport: Transport, upstream: FakeUpstream
) -> None:
    for _ in range(3):
        resp = await transport.send(request(upstream.endpoint()), timeouts())
        assert json.loads(await resp.read())["object"] == "chat.completion"  # the default
        await resp.aclose()
    ports = {seen.peer_port for seen in upstream.seen}
    assert len(upstream.seen) == 3 and len(ports) == 1


async def test_cancelling_the_wait_for_headers_aborts_the_upstream_call(
    transport: Transport, upstream: FakeUpstream
) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        await asyncio.sleep(10)
        return web.Response()

    handling = asyncio.Event()

    async def handler_started(req: web.Request) -> web.StreamResponse:
        handling.set()
        return await handler(req)

    upstream.handler = handler_started
    task = asyncio.create_task(transport.send(request(upstream.endpoint()), timeouts()))
    await asyncio.wait_for(handling.wait(), 3)  # the upstream is now handling the call
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(upstream.gone.wait(), 3)  # S10: the upstream saw the cancel


async def test_cancelled_non_streaming_read_then_aclose_aborts_the_upstream(
    transport: Transport, upstream: FakeUpstream
) -> None:
    async def handler(req: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"content-type": "application/json"})
        resp.content_length = 100
        await resp.prepare(req)
        await resp.write(b'{"partial":')
        await asyncio.sleep(10)
        return resp

    upstream.handler = handler
    resp = await transport.send(request(upstream.endpoint()), timeouts())
    reading = asyncio.create_task(resp.read())
    await asyncio.sleep(0.1)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    await resp.aclose()
    await asyncio.wait_for(upstream.gone.wait(), 3)
