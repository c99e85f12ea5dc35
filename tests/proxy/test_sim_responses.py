"""The sim channel answering the OpenAI Responses API (SPEC §13.1): shapes, events, cache,
tools, truncation and faults, read by orca's own tap and by the official openai SDK."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import orjson
import pytest
from openai.types.responses import Response

from orca_cli.clock import FakeClock
from orca_cli.config.schema import ChannelConfig, FaultConfig
from orca_cli.proxy.sim import SimTransport
from orca_cli.proxy.transport import Timeouts, UpstreamRequest, auth_headers
from orca_cli.wire.sse import SSEDecoder
from orca_cli.wire.usage import ResponseTap

PATH = "/v1/responses"
SHELL = {
    "type": "function",
    "name": "shell",
    "description": "run a command",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "array"}, "workdir": {"type": "string"}},
        "required": ["command", "workdir"],
    },
}
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "format": {"type": "text"}}


def sim(**kw: Any) -> tuple[SimTransport, FakeClock]:
    """A Responses-format sim channel."""
    clock = FakeClock()
    kw.setdefault("api", "responses")
    return SimTransport(ChannelConfig(name="sim", type="sim", **kw), clock), clock


def body(text: str = "hello", *, history: list[Any] | None = None, stream: bool = False,
         tools: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    items = [*(history or []),
             {"type": "message", "role": "user",
              "content": [{"type": "input_text", "text": text}]}]
    b: dict[str, Any] = {"model": "sim-small", "instructions": "You are Codex.",
                         "input": items, "stream": stream, "store": False, **extra}
    if tools is not None:
        b["tools"] = tools
    return b


async def call(t: SimTransport, clock: FakeClock, b: dict[str, Any],
               key: str = "sk-a") -> tuple[int, bytes, ResponseTap]:
    stream = bool(b.get("stream"))
    req = UpstreamRequest("POST", "sim://local" + PATH, auth_headers("responses", key),
                          orjson.dumps(b), "sim", 0, stream)
    resp = await t.send(req, Timeouts(5, 5, 5, clock.monotonic() + 60))
    tap = ResponseTap("responses", stream, b.get("max_output_tokens"))
    if stream:
        raw = b""
        async for chunk in resp.chunks():
            raw += chunk
            tap.feed(chunk)
    else:
        raw = await resp.read()
        tap.feed_body(raw)
    await resp.aclose()
    return resp.status, raw, tap


def events(raw: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    return [(e.event, orjson.loads(e.data)) for e in SSEDecoder().feed(raw)]


async def test_json_answer_is_a_response_object() -> None:
    t, clock = sim()
    status, raw, tap = await call(t, clock, body())
    assert status == 200
    resp = Response.model_validate(orjson.loads(raw))
    assert resp.status == "completed" and resp.model == "sim-small"
    assert resp.output_text.startswith("[sim]")
    assert resp.id.startswith("resp_sim_") and resp.instructions == "You are Codex."
    assert resp.usage is not None and resp.usage.input_tokens > 0
    assert tap.billed_success and tap.signals() == ()
    assert t.calls[-1].api == "responses" and t.calls[-1].path == PATH


async def test_stream_has_the_real_event_sequence() -> None:
    t, clock = sim()
    _, raw, tap = await call(t, clock, body(stream=True))
    evs = events(raw)
    names = [n for n, _ in evs]
    assert names[:5] == ["response.created", "response.in_progress",
                         "response.output_item.added", "response.content_part.added",
                         "response.output_text.delta"]
    assert names[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", "response.completed"]
    assert all(d["type"] == n for n, d in evs)
    assert [d["sequence_number"] for _, d in evs] == list(range(len(evs)))
    text = "".join(d["delta"] for n, d in evs if n == "response.output_text.delta")
    assert text.startswith("[sim]") and evs[-1][1]["response"]["output"][0]["content"][0][
        "text"] == text
    assert tap.billed_success and tap.usage is not None


async def test_second_turn_of_the_same_prefix_reads_the_cache() -> None:
    t, clock = sim()
    first = body("fix the bug")
    _, _, tap1 = await call(t, clock, first)
    assert tap1.usage is not None and tap1.usage.cached_tokens == 0
    answer = {"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "done"}]}
    second = body("now test it", history=[*first["input"], answer])
    _, _, tap2 = await call(t, clock, second)
    assert tap2.usage is not None
    assert 0 < tap2.usage.cached_tokens < tap2.usage.prompt_tokens
    _, _, other_key = await call(t, clock, second, key="sk-b")
    assert other_key.usage is not None and other_key.usage.cached_tokens == 0


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_marker_calls_the_first_function_tool(stream: bool) -> None:
    t, clock = sim()
    b = body("run it [tool]", stream=stream, tools=[{"type": "web_search"}, SHELL])
    _, raw, tap = await call(t, clock, b)
    assert tap.has_tool_call and tap.signals() == ()
    (args,) = tap.tool_arguments().values()
    assert orjson.loads(args) == {"command": [], "workdir": orjson.loads(args)["workdir"]}
    if stream:
        names = [n for n, _ in events(raw)]
        assert "response.function_call_arguments.delta" in names
        assert "response.function_call_arguments.done" in names
    else:
        item = orjson.loads(raw)["output"][0]
        assert item["type"] == "function_call" and item["name"] == "shell"
        assert item["call_id"].startswith("call_sim_")


async def test_custom_tool_gets_a_freeform_call() -> None:
    t, clock = sim()
    _, raw, tap = await call(t, clock, body("[tool] patch", stream=True, tools=[APPLY_PATCH]))
    evs = events(raw)
    done = next(d for n, d in evs if n == "response.output_item.done")["item"]
    assert done["type"] == "custom_tool_call" and done["name"] == "apply_patch"
    assert done["input"].startswith("*** Begin Patch")
    assert tap.has_tool_call and tap.signals() == ()


async def test_tool_output_turn_answers_text() -> None:
    t, clock = sim()
    history = [{"type": "function_call", "name": "shell", "call_id": "c", "arguments": "{}"},
               {"type": "function_call_output", "call_id": "c", "output": "ok [tool]"}]
    b = body("x", tools=[SHELL])
    b["input"] = history
    _, _, tap = await call(t, clock, b)
    assert not tap.has_tool_call and tap.has_text


@pytest.mark.parametrize("stream", [False, True])
async def test_max_output_tokens_truncates_as_incomplete(stream: bool) -> None:
    t, clock = sim()
    _, raw, tap = await call(t, clock, body(stream=stream, max_output_tokens=3))
    doc = events(raw)[-1][1]["response"] if stream else orjson.loads(raw)
    assert doc["status"] == "incomplete"
    assert doc["incomplete_details"] == {"reason": "max_output_tokens"}
    assert tap.completed and tap.finish_reason == "max_output_tokens"


async def test_status_fault_answers_the_responses_error_shape() -> None:
    t, clock = sim(faults=FaultConfig(status=429, rate=1.0))
    status, raw, tap = await call(t, clock, body())
    assert status == 429
    assert orjson.loads(raw)["error"]["type"] == "rate_limit_error"
    assert tap.error_finish


@pytest.mark.parametrize("stream", [False, True])
async def test_error_finish_fault_is_a_failed_response(stream: bool) -> None:
    t, clock = sim(faults=FaultConfig(finish_reason="error"))
    _, raw, tap = await call(t, clock, body(stream=stream))
    if stream:
        assert events(raw)[-1][0] == "response.failed"
    else:
        assert orjson.loads(raw)["status"] == "failed"
    assert tap.error_finish and not tap.billed_success


def sdk_client(t: SimTransport, clock: FakeClock) -> httpx.AsyncClient:
    """An httpx client answered by the sim, no sockets."""

    async def handler(request: httpx.Request) -> httpx.Response:
        raw = await request.aread()
        req = UpstreamRequest("POST", str(request.url), tuple(request.headers.items()), raw,
                              "sim", 0, b'"stream":true' in raw)
        resp = await t.send(req, Timeouts(5, 5, 5, clock.monotonic() + 60))
        return httpx.Response(resp.status, headers=list(resp.headers),
                              content=await resp.read())

    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def test_the_official_sdk_reads_sim_responses() -> None:
    t, clock = sim()
    async with sdk_client(t, clock) as http:
        client = openai.AsyncOpenAI(api_key="sk-sdk", base_url="http://sim.test/v1",
                                    http_client=http)
        resp = await client.responses.create(model="sim-small", input="say hi",
                                             instructions="be brief")
        assert resp.status == "completed" and resp.output_text.startswith("[sim]")
        tool_resp = await client.responses.create(
            model="sim-small", input="go [tool]", tools=[SHELL],  # type: ignore[list-item]
        )
        call_item = tool_resp.output[0]
        assert call_item.type == "function_call" and call_item.name == "shell"
        async with client.responses.stream(
            model="sim-small", input="go [tool]", tools=[SHELL],  # type: ignore[list-item]
        ) as stream:
            kinds = [event.type async for event in stream]
            final = await stream.get_final_response()
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert final.output[0].type == "function_call"
        assert set(orjson.loads(final.output[0].arguments)) == {"command", "workdir"}
        assert final.usage is not None and final.usage.input_tokens > 0
