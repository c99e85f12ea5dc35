"""The `ResponseTap` readers for the OpenAI Responses API (SPEC §13.1; tap rules in usage.py).

Stream events (`event: <type>` with the same `type` in the data) and what they tell the tap:

* `response.created` / `response.in_progress`: the response head (`id`, `created_at`,
  `model`), kept so an in-stream failure can name the same response (`wire/errors.py`).
* `response.output_text.delta` (text seen), `response.refusal.delta` (refusal),
  `response.output_item.added` of a `function_call` / `custom_tool_call` (a tool call),
  `response.function_call_arguments.delta` / `.done` (the call's JSON arguments, per
  `output_index`; a custom tool's freeform input is not JSON and is never checked).
* `response.completed` and `response.incomplete` are the clean ends and carry `usage`;
  `incomplete_details.reason` is the finish reason (`max_output_tokens` is a truncation).
  `response.failed` (and a top-level `error` event) ends the answer in error.

Usage: `input_tokens` is the whole prompt; `input_tokens_details.cached_tokens` (reads) and
`input_tokens_details.cache_write_tokens` (writes, where reported) are parts of it, as in
Chat Completions; `output_tokens` includes reasoning tokens.

Text deltas are the bulk of a stream: once text was seen they are skipped unparsed, and
reasoning and custom-tool-input deltas always are. The data
of the last event is kept (a reference, not a copy) so the next `sequence_number` can be read
only when a failure event needs it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orca_cli.wire.usage import ResponseTap

__all__ = ["FAST_TIERS", "next_sequence_number", "responses_body", "responses_event"]

_SEQ = re.compile(r'"sequence_number"\s*:\s*(\d+)')
_TOOL_ITEMS = frozenset({"function_call", "custom_tool_call"})
# Deltas that tell the tap nothing (reasoning text, a custom tool's freeform input).
_SKIP = frozenset(
    {
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
        "response.custom_tool_call_input.delta",
    }
)


# The response's `service_tier` when OpenAI served it in fast mode ("priority" until GPT-5.6,
# then "fast"), billed at the model's `fast` multiplier; a request asked fast but served at
# standard speed says "default" and is billed so.
FAST_TIERS = frozenset({"priority", "fast"})

def next_sequence_number(last_data: str | None) -> int:
    """The sequence number after the last event's (0 before any)."""
    if not last_data:
        return 0
    found = _SEQ.search(last_data)
    return int(found.group(1)) + 1 if found else 0


def responses_event(tap: ResponseTap, name: str | None, d: str) -> None:
    """One Responses stream event."""
    tap._last = d
    if name in _SKIP or (tap.has_text and name == "response.output_text.delta"):
        return
    obj = tap._load(d)
    if obj is None:
        return
    kind = obj.get("type") if isinstance(obj.get("type"), str) else name
    if kind == "response.output_text.delta":
        delta = obj.get("delta")
        if isinstance(delta, str) and delta.strip():
            tap.has_text = True
    elif kind == "response.refusal.delta":
        tap.refusal = True
    elif kind == "response.function_call_arguments.delta":
        part = obj.get("delta")
        if isinstance(part, str):
            tap._tools.setdefault(_index(obj), []).append(part)
    elif kind == "response.function_call_arguments.done":
        args = obj.get("arguments")
        if isinstance(args, str):
            tap._tools[_index(obj)] = [args]
    elif kind in ("response.output_item.added", "response.output_item.done"):
        _item(tap, obj.get("item"), _index(obj), kind.endswith("done"))
    elif kind in ("response.created", "response.in_progress"):
        _head(tap, obj.get("response"))
    elif kind in ("response.completed", "response.incomplete", "response.failed"):
        _final(tap, obj.get("response"))
    elif kind == "error":
        tap._set_error(obj)


def responses_body(tap: ResponseTap, obj: dict[str, Any]) -> None:
    """A whole JSON answer: a Response object, or an error body."""
    if obj.get("object") != "response":
        if obj.get("error") is not None:
            tap._set_error(obj["error"])
        return
    output = obj.get("output")
    if isinstance(output, list):
        for i, item in enumerate(output):
            _item(tap, item, i, True)
    _final(tap, obj)


def _index(obj: dict[str, Any]) -> int:
    index = obj.get("output_index", 0)
    return index if isinstance(index, int) else 0


def _head(tap: ResponseTap, response: Any) -> None:
    if isinstance(response, dict):
        tap._head = {k: response[k] for k in ("id", "created_at", "model") if k in response}


def _item(tap: ResponseTap, item: Any, index: int, done: bool) -> None:
    if not isinstance(item, dict):
        return
    kind = item.get("type")
    if kind in _TOOL_ITEMS:
        tap._tool_seen = True
        parts = tap._tools.setdefault(index, []) if kind == "function_call" else None
        args = item.get("arguments")
        if done and parts is not None and isinstance(args, str) and args:
            tap._tools[index] = [args]
    elif kind == "message" and done:
        content = item.get("content")
        for part in content if isinstance(content, list) else ():
            if not isinstance(part, dict):
                continue
            if part.get("type") == "refusal" and part.get("refusal"):
                tap.refusal = True
            text = part.get("text")
            if part.get("type") == "output_text" and isinstance(text, str) and text.strip():
                tap.has_text = True


def _final(tap: ResponseTap, response: Any) -> None:
    """The response's end state: usage, status and why it is incomplete or failed."""
    if not isinstance(response, dict):
        tap.bad_events += 1
        return
    _head(tap, response)
    usage = response.get("usage")
    if isinstance(usage, dict):
        details = usage.get("input_tokens_details")
        tap._usage = {
            "prompt_tokens": _int(usage, "input_tokens"),
            "cached_tokens": _int(details, "cached_tokens"),
            "cache_write_tokens": _int(details, "cache_write_tokens"),
            "output_tokens": _int(usage, "output_tokens"),
            "fast": response.get("service_tier") in FAST_TIERS,
        }
    status = response.get("status")
    if status == "completed":
        tap._set_finish("completed")
        tap.completed = True
    elif status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        tap._set_finish(reason if isinstance(reason, str) else "incomplete")
        tap.completed = True
    elif status == "failed":
        tap.finish_reason = "failed"
        error = response.get("error")
        tap._set_error(error if isinstance(error, dict) else None)
    elif status == "cancelled":
        tap.finish_reason = "cancelled"
        tap.error_finish = True


def _int(obj: Any, key: str) -> int:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, int) else 0
