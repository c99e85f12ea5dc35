"""Anthropic's one-hour prompt cache, read from a Messages body's first breakpoint
(`wire.request_facts.one_hour_cache`): the session's cache window is an hour when it asks."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.wire.request_facts import one_hour_cache

H1 = {"type": "ephemeral", "ttl": "1h"}
M5 = {"type": "ephemeral"}
TOOL = {"name": "Bash", "input_schema": {"type": "object"}}


def _body(*, tools: Any = None, system: Any = None, last: Any = None,
          inner: Any = None, result: Any = None, top: Any = None) -> dict[str, Any]:
    tool_result: dict[str, Any] = {"type": "tool_result", "tool_use_id": "t1",
                                   "content": [{"type": "text", "text": "ok"}]}
    if result is not None:
        tool_result["cache_control"] = result
    if inner is not None:
        tool_result["content"][0]["cache_control"] = inner
    ask: dict[str, Any] = {"type": "text", "text": "go on"}
    if last is not None:
        ask["cache_control"] = last
    body: dict[str, Any] = {
        "model": "claude-sonnet-4-5", "max_tokens": 100,
        "tools": [TOOL, {**TOOL, "name": "Read", **({"cache_control": tools} if tools else {})}],
        "system": [{"type": "text", "text": "You are an agent.",
                    **({"cache_control": system} if system else {})}],
        "messages": [{"role": "user", "content": "fix it"},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                                        "name": "Bash", "input": {}}]},
                     {"role": "user", "content": [tool_result, ask]}]}
    if top is not None:
        body["cache_control"] = top
    return body


@pytest.mark.parametrize(("where", "expected"), [
    ({"tools": H1}, True), ({"system": H1}, True), ({"last": H1}, True),
    ({"inner": H1}, True), ({"top": H1}, True),
    # Claude Code's hybrid: one hour on the stable prefix, five minutes on the last message
    ({"system": H1, "last": M5}, True),
    ({"system": M5}, False), ({"last": M5}, False), ({}, False),
    ({"system": {"type": "ephemeral", "ttl": "5m"}}, False),
    # the API refuses a one-hour breakpoint after a five-minute one: the first decides
    ({"system": M5, "last": H1}, False),
    # a tool result's own blocks come before the result's end
    ({"inner": H1, "result": M5}, True), ({"inner": M5, "result": H1}, False),
])
def test_the_first_breakpoint_says_whether_the_cache_is_kept_an_hour(
        where: dict[str, Any], expected: bool) -> None:
    assert one_hour_cache(_body(**where)) is expected


def test_a_body_of_any_shape_is_read_without_error() -> None:
    assert not one_hour_cache({"messages": "hi", "system": "a prompt", "tools": None})
    assert not one_hour_cache({"messages": [None, {"content": [3, None]}], "cache_control": "1h"})
    assert one_hour_cache({"system": "text", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "x", "cache_control": H1}]}]})
