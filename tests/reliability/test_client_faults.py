"""Client faults (SPEC §3 step 9, §6.3; RELIABILITY.md S9, S10): a client that hangs up
cancels the upstream request and commits nothing; a retried request does not count twice.

The upstream is a scripted loopback provider reached over the live `AiohttpTransport`, so
"cancelled" means the provider itself saw its connection close.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, Sidecar, eventually, sidecar
from tests.reliability.configs import Channel, fault_config
from tests.reliability.probes import tier_doc

pytestmark = pytest.mark.asyncio

_sessions = itertools.count()


CHANNELS: tuple[Channel, ...] = (
    ("a", "openai", "sk-test-a0-1f0e", "m1"), ("s", "openai", "sk-test-s0-2e1d", "m2"),
    ("x", "anthropic", "sk-ant-test-x0-3d2c", "am1"),
    ("z", "anthropic", "sk-ant-test-z0-4c3b", "am2"))
SERVER = {"first_byte_timeout_s": 10, "idle_timeout_s": 10, "total_timeout_s": 30}


def config_text(up: FakeUpstream) -> str:
    return fault_config(up, CHANNELS, server=SERVER, strikes=3)


@pytest.fixture
async def sc(up: FakeUpstream) -> AsyncIterator[Sidecar]:
    async with sidecar(loads(config_text(up), source="test")) as s:
        yield s


ROUTER = {"openai": "r", "anthropic": "ra"}
FIRST = {"openai": "a", "anthropic": "x"}


def request(api: str, session: str, *, stream: bool, rid: str | None = None,
            text: str = "fix the failing test in parser.py") -> tuple[str, bytes, dict[str, str]]:
    msgs = [{"role": "user", "content": text}]
    if api == "anthropic":
        body: dict[str, Any] = {"model": "orca/ra", "max_tokens": 64, "messages": msgs}
        path = "/v1/messages"
    else:
        body = {"model": "orca/r", "messages": msgs}
        path = "/v1/chat/completions"
    body["stream"] = stream
    headers = {"content-type": "application/json", "x-orca-session": session}
    if rid is not None:
        headers["x-request-id"] = rid
    return path, orjson.dumps(body), headers


async def session_keys(sc: Sidecar, router: str, session: str) -> list[str]:
    return [e.key for e in await sc.store.scan("session", router=router, session=session)]


async def wait_for_trace(sc: Sidecar, request_id: str) -> dict[str, Any]:
    """The trace is written when the request's task ends, just after the client left."""
    trace = await eventually(lambda: sc.store.get_trace(request_id), 10,
                             what=f"the trace of {request_id}")
    return dict(trace)  # type: ignore[call-overload]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_disconnect_mid_stream_cancels_upstream_and_commits_nothing(
        sc: Sidecar, up: FakeUpstream, api: str) -> None:
    up.on(FIRST[api], Act(forever=True, gap_s=0.01))
    sid = f"cf-{next(_sessions)}"
    path, body, headers = request(api, sid, stream=True, rid="turn-1")
    received = b""
    async with sc.http.stream("POST", path, content=body, headers=headers) as resp:
        assert resp.status_code == 200
        rid = resp.headers["x-orca-request-id"]
        async for chunk in resp.aiter_raw():
            received += chunk
            if received.count(b"\n\n") >= 5:
                break
    t_left = time.monotonic()
    await asyncio.wait_for(up.gone.wait(), 2.0)
    assert time.monotonic() - t_left < 1.0, "the upstream stream outlived its client"
    written = up.events_written
    await asyncio.sleep(0.2)  # an absence is checked over a window
    assert up.events_written == written, "the upstream kept streaming after the cancel"
    assert written < 500
    trace = await wait_for_trace(sc, rid)
    assert trace["committed"] is False and trace["client_request_id"] == "turn-1"
    assert await session_keys(sc, ROUTER[api], sid) == [], "a cancelled turn wrote state"
    # The agent retries the turn whose answer it lost: it is counted exactly once.
    async with sc.http.stream("POST", path, content=body, headers=headers) as resp:
        assert resp.status_code == 200
        await resp.aread()
    doc = await tier_doc(sc.store, ROUTER[api], sid)
    assert doc is not None and doc["turn"] == 1 and len(doc["dedupe"]) == 1
    assert doc["dedupe"][0].startswith("c:")  # the client's id and the turn, hashed
    assert "pin:base" in await session_keys(sc, ROUTER[api], sid)


