"""Serving a request through a channel of another wire format (SPEC §13.2), over real sockets:
the official SDKs as clients, the real server and transport, the fake provider speaking each
channel's own format. Every cross direction: JSON, stream, errors in the inbound shape with
`retry-after` kept, a mid-stream failure as the inbound format's error event, the trace's
`translation` block, and the untranslatable 400 before any upstream call.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import orjson
import pytest

from orca_cli.testing import Act, FakeUpstream, Sidecar, sse_events
from orca_cli.types import Api
from tests.e2e.translation.kit import CROSS, TARGETS, ask, explained, oa, trace_of

pytestmark = pytest.mark.asyncio(loop_scope="module")



@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("inbound", "model"), CROSS)
async def test_every_cross_direction_answers_in_the_inbound_format(
        stack: Sidecar, provider: FakeUpstream, inbound: str, model: str, stream: bool) -> None:
    prefix, fmt = TARGETS[model]
    text, name = await ask(stack, inbound, model, stream=stream)
    assert text.strip() == "the fix is in place"
    assert name == model
    (seen,) = provider.calls(prefix)
    assert seen.api == fmt and seen.body["model"] == model and seen.stream is stream
    assert seen.key == f"sk-{prefix}-0", "the channel's own credential, in its format's header"
    if fmt == "anthropic":
        assert seen.header("anthropic-version")
    trace = await trace_of(stack)
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
        await ask(stack, inbound, model, stream=False)
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
        await oa(stack).chat.completions.create(
            model="claude-t", n=2, messages=[{"role": "user", "content": "hi"}])
    message = str(info.value.message)
    assert "uses n," in message and "(channels tried: an)" in message
    assert provider.calls("an") == []
    trace = await trace_of(stack)
    assert [a["error"] for a in trace["attempts"]] == ["untranslatable:n"]
    assert trace["status"] == 400 and "translation" not in trace


async def test_a_body_its_own_codec_cannot_read_is_a_400_not_an_internal_fault(
        stack: Sidecar, provider: FakeUpstream) -> None:
    """A field of the wrong type inside a message (here its `content`) cannot be translated:
    the client gets a 400 in its own shape saying so, and nothing goes upstream."""
    r = await stack.http.post("/v1/messages", json={"model": "gpt-t", "max_tokens": 16,
                                                    "messages": [{"role": "user",
                                                                  "content": 5}]})
    assert r.status_code == 400, r.text
    doc = r.json()
    assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
    assert "not a valid anthropic request" in doc["error"]["message"]
    assert "channels tried: oa" in doc["error"]["message"]
    assert provider.calls("oa") == []
    rid = r.headers["x-orca-request-id"]
    await stack.settled(rid)
    trace = await stack.rt.gate.store.get_trace(rid)
    assert trace is not None
    assert [a["error"] for a in trace["attempts"]] == ["untranslatable:malformed_body"]


async def test_a_top_level_field_of_the_wrong_type_is_refused_before_routing(
        stack: Sidecar, provider: FakeUpstream) -> None:
    """`messages` that is no array: refused by its type before any channel is chosen."""
    r = await stack.http.post("/v1/messages", json={"model": "gpt-t", "max_tokens": 16,
                                                    "messages": 5})
    assert r.status_code == 400, r.text
    doc = r.json()
    assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
    assert doc["error"]["message"] == "`messages` must be an array, not an integer"
    assert provider.calls("oa") == []
    rid = r.headers["x-orca-request-id"]
    await stack.settled(rid)
    trace = await stack.rt.gate.store.get_trace(rid)
    assert trace is not None and trace["attempts"] == [] and trace["tier"]["decision"] is None


async def test_tool_arguments_nested_too_deeply_to_write_back_are_a_400(
        stack: Sidecar, provider: FakeUpstream) -> None:
    """A Chat tool call's `arguments` text becomes an object in the Messages format; one that
    nests deeper than a JSON writer goes (orjson: 254 levels) cannot be sent on, and the
    client gets the 400 saying why, not an internal fault; nothing goes upstream."""
    args = '{"a":' + "[" * 300 + "]" * 300 + "}"
    body = {"model": "claude-t", "max_tokens": 16, "messages": [
        {"role": "user", "content": "fix the build"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "user", "content": "go on"}],
        "tools": [{"type": "function", "function": {"name": "sh",
                                                    "parameters": {"type": "object"}}}]}
    r = await stack.http.post("/v1/chat/completions", json=body)
    assert r.status_code == 400, r.text
    message = r.json()["error"]["message"]
    assert "nests too deeply" in message and "channels tried: an" in message
    assert provider.calls("an") == []


async def test_a_channel_that_cannot_express_the_request_is_skipped_for_one_that_can(
        stack: Sidecar, provider: FakeUpstream) -> None:
    # "duo" is on `rs` (Responses, weight 2: first in price mode) and `an` (Messages); the
    # Responses API has no stop sequences, so `rs` is skipped without a call and `an` serves.
    r = await oa(stack).chat.completions.create(
        model="orca/pair", stop=["END"], messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "the fix is in place"
    assert r.model == "orca/pair", "a router target answers under the name the client sent"
    assert provider.calls("rs") == [] and provider.calls("an")[0].body["stop_sequences"] == ["END"]
    trace = await trace_of(stack)
    assert [(a["channel"], a["error"]) for a in trace["attempts"]] == [
        ("rs", "untranslatable:stop_sequences"), ("an", None)]
    assert trace["translation"]["to"] == "anthropic"


async def test_explain_shows_the_translation(stack: Sidecar, provider: FakeUpstream) -> None:
    await ask(stack, "responses", "claude-t", stream=False)
    out = explained(await trace_of(stack))
    assert "translation: responses → anthropic · cache breakpoints added" in out
    assert "reasoning dropped 0" in out


async def test_an_unreadable_upstream_answer_is_a_502_in_the_inbound_shape(
        stack: Sidecar, provider: FakeUpstream) -> None:
    provider.on("an", Act(body=b"<html>proxy page</html>"))
    with pytest.raises(openai.APIStatusError) as info:
        await oa(stack).chat.completions.create(
            model="claude-t", messages=[{"role": "user", "content": "hi"}])
    assert info.value.status_code == 502
    assert orjson.loads(info.value.response.content)["error"]["message"]
    trace = await trace_of(stack)
    assert trace["status"] == 502 and trace["cost_usd"] in (0, 0.0, None)


async def test_the_target_models_facts_shape_the_translated_request(
        stack: Sidecar, provider: FakeUpstream) -> None:
    """A reasoning target (judged by its id: gpt-5-mini) gets the effort and no sampling
    parameters; a model with `max_output_tokens` gets a larger ask lowered to it."""
    body = {"max_tokens": 32000, "temperature": 0.7, "top_p": 0.9,
            "thinking": {"type": "enabled", "budget_tokens": 4000},
            "messages": [{"role": "user", "content": "fix the test"}]}
    for model in ("gpt-5-mini", "gpt-t"):
        r = await stack.http.post("/v1/messages", json={**body, "model": model}, headers={
            "anthropic-version": "2023-06-01", "x-api-key": "agent"})
        assert r.status_code == 200, r.text
    reasoning, plain = (c.body for c in provider.calls("oa"))
    assert reasoning["model"] == "gpt-5-mini" and reasoning["max_completion_tokens"] == 32000
    assert "temperature" not in reasoning and "top_p" not in reasoning
    assert reasoning["reasoning_effort"] in ("low", "medium", "high")
    assert plain["model"] == "gpt-t" and plain["max_completion_tokens"] == 2000
    assert plain["temperature"] == 0.7 and plain["top_p"] == 0.9
    assert "reasoning_effort" not in plain
