"""Errors an agent acts on, through the real server and a channel of another format (SPEC
§13.2 rules 5 and 8, §14.3): a context overflow answered as the inbound provider answers it,
a rate limit's code kept, and Chat `logprobs` refused like `n` before any upstream call."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import orjson
import pytest

from orca_cli.testing import Act, FakeUpstream, Sidecar
from tests.e2e.translation.kit import an, oa, trace_of

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_codex_gets_context_length_exceeded_from_a_claude_overflow(
        stack: Sidecar, provider: FakeUpstream) -> None:
    provider.on("an", Act(status=400, body=orjson.dumps({"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 300000 tokens > 200000 maximum"}})))
    with pytest.raises(openai.BadRequestError) as info:
        await oa(stack).responses.create(model="claude-t", input="hi", store=False)
    err: dict[str, Any] = orjson.loads(info.value.response.content)["error"]
    assert (err["type"], err["code"]) == ("invalid_request_error", "context_length_exceeded")
    assert "prompt is too long" in err["message"]


async def test_claude_code_gets_prompt_too_long_from_an_openai_overflow(
        stack: Sidecar, provider: FakeUpstream) -> None:
    provider.on("oa", Act(status=400, body=orjson.dumps({"error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
                   "messages resulted in 300000 tokens.",
        "type": "invalid_request_error", "param": "messages",
        "code": "context_length_exceeded"}})))
    with pytest.raises(anthropic.BadRequestError) as info:
        await an(stack).messages.create(model="gpt-t", max_tokens=100,
                                        messages=[{"role": "user", "content": "hi"}])
    assert orjson.loads(info.value.response.content) == {"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 300000 tokens > 128000 maximum"}}


async def test_a_chat_client_keeps_the_rate_limit_code_of_a_responses_channel(
        stack: Sidecar, provider: FakeUpstream) -> None:
    provider.on("rs", Act(status=429, retry_after=7, body=orjson.dumps({"error": {
        "message": "slow down", "type": "requests", "param": None,
        "code": "rate_limit_exceeded"}})))
    with pytest.raises(openai.RateLimitError) as info:
        await oa(stack).chat.completions.create(
            model="codex-t", messages=[{"role": "user", "content": "hi"}])
    err = orjson.loads(info.value.response.content)["error"]
    assert (err["type"], err["code"]) == ("requests", "rate_limit_exceeded")
    assert info.value.response.headers["retry-after"] == "7"


async def test_chat_logprobs_are_refused_before_any_upstream_call(
        stack: Sidecar, provider: FakeUpstream) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        await oa(stack).chat.completions.create(
            model="claude-t", logprobs=True, top_logprobs=2,
            messages=[{"role": "user", "content": "hi"}])
    assert "uses logprobs," in str(info.value.message)
    assert provider.calls("an") == []
    trace = await trace_of(stack)
    assert [a["error"] for a in trace["attempts"]] == ["untranslatable:logprobs"]
    # `logprobs: false` asks for nothing: served.
    r = await oa(stack).chat.completions.create(
        model="claude-t", logprobs=False, messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "the fix is in place"
