"""Answers cut short, through the real server (SPEC §7, §8, §15): an upstream stream that
breaks after its first byte, and a client that hangs up, are failures in the trace, so the
request log and `orca requests` say what happened instead of a bare status."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
import pytest_asyncio

from orca_cli.clock import SystemClock
from orca_cli.config.load import loads
from orca_cli.proxy.sim import SimTransport
from orca_cli.testing import Sidecar, eventually, openai_sse, sidecar
from orca_cli.trace.log import format_line, log_fields
from tests.e2e.scripted import Reply, ScriptedTransport

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONFIG = """
[[channels]]
name = "drop"
type = "sim"
keys = ["sk-secret-drop-0"]
models = ["m1"]
faults = { after_bytes = 300 }

[[channels]]
name = "stall"
type = "sim"
keys = ["sk-secret-stall-0"]
models = ["m2"]
latency_ms = 5000

[[channels]]
name = "scripted"
type = "openai-compatible"
base_url = "http://upstream-scripted.invalid/v1"
keys = ["sk-secret-scripted-0"]
models = ["m3"]

[models.m1]
input = 1.0
[models.m2]
input = 1.0
[models.m3]
input = 1.0
"""
MSGS = [{"role": "user", "content": "write a long story about the sea, please"}]
_sessions = itertools.count()


@pytest.fixture
def scripted() -> ScriptedTransport:
    return ScriptedTransport()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar, scripted: ScriptedTransport) -> AsyncIterator[Sidecar]:
    cfg = loads(CONFIG, source="test")
    transports = {c.name: SimTransport(c, SystemClock()) for c in cfg.channels if c.type == "sim"}
    async with server.use(cfg, transports={**transports, "scripted": scripted}) as st:
        yield st


def request(model: str, *, stream: bool, rid: str) -> tuple[bytes, dict[str, str]]:
    body = {"model": model, "messages": MSGS, "stream": stream}
    return orjson.dumps(body), {"content-type": "application/json", "x-request-id": rid,
                                "x-orca-session": f"cut-{next(_sessions)}"}


async def trace_of(st: Sidecar, rid: str) -> dict[str, Any]:
    trace = await eventually(lambda: st.store.get_trace(rid), 10, what=f"the trace of {rid}")
    return dict(trace)  # type: ignore[call-overload]


async def streamed(st: Sidecar, model: str, rid: str) -> bytes:
    body, headers = request(model, stream=True, rid=rid)
    async with st.http.stream("POST", "/v1/chat/completions", content=body,
                              headers=headers) as resp:
        assert resp.status_code == 200
        return await resp.aread()


async def test_a_stream_that_breaks_after_its_first_byte_is_a_failure_in_the_log(
        stack: Sidecar) -> None:
    """The client got the in-stream error; the trace's error says the stream broke, naming
    only the attempt's error class, and the status stays the 200 that was sent."""
    received = await streamed(stack, "m1", "broke-1")
    assert b'data: {"error"' in received and b"[DONE]" not in received
    trace = await trace_of(stack, "broke-1")
    assert trace["status"] == 200 and trace["committed"] is False
    assert trace["attempts"][-1]["error"] == "UpstreamStreamError"
    assert trace["error"] == ("the upstream stream broke after the first byte: "
                              "UpstreamStreamError")
    assert log_fields(trace)["error"] == trace["error"]
    assert trace["error"] in format_line(trace) and "no usage" not in format_line(trace)
    assert "sk-secret" not in orjson.dumps(trace).decode()


async def test_a_stream_that_ends_before_its_final_event_is_a_failure_in_the_log(
        stack: Sidecar, scripted: ScriptedTransport) -> None:
    scripted.script = [Reply(chunks=tuple(openai_sse(("a", "b"))[:2]),
                             headers=(("content-type", "text/event-stream"),))]
    received = await streamed(stack, "m3", "ended-1")
    assert b'"error"' in received and b"[DONE]" not in received
    trace = await trace_of(stack, "ended-1")
    assert trace["status"] == 200
    assert trace["error"] == "the upstream stream ended before its final event"


async def test_a_stream_the_upstream_ends_with_its_own_error_event_says_so(
        stack: Sidecar, scripted: ScriptedTransport) -> None:
    """The upstream's in-stream error (an OpenAI-shape `error` chunk mid-stream): relayed to
    the client, and the trace's error names its type (content-free), not `null`."""
    head = openai_sse(("a", "b"))[:2]
    error = (b'data: {"error": {"message": "the server had an error, retry", '
             b'"type": "server_error"}}\n\n')
    scripted.script = [Reply(chunks=(*head, error),
                             headers=(("content-type", "text/event-stream"),))]
    received = await streamed(stack, "m3", "own-err-1")
    assert b"server_error" in received
    trace = await trace_of(stack, "own-err-1")
    assert trace["status"] == 200 and trace["committed"] is False
    assert trace["error"] == "the upstream ended the stream with an error event (server_error)"
    assert "retry" not in trace["error"]  # its message is not copied


async def test_a_clean_stream_has_no_error(stack: Sidecar,
                                           scripted: ScriptedTransport) -> None:
    received = await streamed(stack, "m3", "clean-1")
    assert b"[DONE]" in received
    trace = await trace_of(stack, "clean-1")
    assert trace["status"] == 200 and trace["error"] is None and trace["committed"] is True


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_a_client_that_hangs_up_is_499_with_the_reason_in_the_log(
        stack: Sidecar, stream: bool) -> None:
    """Nothing was sent: the trace shows nginx's 499 and says the client left, and when."""
    rid = f"gone-{int(stream)}"
    body, headers = request("m2", stream=stream, rid=rid)
    with pytest.raises(httpx.ReadTimeout):
        async with stack.http.stream("POST", "/v1/chat/completions", content=body,
                                     headers=headers, timeout=0.3) as resp:
            await resp.aread()
    trace = await trace_of(stack, rid)
    assert trace["status"] == 499 and trace["committed"] is False
    assert trace["error"] == (f"the client closed the connection after "
                              f"{trace['latency_ms']:.0f} ms")
    fields = log_fields(trace)
    assert fields["status"] == 499 and fields["error"] == trace["error"]
    assert " 499 " in format_line(trace)


async def test_the_attempt_a_hang_up_cut_off_shows_how_long_it_ran(stack: Sidecar) -> None:
    body, headers = request("m2", stream=False, rid="gone-att")
    with pytest.raises(httpx.ReadTimeout):
        await stack.http.post("/v1/chat/completions", content=body, headers=headers,
                              timeout=0.3)
    trace = await trace_of(stack, "gone-att")
    (attempt,) = trace["attempts"]
    assert 0 < attempt["latency_ms"] <= trace["latency_ms"]
