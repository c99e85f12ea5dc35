"""Serving a request through a channel of another wire format (SPEC §13.2), over real sockets:
the official SDKs as clients, the real server and transport, the fake provider speaking each
channel's own format. Every cross direction: JSON, stream, errors in the inbound shape with
`retry-after` kept, a mid-stream failure as the inbound format's error event, the trace's
`translation` block, and the untranslatable 400 before any upstream call.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import orjson
import pytest
import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, Sidecar, event, fake_upstream, sidecar, sse_events
from orca_cli.types import Api

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT_S = 5.0

CONFIG = """
[[channels]]
name = "oa"
type = "openai-compatible"
base_url = "{up}/oa/v1"
keys = ["sk-oa-0"]
models = ["gpt-t"]

[[channels]]
name = "an"
type = "anthropic"
base_url = "{up}/an"
keys = ["sk-an-0"]
models = ["claude-t"]
cache_ttl_s = 3600

[[channels]]
name = "rs"
type = "openai"
api = "responses"
base_url = "{up}/rs/v1"
keys = ["sk-rs-0"]
models = ["codex-t"]
"""

# model -> (channel prefix, the channel's format)
TARGETS: dict[str, tuple[str, Api]] = {
    "gpt-t": ("oa", "openai"), "claude-t": ("an", "anthropic"), "codex-t": ("rs", "responses")}
CROSS = [(inbound, model) for inbound in ("openai", "anthropic", "responses")
         for model, (_, fmt) in TARGETS.items() if fmt != inbound]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> AsyncIterator[FakeUpstream]:
    async with fake_upstream() as fake:
        yield fake


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    provider.seen.clear()
    provider.rules.clear()
    provider.handler = None
    cfg = loads(CONFIG.format(up=provider.base_url), source="test")
    async with server.use(cfg) as st:
        yield st


RIDS: list[str] = []  # x-orca-request-id of every answer the SDK clients got


async def _note(resp: httpx.Response | httpx2.Response) -> None:
    RIDS.append(resp.headers.get("x-orca-request-id", ""))


def _http() -> httpx.AsyncClient:
    return httpx.AsyncClient(event_hooks={"response": [_note]}, timeout=WAIT_S * 4)


def _oa(st: Sidecar) -> openai.AsyncOpenAI:
    c = openai.AsyncOpenAI(base_url=st.base + "/v1", api_key="agent", max_retries=0,
                           http_client=_http())
    st.closers.append(c.close)
    return c


def _an(st: Sidecar) -> anthropic.AsyncAnthropic:
    # This anthropic SDK runs on httpx2.
    http = httpx2.AsyncClient(event_hooks={"response": [_note]}, timeout=WAIT_S * 4)
    c = anthropic.AsyncAnthropic(base_url=st.base, api_key="agent", max_retries=0,
                                 http_client=http)
    st.closers.append(c.close)
    return c


async def _ask(st: Sidecar, inbound: str, model: str, *, stream: bool) -> tuple[str, str]:
    """One question through the SDK of `inbound`: (answer text, the answer's model name)."""
    if inbound == "openai":
        if stream:
            chunks = await _oa(st).chat.completions.create(
                model=model, messages=[{"role": "user", "content": "hi"}], stream=True,
                stream_options={"include_usage": True})
            text, name = "", ""
            async for c in chunks:
                name = c.model
                if c.choices and c.choices[0].delta.content:
                    text += c.choices[0].delta.content
            return text, name
        r = await _oa(st).chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}])
        return r.choices[0].message.content or "", r.model
    if inbound == "anthropic":
        if stream:
            async with _an(st).messages.stream(
                    model=model, max_tokens=100,
                    messages=[{"role": "user", "content": "hi"}]) as s:
                got = await s.get_final_message()
            return "".join(b.text for b in got.content if b.type == "text"), got.model
        m = await _an(st).messages.create(model=model, max_tokens=100,
                                          messages=[{"role": "user", "content": "hi"}])
        return "".join(b.text for b in m.content if b.type == "text"), m.model
    if stream:
        events = await _oa(st).responses.create(model=model, input="hi", stream=True)
        final: Any = None
        async for ev in events:
            if ev.type == "response.completed":
                final = ev.response
        assert final is not None, "the stream had no response.completed"
        return final.output_text, final.model
    r2 = await _oa(st).responses.create(model=model, input="hi")
    return r2.output_text, r2.model


