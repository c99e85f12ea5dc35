"""Reading an OpenAI Responses API request body (SPEC §13.1) for the scorer (SPEC §4).

The body's `instructions` plus its `system` / `developer` messages are the system prompt;
`input` is a string (one user message) or a list of items:

* `message` (an item with a `role` and no `type` is one too): role user / assistant / system /
  developer; `content` a string or parts `input_text` / `output_text` (text) and
  `input_image` / `input_file` (ignored).
* `function_call` (`arguments`, a JSON string) and `custom_tool_call` (`input`, the freeform
  text Codex's apply_patch sends): model output, counted as tool-call tokens, not text.
* `function_call_output` / `custom_tool_call_output` (`output`, a string or a list of
  `input_text` parts): tool results.
* `reasoning`: model output whose `encrypted_content` is opaque; nothing of it is read.
* `agent_message` (`author`, `recipient`, `content`): another agent's message to this one —
  Codex's sub-agents get their task so and send their answer back so; its text parts and its
  `encrypted_content` payload are read like a tool's result, unless the payload is OpenAI's
  ciphertext (`plain_payload`).
* `additional_tools` (`role: "developer"`, `tools`): tool definitions made available from
  that point of the conversation. For a model of its catalog (its default `gpt-6.2-sol`)
  Codex 0.171 declares every tool this way, in one item at the head of `input`, and sends no
  top-level `tools` (tests/agents/CAPTURES.md); `declared_tools` reads both.
* `configuration_update` (`reasoning: {effort}`): GPT-6's change of reasoning effort from that
  point on, until the next one (`effort_updates`).

The latest turn is what follows the last item the model produced (an assistant message, a
function / custom tool call or a reasoning item): its user and developer messages are the
user turn, its tool outputs the tool results. Codex sends a developer message to steer a
turn, so it counts as user-authored there; in the full transcript it is system text. The
developer messages that open a conversation, before its first user message, are its system
prompt and never user-authored: Codex 0.171 sends its base instructions as one (and no
`instructions`), which read as the first turn's ask would make it score as 17 KB of text.

Pure and junk-tolerant like `transcript.py`, whose hygiene (`strip_injected`) applies; on
top of it, a user or developer text that is Codex's own context (`hygiene.is_agent_context`:
AGENTS.md, permissions, environment, …) is not user-authored and is skipped in user and
developer messages (a developer message's text still counts as system text in the full
transcript). After Codex compacts a conversation, the user message that carries its summary
(`hygiene.is_compaction_summary`) stands for the turns it replaced: the latest turn starts
after it, and like the instruction that asked for it, it is never user-authored there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from orca_cli.types import MAPPING
from orca_cli.wire.hygiene import (
    COMPACTION_HEADS,
    COMPACTION_OPENERS,
    is_agent_context,
    is_compaction_summary,
)

__all__ = ["MODEL_ITEMS", "declared_tools", "declares_tools", "effort_updates", "input_items",
           "plain_payload", "read_responses_latest", "read_responses_opening",
           "read_responses_transcript"]

# Items the model produced: a latest-turn walk stops at the first of them.
MODEL_ITEMS = frozenset({"function_call", "custom_tool_call", "reasoning"})
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})

Keep = Callable[[str, list[str]], None]


def input_items(body: Mapping[str, Any]) -> list[Any]:
    """`input` as a list of items: a string is one user message; junk is no items."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    return raw if isinstance(raw, list) else []


def _declarations(body: Mapping[str, Any]) -> Iterator[list[Any]]:
    top = body.get("tools")
    if isinstance(top, list) and top:
        yield top
    raw = body.get("input")
    for item in raw if raw.__class__ is list else ():  # a parsed body: dicts and lists only
        if item.__class__ is dict and item.get("type") == "additional_tools":
            tools = item.get("tools")
            if isinstance(tools, list) and tools:
                yield tools


def declared_tools(body: Mapping[str, Any]) -> list[list[Any]]:
    """The tool definitions of a Responses body, one list per place that declares them:
    the top-level `tools`, then each `additional_tools` input item's, in order. Empty lists
    are left out; `[]` when the body declares no tool."""
    return list(_declarations(body))


def declares_tools(body: Mapping[str, Any]) -> bool:
    """Whether `declared_tools(body)` is not empty, stopping at the first declaration (Codex's
    `additional_tools` item opens `input`)."""
    return next(_declarations(body), None) is not None


def effort_updates(body: Mapping[str, Any]) -> list[Any]:
    """The efforts of a Responses body's `configuration_update` input items, in order (GPT-6
    Astra's mid-conversation effort: each holds from its place until the next); the last is
    the one this response runs at."""
    raw = body.get("input")
    out: list[Any] = []
    for item in raw if raw.__class__ is list else ():
        if item.__class__ is dict and item.get("type") == "configuration_update":
            reasoning = item.get("reasoning")
            out.append(reasoning.get("effort") if isinstance(reasoning, MAPPING) else None)
    return out


def item_kind(item: Mapping[str, Any]) -> str:
    """The item's `type`; an item with a `role` and no `type` is a `message` (as the API
    accepts `{role, content}` items)."""
    kind = item.get("type")
    if isinstance(kind, str):
        return kind
    return "message" if "role" in item else ""


def _role(item: Mapping[str, Any]) -> str:
    role = item.get("role")
    return role if isinstance(role, str) else ""


def read_parts(content: Any, out: list[str], keep: Keep) -> None:
    """A string, or a list of text parts (`input_text`, `output_text`, `text`)."""
    if isinstance(content, str):
        keep(content, out)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, MAPPING) and part.get("type") in _TEXT_PARTS:
                text = part.get("text")
                if isinstance(text, str):
                    keep(text, out)
            elif isinstance(part, str):
                keep(part, out)


