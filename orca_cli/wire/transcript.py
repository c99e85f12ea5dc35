"""The text a request body offers to the difficulty scorer (SPEC §4), for both wire formats.

Two extractions, both pure and junk-tolerant (a wrong type anywhere is skipped, never raised):

* `latest_turn(body, api)` walks **back** from the end of `messages` to the last assistant
  message and collects what came after it: user-authored text and tool results. It never
  touches a message before that assistant message, so its cost grows with the turn, not with
  the transcript (SPEC §4, §12).
* `transcript(body, api)` reads everything: the system prompt, the size of the tool
  definitions, every message's text and tool results, and the size of tool-call arguments.
  It is only used when the full-transcript score is (SPEC §3 step 3).

Wire shapes read here:

* OpenAI chat completions: `messages[]` with `role` system / developer (the system prompt),
  user, assistant (`content` plus `tool_calls[].function.arguments`), tool (and the legacy
  function); `content` is a string or a list of parts `{type: "text", text}`.
* Anthropic messages: top-level `system` (a string or a list of text blocks); `messages[]`
  with `role` user / assistant, `content` a string or blocks: `text`, `tool_result` (whose
  `content` is a string or a list of blocks), `tool_use` (its `input` counts as tokens);
  `thinking`, `image` and anything else are ignored.
* OpenAI Responses: `instructions` and `input` items, read by `wire/responses_input.py`.

Hygiene (scoring only; the body is never mutated; `wire/hygiene.py`): `<system-reminder>`
(Claude Code), `<environment_context>` and `<user_instructions>` (Codex) and
`<environment_details>` (Cline, Roo Code, Kilo Code) blocks are removed from every text before
it is returned, because the agent injects them on every turn; a user message's text blocks
after Cline's `[tool for '…'] Result:` marker are that tool's output, not user text; in
Responses bodies, whole messages of Codex's own context (AGENTS.md, permissions, …) are not
user-authored text. Nor is an agent's compaction (`hygiene.COMPACTION_OPENERS`): the
instruction that asks for a summary and the summary a compacted conversation then opens with
are the agent's text, not the person's ask; `latest_turn` and `opening_ask` skip them, and the
latest turn ends at the summary as at an assistant message (`Turn.compacted`): it is what
follows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from orca_cli.immutable import immutable
from orca_cli.types import MAPPING, Api
from orca_cli.wire.hygiene import (
    COMPACTION_HEADS,
    COMPACTION_OPENERS,
    is_compaction_summary,
    is_tool_result_marker,
    strip_injected,
)
from orca_cli.wire.responses_input import (
    declared_tools,
    declares_tools,
    read_responses_latest,
    read_responses_opening,
    read_responses_transcript,
)

__all__ = [
    "Api",
    "Transcript",
    "Turn",
    "detect_api",
    "has_tools",
    "latest_turn",
    "opening_ask",
    "opening_fingerprint",
    "strip_injected",
    "transcript",
]

_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})
_TOOL_ROLES = frozenset({"tool", "function"})
_SYSTEM_ROLES = frozenset({"system", "developer"})
# Content blocks only the Anthropic format has (SPEC §1.1: they mean Anthropic).
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use"}
)


@immutable
class Turn:
    """The latest turn: what follows the last assistant message (SPEC §4 delta)."""

    user_texts: tuple[str, ...]
    tool_results: tuple[str, ...]
    message_count: int
    # The tool results a strike may read (SPEC §6.3): all but those the agent marked as
    # succeeded (an Anthropic `tool_result` with `is_error: false`, as Claude Code marks a
    # command that exited 0 or a file it read); None when that is every one of them.
    failed_or_unmarked: tuple[str, ...] | None = None
    # The turn follows an agent's compaction summary (the body may hold no assistant message,
    # yet the conversation goes on: it is no new conversation's first request).
    compacted: bool = False

    @property
    def strike_texts(self) -> tuple[str, ...]:
        return self.tool_results if self.failed_or_unmarked is None else self.failed_or_unmarked

    @property
    def is_user_turn(self) -> bool:
        """The turn holds user-authored text (SPEC §6.2 class B counts only these)."""
        return bool(self.user_texts)  # blank texts were never kept

    @property
    def is_tool_continuation(self) -> bool:
        """Only tool results follow the last assistant message; no user text."""
        return not self.is_user_turn and bool(self.tool_results)

    @property
    def chars(self) -> int:
        return sum(map(len, self.user_texts)) + sum(map(len, self.tool_results))


@immutable
class Transcript:
    """Everything the full-transcript scorer reads (SPEC §4)."""

    system: str
    texts: tuple[str, ...]  # every message's text and tool results, in order
    tools_chars: int  # the JSON size of the tool definitions
    call_chars: int  # tool-call arguments / tool_use inputs: tokens, not text features
    has_tools: bool
    message_count: int

    @property
    def chars(self) -> int:
        return len(self.system) + self.tools_chars + self.call_chars + sum(map(len, self.texts))


def has_tools(body: Any) -> bool:
    """The request defines tools: a non-empty `tools` list (every format), or a Responses
    `additional_tools` input item's (`responses_input.declared_tools`)."""
    if not isinstance(body, MAPPING):
        return False
    tools = body.get("tools")
    if isinstance(tools, list) and len(tools) > 0:
        return True
    return isinstance(body.get("input"), list) and declares_tools(body)


