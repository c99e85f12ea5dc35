"""A session's cumulative history in its wire format (SPEC §10, §1.1).

`Conversation` appends messages in the shape the agent sends — OpenAI chat completions
(`system` message, `tool_calls`, `tool` messages), Anthropic messages (top-level `system`,
`tool_use` / `tool_result` blocks) or, as Codex CLI 0.171 sends them, Responses API items
(the system prompt as the first `developer` message and no `instructions`, `function_call` /
`function_call_output` items, `prompt_cache_key` = the session id) — and snapshots a request
body after each request. A
snapshot is a new top-level dict and a new messages list holding the *same* message dicts as
the previous one: generating the corpus stays linear, and the bodies are read-only.

`chars` follows what `wire.transcript.transcript` counts for the full-transcript score:
the system prompt, the tools' JSON size, every text and tool result, and tool-call arguments
(OpenAI's argument string, Anthropic's `input` JSON), so ceil(chars / 4) equals that
scorer's token estimate.
"""

from __future__ import annotations

import random
from typing import Any

import orjson

from orca_cli.replay.texts import TOOL_SPECS
from orca_cli.wire.transcript import Api

__all__ = ["MAX_TOKENS", "MODEL", "Conversation"]

MODEL = "orca/coding"
MAX_TOKENS = 8192


def _tools(api: Api, specs: tuple[tuple[str, str, dict[str, Any]], ...] = TOOL_SPECS
           ) -> list[dict[str, Any]]:
    if api == "anthropic":
        return [{"name": n, "description": d, "input_schema": p} for n, d, p in specs]
    if api == "responses":
        return [{"type": "function", "name": n, "description": d, "parameters": p}
                for n, d, p in specs]
    return [{"type": "function", "function": {"name": n, "description": d, "parameters": p}}
            for n, d, p in specs]


def _text(role: str, text: str) -> dict[str, Any]:
    """A Responses `message` item."""
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


class Conversation:
    """One session's history; `body()` is the request that sends all of it."""

    def __init__(self, rng: random.Random, api: Api, session_id: str,
                 system: str, tool_specs: tuple[tuple[str, str, dict[str, Any]], ...] = TOOL_SPECS,
                 *, model: str = MODEL) -> None:
        self.rng, self.api, self.session_id, self.model = rng, api, session_id, model
        self._tools = _tools(api, tool_specs)
        self._metadata = {"session_id": session_id}
        self.messages: list[dict[str, Any]] = []
        self._system: list[dict[str, Any]] = []
        if api == "openai":
            self.messages.append({"role": "system", "content": system})
        elif api == "responses":
            self.messages.append(_text("developer", system))
        else:
            self._system = [{"type": "text", "text": system}]
        self.chars = len(system) + len(orjson.dumps(self._tools))

    def body(self) -> dict[str, Any]:
        """The request carrying the whole history so far (shares every message dict)."""
        if self.api == "openai":
            body = {"model": self.model, "messages": list(self.messages), "tools": self._tools,
                    "max_tokens": MAX_TOKENS, "stream": True,
                    "stream_options": {"include_usage": True}, "metadata": self._metadata}
        elif self.api == "responses":
            body = {"model": self.model, "input": list(self.messages), "tools": self._tools,
                    "tool_choice": "auto", "parallel_tool_calls": False, "store": False,
                    "stream": True, "prompt_cache_key": self.session_id,
                    "metadata": self._metadata}
        else:
            body = {"model": self.model, "max_tokens": MAX_TOKENS, "system": self._system,
                    "messages": list(self.messages), "tools": self._tools, "stream": True,
                    "metadata": self._metadata}
        if not self._tools:  # a side request without tools (a title request)
            del body["tools"]
        return body

    def user(self, text: str, result: tuple[str, str] | None = None) -> None:
        """A user turn: `text`, after the output of a pending tool call when `result` is
        (call id, output)."""
        self.chars += len(text) + (len(result[1]) if result else 0)
        if self.api == "responses":
            if result:
                self.messages.append({"type": "function_call_output", "call_id": result[0],
                                      "output": result[1]})
            self.messages.append(_text("user", text))
            return
        if self.api == "openai":
            if result:
                self.messages.append({"role": "tool", "tool_call_id": result[0],
                                      "content": result[1]})
            self.messages.append({"role": "user", "content": text})
            return
        blocks: list[dict[str, Any]] = []
        if result:
            blocks.append({"type": "tool_result", "tool_use_id": result[0], "content": result[1]})
        blocks.append({"type": "text", "text": text})
        self.messages.append({"role": "user", "content": blocks})

    def assistant(self, text: str) -> None:
        self.chars += len(text)
        if self.api == "responses":
            self.messages.append(_text("assistant", text))
        elif self.api == "openai":
            self.messages.append({"role": "assistant", "content": text})
        else:
            self.messages.append({"role": "assistant", "content": [{"type": "text", "text": text}]})

    def tool_call(self, note: str, name: str, args: dict[str, Any]) -> str:
        """The agent calls tool `name` (after a short `note`, if any); returns the call id."""
        self.chars += len(note)
        if self.api == "responses":
            call_id = f"call_{self.rng.getrandbits(96):024x}"
            arguments = orjson.dumps(args).decode()
            self.chars += len(arguments)
            if note:
                self.messages.append(_text("assistant", note))
            self.messages.append({"type": "function_call", "call_id": call_id, "name": name,
                                  "arguments": arguments})
            return call_id
        if self.api == "openai":
            call_id = f"call_{self.rng.getrandbits(96):024x}"
            arguments = orjson.dumps(args).decode()
            self.chars += len(arguments)
            self.messages.append({"role": "assistant", "content": note or None, "tool_calls": [
                {"id": call_id, "type": "function",
                 "function": {"name": name, "arguments": arguments}}]})
            return call_id
        call_id = f"toolu_01{self.rng.getrandbits(88):022x}"
        self.chars += len(orjson.dumps(args))
        blocks: list[dict[str, Any]] = [{"type": "text", "text": note}] if note else []
        blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
        self.messages.append({"role": "assistant", "content": blocks})
        return call_id

    def tool_result(self, call_id: str, output: str) -> None:
        """The tool's output, as the request that continues the agent's loop sends it."""
        self.chars += len(output)
        if self.api == "responses":
            self.messages.append({"type": "function_call_output", "call_id": call_id,
                                  "output": output})
        elif self.api == "openai":
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        else:
            self.messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": output}]})
