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
from orca_cli.testing import Act, FakeUpstream, Sidecar, fake_upstream, sidecar
from tests.reliability.probes import tier_doc

pytestmark = pytest.mark.asyncio

_sessions = itertools.count()


def config_text(up: FakeUpstream) -> str:
    return f"""
[server]
first_byte_timeout_s = 10
idle_timeout_s = 10
total_timeout_s = 30

[[channels]]
name = "a"
type = "openai-compatible"
base_url = "{up.url('a')}"
keys = ["sk-test-a0-1f0e"]
models = ["m1"]

[[channels]]
name = "s"
type = "openai-compatible"
base_url = "{up.url('s')}"
keys = ["sk-test-s0-2e1d"]
models = ["m2"]

[[channels]]
name = "x"
type = "anthropic"
base_url = "{up.url('x', versioned=False)}"
keys = ["sk-ant-test-x0-3d2c"]
models = ["am1"]

[[channels]]
name = "z"
type = "anthropic"
base_url = "{up.url('z', versioned=False)}"
keys = ["sk-ant-test-z0-4c3b"]
models = ["am2"]

[models.m1]
input = 1.0
[models.m2]
input = 5.0
[models.am1]
input = 1.0
[models.am2]
input = 5.0

[routers.r]
strategy = "cheapest"
mode = "price"
allowed_models = ["m1", "m2"]
strong_pool = ["m2"]
[routers.r.escalation]
mode = "auto"
strikes = 3

[routers.ra]
strategy = "cheapest"
mode = "price"
allowed_models = ["am1", "am2"]
strong_pool = ["am2"]
[routers.ra.escalation]
mode = "auto"
"""


@pytest.fixture
async def up() -> AsyncIterator[FakeUpstream]:
    async with fake_upstream() as fake:
        yield fake


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
    for _ in range(200):
        trace = await sc.store.get_trace(request_id)
        if trace is not None:
            return dict(trace)
        await asyncio.sleep(0.01)
    raise AssertionError(f"no trace for {request_id}")


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
    await asyncio.sleep(0.2)
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
    assert doc is not None and doc["turn"] == 1 and doc["dedupe"] == ["c:turn-1"]
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