def detect_api(body: Any) -> Api:
    """SPEC §1.1: a top-level `system`, or content blocks only Anthropic has, mean Anthropic;
    `input` or `instructions` without `messages` mean the Responses API;
    OpenAI-only shapes (tool / system / developer roles, `tool_calls`) and anything
    ambiguous mean OpenAI."""
    if not isinstance(body, MAPPING):
        return "openai"
    if "system" in body:
        return "anthropic"
    if "messages" not in body and ("input" in body or "instructions" in body):
        return "responses"
    messages = body.get("messages")
    if not isinstance(messages, list):
        return "openai"
    for m in messages:
        if not isinstance(m, MAPPING):
            continue
        if _kind(m, "role") in _TOOL_ROLES or _kind(m, "role") in _SYSTEM_ROLES or "tool_calls" in m:
            return "openai"
        content = m.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, MAPPING):
                    continue
                kind = _kind(block, "type")
                if kind in _ANTHROPIC_BLOCKS or (kind == "image" and "source" in block):
                    return "anthropic"
    return "openai"


def latest_turn(body: Any, api: Api) -> Turn:
    """Walk back from the end of `messages` to the last assistant message (exclusive)."""
    if api == "responses":
        if not isinstance(body, MAPPING):
            return Turn((), (), 0)
        r_users, r_tools, count, compacted = read_responses_latest(body, _keep)
        return Turn(tuple(r_users), tuple(r_tools), count, None, compacted)
    messages = body.get("messages") if isinstance(body, MAPPING) else None
    if not isinstance(messages, list):
        return Turn((), (), 0)
    n = len(messages)
    # per message, newest message first: (user texts, tool results, those marked succeeded)
    chunks: list[tuple[list[str], list[str], list[str]]] = []
    compacted = False
    i = n - 1
    while i >= 0:
        m = messages[i]
        i -= 1
        if not isinstance(m, MAPPING):
            continue
        role = _kind(m, "role")
        if role == "assistant":
            break
        users: list[str] = []
        tools: list[str] = []
        passed: list[str] = []
        if role == "user":
            compacted = _read_user(m.get("content"), users, tools, passed, authored=True)
        elif role in _TOOL_ROLES and api == "openai":
            _read_text(m.get("content"), tools)
        if users or tools:
            chunks.append((users, tools, passed))
        if compacted:
            break
    if len(chunks) == 1:  # the common case: one message after the assistant
        users, tools, passed = chunks[0]
        return Turn(tuple(users), tuple(tools), n, _unmarked(tools, passed), compacted)
    all_users: list[str] = []
    all_tools: list[str] = []
    all_passed: list[str] = []
    for users, tools, passed in reversed(chunks):  # back in transcript order
        all_users += users
        all_tools += tools
        all_passed += passed
    return Turn(tuple(all_users), tuple(all_tools), n, _unmarked(all_tools, all_passed),
                compacted)


def _unmarked(tools: list[str], passed: list[str]) -> tuple[str, ...] | None:
    """The tool results not marked as succeeded (None: none was); `passed` holds the marked
    ones' texts, each also in `tools`, in the same order."""
    if not passed:
        return None
    out: list[str] = []
    k = 0
    for text in tools:
        if k < len(passed) and text is passed[k]:
            k += 1
        else:
            out.append(text)
    return tuple(out)


def opening_ask(body: Any, api: Api) -> str:
    """The conversation's opening ask: the user-authored text of its first user message that
    has any (injected blocks removed; tool results are not asked). Every request of one
    conversation re-sends the same history, so this names the conversation — a sub-agent
    under the same session id opens with its own ask. Walks forward and stops there; ""
    when there is none."""
    if not isinstance(body, MAPPING):
        return ""
    if api == "responses":
        return "\n".join(read_responses_opening(body, _keep))
    messages = body.get("messages")
    if not isinstance(messages, list):
        return ""
    for m in messages:
        if isinstance(m, MAPPING) and _kind(m, "role") == "user":
            users: list[str] = []
            _read_user(m.get("content"), users, [], authored=True)
            if users:
                return "\n".join(users)
    return ""