# OpenAI's encrypted content: one run of base64 (a text has spaces or punctuation).
_CIPHERTEXT = re.compile(r"[A-Za-z0-9+/=_-]{40,}")


def plain_payload(part: Any) -> str | None:
    """The text of an `agent_message`'s `encrypted_content` part when it is not OpenAI's
    ciphertext (a parent served on another maker's model wrote it in plain text), else None."""
    value = part.get("encrypted_content") if isinstance(part, MAPPING) else None
    return value if isinstance(value, str) and not _CIPHERTEXT.fullmatch(value) else None


def _agent_parts(content: Any, out: list[str], keep: Keep) -> None:
    """An `agent_message`'s text parts and its plain-text payload."""
    read_parts(content, out, keep)
    for part in content if isinstance(content, list) else ():
        if isinstance(part, MAPPING) and part.get("type") == "encrypted_content":
            text = plain_payload(part)
            if text:
                keep(text, out)


def _authored(keep: Keep, *, turn: bool = False) -> Keep:
    """`keep`, then drop what is agent context rather than typed by the person; with `turn`
    (the latest turn's and the opening ask's readers) an agent's compaction instruction or
    summary too."""

    def keep_authored(text: str, out: list[str]) -> None:
        kept: list[str] = []
        keep(text, kept)
        for t in kept:
            if turn and t[:1] in COMPACTION_HEADS and t.startswith(COMPACTION_OPENERS):
                continue
            if not is_agent_context(t):
                out.append(t)

    return keep_authored


def _is_summary(item: Mapping[str, Any]) -> bool:
    """A user message whose first text is an agent's compaction summary."""
    content = item.get("content")
    if isinstance(content, list) and content and isinstance(content[0], MAPPING):
        content = content[0].get("text")
    return (isinstance(content, str) and content[:1] in COMPACTION_HEADS
            and is_compaction_summary(content))


def read_responses_latest(
    body: Mapping[str, Any], keep: Keep
) -> tuple[list[str], list[str], int, bool]:
    """(user texts, tool results, item count, whether the turn follows a compaction summary)
    of the latest turn, in transcript order."""
    items = input_items(body)
    start = len(items)
    compacted = False
    while start > 0:
        item = items[start - 1]
        if isinstance(item, MAPPING):
            kind = item_kind(item)
            if kind in MODEL_ITEMS or (kind == "message" and _role(item) == "assistant"):
                break
            if kind == "message" and item.get("role") == "user" and _is_summary(item):
                compacted = True
                break
        start -= 1
    users: list[str] = []
    tools: list[str] = []
    keep_authored = _authored(keep, turn=True)
    # A conversation's opening developer messages (before its first user message, in a
    # request that does not continue a stored response) are its system prompt, not a steer:
    # Codex 0.171 sends its ~17 KB base instructions so, with no `instructions`.
    opening = start == 0 and body.get("previous_response_id") is None
    for item in items[start:]:
        if not isinstance(item, MAPPING):
            continue
        kind = item_kind(item)
        if kind == "message":
            role = _role(item)
            if role == "user":
                opening = False
                read_parts(item.get("content"), users, keep_authored)
            elif role == "developer" and not opening:
                read_parts(item.get("content"), users, keep_authored)
        elif kind in _OUTPUT_ITEMS:
            read_parts(item.get("output"), tools, keep)
        elif kind == "agent_message":  # another agent's message: read like a tool's result
            _agent_parts(item.get("content"), tools, keep)
    return users, tools, len(items), compacted


def read_responses_opening(body: Mapping[str, Any], keep: Keep) -> list[str]:
    """The user-authored texts of the first user message that has any (Codex's own context
    messages — AGENTS.md, environment, permissions — are skipped): the conversation's ask. A
    Codex sub-agent's conversation opens with no such message but with the `agent_message`
    that gives it its task (`Message Type: NEW_TASK`, its task name, the sender): that text
    is its ask, so each sub-agent is a conversation of its own under the parent's session."""
    keep_authored = _authored(keep, turn=True)
    for item in input_items(body):
        if not isinstance(item, MAPPING):
            continue
        kind = item_kind(item)
        if kind == "agent_message" or (kind == "message" and _role(item) == "user"):
            texts: list[str] = []
            if kind == "agent_message":
                _agent_parts(item.get("content"), texts, keep)
            else:
                read_parts(item.get("content"), texts, keep_authored)
            if texts:
                return texts
    return []


def read_responses_transcript(
    body: Mapping[str, Any], keep: Keep
) -> tuple[list[str], list[str], int, int]:
    """(system texts, message texts, tool-call chars, item count) of the whole request."""
    system: list[str] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        keep(instructions, system)
    texts: list[str] = []
    call_chars = 0
    keep_authored = _authored(keep)
    items = input_items(body)
    for item in items:
        if not isinstance(item, MAPPING):
            continue
        kind = item_kind(item)
        if kind == "message":
            if _role(item) in _SYSTEM_ROLES:
                read_parts(item.get("content"), system, keep)
            else:
                read_parts(item.get("content"), texts, keep_authored)
        elif kind in _OUTPUT_ITEMS:
            read_parts(item.get("output"), texts, keep)
        elif kind == "agent_message":
            _agent_parts(item.get("content"), texts, keep)
        elif kind == "function_call":
            args = item.get("arguments")
            call_chars += len(args) if isinstance(args, str) else 0
        elif kind == "custom_tool_call":
            text = item.get("input")
            call_chars += len(text) if isinstance(text, str) else 0
        # reasoning (encrypted_content, summaries) and unknown items: nothing is read
    return system, texts, call_chars, len(items)
