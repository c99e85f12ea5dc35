"""The live path: the real server and the real `AiohttpTransport` against a loopback fake
provider speaking OpenAI and Anthropic JSON and SSE (SPEC §1.2, §7, §11).

What the upstream sees (the channel's key, never the agent's own credential; the body
unchanged except `model` and an OpenAI stream's `include_usage`; the Anthropic headers as
sent), and how a stream travels (event by event, cancelled with the client, ended with the
API's own error event when the upstream breaks after the first byte, never retried then).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import openai
import orjson
import pytest
import pytest_asyncio
from aiohttp import web

from orca_cli.config.load import loads
from orca_cli.state.base import SlotRef
from orca_cli.testing import (
    FakeUpstream,
    Handler,
    Seen,
    Sidecar,
    anthropic_sse,
    eventually,
    fake_upstream,
    openai_json,
    openai_sse,
    sidecar,
    sse_events,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_S = 5.0  # the bound on every wait for the other side; a passing test waits far less


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> AsyncIterator[FakeUpstream]:
    async with fake_upstream() as fake:
        yield fake


CONFIG = """
[[channels]]
name = "oa"
type = "openai"
base_url = "{up}/v1"
keys = ["sk-live-oa-0", "sk-live-oa-1"]
models = ["gpt-x"]
model_map = {{ "gpt-x" = "gpt-x-2026-01" }}
weight = 2

[[channels]]
name = "oa2"
type = "openai-compatible"
base_url = "{up}/alt/v1"
keys = ["sk-live-oa2-0"]
models = ["gpt-x", "gpt-d"]

[[channels]]
name = "dead"
type = "openai-compatible"
base_url = "http://127.0.0.1:1/v1"
keys = ["sk-dead-0"]
models = ["gpt-d"]
weight = 3

[[channels]]
name = "an"
type = "anthropic"
base_url = "{up}"
keys = ["sk-ant-live-0"]
models = ["claude-x"]

[[channels]]
name = "pt"
type = "openai-compatible"
base_url = "{up}/pt/v1"
models = ["gpt-pt"]
pass_through_auth = true

[routers.r]
strategy = "cheapest"
mode = "price"
allowed_models = ["gpt-x"]
[routers.r.escalation]
mode = "off"

