"""The cache breakpoints orca places towards an Anthropic channel (SPEC §13.2 fidelity rule 2).

With `[translation] anthropic_cache = "auto"` a request from a format without markers gets at
most four: one at the end of tools+system (the last system text block, else the last tool),
one on the last block of the last message (written this turn) and one on the last block of the
user message before the last assistant turn (where the previous turn wrote: read this turn).
Thinking blocks cannot carry a marker.

A marker goes on a copy of the block, put in the block's place: the blocks of a message may be
shared with other requests (the shell keeps translated messages for reuse), so they are never
changed.
"""

from __future__ import annotations

from typing import Any

__all__ = ["marker", "place_marks"]

_CACHEABLE = frozenset({"text", "image", "document", "tool_use", "tool_result"})
_EPHEMERAL = {"type": "ephemeral"}
_EPHEMERAL_1H = {"type": "ephemeral", "ttl": "1h"}


def marker(ttl: str) -> dict[str, str]:
    """A `cache_control` value (a new dict each time: the body owns it)."""
    return dict(_EPHEMERAL_1H if ttl == "1h" else _EPHEMERAL)


def _marked(block: dict[str, Any], ttl: str) -> dict[str, Any]:
    return {**block, "cache_control": marker(ttl)}


def _head(system: list[dict[str, Any]], tools: list[dict[str, Any]], ttl: str) -> int:
    """The end of tools+system: the last system text block, else the last tool."""
    for i in range(len(system) - 1, -1, -1):
        if system[i]["type"] == "text":
            system[i] = _marked(system[i], ttl)
            return 1
    if tools:
        tools[-1] = _marked(tools[-1], ttl)
        return 1
    return 0


def _last_cacheable(content: list[dict[str, Any]]) -> int:
    for i in range(len(content) - 1, -1, -1):
        if content[i]["type"] in _CACHEABLE:
            return i
    return -1


def place_marks(
    system: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    ttl: str,
) -> int:
    """Place the breakpoints in the lists of a request being built; how many were added."""
    added = _head(system, tools, ttl)
    used = sum(1 for b in system if "cache_control" in b)
    used += sum(1 for t in tools if "cache_control" in t)
    last_assistant = len(messages) - 1
    while last_assistant >= 0 and messages[last_assistant]["role"] != "assistant":
        last_assistant -= 1
    targets: list[tuple[list[dict[str, Any]], int]] = []
    for index in (len(messages) - 1, last_assistant - 1):
        if 0 <= index < len(messages):
            content = messages[index]["content"]
            at = _last_cacheable(content)
            if at >= 0:
                targets.append((content, at))
    for content, at in targets[: 4 - used]:
        if "cache_control" not in content[at]:
            content[at] = _marked(content[at], ttl)
            added += 1
    return added
