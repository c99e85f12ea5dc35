"""The `sim` channel (SPEC §2): both wire formats, prompt cache, tool calls, faults."""

from __future__ import annotations

import hashlib
import importlib
from typing import Any

import anthropic
import httpx
import openai
import orjson
import pydantic
import pytest
from anthropic.types import Message, MessageTokensCount, RawMessageStreamEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from orca_cli.clock import FakeClock
from orca_cli.config.schema import ChannelConfig, FaultConfig
from orca_cli.proxy.sim import SimFormatError, SimTransport
from orca_cli.proxy.transport import (
    Timeouts,
    UpstreamRequest,
    UpstreamStreamError,
    UpstreamTimeout,
    auth_headers,
)
from orca_cli.types import Api
from orca_cli.wire.sse import SSEDecoder
from orca_cli.wire.usage import ResponseTap

OPENAI = "/v1/chat/completions"
ANTHROPIC = "/v1/messages"
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["path", "n"],
            },
        },
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "read_file",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    }
]


EVERY_FORMAT: tuple[Api, ...] = ("openai", "anthropic", "responses")


def sim(**kw: Any) -> tuple[SimTransport, FakeClock]:
    """A sim channel speaking every format (these tests are about how it answers each)."""
    clock = FakeClock()
    kw.setdefault("apis", EVERY_FORMAT)
    kw.setdefault("api", kw["apis"][0])
    return SimTransport(ChannelConfig(name="sim", type="sim", **kw), clock), clock


def far(clock: FakeClock, first_byte: float = 5) -> Timeouts:
    return Timeouts(5, first_byte, 5, clock.monotonic() + 60)


