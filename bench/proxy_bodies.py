"""Coding-agent request bodies for the proxy benchmark, built on `tests.routing.bodies`.

Every body is what an agent sends mid-session: the ~2 KB system prompt, the two tool
definitions, the trivial-edit history that pads it to a chosen size, and one latest turn
that is the same at every size — the agent's own tool call and the `go test` log it
returned (about 1.5 KB), the commonest request of an agent loop. The transcript-growth
figures therefore vary only the history, which is what SPEC §12 asks of the decision cost.

A Responses API body (`api="responses"`) is shaped as Codex CLI sends it: the system prompt as
`instructions`, a developer message (sandbox and approval policy) and the user's environment
context as the first `input` items, the same trivial-edit history as `message` items, and the
latest turn as a `reasoning` item (encrypted), a `function_call` to `shell` and its
`function_call_output` (exit code 0: the same passing `go test` log as the other formats' latest
turn, so every format's row routes alike and compares like with like); the tools as Responses function tools, with `tool_choice`,
`parallel_tool_calls`, `reasoning`, `store: false`, `include` and a `prompt_cache_key`.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from bench.scoring_bodies import go_test_log
from orca_cli.wire.transcript import Api
from tests.routing import bodies as B

__all__ = ["SIZES", "agent_body", "encode"]

SIZES = {"10KB": 10_240, "200KB": 204_800, "1MB": 1_048_576}
_LATEST_LOG = 1_500


def _latest(api: Api) -> list[dict[str, Any]]:
    return [B.tool_call(api, "call_42", "go test ./internal/cache/..."),
            *B.tool_results(api, "call_42", go_test_log(_LATEST_LOG))]


_DEVELOPER = (
    "<permissions instructions>\nFilesystem sandboxing defines which files can be read or "
    "written. `sandbox_mode` is `workspace-write`: the sandbox permits reading files, and "
    "editing files in `cwd` and `writable_roots`. Network access is restricted. Approvals: "
    "`on-request`; ask for escalated permissions with `with_escalated_permissions`.\n"
    "</permissions instructions>")
_ENVIRONMENT = (
    "<environment_context>\n  <cwd>/home/dev/src/orders</cwd>\n  <approval_policy>on-request"
    "</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>"
    "restricted</network_access>\n  <shell>bash</shell>\n</environment_context>")


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _responses_latest() -> list[dict[str, Any]]:
    command = ["bash", "-lc", "go test ./internal/cache/..."]
    return [
        {"type": "reasoning", "id": "rs_42", "summary": [
            {"type": "summary_text", "text": "**Running the cache tests**"}],
         "encrypted_content": "gAAAAB" + "x7Kq9Lm2" * 40},
        {"type": "function_call", "call_id": "call_42", "name": "shell",
         "arguments": json.dumps({"command": command, "workdir": "/home/dev/src/orders",
                                  "timeout_ms": 120000})},
        {"type": "function_call_output", "call_id": "call_42",
         "output": json.dumps({"output": go_test_log(_LATEST_LOG),
                               "metadata": {"exit_code": 0, "duration_seconds": 2.4}})},
    ]


def _responses_body(history: list[dict[str, Any]], model: str) -> dict[str, Any]:
    tools = [{"type": "function", "name": t["function"]["name"],
              "description": t["function"]["description"],
              "parameters": t["function"]["parameters"], "strict": False}
             for t in B.OPENAI_TOOLS]
    return {
        "model": model, "instructions": B.SYSTEM_PROMPT,
        "input": [_message("developer", _DEVELOPER), _message("user", _ENVIRONMENT),
                  *history, *_responses_latest()],
        "tools": tools, "tool_choice": "auto", "parallel_tool_calls": False,
        "reasoning": {"effort": "medium", "summary": "auto"}, "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199c6a2-7f3e-7d21-9b4c-5e8a1f2d3c4b",
    }


def _responses_agent_body(total_bytes: int, model: str) -> dict[str, Any]:
    """The Codex-shaped body, padded with trivial-edit history to about `total_bytes`."""
    frame = len(orjson.dumps(_responses_body([], model)))
    history: list[dict[str, Any]] = []
    size, i = frame, 0
    while size < total_bytes:
        ask, reply = B.TRIVIAL_EDITS[i % len(B.TRIVIAL_EDITS)]
        pair = [_message("user", f"{ask} (step {i})"), _message("assistant", reply * 3)]
        size += len(orjson.dumps(pair))
        history += pair
        i += 1
    return _responses_body(history, model)


def agent_body(api: Api, total_bytes: int, *, model: str, stream: bool) -> dict[str, Any]:
    """A body of about `total_bytes` JSON bytes (within a few hundred) ending in the same turn."""
    if api == "responses":
        body = _responses_agent_body(total_bytes, model)
        if stream:
            body["stream"] = True
        return body
    latest = _latest(api)
    frame = len(orjson.dumps(B.body(api, latest)))
    history = max(0, total_bytes - frame)
    body = B.padded_transcript(api, history, latest) if history else B.body(api, latest)
    body["model"] = model
    if stream:
        body["stream"] = True
        if api == "openai":
            # Agents on the OpenAI SDKs ask for usage themselves; orca then forwards the
            # client's bytes unchanged (with only the model swapped).
            body["stream_options"] = {"include_usage": True}
    return body


def encode(body: dict[str, Any]) -> bytes:
    return orjson.dumps(body)