async def _trace(st: Sidecar) -> dict[str, Any]:
    """The trace of the last answer an SDK client got."""
    await st.settled(RIDS[-1])
    trace = await st.rt.gate.store.get_trace(RIDS[-1])
    assert trace is not None, "no trace"
    return dict(trace)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("inbound", "model"), CROSS)
async def test_every_cross_direction_answers_in_the_inbound_format(
        stack: Sidecar, provider: FakeUpstream, inbound: str, model: str, stream: bool) -> None:
    prefix, fmt = TARGETS[model]
    text, name = await _ask(stack, inbound, model, stream=stream)
    assert text.strip() == "the fix is in place"
    assert name == model
    (seen,) = provider.calls(prefix)
    assert seen.api == fmt and seen.body["model"] == model and seen.stream is stream
    assert seen.key == f"sk-{prefix}-0", "the channel's own credential, in its format's header"
    if fmt == "anthropic":
        assert seen.header("anthropic-version")
    trace = await _trace(stack)
    assert trace["translation"]["from"] == inbound and trace["translation"]["to"] == fmt
    assert trace["usage"]["prompt_tokens"] == 20 and trace["usage"]["output_tokens"] == 4


def _error_body(fmt: Api, status: int, message: str) -> bytes:
    if fmt == "anthropic":
        etype = "rate_limit_error" if status == 429 else "api_error"
        return orjson.dumps({"type": "error", "error": {"type": etype, "message": message}})
    etype = "rate_limit_exceeded" if status == 429 else "server_error"
    return orjson.dumps({"error": {"message": message, "type": etype, "code": etype}})


@pytest.mark.parametrize("status", [429, 500])
@pytest.mark.parametrize(("inbound", "model"), CROSS)
async def test_an_upstream_error_arrives_in_the_inbound_shape_with_its_headers(
        stack: Sidecar, provider: FakeUpstream, inbound: str, model: str, status: int) -> None:
    prefix, fmt = TARGETS[model]
    provider.on(prefix, Act(status=status, body=_error_body(fmt, status, "slow down please"),
                            retry_after=7,
                            headers=(("x-ratelimit-remaining-requests", "0"),)))
    errors: tuple[type[Exception], ...] = (openai.APIStatusError, anthropic.APIStatusError)
    with pytest.raises(errors) as info:
        await _ask(stack, inbound, model, stream=False)
    exc: Any = info.value
    assert exc.status_code == status
    assert exc.response.headers["retry-after"] == "7"
    assert exc.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert "slow down please" in str(exc.message)
    body = orjson.loads(exc.response.content)
    if inbound == "anthropic":
        assert body["type"] == "error" and body["error"]["message"] == "slow down please"
    else:
        assert body["error"]["message"] == "slow down please"
    assert len(provider.calls(prefix)) == 1


@pytest.mark.parametrize(("inbound", "model"), CROSS)
async def test_a_mid_stream_failure_becomes_the_inbound_formats_error_event(
        stack: Sidecar, provider: FakeUpstream, inbound: str, model: str) -> None:
    prefix, _ = TARGETS[model]
    provider.on(prefix, Act(text="one two three four", drop_after=3))
    path = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages",
            "responses": "/v1/responses"}[inbound]
    body: dict[str, Any] = {"model": model, "stream": True, "max_tokens": 50,
                            "messages": [{"role": "user", "content": "hi"}]}
    if inbound == "responses":
        body = {"model": model, "stream": True, "input": "hi"}
    r = await stack.http.post(path, json=body, headers={"x-api-key": "agent"})
    assert r.status_code == 200
    events = sse_events(r.content)
    last_name, last_data = events[-1]
    if inbound == "anthropic":
        assert last_name == "error"
    elif inbound == "responses":
        assert last_name in ("error", "response.failed")
    else:
        assert "error" in orjson.loads(last_data)
    assert not any(name in ("message_stop", "response.completed") for name, _ in events)
    assert all(d != "[DONE]" for _, d in events), "a broken stream never ends cleanly"


async def test_an_untranslatable_request_is_refused_before_any_upstream_call(
        stack: Sidecar, provider: FakeUpstream) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        await _oa(stack).chat.completions.create(
            model="claude-t", n=2, messages=[{"role": "user", "content": "hi"}])
    assert "an" in str(info.value.message) and "untranslatable" not in str(info.value.message)
    assert provider.calls("an") == []
    trace = await _trace(stack)
    assert trace["attempts"][0]["error"].startswith("untranslatable:")


