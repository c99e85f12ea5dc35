"""The top-level field types of a request in its wire format (SPEC §1.2, §18): what a provider
refuses with 400, refused by orca before routing, so a malformed body gets a clear error in
the caller's own format, reaches no upstream (translated or not) and moves no session state.

Only the fields a request names are looked at (one table lookup per top-level field; `null`
is an omitted option), and each element of `messages` / `input` only for being an object (one
type test each, beside the parse that built it). What lies deeper (a message's role, a content
part's shape) is the provider's to refuse; its 400 reaches the client unmodified.
`count_tokens` applies the Messages API's table (SPEC §18: "like the generation paths do").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orca_cli.types import Api

__all__ = ["body_problem", "type_name"]

# Each kind: the Python types a JSON value of it decodes to, and how the error names it.
_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "bool": ((bool,), "a boolean (true or false)"),
    "int": ((int,), "an integer"),
    "number": ((int, float), "a number"),
    "str": ((str,), "a string"),
    "list": ((list,), "an array"),
    "object": ((dict,), "an object"),
    "str|list": ((str, list), "a string or an array"),
    "str|object": ((str, dict), "a string or an object"),
}

_SAMPLING = {"temperature": "number", "top_p": "number"}

_FIELDS: dict[str, dict[str, str]] = {
    "openai": {
        "messages": "list", "stream": "bool", "tools": "list", "tool_choice": "str|object",
        "max_tokens": "int", "max_completion_tokens": "int", "n": "int",
        "presence_penalty": "number", "frequency_penalty": "number", "stop": "str|list",
        "response_format": "object", "stream_options": "object", "user": "str",
        "metadata": "object", "parallel_tool_calls": "bool", "seed": "int", **_SAMPLING,
    },
    "anthropic": {
        "messages": "list", "stream": "bool", "tools": "list", "tool_choice": "object",
        "system": "str|list", "max_tokens": "int", "top_k": "int", "stop_sequences": "list",
        "metadata": "object", "thinking": "object", **_SAMPLING,
    },
    "responses": {
        "input": "str|list", "stream": "bool", "tools": "list", "tool_choice": "str|object",
        "instructions": "str", "max_output_tokens": "int", "previous_response_id": "str",
        "store": "bool", "reasoning": "object", "text": "object", "include": "list",
        "parallel_tool_calls": "bool", "metadata": "object", "user": "str", **_SAMPLING,
    },
}
_REQUIRED: dict[str, str] = {"openai": "messages", "anthropic": "messages"}
_ITEMS = {"messages": "message", "input": "input item"}  # arrays whose elements are objects
_DICT_ONLY = {dict}

# Per format, per field: (its types, how the error names them, its elements' name or ""),
# built once: a request pays one lookup per top-level field it names.
_CHECKS: dict[str, dict[str, tuple[tuple[type, ...], str, str]]] = {
    api: {name: (*_KINDS[kind], _ITEMS.get(name, "")) for name, kind in fields.items()}
    for api, fields in _FIELDS.items()
}


def type_name(value: Any) -> str:
    """How an error names a JSON value's type (`a string`, `null`)."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


def body_problem(api: Api, body: Mapping[str, Any]) -> str | None:
    """Why `body` is not a request of `api`'s format at its top level, or None."""
    checks, required = _CHECKS[api], _REQUIRED.get(api)
    for name, value in body.items():
        check = checks.get(name)
        if check is None or (value is None and name != required):  # null: an omitted option
            continue
        types, wanted, item = check
        # `type(...) in`, not isinstance: JSON true/false decode to bool, a subclass of int,
        # and are never an integer or a number.
        if type(value) not in types:
            return f"`{name}` must be {wanted}, not {type_name(value)}"
        if item and type(value) is list and not set(map(type, value)) <= _DICT_ONLY:
            return f"`{name}` must be an array of {item} objects"
    if required is not None and body.get(required) is None:
        return f"`{required}` is required: an array of message objects"
    return None
