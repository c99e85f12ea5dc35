"""The same-format (raw-bytes) path after a turn that went translated, through the real server
(SPEC §13.2 rule 4): orca's own reasoning tag (`orca1.…`) that a translated answer gave the
client never reaches the provider a later turn is sent to untranslated, and the drop is
counted in the trace. And the model's `max_output_tokens` bounds a same-format request as it
bounds a translated one, by a patch of the client's bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, Sidecar
from orca_cli.testing.upstream import Seen
from tests.e2e.translation.kit import CONFIG, an, explained, oa, trace_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

# The base tier of each router is on a channel of another format than its agent's, the
# strong tier on one of the agent's own: turn 1 is translated, turn 2 goes as raw bytes.
NATIVE = """
[models.claude-t]
max_output_tokens = 4096

[workspace]
share_cap = 1.0

[routers.cc]
strategy = "gated_adaptive"
mode = "price"
session_aware = true
allowed_models = ["gpt-t", "claude-t"]
weak_pool = ["gpt-t"]
mid_pool = ["gpt-t"]
strong_pool = ["claude-t"]
[routers.cc.escalation]
mode = "auto"
share_cap = 1.0
warmup_requests = 0

[routers.cx]
strategy = "gated_adaptive"
mode = "price"
session_aware = true
allowed_models = ["claude-t", "codex-t"]
weak_pool = ["claude-t"]
mid_pool = ["claude-t"]
strong_pool = ["codex-t"]
[routers.cx.escalation]
mode = "auto"
share_cap = 1.0
warmup_requests = 0
"""


@pytest_asyncio.fixture(loop_scope="module")
async def native(server: Sidecar, provider: FakeUpstream) -> AsyncIterator[Sidecar]:
    provider.seen.clear()
    provider.rules.clear()
    provider.handler = None
    cfg = loads(CONFIG.format(up=provider.base_url) + NATIVE, source="test")
    async with server.use(cfg) as st:
        yield st


async def test_gpt_reasoning_given_to_claude_code_does_not_reach_claude(
        native: Sidecar, provider: FakeUpstream) -> None:
    provider.on("oa", Act(body=orjson.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-t",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "first answer",
            "reasoning_content": "gpt chain of thought"}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})))
    client = an(native)
    session = {"x-orca-session": "native-cc-1"}
    history: list[Any] = [{"role": "user", "content": "look at the build"}]
    first = await client.messages.create(model="orca/cc", max_tokens=128000,
                                         messages=history, extra_headers=session)
    assert (await trace_of(native))["selected"]["channel"] == "oa"
    thinking = first.content[0]
    assert thinking.type == "thinking" and thinking.signature.startswith("orca1.")
    history += [{"role": "assistant",
                 "content": [b.model_dump(exclude_none=True) for b in first.content]},
                {"role": "user", "content": "now the hard part"}]
    async with client.messages.stream(
            model="orca/cc", max_tokens=128000, messages=history,
            extra_headers={**session, "x-orcarouter-tier": "strong"}) as stream:
        second = await stream.get_final_message()
    assert second.content[0].type == "text"
    (seen,) = provider.calls("an")
    assert b"orca1." not in seen.raw and b"gpt chain of thought" not in seen.raw
    trace = await trace_of(native)
    assert trace["selected"]["channel"] == "an"
    assert trace["translation"]["dropped_reasoning"] == 1
    assert [m["role"] for m in seen.body["messages"]] == ["user", "assistant", "user"]
    assert seen.body["messages"][1]["content"] == [{"type": "text", "text": "first answer"}]
    assert seen.body["max_tokens"] == 4096, "claude-t's max_output_tokens"


async def test_claude_reasoning_given_to_codex_does_not_reach_an_openai_model(
        native: Sidecar, provider: FakeUpstream) -> None:
    provider.on("an", Act(body=orjson.dumps({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-t",
        "content": [{"type": "thinking", "thinking": "claude chain of thought",
                     "signature": "sig-made-by-claude"},
                    {"type": "text", "text": "first answer"}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5}})))
    client = oa(native)
    session = {"session_id": "native-codex-1"}
    items: list[Any] = [{"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": "look at the build"}]}]
    first = await client.responses.create(model="orca/cx", input=items, store=False,
                                          include=["reasoning.encrypted_content"],
                                          extra_headers=session)
    assert (await trace_of(native))["selected"]["channel"] == "an"
    reasoning = first.output[0]
    assert reasoning.type == "reasoning"
    assert (reasoning.encrypted_content or "").startswith("orca1.")
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": "now the hard part"}]})
    second = await client.responses.create(
        model="orca/cx", input=items, store=False, include=["reasoning.encrypted_content"],
        extra_headers={**session, "x-orcarouter-tier": "strong"})
    assert second.output_text.strip() == "the fix is in place"
    (seen,) = provider.calls("rs")
    assert b"orca1." not in seen.raw and b"sig-made-by-claude" not in seen.raw
    trace = await trace_of(native)
    assert trace["selected"]["channel"] == "rs"
    assert trace["translation"]["dropped_reasoning"] == 1
    assert [i["type"] for i in seen.body["input"]] == ["message", "message", "message"]


async def test_a_body_without_a_tag_goes_as_its_own_bytes(
        native: Sidecar, provider: FakeUpstream) -> None:
    """The fast path: only `model` swapped, no translation block in the trace."""
    raw = orjson.dumps({"model": "claude-t", "max_tokens": 4000,
                        "messages": [{"role": "user", "content": "what is orca1?"}]})
    r = await native.http.post("/v1/messages", content=raw,
                               headers={"x-api-key": "agent", "content-type":
                                        "application/json"})
    assert r.status_code == 200, r.text
    (seen,) = provider.calls("an")
    assert seen.raw == raw
    await native.settled(r.headers["x-orca-request-id"])
    trace = await native.rt.gate.store.get_trace(r.headers["x-orca-request-id"])
    assert trace is not None and "translation" not in trace


def _anthropic_rule(seen: Seen) -> Act:
    """The Messages API's rule for extended thinking in a tool loop: the last assistant turn
    must open with a thinking block, else 400 (its own words)."""
    thinking = seen.body.get("thinking") or {}
    last = [m for m in seen.body["messages"] if m["role"] == "assistant"][-1]["content"]
    if (thinking.get("type") == "enabled" and any(b["type"] == "tool_use" for b in last)
            and last[0]["type"] not in ("thinking", "redacted_thinking")):
        return Act(status=400, body=orjson.dumps({"type": "error", "error": {
            "type": "invalid_request_error", "message": (
                "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                "found `tool_use`. When `thinking` is enabled, a final `assistant` message "
                "must start with a thinking block")}}))
    return Act()


async def test_an_escalation_inside_a_tool_loop_takes_extended_thinking_off(
        native: Sidecar, provider: FakeUpstream) -> None:
    """A tool loop begun on gpt-t (translated: its tool call comes back with no thinking
    block) and escalated mid-loop to Claude (same format, raw bytes): with `thinking.type:
    enabled` the API refuses the loop's turn, so orca sends it without `thinking`, as the
    translating path does, and the trace says so."""
    provider.on("an", _anthropic_rule)
    client = an(native)
    session = {"x-orca-session": "native-cc-thinking"}
    thinking = {"type": "enabled", "budget_tokens": 2048}
    tools = [{"name": "Bash", "description": "run a command", "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"}}}}]
    history: list[Any] = [{"role": "user", "content": "fix the build"}]
    await client.messages.create(model="orca/cc", max_tokens=4000, messages=history,
                                 tools=tools, thinking=thinking, extra_headers=session)
    assert (await trace_of(native))["selected"]["channel"] == "oa"
    history += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                           "input": {"command": "go build ./..."}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "cannot use x (variable of type int)"}]}]
    second = await client.messages.create(
        model="orca/cc", max_tokens=4000, messages=history, tools=tools, thinking=thinking,
        extra_headers={**session, "x-orcarouter-tier": "strong"})
    assert second.content[0].type == "text"
    (seen,) = provider.calls("an")
    assert "thinking" not in seen.body and seen.body["tools"] == tools
    trace = await trace_of(native)
    assert trace["selected"]["channel"] == "an" and trace["status"] == 200
    assert trace["translation"]["thinking_off"] is True
    text = explained(trace)
    assert "extended thinking off" in text


@pytest.mark.parametrize(("path", "body", "key", "cap"), [
    ("/v1/messages", {"model": "claude-t", "max_tokens": 128000,
                      "messages": [{"role": "user", "content": "hi"}]}, "max_tokens", 4096),
    ("/v1/chat/completions", {"model": "gpt-t", "max_completion_tokens": 32000,
                              "messages": [{"role": "user", "content": "hi"}]},
     "max_completion_tokens", 2000),
], ids=["messages", "chat"])
async def test_a_same_format_max_tokens_above_the_models_limit_is_lowered_in_place(
        native: Sidecar, provider: FakeUpstream, path: str, body: dict[str, Any], key: str,
        cap: int) -> None:
    """Claude Code always asks `max_tokens: 128000`: the model's `max_output_tokens` lowers it
    as on the translated path, by patching the client's bytes (nothing else changes)."""
    raw = orjson.dumps(body, option=orjson.OPT_INDENT_2)  # a spelling orjson would not write
    r = await native.http.post(path, content=raw,
                               headers={"x-api-key": "agent", "authorization": "Bearer agent",
                                        "content-type": "application/json"})
    assert r.status_code == 200, r.text
    (seen,) = provider.calls("an" if path == "/v1/messages" else "oa")
    assert seen.body[key] == cap
    value = str(body[key]).encode()
    assert seen.raw == raw.replace(b": " + value, b": " + str(cap).encode())