async def test_disconnect_while_waiting_for_a_non_streaming_answer_cancels_upstream(
        sc: Sidecar, up: FakeUpstream) -> None:
    up.on("a", Act(stall_before_s=5.0))
    sid = f"cf-{next(_sessions)}"
    path, body, headers = request("openai", sid, stream=False, rid="slow-1")
    with pytest.raises(httpx.ReadTimeout):
        await sc.http.post(path, content=body, headers=headers, timeout=0.5)
    t_left = time.monotonic()
    await asyncio.wait_for(up.gone.wait(), 2.0)
    assert time.monotonic() - t_left < 1.0
    assert len(up.seen) == 1, "a client that left must not be retried for"
    trace = await wait_for_trace(sc, "slow-1")  # by the client's id
    assert trace["committed"] is False and trace["selected"] is None
    assert await session_keys(sc, "r", sid) == []


async def test_under_another_asgi_server_a_disconnect_on_receive_cancels_upstream(
        sc: Sidecar, up: FakeUpstream) -> None:
    """Without orca's server there is no `orca.disconnect` hook in the scope: the app waits
    for `http.disconnect` on `receive` instead, with the same outcome."""
    up.on("a", Act(stall_before_s=5.0))
    path, body, headers = request("openai", f"cf-{next(_sessions)}", stream=False,
                                  rid="plain-asgi-1")
    left, sent = asyncio.Event(), False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(msg: Any) -> None:
        return None

    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(),
             "query_string": b"", "http_version": "1.1", "scheme": "http",
             "server": ("127.0.0.1", sc.port), "client": ("127.0.0.1", 50000),
             "headers": [(b"host", f"127.0.0.1:{sc.port}".encode()),
                         *((k.encode(), v.encode()) for k, v in headers.items())]}
    served = asyncio.create_task(sc.app(scope, receive, send))
    await eventually(lambda: len(up.seen) == 1, 5, what="the upstream call")
    left.set()
    await asyncio.wait_for(served, 2.0)
    await asyncio.wait_for(up.gone.wait(), 2.0)
    trace = await wait_for_trace(sc, "plain-asgi-1")
    assert trace["committed"] is False and trace["selected"] is None


@pytest.mark.parametrize("rid", ["retry-7", None], ids=["x-request-id", "content-dedupe"])
async def test_a_retried_request_does_not_strike_twice(
        sc: Sidecar, up: FakeUpstream, rid: str | None) -> None:
    """An empty answer is a response strike (SPEC §6.3). The SDK retries the same turn: the
    retry's strike, turn and streak are not counted again, so it cannot escalate the session
    on its own (strikes = 3 here; two more counted strikes would be one away)."""
    up.always["a"] = Act(text="")
    sid = f"cf-{next(_sessions)}"
    path, body, headers = request("openai", sid, stream=False, rid=rid)
    for _ in range(3):
        r = await sc.http.post(path, content=body, headers=headers)
        assert r.status_code == 200 and r.headers["x-orca-session-tier"].startswith("base")
    doc = await tier_doc(sc.store, "r", sid)
    assert doc is not None
    assert doc["turn"] == 1 and len(doc["strikes"]) == 1 and len(doc["dedupe"]) == 1, doc
    assert len(up.seen) == 3  # each retry was served (and billed) by the upstream
    # A genuinely new turn does count: the dedupe is what held the count at one.
    path2, body2, headers2 = request("openai", sid, stream=False,
                                     rid=None if rid is None else "retry-8",
                                     text="fix the failing test in lexer.py")
    r = await sc.http.post(path2, content=body2, headers=headers2)
    assert r.status_code == 200
    doc = await tier_doc(sc.store, "r", sid)
    assert doc is not None and doc["turn"] == 2 and len(doc["strikes"]) == 2, doc
