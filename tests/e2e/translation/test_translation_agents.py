"""Agents across formats through the real server (SPEC §13.2): Claude Code served by a Chat
Completions channel and Codex by an Anthropic one with tool round trips, a ten-turn session
whose prompt cache stays warm through each cross direction, and reasoning that never reaches a
model of another provider after a tier switch.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, Sidecar, event
from tests.e2e.translation.kit import CONFIG, CROSS, an, explained, oa, trace_of

pytestmark = pytest.mark.asyncio(loop_scope="module")



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
    client = an(stack)
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
    client = oa(stack)
    codex: dict[str, Any] = {
        "model": "claude-t", "instructions": "You are Codex.", "tools": CODEX_TOOLS,
        "tool_choice": "auto", "parallel_tool_calls": False, "store": False,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "codex-session-1"}
    events = await client.responses.create(input=_codex_input(), stream=True, **codex)
    final: Any = None
    created: Any = None
    async for ev in events:
        if ev.type == "response.created":
            created = ev.response
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
    # Each response object repeats the request's parameters, as the Responses API does (it
    # said no tools, `tool_choice` "auto" and parallel calls before).
    for resp in (created, final, done):
        echo = resp.model_dump(mode="json", exclude_none=True)
        assert echo["instructions"] == "You are Codex."
        assert echo["tools"] == CODEX_TOOLS
        assert (echo["tool_choice"], echo["parallel_tool_calls"]) == ("auto", False)
        assert echo["reasoning"] == {"effort": "medium", "summary": "auto"}
        assert echo["prompt_cache_key"] == "codex-session-1"
        assert "store" not in resp.model_fields_set, "orca stores no response to fetch later"
    sent = provider.calls("an")[1].body["messages"]
    assert sent[-2]["content"][-1]["type"] == "tool_use" and sent[-2]["content"][-1]["id"] == "toolu_02"
    result = sent[-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_02"


CODEX_0171_TOOLS: list[Any] = [
    {"type": "function", "name": "exec_command", "description": "Run a command",
     "strict": False, "parameters": {"type": "object", "properties": {
         "cmd": {"type": "string"}}, "required": ["cmd"]}},
    {"type": "namespace", "name": "multi_agent_v1", "description": "Work with sub-agents.",
     "tools": [{"type": "function", "name": name, "description": f"{name} a sub-agent",
                "strict": False, "parameters": {"type": "object", "properties": {
                    "message": {"type": "string"}}}}
               for name in ("close_agent", "resume_agent", "send_input", "spawn_agent",
                            "wait_agent")]},
    {"type": "web_search", "external_web_access": False}]


async def test_codex_namespaced_and_hosted_tools_on_an_anthropic_channel(
        stack: Sidecar, provider: FakeUpstream) -> None:
    """Codex CLI 0.171's body (tests/agents/CAPTURES.md): no `instructions`, a `namespace`
    tool and the hosted `web_search`. The Anthropic channel serves it; the call of the flat
    name comes back to Codex as a namespaced `function_call`."""
    provider.on("an", Act(events=_anthropic_tool_stream(
        "toolu_ns", "multi_agent_v1__spawn_agent", ['{"message":', '"write the tests"}'])))
    client = oa(stack)
    sid = "019a0000-0000-7000-8000-00000000c0de"
    codex: dict[str, Any] = {
        "model": "claude-t", "tools": CODEX_0171_TOOLS, "tool_choice": "auto",
        "parallel_tool_calls": True, "store": False, "prompt_cache_key": sid,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "extra_headers": {"session-id": sid, "originator": "codex_exec"}}
    events = await client.responses.create(input=_codex_input(), stream=True, **codex)
    final: Any = None
    added: list[Any] = []
    async for ev in events:
        if ev.type == "response.output_item.added":
            added.append(ev.item)
        elif ev.type == "response.completed":
            final = ev.response
    assert final is not None
    (call,) = [o for o in final.output if o.type == "function_call"]
    assert (call.call_id, call.name, call.namespace) == (
        "toolu_ns", "spawn_agent", "multi_agent_v1")
    assert orjson.loads(call.arguments) == {"message": "write the tests"}
    assert [(i.name, i.namespace) for i in added] == [("spawn_agent", "multi_agent_v1")]
    up = provider.calls("an")[0].body
    assert [t["name"] for t in up["tools"]] == [
        "exec_command", "multi_agent_v1__close_agent", "multi_agent_v1__resume_agent",
        "multi_agent_v1__send_input", "multi_agent_v1__spawn_agent",
        "multi_agent_v1__wait_agent"]
    assert b"web_search" not in provider.calls("an")[0].raw
    trace = await trace_of(stack)
    assert trace["selected"]["channel"] == "an"
    assert trace["translation"]["dropped_tools"] == ["web_search"]
    text = explained(trace)
    assert "hosted tools dropped: web_search" in text

    more = (call.model_dump(exclude_none=True),
            {"type": "function_call_output", "call_id": "toolu_ns", "output": "agent a1 started"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed",
             "action": {"type": "search", "query": "pytest json"}},
            {"type": "message", "role": "assistant", "content": "Spawned; searched."},
            {"type": "message", "role": "user", "content": "wait for it"})
    done = await client.responses.create(input=_codex_input(*more), **codex)
    assert done.output_text.strip() == "the fix is in place"
    sent = provider.calls("an")[1].body["messages"]
    use = sent[1]["content"][-1]
    assert (use["type"], use["id"], use["name"]) == (
        "tool_use", "toolu_ns", "multi_agent_v1__spawn_agent")
    assert sent[2]["content"][0]["tool_use_id"] == "toolu_ns"
    assert [b["text"] for b in sent[3]["content"]] == [
        "[web search: pytest json]", "Spawned; searched."]
    assert sent[4]["role"] == "user"


# --- a session through translation keeps the provider's prompt cache warm -------------------

SYSTEM = "You are a careful coding assistant working in a large repository. " * 12


async def _turn(st: Sidecar, inbound: str, model: str, history: list[tuple[str, str]]) -> int:
    """One JSON turn of a conversation; the cached prompt tokens the client was told of."""
    if inbound == "openai":
        msgs: list[Any] = [{"role": "system", "content": SYSTEM}]
        msgs += [{"role": r, "content": t} for r, t in history]
        r = await oa(st).chat.completions.create(model=model, messages=msgs)
        assert r.usage is not None and r.usage.prompt_tokens_details is not None
        return r.usage.prompt_tokens_details.cached_tokens or 0
    if inbound == "anthropic":
        m = await an(st).messages.create(
            model=model, max_tokens=200, system=SYSTEM,
            messages=[{"role": r, "content": t} for r, t in history])  # type: ignore[misc]
        return m.usage.cache_read_input_tokens or 0
    items: list[Any] = [
        {"type": "message", "role": r,
         "content": [{"type": "input_text" if r == "user" else "output_text", "text": t}]}
        for r, t in history]
    r2 = await oa(st).responses.create(model=model, instructions=SYSTEM, input=items,
                                        store=False)
    assert r2.usage is not None
    return r2.usage.input_tokens_details.cached_tokens


@pytest.mark.parametrize(("inbound", "model"), CROSS)
async def test_a_ten_turn_session_reports_cached_tokens_from_turn_two(
        stack: Sidecar, provider: FakeUpstream, inbound: str, model: str) -> None:
    provider.prompt_cache, provider.prompts = True, {}
    kept = stack.rt.translations.units  # the translated messages kept for the next turn
    try:
        history: list[tuple[str, str]] = []
        told, traced, reused = [], [], []
        for i in range(10):
            history.append(("user", f"step {i}: rename the variable in module_{i}.py"))
            hits = kept.hits
            told.append(await _turn(stack, inbound, model, history))
            reused.append(kept.hits - hits)
            usage = (await trace_of(stack))["usage"]
            traced.append((usage["prompt_tokens"], usage["cached_tokens"]))
            history.append(("assistant", "the fix is in place"))
    finally:
        provider.prompt_cache = False
    assert told[0] == 0 and all(t > 0 for t in told[1:]), told
    # every message of the previous turn came from the cache (the bytes are the same: the
    # provider's prompt cache above saw the prefix unchanged)
    assert all(n >= 2 * i - 1 for i, n in enumerate(reused)), reused
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
    client = an(tiers)
    session = {"x-orca-session": "think-1"}
    history: list[Any] = [{"role": "user", "content": "look at the build"}]
    first = await client.messages.create(model="orca/cc", max_tokens=500, messages=history,
                                         extra_headers=session)
    assert first.content[0].type == "thinking" and (await trace_of(tiers))["selected"]["model"] \
        == "claude-t"
    history += [{"role": "assistant", "content": [b.model_dump() for b in first.content]},
                {"role": "user", "content": "now the hard part"}]
    second = await client.messages.create(
        model="orca/cc", max_tokens=500, messages=history,
        extra_headers={**session, "x-orcarouter-tier": "strong"})
    assert second.content[0].type == "text"
    assert (first.model, second.model) == ("orca/cc", "orca/cc"), "the requested name, both tiers"
    trace = await trace_of(tiers)
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
    client = oa(tiers)
    session = {"session_id": "codex-think-1"}
    items: list[Any] = [{"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": "look at the build"}]}]
    first = await client.responses.create(model="orca/cx", input=items, store=False,
                                          include=["reasoning.encrypted_content"],
                                          extra_headers=session)
    assert first.output[0].type == "reasoning"
    assert (await trace_of(tiers))["selected"]["channel"] == "rs"
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": "now the hard part"}]})
    second = await client.responses.create(
        model="orca/cx", input=items, store=False, include=["reasoning.encrypted_content"],
        extra_headers={**session, "x-orcarouter-tier": "strong"})
    assert second.output_text.strip() == "the fix is in place"
    trace = await trace_of(tiers)
    assert trace["selected"]["channel"] == "an"
    assert trace["translation"]["dropped_reasoning"] == 1
    raw = provider.calls("an")[0].raw
    assert b"enc-made-by-openai" not in raw and b"weighing the options" not in raw
    assert b'"thinking"' not in raw
