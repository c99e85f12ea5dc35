"""The httpx transport under respx and MockTransport (STYLE §4 rule 20)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest
import respx

from orca_cli.proxy.httpx_transport import HttpxTransport
from orca_cli.proxy.transport import (
    Timeouts,
    UpstreamConnectError,
    UpstreamRequest,
    UpstreamTimeout,
)
from orca_cli.wire.usage import ResponseTap

URL = "https://api.example.test/v1/chat/completions"


def _req(stream: bool = False) -> UpstreamRequest:
    return UpstreamRequest(
        "POST", URL, (("content-type", "application/json"),), b'{"model":"m"}', "ch", 0, stream
    )


def _timeouts() -> Timeouts:
    return Timeouts(5, 5, 5, time.monotonic() + 30)


@respx.mock
async def test_status_body_and_retry_headers_pass_through_unmodified() -> None:
    body = b'{"error":{"message":"Overloaded","type":"overloaded_error"}}'
    respx.post(URL).mock(
        return_value=httpx.Response(
            503, content=body, headers={"retry-after": "7", "x-should-retry": "true"}
        )
    )
    t = HttpxTransport()
    try:
        resp = await t.send(_req(), _timeouts())
        assert resp.status == 503
        assert await resp.read() == body
        headers = dict(resp.headers)
        assert headers["retry-after"] == "7" and headers["x-should-retry"] == "true"
        await resp.aclose()
    finally:
        await t.aclose()


@respx.mock
async def test_streaming_relays_each_chunk_and_taps_usage() -> None:
    events = [
        b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n',
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        b'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1,'
        b'"prompt_tokens_details":{"cached_tokens":4}}}\n\n',
        b"data: [DONE]\n\n",
    ]

    async def gen() -> AsyncIterator[bytes]:
        for e in events:
            yield e

    respx.post(URL).mock(
        return_value=httpx.Response(
            200, content=gen(), headers={"content-type": "text/event-stream"}
        )
    )
    t = HttpxTransport()
    try:
        resp = await t.send(_req(stream=True), _timeouts())
        tap = ResponseTap("openai", True, None)
        got = []
        async for chunk in resp.chunks():
            got.append(chunk)
            tap.feed(chunk)
        await resp.aclose()
    finally:
        await t.aclose()
    assert b"".join(got) == b"".join(events)
    assert tap.completed and tap.finish_reason == "stop"
    assert tap.usage is not None and tap.usage.cached_tokens == 4


@respx.mock
async def test_connect_error_maps_to_retryable_connect_error() -> None:
    respx.post(URL).mock(side_effect=httpx.ConnectError("refused"))
    t = HttpxTransport()
    try:
        with pytest.raises(UpstreamConnectError) as info:
            await t.send(_req(), _timeouts())
    finally:
        await t.aclose()
    assert info.value.retryable


@pytest.mark.parametrize(
    ("exc", "phase"),
    [
        (httpx.ConnectTimeout("t"), "connect"),
        (httpx.ReadTimeout("t"), "first_byte"),
        (httpx.PoolTimeout("t"), "connect"),
    ],
)
async def test_httpx_timeouts_map_to_phases(exc: Exception, phase: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    t = HttpxTransport(transport=httpx.MockTransport(handler))
    try:
        with pytest.raises(UpstreamTimeout) as info:
            await t.send(_req(), _timeouts())
    finally:
        await t.aclose()
    assert info.value.phase == phase and info.value.retryable


async def test_injected_client_is_used_and_left_open() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["accept-encoding"])
        return httpx.Response(200, json={"ok": 1})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        t = HttpxTransport(client=client)
        resp = await t.send(_req(), _timeouts())
        assert await resp.read() == b'{"ok":1}'
        await resp.aclose()
        await t.aclose()
        assert not client.is_closed
    assert seen == ["identity"]


async def test_expired_deadline_fails_before_sending() -> None:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(200)

    t = HttpxTransport(transport=httpx.MockTransport(handler))
    try:
        with pytest.raises(UpstreamTimeout) as info:
            await t.send(_req(), Timeouts(5, 5, 5, time.monotonic() - 1))
    finally:
        await t.aclose()
    assert info.value.phase == "total" and not info.value.retryable and calls == []
