"""What a request body says about its own answer, per wire format (SPEC §1.2, §6.3, §13.1).

`request_facts(body, api)`:

* `stream`: `"stream": true` exactly (any other value, `"true"` included, is not a stream), in
  every format.
* `max_tokens`: the answer's token limit, used by the truncation strike (§6.3): Chat
  Completions `max_tokens`, else `max_completion_tokens`; Messages `max_tokens`; Responses
  `max_output_tokens`. None when absent or not an integer.
* `add_include_usage`: Chat Completions streams only report usage when asked, so orca asks
  (`stream_options.include_usage`) when the client did not (§1.2). Messages and Responses
  streams always carry usage.

`one_hour_cache(body)`: a Messages body asks for Anthropic's one-hour prompt cache (`ttl:
"1h"` on its first cache breakpoint), so the session's cache window is an hour (§5).

The `model` swap in a raw body is format-agnostic (only the top-level `"model"` value is
replaced) and needs nothing from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orca_cli.immutable import immutable
from orca_cli.types import Api

__all__ = ["RequestFacts", "one_hour_cache", "request_facts"]


@immutable
class RequestFacts:
    stream: bool
    max_tokens: int | None
    add_include_usage: bool


def request_facts(body: Mapping[str, Any], api: Api) -> RequestFacts:
    stream = body.get("stream") is True
    if api == "responses":
        limit = body.get("max_output_tokens")
    else:
        limit = body.get("max_tokens", body.get("max_completion_tokens"))
    add_usage = False
    if api == "openai" and stream:
        opts = body.get("stream_options")
        add_usage = not (isinstance(opts, Mapping) and opts.get("include_usage") is True)
    max_tokens = limit if isinstance(limit, int) and not isinstance(limit, bool) else None
    return RequestFacts(stream, max_tokens, add_usage)


def one_hour_cache(body: Mapping[str, Any]) -> bool:
    """Whether a Messages body's first cache breakpoint, in prefix order (tools, system,
    messages, then a top-level `cache_control`), asks `ttl: "1h"`. The API takes TTLs only
    non-increasing along the prefix (a one-hour breakpoint after a five-minute one is a 400),
    so a body with any one-hour breakpoint has one first, and the walk stops at the first
    breakpoint it meets — Claude Code's, on its system prompt, after its ~20 tools: about a
    microsecond, where a search of the raw bytes for `"1h"` cost 48 µs on its 89 KB opening
    request. A body with no breakpoint is walked to its end, block by block."""
    for tool in _list(body.get("tools")):
        if tool.__class__ is dict:
            mark = tool.get("cache_control")
            if mark is not None:
                return _one_hour(mark)
    for block in _list(body.get("system")):
        if block.__class__ is dict:
            mark = block.get("cache_control")
            if mark is not None:
                return _one_hour(mark)
    for msg in _list(body.get("messages")):
        content = msg.get("content") if msg.__class__ is dict else None
        for block in _list(content):
            if block.__class__ is not dict:
                continue
            inner = block.get("content")
            if inner.__class__ is list:  # a tool_result's own blocks come before its end
                for part in inner:
                    mark = part.get("cache_control") if part.__class__ is dict else None
                    if mark is not None:
                        return _one_hour(mark)
            mark = block.get("cache_control")
            if mark is not None:
                return _one_hour(mark)
    return _one_hour(body.get("cache_control"))


def _list(value: Any) -> list[Any]:
    return value if value.__class__ is list else []


def _one_hour(mark: Any) -> bool:
    return mark.__class__ is dict and mark.get("ttl") == "1h"