def body(
    api: str,
    text: str = "hello",
    *,
    stream: bool = False,
    history: list[Any] | None = None,
    tools: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    messages = [*(history or []), {"role": "user", "content": text}]
    b: dict[str, Any] = {"model": "sim-small", "messages": messages, "stream": stream, **extra}
    if api == "anthropic":
        b.setdefault("system", "You are a coding agent.")
        b.setdefault("max_tokens", 4096)
        if tools:
            b["tools"] = ANTHROPIC_TOOLS
    else:
        b["messages"] = [{"role": "system", "content": "You are a coding agent."}, *messages]
        if stream:
            b["stream_options"] = {"include_usage": True}
        if tools:
            b["tools"] = OPENAI_TOOLS
    return b


async def call(
    t: SimTransport,
    clock: FakeClock,
    api: str,
    b: dict[str, Any],
    key: str = "sk-a",
) -> tuple[int, bytes, ResponseTap, dict[str, str]]:
    path = ANTHROPIC if api == "anthropic" else OPENAI
    req = UpstreamRequest(
        "POST",
        "sim://local" + path,
        auth_headers(api, key),  # type: ignore[arg-type]
        orjson.dumps(b),
        "sim",
        0,
        bool(b.get("stream")),
    )
    resp = await t.send(req, far(clock))
    tap = ResponseTap(api, bool(b.get("stream")), b.get("max_tokens"))  # type: ignore[arg-type]
    if b.get("stream"):
        raw = b""
        async for chunk in resp.chunks():
            raw += chunk
            tap.feed(chunk)
    else:
        raw = await resp.read()
        tap.feed_body(raw)
    await resp.aclose()
    return resp.status, raw, tap, dict(resp.headers)


def sse_json(raw: bytes) -> list[tuple[str | None, Any]]:
    return [
        (e.event, e.data if e.data == "[DONE]" else orjson.loads(e.data))
        for e in SSEDecoder().feed(raw)
    ]


async def test_openai_json_answer_has_the_real_shape_and_is_labelled() -> None:
    t, clock = sim()
    status, raw, tap, headers = await call(t, clock, "openai", body("openai"))
    assert status == 200 and headers["x-orca-sim"] == "1"
    msg = ChatCompletion.model_validate(orjson.loads(raw))
    assert msg.model == "sim-small"
    assert msg.choices[0].message.content is not None and msg.choices[0].message.content.startswith(
        "[sim]"
    )
    assert msg.choices[0].finish_reason == "stop"
    assert tap.completed and tap.signals() == ()
    assert msg.usage is not None and msg.usage.prompt_tokens > 0


async def test_openai_stream_has_the_real_shape_with_usage_chunk_and_done() -> None:
    t, clock = sim()
    _, raw, tap, headers = await call(t, clock, "openai", body("openai", stream=True))
    assert headers["content-type"].startswith("text/event-stream")
    events = sse_json(raw)
    assert events[-1] == (None, "[DONE]")
    chunks = [ChatCompletionChunk.model_validate(d) for _, d in events[:-1]]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None  # include_usage chunk
    assert chunks[-2].choices[0].finish_reason == "stop"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("[sim]")
    assert tap.completed and tap.usage is not None and tap.usage.output_tokens > 0


async def test_openai_stream_without_include_usage_sends_no_usage_chunk() -> None:
    t, clock = sim()
    b = body("openai", stream=True)
    del b["stream_options"]
    _, raw, tap, _ = await call(t, clock, "openai", b)
    assert b'"usage"' not in raw and tap.usage is None and tap.completed


async def test_anthropic_json_and_stream_have_the_real_shapes() -> None:
    t, clock = sim()
    _, raw, tap, headers = await call(t, clock, "anthropic", body("anthropic"))
    msg = Message.model_validate(orjson.loads(raw))
    assert msg.stop_reason == "end_turn" and msg.content[0].type == "text"
    assert "request-id" in headers and tap.completed

    _, raw, tap, _ = await call(t, clock, "anthropic", body("anthropic", "again", stream=True))
    adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(RawMessageStreamEvent)
    events = sse_json(raw)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    for name, data in events:
        if name != "ping":  # the SDK handles ping outside its event union
            assert adapter.validate_python(data).type == name
    start = events[0][1]["message"]["usage"]
    assert {"input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} <= set(start)
    assert tap.completed and tap.finish_reason == "end_turn"


async def test_same_body_gives_the_same_bytes() -> None:
    t1, c1 = sim()
    t2, c2 = sim()
    b = body("openai", "deterministic?", stream=True)
    assert (await call(t1, c1, "openai", b))[1] == (await call(t2, c2, "openai", b))[1]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_second_turn_with_the_same_key_reads_the_cache(api: str) -> None:
    t, clock = sim()
    first = body(api, "fix the failing test in parser.py " * 20)
    _, _raw1, tap1, _ = await call(t, clock, api, first)
    assert tap1.usage is not None and tap1.usage.cached_tokens == 0
    history = [*first["messages"][-1:], {"role": "assistant", "content": "done"}]
    if api == "openai":
        history = [*first["messages"][1:], {"role": "assistant", "content": "done"}]
    second = body(api, "now run it", history=history)
    _, _, tap2, _ = await call(t, clock, api, second)
    assert tap2.usage is not None
    assert 0 < tap2.usage.cached_tokens < tap2.usage.prompt_tokens
    assert tap2.usage.cached_tokens >= tap1.usage.prompt_tokens - 2

    _, _, other, _ = await call(t, clock, api, second, key="sk-other")  # another key: cold
    assert other.usage is not None and other.usage.cached_tokens == 0


async def test_cache_expires_after_its_ttl_on_the_clock() -> None:
    t, clock = sim(cache_ttl_s=300)
    b = body("openai", "long prompt " * 50)
    await call(t, clock, "openai", b)
    clock.advance(299)
    assert (await call(t, clock, "openai", b))[2].usage.cached_tokens > 0  # type: ignore[union-attr]
    clock.advance(301)  # the read at 299 s refreshed it; 301 s later it is gone
    assert (await call(t, clock, "openai", b))[2].usage.cached_tokens == 0  # type: ignore[union-attr]


async def test_anthropic_cache_writes_are_reported_only_with_cache_control() -> None:
    t, clock = sim()
    plain = body("anthropic", "a " * 400)
    u = (await call(t, clock, "anthropic", plain))[2].usage
    assert u is not None and u.cache_write_tokens == 0
    marked = body(
        "anthropic",
        "b " * 400,
        system=[{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
    )
    _, raw, tap, _ = await call(t, clock, "anthropic", marked)
    usage = orjson.loads(raw)["usage"]
    assert usage["cache_creation_input_tokens"] > 0 and usage["cache_read_input_tokens"] == 0
    assert tap.usage is not None and tap.usage.prompt_tokens == (
        usage["input_tokens"]
        + usage["cache_creation_input_tokens"]
        + usage["cache_read_input_tokens"]
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_marker_yields_a_tool_call_with_valid_arguments_openai(stream: bool) -> None:
    t, clock = sim()
    _, raw, tap, _ = await call(
        t, clock, "openai", body("openai", "look [tool]", stream=stream, tools=True)
    )
    assert tap.has_tool_call and tap.finish_reason == "tool_calls" and not tap.malformed_tool_json
    args = orjson.loads(tap.tool_arguments()[0])
    assert set(args) == {"path", "n"} and isinstance(args["n"], int)
    if not stream:
        msg = ChatCompletion.model_validate(orjson.loads(raw))
        assert msg.choices[0].message.tool_calls is not None
        assert msg.choices[0].message.tool_calls[0].function.name == "read_file"


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_marker_yields_a_tool_use_block_anthropic(stream: bool) -> None:
    t, clock = sim()
    _, raw, tap, _ = await call(
        t, clock, "anthropic", body("anthropic", "[tool] please", stream=stream, tools=True)
    )
    assert tap.has_tool_call and tap.finish_reason == "tool_use" and not tap.malformed_tool_json
    if stream:
        assert b'"input_json_delta"' in raw
        assert set(orjson.loads(tap.tool_arguments()[0])) == {"path"}
    else:
        assert Message.model_validate(orjson.loads(raw)).content[0].type == "tool_use"


async def test_no_marker_or_no_tools_means_a_text_answer() -> None:
    t, clock = sim()
    assert not (await call(t, clock, "openai", body("openai", "plain", tools=True)))[
        2
    ].has_tool_call
    assert not (await call(t, clock, "openai", body("openai", "[tool] but no tools")))[
        2
    ].has_tool_call


async def test_small_max_tokens_truncates_with_length() -> None:
    t, clock = sim()
    tap = (await call(t, clock, "anthropic", body("anthropic", max_tokens=3)))[2]
    assert (
        tap.finish_reason == "max_tokens" and not tap.truncated
    )  # max_tokens < 1024 never strikes


async def test_count_tokens_answers_an_estimate() -> None:
    t, clock = sim()
    b = {"model": "sim-small", "messages": [{"role": "user", "content": "x" * 400}]}
    req = UpstreamRequest(
        "POST", "sim://local/v1/messages/count_tokens", (), orjson.dumps(b), "sim", 0, False
    )
    resp = await t.send(req, far(clock))
    assert MessageTokensCount.model_validate_json(await resp.read()).input_tokens >= 100


async def test_unknown_path_and_bad_json_answer_provider_shaped_errors() -> None:
    t, clock = sim()
    resp = await t.send(
        UpstreamRequest("POST", "sim://local/v1/nope", (), b"{}", "sim", 0, False), far(clock)
    )
    assert resp.status == 404 and "error" in orjson.loads(await resp.read())
    resp = await t.send(
        UpstreamRequest("POST", "sim://local/v1/messages", (), b"{", "sim", 0, False), far(clock)
    )
    assert resp.status == 400 and orjson.loads(await resp.read())["type"] == "error"


@pytest.mark.parametrize("apis", [("openai",), ("anthropic",), ("responses", "openai")])
async def test_a_format_the_channel_does_not_speak_is_a_loud_error(apis: tuple[Api, ...]) -> None:
    """SPEC §13.2: a sim channel speaks exactly its `api`. A request of another format means
    orca failed to translate it: raised, never answered (no fallback can hide it)."""
    t, clock = sim(api=apis[0], apis=apis)
    for path, fmt in (("/v1/chat/completions", "openai"), ("/v1/messages", "anthropic"),
                      ("/v1/responses", "responses")):
        req = UpstreamRequest("POST", f"sim://local{path}", (), b'{"model": "m"}', "sim", 0,
                              False)
        if fmt in apis:
            assert (await t.send(req, far(clock))).status == 200
            continue
        with pytest.raises(SimFormatError, match=f"sent a {fmt} request"):
            await t.send(req, far(clock))
    assert len(t.calls) == len(apis)


async def test_status_fault_hits_about_its_rate_and_is_reproducible() -> None:
    async def statuses() -> list[int]:
        t, clock = sim(faults=FaultConfig(status=503, rate=0.3))
        out = []
        for i in range(300):
            out.append((await call(t, clock, "openai", body("openai", f"req {i}")))[0])
        return out

    first = await statuses()
    assert 50 <= first.count(503) <= 130 and set(first) == {200, 503}
    assert first == await statuses()


async def test_fault_rate_one_always_fails_and_429_carries_retry_after() -> None:
    t, clock = sim(faults=FaultConfig(status=429, rate=1.0))
    for i in range(5):
        status, raw, _, headers = await call(t, clock, "anthropic", body("anthropic", f"{i}"))
        assert status == 429 and headers["retry-after"] == "1"
        assert orjson.loads(raw)["error"]["type"] == "rate_limit_error"


async def test_a_retry_of_the_same_body_draws_afresh() -> None:
    t, clock = sim(faults=FaultConfig(status=503, rate=0.5))
    b = body("openai", "same body")
    seen = {(await call(t, clock, "openai", b))[0] for _ in range(20)}
    assert seen == {200, 503}


async def test_stall_longer_than_first_byte_timeout_times_out() -> None:
    t, clock = sim(faults=FaultConfig(stall_s=30))
    req = UpstreamRequest(
        "POST", "sim://local" + OPENAI, (), orjson.dumps(body("openai")), "sim", 0, False
    )
    with pytest.raises(UpstreamTimeout) as info:
        await t.send(req, far(clock, first_byte=0.05))
    assert info.value.phase == "first_byte" and info.value.retryable


async def test_latency_within_the_bound_just_delays() -> None:
    t, clock = sim(latency_ms=20)
    assert (await call(t, clock, "openai", body("openai")))[0] == 200


async def test_after_bytes_breaks_the_stream_mid_body() -> None:
    t, clock = sim(faults=FaultConfig(after_bytes=300))
    b = body("anthropic", stream=True)
    req = UpstreamRequest("POST", "sim://local" + ANTHROPIC, (), orjson.dumps(b), "sim", 0, True)
    resp = await t.send(req, far(clock))
    got = b""
    with pytest.raises(UpstreamStreamError):
        async for chunk in resp.chunks():
            got += chunk
    await resp.aclose()
    assert len(got) == 300 and t.cancelled == []


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_error_finish_reason_fault(api: str) -> None:
    t, clock = sim(faults=FaultConfig(finish_reason="error"))
    status, raw, tap, _ = await call(t, clock, api, body(api, stream=True))
    assert status == 200 and tap.error_finish and not tap.billed_success
    if api == "anthropic":
        assert b"event: error" in raw and b"message_stop" not in raw


async def test_observations_record_calls_and_cancelled_streams() -> None:
    t, clock = sim()
    await call(t, clock, "openai", body("openai"), key="sk-a")
    req = UpstreamRequest(
        "POST",
        "sim://local" + OPENAI,
        auth_headers("openai", "sk-b"),
        orjson.dumps(body("openai", stream=True)),
        "sim",
        0,
        True,
    )
    resp = await t.send(req, far(clock))
    async for _ in resp.chunks():
        break
    await resp.aclose()
    await resp.aclose()
    fps = [c.key_fp for c in t.calls]
    assert len(set(fps)) == 2 and [c.stream for c in t.calls] == [False, True]
    assert t.cancelled == [t.calls[1]]


def sdk_client(t: SimTransport, clock: FakeClock, lib: Any = httpx) -> Any:
    """An httpx (or httpx2, for the anthropic SDK) client answered by the sim, no sockets."""

    async def handler(request: Any) -> Any:
        body = await request.aread()
        req = UpstreamRequest(
            "POST",
            str(request.url),
            tuple(request.headers.items()),
            body,
            "sim",
            0,
            b'"stream":true' in body,
        )
        resp = await t.send(req, far(clock))
        return lib.Response(resp.status, headers=list(resp.headers), content=await resp.read())

    return lib.AsyncClient(transport=lib.MockTransport(handler))


async def test_the_official_openai_sdk_reads_sim_streams_and_tool_calls() -> None:
    t, clock = sim()
    async with sdk_client(t, clock) as http:
        client = openai.AsyncOpenAI(
            api_key="sk-sdk", base_url="http://sim.test/v1", http_client=http
        )
        stream = await client.chat.completions.create(
            model="sim-small",
            messages=[{"role": "user", "content": "go [tool]"}],
            tools=OPENAI_TOOLS,
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
        )
        args = ""
        usage = None
        async for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                for call_delta in choice.delta.tool_calls or []:
                    args += call_delta.function.arguments or "" if call_delta.function else ""
        assert set(orjson.loads(args)) == {"path", "n"}
        assert usage is not None and usage.prompt_tokens > 0


async def test_the_official_anthropic_sdk_accumulates_sim_streams() -> None:
    t, clock = sim()
    # anthropic >= 2 ships on httpx2 (same API, another package); older ones on httpx.
    major = int(anthropic.__version__.split(".")[0])
    lib = importlib.import_module("httpx2") if major >= 2 else httpx
    async with sdk_client(t, clock, lib) as http:
        client = anthropic.AsyncAnthropic(
            api_key="sk-sdk", base_url="http://sim.test", http_client=http
        )
        async with client.messages.stream(
            model="sim-small",
            max_tokens=1024,
            tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
            messages=[{"role": "user", "content": "[tool] read it"}],
        ) as stream:
            final = await stream.get_final_message()
        assert final.stop_reason == "tool_use"
        block = final.content[0]
        assert block.type == "tool_use" and set(block.input) == {"path"}  # type: ignore[arg-type]
        assert t.calls[-1].key_fp == hashlib.sha256(b"sk-sdk").hexdigest()[:8]


@pytest.mark.parametrize(("api", "message", "said"), [
    ("openai", {"role": "wizard", "content": "hi"}, "messages[0].role must be one of"),
    ("openai", {"role": "user", "content": 5}, "messages[0].content must be a string or an array"),
    ("anthropic", {"role": "tool", "content": "hi"},
     "role must be one of assistant, system, user"),
    ("anthropic", {"role": "user", "content": {"text": "hi"}}, "content must be a string"),
])
async def test_a_message_a_provider_would_refuse_is_a_400_in_its_format(
        api: str, message: dict[str, Any], said: str) -> None:
    t, clock = sim()
    b = body(api)
    b["messages"] = [message]
    status, raw, _, _ = await call(t, clock, api, b)
    doc = orjson.loads(raw)
    assert status == 400
    err = doc["error"]
    assert said in err["message"] and (doc.get("type") == "error") == (api == "anthropic")
    assert [c.status for c in t.calls] == [400]


async def test_a_system_message_inside_messages_is_taken_as_claude_code_sends_it() -> None:
    """Claude Code's main turn carries a `role: "system"` message inside `messages` after the
    first user message (tests/agents/CAPTURES.md); Anthropic takes it, so the sim does."""
    t, clock = sim()
    b = body("anthropic")
    b["messages"] = [{"role": "user", "content": "fix the build"},
                     {"role": "system", "content": "# Environment You have been invoked in the"}]
    status, _raw, _, _ = await call(t, clock, "anthropic", b)
    assert status == 200
