"""`[server] max_response_mb` (SPEC §18): a whole upstream answer larger than the limit is
not read into memory past it, not relayed and not retried; the client gets orca's 502 in its
own format, naming the setting. Real sockets, the live aiohttp transport, a scripted provider.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest
from aiohttp import web

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, Sidecar, sidecar
from orca_cli.testing.sse import json_body
from tests.reliability.test_upstream_faults import SERVER, call, config_text, new_session

pytestmark = pytest.mark.asyncio

LIMIT_MB = 0.25
LIMIT = int(LIMIT_MB * 1_048_576)


def _answer(text_bytes: int) -> bytes:
    """A Chat Completions answer whose text is `text_bytes` long."""
    return json_body("openai", "x" * text_bytes, "m1", finish="stop", prompt_tokens=20,
                     completion_tokens=4, id="chatcmpl-big")


@pytest.fixture
async def sc(up: FakeUpstream) -> AsyncIterator[Sidecar]:
    text = config_text(up).replace("[server]\n", f"[server]\nmax_response_mb = {LIMIT_MB}\n", 1)
    assert SERVER and f"max_response_mb = {LIMIT_MB}" in text
    async with sidecar(loads(text, source="test")) as s:
        yield s


def _assert_refused(status: int, body: bytes) -> None:
    assert status == 502, body[:200]
    err = orjson.loads(body)["error"]
    assert "max_response_mb" in err["message"] and "0.25 MB" in err["message"], err


async def test_an_answer_within_the_limit_is_relayed(sc: Sidecar, up: FakeUpstream) -> None:
    up.on("a", Act(200, body=_answer(LIMIT // 2)))
    status, headers, body, _ = await call(sc, "openai", new_session())
    assert status == 200 and headers["x-orca-channel"] == "a"
    assert len(orjson.loads(body)["choices"][0]["message"]["content"]) == LIMIT // 2


async def test_a_declared_length_over_the_limit_is_refused_and_not_retried(
        sc: Sidecar, up: FakeUpstream) -> None:
    up.on("a", Act(200, body=_answer(4 * LIMIT)))
    status, headers, body, _ = await call(sc, "openai", new_session())
    _assert_refused(status, body)
    assert [s.prefix for s in up.seen] == ["a"], "a billed answer too large is not re-asked"
    trace = await sc.store.get_trace(headers["x-orca-request-id"])
    assert trace is not None and trace["committed"] is False
    assert [a["error"] for a in trace["attempts"]] == ["UpstreamTooLarge"]


async def test_a_chunked_answer_is_cut_as_soon_as_it_passes_the_limit(
        sc: Sidecar, up: FakeUpstream) -> None:
    """No Content-Length: orca stops reading once the limit is passed, long before the
    upstream would have finished (it offers 64 times the limit)."""
    written = 0
    done = asyncio.Event()

    async def endless(request: web.Request) -> web.StreamResponse:
        nonlocal written
        resp = web.StreamResponse(status=200, headers={"content-type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            await resp.write(b'{"id":"chatcmpl-big","choices":[{"message":{"content":"')
            for _ in range(64 * 16):
                await resp.write(b"x" * (LIMIT // 16))
                written += LIMIT // 16
            await resp.write(b'"}}]}')
            await resp.write_eof()
        finally:
            done.set()
        return resp

    up.handler = endless
    status, _, body, _ = await call(sc, "openai", new_session())
    _assert_refused(status, body)
    await asyncio.wait_for(done.wait(), 10)
    assert written < 32 * LIMIT, f"orca kept reading: {written} bytes were written"
    assert len(up.seen) == 1