[routers.ar]
strategy = "cheapest"
mode = "price"
allowed_models = ["claude-x"]
[routers.ar.escalation]
mode = "off"
"""
CHANNEL_KEYS = {"sk-live-oa-0", "sk-live-oa-1", "sk-live-oa2-0", "sk-ant-live-0"}
AGENT_SECRET = "agent-own-credential-123"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    provider.seen.clear()
    provider.handler = None
    provider.gone = asyncio.Event()
    cfg = loads(CONFIG.format(up=provider.base_url), source="test")
    async with server.use(cfg) as st:  # transports=None: the live AiohttpTransport
        yield st


def sse_response(request: web.Request) -> web.StreamResponse:
    return web.StreamResponse(headers={"content-type": "text/event-stream",
                                       "x-request-id": "up-stream-1"})


def no_agent_secret(seen: Seen) -> None:
    assert all(AGENT_SECRET not in v for v in seen.headers.values()), \
        "the agent's credential leaked"


OPENAI_BODY = {
    "model": "orca/r",
    "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "text", "text": "look at utils.py"}]},
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "read", "arguments": "{\"path\":\"utils.py\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "x = 1"},
        {"role": "user", "content": "rename x to count"},
    ],
    "tools": [{"type": "function", "function": {
        "name": "read", "parameters": {"type": "object",
                                       "properties": {"path": {"type": "string"}}}}}],
    "temperature": 0.2,
    "zz_vendor_extension": {"keep": [3, 2, 1]},
    "prompt_cache_key": "pck-1",
}


async def test_openai_upstream_sees_the_channel_key_and_the_body_unchanged_but_model(
        stack: Sidecar, provider: FakeUpstream) -> None:
    answer = openai_json("renamed", "gpt-x-2026-01")

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=answer, content_type="application/json",
                            headers={"x-request-id": "up-1", "set-cookie": "a=b"})

    provider.handler = handler
    r = await stack.http.post("/v1/chat/completions", content=orjson.dumps(OPENAI_BODY),
                              headers={"content-type": "application/json",
                                       "authorization": f"Bearer {AGENT_SECRET}",
                                       "x-orca-session": "live-oa-1"})
    assert r.status_code == 200
    # Byte for byte but the model name, which answers as the client named it (SPEC §14.2).
    assert r.content == answer.replace(b'"model":"gpt-x-2026-01"', b'"model":"orca/r"')
    assert r.headers["x-orca-model"] != "orca/r"
    assert r.headers["x-request-id"] == "up-1" and "set-cookie" not in r.headers
    assert (r.headers["x-orca-model"], r.headers["x-orca-channel"]) == ("gpt-x", "oa")
    (seen,) = provider.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.header("authorization") in {"Bearer sk-live-oa-0", "Bearer sk-live-oa-1"}
    no_agent_secret(seen)
    sent = seen.body
    assert sent == {**OPENAI_BODY, "model": "gpt-x-2026-01"}
    assert list(sent) == list(OPENAI_BODY), "the body's key order changed"
    assert "stream_options" not in sent


@pytest.mark.parametrize("client_asks_usage", [False, True])
async def test_openai_stream_is_relayed_event_by_event_with_include_usage_upstream(
        stack: Sidecar, provider: FakeUpstream, client_asks_usage: bool) -> None:
    events = openai_sse(("hel", "lo"), "gpt-x-2026-01", usage=True)
    release = asyncio.Event()
    sent_last = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = sse_response(request)
        await resp.prepare(request)
        await resp.write(events[0] + events[1])
        async with asyncio.timeout(WAIT_S):
            await release.wait()
        for e in events[2:]:
            await resp.write(e)
        sent_last.set()
        await resp.write_eof()
        return resp

    provider.handler = handler
    client = openai.AsyncOpenAI(base_url=stack.base + "/v1", api_key=AGENT_SECRET,
                                max_retries=0)
    try:
        extra = {"stream_options": {"include_usage": True}} if client_asks_usage else {}
        stream = await client.chat.completions.create(
            model="orca/r", messages=[{"role": "user", "content": "hi"}], stream=True,
            extra_headers={"x-orca-session": f"live-stream-{client_asks_usage}"}, **extra)
        chunks = []
        async with asyncio.timeout(WAIT_S):
            async for chunk in stream:
                chunks.append(chunk)
                if chunk.choices and chunk.choices[0].delta.content == "hel":
                    assert not sent_last.is_set(), "the stream was buffered"
                    release.set()
    finally:
        await client.close()
    assert release.is_set(), "the first event never arrived before the last was sent"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "hello"
    usage_chunks = [c for c in chunks if not c.choices]
    assert len(usage_chunks) == (1 if client_asks_usage else 0)
    (seen,) = provider.seen
    assert seen.body["stream_options"] == {"include_usage": True}
    assert seen.header("authorization") in {"Bearer sk-live-oa-0", "Bearer sk-live-oa-1"}
    no_agent_secret(seen)


ANTHROPIC_BODY = {
    "model": "orca/ar",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are terse.",
                "cache_control": {"type": "ephemeral"}}],
    "thinking": {"type": "enabled", "budget_tokens": 512},
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "look at utils.py",
                                      "cache_control": {"type": "ephemeral", "ttl": "1h"}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "reading", "signature": "sig=="},
            {"type": "tool_use", "id": "tu_1", "name": "read", "input": {"path": "utils.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1",
                                      "content": "x = 1"}]},
    ],
    "tools": [{"name": "read", "input_schema": {"type": "object"}}],
    "stream": True,
}
BETA = "prompt-caching-2024-07-31,interleaved-thinking-2025-05-14"


async def test_anthropic_upstream_gets_x_api_key_and_the_anthropic_headers_as_sent(
        stack: Sidecar, provider: FakeUpstream) -> None:
    events = anthropic_sse(("hel", "lo"), "claude-x")
    release = asyncio.Event()
    sent_last = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = sse_response(request)
        await resp.prepare(request)
        await resp.write(b"".join(events[:3]))
        async with asyncio.timeout(WAIT_S):
            await release.wait()
        await resp.write(b"".join(events[3:]))
        sent_last.set()
        await resp.write_eof()
        return resp

    provider.handler = handler
    got = b""
    headers = {"content-type": "application/json", "x-api-key": AGENT_SECRET,
               "anthropic-version": "2023-06-01", "anthropic-beta": BETA,
               "x-orca-session": "live-an-1"}
    async with asyncio.timeout(WAIT_S):
        async with stack.http.stream("POST", "/v1/messages", content=orjson.dumps(ANTHROPIC_BODY),
                                     headers=headers) as r:
            assert r.status_code == 200 and r.headers["x-orca-channel"] == "an"
            async for part in r.aiter_raw():
                got += part
                if b"text_delta" in got and not release.is_set():
                    assert not sent_last.is_set(), "the stream was buffered"
                    release.set()
    # Byte for byte but the model name, which answers as the client named it (SPEC §14.2).
    want = b"".join(events).replace(b'"model":"claude-x"',
                                    b'"model":' + orjson.dumps(ANTHROPIC_BODY["model"]))
    assert b'"model":"claude-x"' in b"".join(events) and got == want
    (seen,) = provider.seen
    assert seen.path == "/v1/messages"
    assert seen.header("x-api-key") == "sk-ant-live-0"
    assert seen.header("authorization") is None
    assert seen.header("anthropic-version") == "2023-06-01"
    assert seen.header("anthropic-beta") == BETA
    no_agent_secret(seen)
    assert seen.body == {**ANTHROPIC_BODY, "model": "claude-x"}
    assert list(seen.body) == list(ANTHROPIC_BODY)


async def test_anthropic_version_is_supplied_when_the_client_sent_none(
        stack: Sidecar, provider: FakeUpstream) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=orjson.dumps({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}),
            content_type="application/json")

    provider.handler = handler
    body = {**ANTHROPIC_BODY, "stream": False}
    r = await stack.http.post("/v1/messages", content=orjson.dumps(body),
                              headers={"content-type": "application/json"})
    assert r.status_code == 200
    assert provider.seen[0].header("anthropic-version") == "2023-06-01"
    assert provider.seen[0].header("anthropic-beta") is None


async def test_a_client_disconnect_mid_stream_cancels_the_upstream_request(
        stack: Sidecar, provider: FakeUpstream) -> None:
    never = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = sse_response(request)
        await resp.prepare(request)
        await resp.write(openai_sse(("hel",), "gpt-x")[1])
        async with asyncio.timeout(WAIT_S * 2):
            await never.wait()
        return resp

    provider.handler = handler
    body = {"model": "orca/r", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    async with asyncio.timeout(WAIT_S):
        async with stack.http.stream("POST", "/v1/chat/completions", content=orjson.dumps(body),
                                     headers={"content-type": "application/json",
                                              "x-orca-session": "live-cancel"}) as r:
            rid = r.headers["x-orca-request-id"]
            async for part in r.aiter_raw():
                assert b"hel" in part
                break  # leaving the block closes the connection mid-stream
    async with asyncio.timeout(WAIT_S):
        await provider.gone.wait()
    assert len(provider.seen) == 1
    # the handler writes it once its upstream call is torn down
    trace = await eventually(lambda: stack.rt.gate.store.get_trace(rid), WAIT_S,
                             what="the cancelled request's trace")
    assert isinstance(trace, dict)
    assert trace["committed"] is False
    pin = await stack.rt.gate.store.get(SlotRef.of_session("r", "live-cancel"), "pin:base")
    assert pin is None, "a cancelled request wrote a pin"


def _abort_after_first_event(first: bytes) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = sse_response(request)
        await resp.prepare(request)
        await resp.write(first)
        await resp.drain()
        assert request.transport is not None
        request.transport.abort()  # the chunked body never completes
        return resp

    return handler


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_an_upstream_failure_after_the_first_byte_ends_with_the_apis_error_event(
        stack: Sidecar, provider: FakeUpstream, api: str) -> None:
    if api == "openai":
        first = b"".join(openai_sse(("hel",), "gpt-x")[:2])
        path, body = "/v1/chat/completions", {"model": "orca/r", "stream": True,
                                              "messages": [{"role": "user", "content": "hi"}]}
    else:
        first = b"".join(anthropic_sse(("hel",), "claude-x")[:3])
        path, body = "/v1/messages", {**ANTHROPIC_BODY, "stream": True}
    provider.handler = _abort_after_first_event(first)
    async with asyncio.timeout(WAIT_S):
        r = await stack.http.post(path, content=orjson.dumps(body),
                                  headers={"content-type": "application/json",
                                           "x-orca-session": f"live-break-{api}"})
    assert r.status_code == 200
    # what the upstream sent first reached the client, under the name the client sent
    shown = first.replace(b'"model":"gpt-x"', b'"model":"orca/r"').replace(
        b'"model":"claude-x"', b'"model":' + orjson.dumps(body["model"]))
    assert shown != first and r.content.startswith(shown)
    events = sse_events(r.content)
    name, data = events[-1]
    if api == "anthropic":
        assert name == "error" and orjson.loads(data)["type"] == "error"
        assert all(n != "message_stop" for n, _ in events)
    else:
        assert "error" in orjson.loads(data)
        assert all(d != "[DONE]" for _, d in events)
    assert len(provider.seen) == 1, "a stream that broke after its first byte was retried"


async def test_a_stream_that_ends_without_its_final_event_says_so(
        stack: Sidecar, provider: FakeUpstream) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = sse_response(request)
        await resp.prepare(request)
        await resp.write(b"".join(openai_sse(("hel",), "gpt-x")[:2]))
        await resp.write_eof()  # a clean close, but no finish_reason and no [DONE]
        return resp

    provider.handler = handler
    r = await stack.http.post("/v1/chat/completions", content=orjson.dumps(
        {"model": "orca/r", "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
        headers={"content-type": "application/json"})
    events = sse_events(r.content)
    assert "error" in orjson.loads(events[-1][1])
    assert all(d != "[DONE]" for _, d in events)
    assert len(provider.seen) == 1


async def test_live_upstream_errors_reach_the_client_unmodified_after_every_key(
        stack: Sidecar, provider: FakeUpstream) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        body = orjson.dumps({"error": {"message": f"Rate limit reached on {request.path}",
                                       "type": "requests", "code": "rate_limit_exceeded"}})
        return web.Response(status=429, body=body, content_type="application/json", headers={
            "retry-after": "2", "x-ratelimit-reset-requests": "2s", "set-cookie": "k=v"})

    provider.handler = handler
    r = await stack.http.post("/v1/chat/completions", content=orjson.dumps(OPENAI_BODY),
                              headers={"content-type": "application/json"})
    assert r.status_code == 429
    assert r.json()["error"]["message"] == "Rate limit reached on /alt/v1/chat/completions"
    assert r.headers["retry-after"] == "2" and r.headers["x-ratelimit-reset-requests"] == "2s"
    assert "set-cookie" not in r.headers
    keys = [s.header("authorization") for s in provider.seen]
    assert sorted(keys) == ["Bearer sk-live-oa-0", "Bearer sk-live-oa-1", "Bearer sk-live-oa2-0"]


async def test_a_refused_connect_falls_to_the_next_channel(
        stack: Sidecar, provider: FakeUpstream) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=openai_json("ok", "gpt-d"), content_type="application/json")

    provider.handler = handler
    r = await stack.http.post("/v1/chat/completions", content=orjson.dumps(
        {"model": "gpt-d:cheap", "messages": [{"role": "user", "content": "hi"}]}),
        headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.headers["x-orca-channel"] == "oa2"
    trace = await stack.rt.gate.store.get_trace(r.headers["x-orca-request-id"])
    assert trace is not None
    assert [a["channel"] for a in trace["attempts"]] == ["dead", "oa2"]
    assert "Connect" in trace["attempts"][0]["error"]
    text = orjson.dumps(trace).decode()
    assert not any(k in text for k in CHANNEL_KEYS | {"sk-dead-0"}), "a key reached the trace"


async def test_a_client_that_leaves_before_the_answer_cancels_the_upstream_request(
        stack: Sidecar, provider: FakeUpstream) -> None:
    never = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        async with asyncio.timeout(WAIT_S * 2):
            await never.wait()  # the provider is still thinking
        return web.Response(body=openai_json(), content_type="application/json")

    provider.handler = handler
    post = asyncio.ensure_future(stack.http.post(
        "/v1/chat/completions", content=orjson.dumps(OPENAI_BODY),
        headers={"content-type": "application/json", "x-orca-session": "live-leave"}))
    await eventually(lambda: provider.seen, WAIT_S, 0.005, what="the upstream call")
    post.cancel()  # the agent gives up: its connection closes
    with pytest.raises(asyncio.CancelledError):
        await post
    async with asyncio.timeout(WAIT_S):
        await provider.gone.wait()
    assert len(provider.seen) == 1, "the sidecar tried another upstream for a departed client"


async def test_a_pass_through_channel_forwards_the_agents_own_credential(
        stack: Sidecar, provider: FakeUpstream) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(body=openai_json("ok", "gpt-pt"), content_type="application/json")

    provider.handler = handler
    r = await stack.http.post("/v1/chat/completions", content=orjson.dumps(
        {"model": "gpt-pt", "messages": [{"role": "user", "content": "hi"}]}),
        headers={"content-type": "application/json", "authorization": f"Bearer {AGENT_SECRET}"})
    assert r.status_code == 200 and r.headers["x-orca-channel"] == "pt"
    (seen,) = provider.seen
    assert seen.path == "/pt/v1/chat/completions"
    assert seen.header("authorization") == f"Bearer {AGENT_SECRET}"


async def test_a_first_byte_timeout_and_an_empty_200_are_retried_on_the_next_key(
        server: Sidecar, stack: Sidecar, provider: FakeUpstream) -> None:
    calls = 0

    async def handler(request: web.Request) -> web.StreamResponse:
        nonlocal calls
        calls += 1
        if calls == 1:  # stalls past first_byte_timeout_s
            await asyncio.sleep(WAIT_S)
        if calls == 2:  # headers, then the connection drops before any body byte
            resp = sse_response(request)
            await resp.prepare(request)
            assert request.transport is not None
            request.transport.abort()
            return resp
        resp = sse_response(request)
        await resp.prepare(request)
        for e in openai_sse(("ok",), "gpt-x"):
            await resp.write(e)
        await resp.write_eof()
        return resp

    provider.handler = handler
    cfg = stack.rt.cfg
    quick = dataclasses.replace(cfg, server=dataclasses.replace(cfg.server,
                                                                first_byte_timeout_s=0.3))
    async with server.use(quick) as st:
        r = await st.http.post("/v1/chat/completions", content=orjson.dumps(
            {"model": "orca/r", "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
            headers={"content-type": "application/json"})
        trace = await st.rt.gate.store.get_trace(r.headers["x-orca-request-id"])
    assert r.status_code == 200
    assert sse_events(r.content)[-1] == (None, "[DONE]")
    assert len({s.header("authorization") for s in provider.seen}) == 3
    assert trace is not None
    assert [a["error"] for a in trace["attempts"]][:2] == ["UpstreamTimeout:first_byte",
                                                           "UpstreamStreamError"]
