"""A 10-turn streaming conversation with tools, in both formats, through a real sidecar:
it stays on one model, channel and key, and the upstream reports cached tokens from turn 2."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from orca_cli.proxy.sim import SimTransport
from tests.e2e.conftest import Sidecar

pytestmark = pytest.mark.asyncio

SYSTEM = "You are a careful coding agent. Use the tools to read and run code. " * 20
OA_TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                      "parameters": {"type": "object", "properties": {
                                          "path": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "run_command", "description": "Run a command",
                                      "parameters": {"type": "object", "properties": {
                                          "cmd": {"type": "string"}}}}},
]
AN_TOOLS = [{"name": t["function"]["name"], "description": t["function"]["description"],
             "input_schema": t["function"]["parameters"]} for t in OA_TOOLS]


def _sim_calls(sc: Sidecar) -> list[tuple[str, str, str]]:
    out = []
    for name, t in sc.rt.transports.items():
        if isinstance(t, SimTransport):
            out.extend((name, c.model, c.key_fp) for c in t.calls)
    return out


async def test_openai_ten_turns_with_tools_stay_on_one_key_and_hit_the_cache(
        sidecar: Sidecar) -> None:
    client = openai.AsyncOpenAI(base_url=sidecar.base + "/v1", api_key="agent", max_retries=0,
                                default_headers={"X-Orca-Session": "conv-openai"})
    sidecar.closers.append(client.close)
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    seen: set[tuple[str, str]] = set()
    cached: list[int] = []
    for turn in range(1, 11):
        ask = f"step {turn}: rename helper_{turn} in utils.py" + (" [tool]" if turn % 3 == 0 else "")
        messages.append({"role": "user", "content": ask})
        stream = await client.chat.completions.create(
            model="orca/coding", messages=messages, tools=OA_TOOLS, stream=True,
            stream_options={"include_usage": True})
        text, calls, usage = "", {}, None
        async for chunk in stream:
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for tc in choice.delta.tool_calls or ():
                    entry = calls.setdefault(tc.index, {"id": tc.id, "name": "", "args": ""})
                    if tc.function and tc.function.name:
                        entry["name"] = tc.function.name
                    if tc.function and tc.function.arguments:
                        entry["args"] += tc.function.arguments
        assert usage is not None
        cached.append(usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0)
        seen.add((stream.response.headers["x-orca-model"], stream.response.headers["x-orca-channel"]))
        if calls:
            call = calls[0]
            json.loads(call["args"])  # well-formed tool-call JSON
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call["id"], "type": "function",
                 "function": {"name": call["name"], "arguments": call["args"]}}]})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "ok: 3 lines"})
            messages.append({"role": "assistant", "content": "done"})
        else:
            messages.append({"role": "assistant", "content": text})
    assert len(seen) == 1, seen
    keys = {(ch, fp) for ch, _m, fp in _sim_calls(sidecar)}
    assert len(keys) == 1, keys  # one channel, one key, every turn
    assert cached[0] == 0 and all(c > 0 for c in cached[1:]), cached


async def test_anthropic_ten_turns_with_tools_stay_on_one_key_and_hit_the_cache(
        sidecar: Sidecar) -> None:
    client = anthropic.AsyncAnthropic(base_url=sidecar.base, api_key="agent", max_retries=0,
                                      default_headers={"X-Claude-Code-Session-Id": "conv-anth"})
    sidecar.closers.append(client.close)
    messages: list[dict] = []
    seen: set[tuple[str, str]] = set()
    cached: list[int] = []
    for turn in range(1, 11):
        ask = f"step {turn}: rename helper_{turn}" + (" [tool]" if turn % 3 == 0 else "")
        messages.append({"role": "user", "content": ask})
        async with client.messages.stream(model="claude-sonnet-4-5", max_tokens=512,
                                          system=SYSTEM, tools=AN_TOOLS,
                                          messages=messages) as stream:
            final = await stream.get_final_message()
            headers = stream.response.headers
        seen.add((headers["x-orca-model"], headers["x-orca-channel"]))
        cached.append(final.usage.cache_read_input_tokens or 0)
        tool_uses = [b for b in final.content if b.type == "tool_use"]
        messages.append({"role": "assistant", "content": [b.model_dump() for b in final.content]})
        if tool_uses:
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_uses[0].id, "content": "ok"}]})
            messages.append({"role": "assistant", "content": "done"})
    assert len(seen) == 1, seen
    keys = {(ch, fp) for ch, _m, fp in _sim_calls(sidecar)}
    assert len(keys) == 1, keys
    assert cached[0] == 0 and all(c > 0 for c in cached[1:]), cached