def opening_fingerprint(body: Any, api: Api) -> str:
    """16 hex characters of sha256 over `opening_ask`; "" when the body has no ask."""
    ask = opening_ask(body, api)
    if not ask:
        return ""
    return hashlib.sha256(ask.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def transcript(body: Any, api: Api) -> Transcript:
    """The whole request, for the full-transcript score."""
    if not isinstance(body, MAPPING):
        return Transcript("", (), 0, 0, False, 0)
    if api == "responses":
        return _responses_transcript(body)
    system: list[str] = []
    if api == "anthropic":
        _read_text(body.get("system"), system)
    texts: list[str] = []
    call_chars = 0
    messages = body.get("messages")
    if not isinstance(messages, list):
        messages = []
    for m in messages:
        if not isinstance(m, MAPPING):
            continue
        role = _kind(m, "role")
        content = m.get("content")
        if role in _SYSTEM_ROLES:
            if api == "openai":
                _read_text(content, system)
        elif role == "user" or role in _TOOL_ROLES:
            # A user message's tool results and a tool message are both "tool results";
            # the full scorer reads them all as one stream of message text.
            _read_user(content, texts, texts)
        elif role == "assistant":
            call_chars += _read_assistant(m, texts)
    tools = body.get("tools")
    tools_chars = _json_size(tools) if isinstance(tools, list) and tools else 0
    return Transcript(
        system="\n".join(system),
        texts=tuple(texts),
        tools_chars=tools_chars,
        call_chars=call_chars,
        has_tools=tools_chars > 0,
        message_count=len(messages),
    )


def _responses_transcript(body: Mapping[str, Any]) -> Transcript:
    system, texts, call_chars, count = read_responses_transcript(body, _keep)
    tools_chars = sum(_json_size(tools) for tools in declared_tools(body))
    return Transcript(
        system="\n".join(system),
        texts=tuple(texts),
        tools_chars=tools_chars,
        call_chars=call_chars,
        has_tools=tools_chars > 0,
        message_count=count,
    )


# ------------------------------------------------------------------------------- readers


def _read_text(content: Any, out: list[str]) -> None:
    """A string, or a list of text parts / blocks; every other part is ignored."""
    if isinstance(content, str):
        _keep(content, out)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, MAPPING) and _kind(part, "type") in _TEXT_PARTS:
                text = part.get("text")
                if isinstance(text, str):
                    _keep(text, out)
            elif isinstance(part, str):
                _keep(part, out)


def _read_user(content: Any, users: list[str], tools: list[str],
               passed: list[str] | None = None, *, authored: bool = False) -> bool:
    """A user message: its text goes to `users`, its `tool_result` blocks to `tools`, and
    (with `passed`) the texts of those marked `is_error: false` to `passed` as well. The text
    blocks after a text-protocol tool result's marker (Cline's `[read_file for 'a.ts']
    Result:`, `hygiene.is_tool_result_marker`) are that tool's output: they go to `tools`.

    With `authored` (the latest turn and the opening ask, each message read into lists of
    its own) an agent's compaction instruction or summary is skipped, the person did not
    write it, and a summary also drops what came before it in the message (Claude Code opens
    a compacted conversation's first user message with it): True when one was met."""
    if isinstance(content, str):
        if authored and content[:1] in COMPACTION_HEADS and content.startswith(COMPACTION_OPENERS):
            return is_compaction_summary(content)
        _keep(content, users)
        return False
    if not isinstance(content, list):
        return False
    out = users
    summary = False
    for block in content:
        if not isinstance(block, MAPPING):
            continue
        kind = _kind(block, "type")
        if kind in _TEXT_PARTS:
            text = block.get("text")
            if not isinstance(text, str):
                continue
            if (authored and text[:1] in COMPACTION_HEADS
                    and text.startswith(COMPACTION_OPENERS)):
                if is_compaction_summary(text):
                    summary = True
                    for seen in (users, tools, passed or []):
                        seen.clear()
            elif out is users and is_tool_result_marker(text):
                out = tools
            else:
                _keep(text, out)
        elif kind == "tool_result":
            before = len(tools)
            _read_text(block.get("content"), tools)
            if passed is not None and block.get("is_error") is False:
                passed += tools[before:]
    return summary


def _read_assistant(m: Mapping[str, Any], texts: list[str]) -> int:
    """Assistant text goes to `texts`; returns the size of its tool-call arguments."""
    content = m.get("content")
    size = 0
    if isinstance(content, str):
        _keep(content, texts)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, MAPPING):
                continue
            kind = _kind(block, "type")
            if kind in _TEXT_PARTS:
                text = block.get("text")
                if isinstance(text, str):
                    _keep(text, texts)
            elif kind == "tool_use":
                size += _json_size(block.get("input"))
    calls = m.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            fn = call.get("function") if isinstance(call, MAPPING) else None
            args = fn.get("arguments") if isinstance(fn, MAPPING) else None
            if isinstance(args, str):
                size += len(args)
    return size


def _kind(obj: Mapping[str, Any], key: str) -> str:
    """A `role` / `type` field, or "" when it is not a string (junk never raises)."""
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _keep(text: str, out: list[str]) -> None:
    """Keep `text` cleaned of injected blocks, unless nothing but whitespace is left."""
    text = strip_injected(text)
    if text and not text.isspace():
        out.append(text)


def _json_size(value: Any) -> int:
    if value is None:
        return 0
    try:
        return len(orjson.dumps(value))
    except (TypeError, ValueError):  # not JSON-able (cannot come from a parsed body)
        return len(str(value))
