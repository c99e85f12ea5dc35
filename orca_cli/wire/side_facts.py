"""What side-request detection reads from a body, in each wire format (SPEC §14.1).

`side_facts(body, api)` gathers the system text (every block and every system or developer
message, joined by a blank line so each starts a paragraph), the first user instruction, whether
tools are declared, the output-token limit, and the property names of a structured-output
schema the request asks for. `routing.side.match_housekeeping` decides on them. Pure; never
raises on a junk body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orca_cli.immutable import immutable
from orca_cli.types import Api

__all__ = ["SideFacts", "side_facts"]

_SYSTEM_ROLES = ("system", "developer")
_TEXT_TYPES = ("text", "input_text", "output_text")


@immutable
class SideFacts:
    system_text: str
    first_instruction: str
    has_tools: bool
    max_tokens: int | None
    schema_keys: frozenset[str] | None  # None: no structured output asked for


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(p["text"] for p in content if isinstance(p, Mapping)
                           and p.get("type") in _TEXT_TYPES and isinstance(p.get("text"), str))
    return ""


def _schema_keys(fmt: Any, nested: str | None = None) -> frozenset[str] | None:
    """Property names of a `json_schema` format (`nested`: Chat Completions wraps it)."""
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return None
    holder = fmt.get(nested) if nested else fmt
    schema = holder.get("schema") if isinstance(holder, Mapping) else None
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return frozenset(props) if isinstance(props, Mapping) else None


def _messages(items: Any) -> tuple[list[str], str]:
    """(system and developer texts, the first user message's text) of a message list."""
    system: list[str] = []
    first = ""
    for m in items if isinstance(items, list) else ():
        if not isinstance(m, Mapping):
            continue
        role = m.get("role")
        if role in _SYSTEM_ROLES:
            system.append(_text(m.get("content")))
        elif role == "user" and not first:
            first = _text(m.get("content"))
    return system, first


def side_facts(body: Mapping[str, Any], api: Api) -> SideFacts:
    # The request's own `tools` only: in Codex's code mode the main turn and the TUI's title
    # request both carry the session's `additional_tools` input item (the prefix they share),
    # so only the title's output schema tells them apart, as it does in the other modes.
    tools = body.get("tools")
    has_tools = isinstance(tools, list) and bool(tools)
    system: list[str]
    if api == "anthropic":
        system_field = body.get("system")
        system = [_text(system_field)] if system_field is not None else []
        _, first = _messages(body.get("messages"))
        limit = body.get("max_tokens")
        out = body.get("output_config")
        keys = _schema_keys(out.get("format")) if isinstance(out, Mapping) else None
    elif api == "responses":
        items = body.get("input")
        system, first = _messages(items)
        if isinstance(items, str):
            first = items
        if isinstance(body.get("instructions"), str):
            system.insert(0, body["instructions"])
        limit = body.get("max_output_tokens")
        text = body.get("text")
        keys = _schema_keys(text.get("format")) if isinstance(text, Mapping) else None
    else:
        system, first = _messages(body.get("messages"))
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        keys = _schema_keys(body.get("response_format"), "json_schema")
    return SideFacts(system_text="\n\n".join(t for t in system if t), first_instruction=first,
                     has_tools=has_tools,
                     max_tokens=limit if isinstance(limit, int) and not isinstance(limit, bool)
                     else None,
                     schema_keys=keys)
