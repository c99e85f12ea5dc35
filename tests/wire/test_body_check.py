"""The top-level field types of a request in each wire format (`wire.body_check`)."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.types import Api
from orca_cli.wire.body_check import body_problem

MSGS = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(("api", "body", "problem"), [
    ("openai", {"messages": MSGS}, None),
    ("openai", {"messages": MSGS, "stream": None, "tools": None, "max_tokens": None}, None),
    ("openai", {"messages": MSGS, "temperature": 1, "top_p": 0.5, "n": 2}, None),
    ("openai", {"messages": MSGS, "unknown_field": {"any": "thing"}}, None),
    ("openai", {"messages": MSGS, "stream": 1}, "`stream` must be a boolean (true or false), "
                                                "not an integer"),
    ("openai", {"messages": MSGS, "max_tokens": True}, "`max_tokens` must be an integer, "
                                                       "not a boolean"),
    ("openai", {"messages": MSGS, "max_tokens": 1.5}, "`max_tokens` must be an integer, "
                                                      "not a number"),
    ("openai", {"messages": MSGS, "temperature": "0.2"}, "`temperature` must be a number, "
                                                         "not a string"),
    ("openai", {"messages": None}, "`messages` must be an array, not null"),
    ("openai", {}, "`messages` is required: an array of message objects"),
    ("openai", {"messages": [MSGS[0], "hi"]}, "`messages` must be an array of message objects"),
    ("anthropic", {"messages": MSGS, "system": [{"type": "text", "text": "s"}]}, None),
    ("anthropic", {"messages": MSGS, "tool_choice": "auto"}, "`tool_choice` must be an "
                                                             "object, not a string"),
    ("responses", {}, None),  # `previous_response_id` alone, or `input`: the provider's call
    ("responses", {"input": [{"type": "message"}, {"type": "function_call_output"}]}, None),
    ("responses", {"input": "hi", "instructions": 5}, "`instructions` must be a string, "
                                                      "not an integer"),
    ("responses", {"input": [[]]}, "`input` must be an array of input item objects"),
])
def test_body_problem(api: Api, body: dict[str, Any], problem: str | None) -> None:
    assert body_problem(api, {"model": "m", **body}) == problem
