"""What a conversation may hold, by Claude generation (SPEC §13.2; `claude.ClaudeTraits`).

An agent writes `messages` for the model it asked for. Claude Code 2.1.332 writes its
environment notes for `claude-opus-5-5` as a mid-conversation `role: "system"` message with its
own `output_config` (a per-turn effort), and tool definitions that change mid-session as
`tool_addition` / `tool_removal` blocks of such a message; for `claude-haiku-4-5` or
`claude-sonnet-4-6` it writes the notes as `<system-reminder>` text in the user turn and the
tools in `tools` (captured). Earlier models answer the first form with a 400; `fit_turns`
writes it the second way for a model that lacks it (`native.fit_messages` calls it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orca_cli.translate.claude import ClaudeTraits

__all__ = ["Turns", "fit_turns"]


@dataclass(frozen=True, slots=True)
class Turns:
    fields: dict[str, Any]  # `messages` (and `tools`) as the model takes them
    dropped: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...]


_REMINDER = "<system-reminder>\n{}\n</system-reminder>"


def fit_turns(body: dict[str, Any], traits: ClaudeTraits) -> Turns | None:
    """`messages` written for a model that takes what `traits` lacks, or None when they hold
    nothing of it (one pass over the messages' keys; their blocks are read only in a system
    message, or when it is rewritten).

    - A `role: "system"` message goes as a user message whose text blocks are each wrapped in
      `<system-reminder>` (what Claude Code writes for such a model itself); the API joins it
      to the user turn before it. A cache breakpoint on the message goes on its last block.
    - Its `tool_addition` blocks go to `tools` (after those there, replacing one of the same
      name) and its `tool_removal` blocks take theirs out, in the order they came; a system
      message left with no text goes.
    - A message's own `output_config` (a per-turn effort) goes; the request's stays.

    The result depends only on the body, so each turn of a conversation writes its earlier
    messages the same way and the prompt cache still matches them."""
    messages = body.get("messages")
    if messages.__class__ is not list:
        return None
    system_ok, tools_ok, effort_ok = traits.mid_system, traits.tool_changes, traits.turn_effort
    for msg in messages:
        if msg.__class__ is dict and (
                (not effort_ok and "output_config" in msg)
                or (msg.get("role") == "system" and not (system_ok and tools_ok))):
            break
    else:
        return None
    out: list[Any] = []
    added: dict[str, Any] = {}  # name -> definition, in order; None: removed
    dropped: list[str] = []
    renamed: list[tuple[str, str]] = []
    for msg in messages:
        if msg.__class__ is not dict:
            out.append(msg)
            continue
        if not effort_ok and "output_config" in msg:
            msg = {k: v for k, v in msg.items() if k != "output_config"}
            _note(dropped, "messages.output_config")
        if msg.get("role") != "system" or (system_ok and tools_ok):
            out.append(msg)
            continue
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (
            content if isinstance(content, list) else [])
        kept = blocks if tools_ok else [b for b in blocks if not _tool_change(b, added)]
        if len(kept) < len(blocks):
            _note(renamed, ("messages.tool_addition", "tools"))
        if not kept:
            continue
        if system_ok:
            out.append(msg if len(kept) == len(blocks) else {**msg, "content": kept})
            continue
        wrapped = [{**b, "text": _REMINDER.format(b["text"])}
                   if isinstance(b, dict) and isinstance(b.get("text"), str) else b
                   for b in kept]
        mark = msg.get("cache_control")
        if mark is not None and isinstance(wrapped[-1], dict):
            wrapped[-1] = {**wrapped[-1], "cache_control": mark}
        out.append({"role": "user", "content": wrapped})
        _note(renamed, ("messages.role:system", "user <system-reminder> text"))
    if not (dropped or renamed):
        return None
    fields: dict[str, Any] = {"messages": out}
    if added:
        tools = body.get("tools")
        listed = [t for t in tools if not (isinstance(t, dict) and t.get("name") in added)] if (
            isinstance(tools, list)) else []
        fields["tools"] = listed + [d for d in added.values() if d is not None]
    return Turns(fields, tuple(dropped), tuple(renamed))


def _tool_change(block: Any, added: dict[str, Any]) -> bool:
    """Whether `block` adds or removes a tool definition (recorded in `added`)."""
    if not isinstance(block, dict) or block.get("type") not in ("tool_addition", "tool_removal"):
        return False
    tool = block.get("tool")
    if block["type"] == "tool_addition":
        definition = tool.get("definition") if isinstance(tool, dict) else None
        if isinstance(definition, dict) and isinstance(definition.get("name"), str):
            added.pop(definition["name"], None)  # a later definition goes last
            added[definition["name"]] = definition
    elif isinstance(tool, dict) and isinstance(tool.get("name"), str):
        added.pop(tool["name"], None)
        added[tool["name"]] = None
    return True


def _note(notes: list[Any], note: Any) -> None:
    if note not in notes:
        notes.append(note)