async def test_explain_shows_the_translation(stack: Sidecar, provider: FakeUpstream) -> None:
    from rich.console import Console

    from orca_cli.cli.explain import render_trace

    await _ask(stack, "responses", "claude-t", stream=False)
    console = Console(record=True, width=200)
    console.print(render_trace(await _trace(stack)))
    out = console.export_text()
    assert "translation: responses → anthropic · cache breakpoints added" in out
    assert "reasoning dropped 0" in out


# --- agents: Claude Code on a Chat Completions channel, Codex on an Anthropic one ------------

def _chat_tool_stream(call_id: str, name: str, args: list[str]) -> tuple[bytes, ...]:
    def chunk(delta: dict[str, Any], fin: str | None = None) -> bytes:
        return event(None, {"id": "chatcmpl-t", "object": "chat.completion.chunk",
                            "created": 1, "model": "gpt-t",
                            "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]})

    out = [chunk({"role": "assistant", "content": None, "tool_calls": [{
        "index": 0, "id": call_id, "type": "function",
        "function": {"name": name, "arguments": ""}}]})]
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": a}}]}) for a in args]
    out.append(chunk({}, "tool_calls"))
    out.append(event(None, {"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1,
                            "model": "gpt-t", "choices": [],
                            "usage": {"prompt_tokens": 30, "completion_tokens": 6,
                                      "total_tokens": 36}}))
    return (*out, b"data: [DONE]\n\n")


def _anthropic_tool_stream(tool_id: str, name: str, args: list[str]) -> tuple[bytes, ...]:
    return (
        event("message_start", {"type": "message_start", "message": {
            "id": "msg_t", "type": "message", "role": "assistant", "model": "claude-t",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 30, "output_tokens": 1}}}),
        event("content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "tool_use", "id": tool_id,
                                                        "name": name, "input": {}}}),
        *(event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                        "delta": {"type": "input_json_delta", "partial_json": a}})
          for a in args),
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                                "usage": {"output_tokens": 6}}),
        event("message_stop", {"type": "message_stop"}),
    )


CLAUDE_CODE_TOOLS: list[Any] = [{
    "name": "Read", "description": "Read a file",
    "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}},
                     "required": ["file_path"]}}]
CLAUDE_CODE_SYSTEM: list[Any] = [
    {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
    {"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}]


async def test_claude_code_runs_on_a_chat_completions_channel(
        stack: Sidecar, provider: FakeUpstream) -> None:
    provider.on("oa", Act(events=_chat_tool_stream("call_abc", "Read",
                                                   ['{"file_path":', '"a.py"}'])))
    client = _an(stack)
    messages: list[Any] = [{"role": "user", "content": [
        {"type": "text", "text": "read a.py", "cache_control": {"type": "ephemeral"}}]}]
    async with client.messages.stream(
            model="gpt-t", max_tokens=1000, system=CLAUDE_CODE_SYSTEM, tools=CLAUDE_CODE_TOOLS,
            messages=messages, extra_headers={"anthropic-beta": "claude-code-20250219"}) as s:
        first = await s.get_final_message()
    assert first.stop_reason == "tool_use" and first.model == "gpt-t"
    (call,) = [b for b in first.content if b.type == "tool_use"]
    assert (call.id, call.name, call.input) == ("call_abc", "Read", {"file_path": "a.py"})
    up = provider.calls("oa")[0]
    assert up.body["messages"][0]["role"] == "system"
    assert up.body["tools"][0]["function"]["name"] == "Read"
    assert b"cache_control" not in up.raw and up.header("anthropic-beta") is None
    assert first.usage.input_tokens + (first.usage.cache_read_input_tokens or 0) == 30

    messages += [{"role": "assistant", "content": [b.model_dump() for b in first.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_abc",
                                               "content": "x = 1"}]}]
    second = await client.messages.create(model="gpt-t", max_tokens=1000,
                                          system=CLAUDE_CODE_SYSTEM, tools=CLAUDE_CODE_TOOLS,
                                          messages=messages)
    assert second.content[0].type == "text"
    sent = provider.calls("oa")[1].body["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == "call_abc"
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_abc", "content": "x = 1"}


CODEX_TOOLS: list[Any] = [{
    "type": "function", "name": "shell", "description": "Run a command",
    "strict": False, "parameters": {"type": "object", "properties": {
        "command": {"type": "array", "items": {"type": "string"}}}, "required": ["command"]}}]


def _codex_input(*extra: Any) -> list[Any]:
    return [{"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "<permissions>sandboxed</permissions>"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "list the files"}]}, *extra]


async def test_codex_runs_on_an_anthropic_channel(stack: Sidecar, provider: FakeUpstream) -> None:
    provider.on("an", Act(events=_anthropic_tool_stream("toolu_02", "shell",
                                                        ['{"command":', '["ls"]}'])))
    client = _oa(stack)
    codex: dict[str, Any] = {
        "model": "claude-t", "instructions": "You are Codex.", "tools": CODEX_TOOLS,
        "tool_choice": "auto", "parallel_tool_calls": False, "store": False,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "codex-session-1"}
    events = await client.responses.create(input=_codex_input(), stream=True, **codex)
    final: Any = None
    async for ev in events:
        if ev.type == "response.completed":
            final = ev.response
    assert final is not None and final.model == "claude-t"
    (call,) = [o for o in final.output if o.type == "function_call"]
    assert (call.call_id, call.name, orjson.loads(call.arguments)) == (
        "toolu_02", "shell", {"command": ["ls"]})
    up = provider.calls("an")[0].body
    assert up["system"][0]["text"] == "You are Codex."
    assert "sandboxed" in orjson.dumps(up["system"]).decode()
    assert up["tools"][0]["name"] == "shell"
    marks = [m for m in orjson.dumps(up).decode().split('"cache_control"')[1:]]
    assert marks and all('"ttl":"1h"' in m[:60] for m in marks), "channel cache_ttl_s 3600: 1h"

    more = ({"type": "function_call", "call_id": "toolu_02", "name": "shell",
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": "toolu_02", "output": "a.py\nb.py"})
    done = await client.responses.create(input=_codex_input(*more), **codex)
    assert done.output_text.strip() == "the fix is in place"
    sent = provider.calls("an")[1].body["messages"]
    assert sent[-2]["content"][-1]["type"] == "tool_use" and sent[-2]["content"][-1]["id"] == "toolu_02"
    result = sent[-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_02"


# --- a session through translation keeps the provider's prompt cache warm -------------------

SYSTEM = "You are a careful coding assistant working in a large repository. " * 12


async def _turn(st: Sidecar, inbound: str, model: str, history: list[tuple[str, str]]) -> int:
    """One JSON turn of a conversation; the cached prompt tokens the client was told of."""
    if inbound == "openai":
        msgs: list[Any] = [{"role": "system", "content": SYSTEM}]
        msgs += [{"role": r, "content": t} for r, t in history]
        r = await _oa(st).chat.completions.create(model=model, messages=msgs)
        assert r.usage is not None and r.usage.prompt_tokens_details is not None
        return r.usage.prompt_tokens_details.cached_tokens or 0
    if inbound == "anthropic":
        m = await _an(st).messages.create(
            model=model, max_tokens=200, system=SYSTEM,
            messages=[{"role": r, "content": t} for r, t in history])  # type: ignore[misc]
        return m.usage.cache_read_input_tokens or 0
    items: list[Any] = [
        {"type": "message", "role": r,
         "content": [{"type": "input_text" if r == "user" else "output_text", "text": t}]}
        for r, t in history]
    r2 = await _oa(st).responses.create(model=model, instructions=SYSTEM, input=items,
                                        store=False)
    assert r2.usage is not None
    return r2.usage.input_tokens_details.cached_tokens


@pytest.mark.parametrize(("inbound", "model"), CROSS)
async def test_a_ten_turn_session_reports_cached_tokens_from_turn_two(
        stack: Sidecar, provider: FakeUpstream, inbound: str, model: str) -> None:
    provider.prompt_cache, provider.prompts = True, {}
    try:
        history: list[tuple[str, str]] = []
        told, traced = [], []
        for i in range(10):
            history.append(("user", f"step {i}: rename the variable in module_{i}.py"))
            told.append(await _turn(stack, inbound, model, history))
            usage = (await _trace(stack))["usage"]
            traced.append((usage["prompt_tokens"], usage["cached_tokens"]))
            history.append(("assistant", "the fix is in place"))
    finally:
        provider.prompt_cache = False
    assert told[0] == 0 and all(t > 0 for t in told[1:]), told
    assert [c for _, c in traced] == told
    for (prev_total, _), (_, cached) in itertools.pairwise(traced):
        assert cached >= prev_total - 8, "the previous turn's whole prompt is a cache hit"


# --- reasoning never reaches a model that did not make it, across a tier switch --------------

ROUTERS = """
[workspace]
share_cap = 1.0

[routers.cc]
strategy = "gated_adaptive"
mode = "price"
session_aware = true
allowed_models = ["claude-t", "gpt-t"]
weak_pool = ["claude-t"]
mid_pool = ["claude-t"]
strong_pool = ["gpt-t"]
[routers.cc.escalation]
mode = "auto"
share_cap = 1.0
warmup_requests = 0

[routers.cx]
strategy = "gated_adaptive"
mode = "price"
session_aware = true
allowed_models = ["codex-t", "claude-t"]
weak_pool = ["codex-t"]
mid_pool = ["codex-t"]
strong_pool = ["claude-t"]
[routers.cx.escalation]
mode = "auto"
share_cap = 1.0
warmup_requests = 0
"""


@pytest_asyncio.fixture(loop_scope="module")
async def tiers(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    provider.seen.clear()
    provider.rules.clear()
    cfg = loads(CONFIG.format(up=provider.base_url) + ROUTERS, source="test")
    async with server.use(cfg) as st:
        yield st


async def test_claude_thinking_is_not_sent_to_the_strong_tier_of_another_provider(
        tiers: Sidecar, provider: FakeUpstream) -> None:
    provider.on("an", Act(body=orjson.dumps({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-t",
        "content": [{"type": "thinking", "thinking": "private chain of thought",
                     "signature": "sig-made-by-claude"},
                    {"type": "text", "text": "first answer"}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5}})))
    client = _an(tiers)
    session = {"x-orca-session": "think-1"}
    history: list[Any] = [{"role": "user", "content": "look at the build"}]
    first = await client.messages.create(model="orca/cc", max_tokens=500, messages=history,
                                         extra_headers=session)
    assert first.content[0].type == "thinking" and (await _trace(tiers))["selected"]["model"] \
        == "claude-t"
    history += [{"role": "assistant", "content": [b.model_dump() for b in first.content]},
                {"role": "user", "content": "now the hard part"}]
    second = await client.messages.create(
        model="orca/cc", max_tokens=500, messages=history,
        extra_headers={**session, "x-orcarouter-tier": "strong"})
    assert second.content[0].type == "text"
    trace = await _trace(tiers)
    assert trace["selected"]["channel"] == "oa"
    assert trace["translation"]["dropped_reasoning"] == 1
    raw = provider.calls("oa")[0].raw
    assert b"sig-made-by-claude" not in raw and b"private chain of thought" not in raw


async def test_codex_reasoning_is_not_sent_to_claude_after_escalating(
        tiers: Sidecar, provider: FakeUpstream) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "encrypted_content": "enc-made-by-openai",
                 "summary": [{"type": "summary_text", "text": "weighing the options"}]}
    provider.on("rs", Act(body=orjson.dumps({
        "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "model": "codex-t", "output": [reasoning, {
            "type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "first answer", "annotations": []}]}],
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 3},
                  "total_tokens": 15}})))
    client = _oa(tiers)
    session = {"session_id": "codex-think-1"}
    items: list[Any] = [{"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": "look at the build"}]}]
    first = await client.responses.create(model="orca/cx", input=items, store=False,
                                          include=["reasoning.encrypted_content"],
                                          extra_headers=session)
    assert first.output[0].type == "reasoning"
    assert (await _trace(tiers))["selected"]["channel"] == "rs"
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": "now the hard part"}]})
    second = await client.responses.create(
        model="orca/cx", input=items, store=False, include=["reasoning.encrypted_content"],
        extra_headers={**session, "x-orcarouter-tier": "strong"})
    assert second.output_text.strip() == "the fix is in place"
    trace = await _trace(tiers)
    assert trace["selected"]["channel"] == "an"
    assert trace["translation"]["dropped_reasoning"] == 1
    raw = provider.calls("an")[0].raw
    assert b"enc-made-by-openai" not in raw and b"weighing the options" not in raw
    assert b'"thinking"' not in raw


async def test_an_unreadable_upstream_answer_is_a_502_in_the_inbound_shape(
        stack: Sidecar, provider: FakeUpstream) -> None:
    provider.on("an", Act(body=b"<html>proxy page</html>"))
    with pytest.raises(openai.APIStatusError) as info:
        await _oa(stack).chat.completions.create(
            model="claude-t", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 502
    assert orjson.loads(info.value.response.content)["error"]["message"]
    trace = await _trace(stack)
    assert trace["status"] == 502 and trace["cost_usd"] in (0, 0.0, None)
