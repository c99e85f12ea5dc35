"""The session id chain of SPEC §1.4: pure, no I/O, never raises on a junk body.

First that resolves wins: `X-Orca-Session` → the headers agents already send
(`AGENT_SESSION_HEADERS`: Claude Code, Codex CLI, OpenCode, Amp) → `X-Session-Id` → body
`metadata.session_id` → `prompt_cache_key` (Chat Completions and the Responses API; Codex CLI
sets it to its conversation id) → Anthropic `metadata.user_id` (the part after `_session_`) → a
derived id, `d:` + sha256 over router, tool names, system prompt and first user message (32
hex). Explicit ids are long-pin eligible; derived ones are not. The OpenAI `user` field names a
person, never a conversation: it is never read.

Codex CLI sends its conversation id as `session_id` (older releases), `session-id` (current
ones), and `conversation_id` / `thread-id` in some releases; all are read, in that order.

For a Responses body the derived id reads `instructions` and the system / developer messages
as the system prompt, and the first user text of `input` once injected blocks are stripped and
Codex's own context parts (AGENTS.md, environment, …: `hygiene.is_agent_context`) are left
out: Codex opens every conversation with such messages, which would otherwise make every
conversation in one directory the same session. Likewise Aider opens every request with its
scaffolding as user messages (`AGENT_SCAFFOLD`): its edit-format examples, ended by "I
switched to a new code base…", then its read-only files, repo map and chat files; the first
line of the first user message after them is the user's own ask (Aider appends a reminder to
the current one, and a restored history re-reads it from its Markdown log).

An id longer than 128 UTF-8 bytes or containing `{`, `}` or control characters becomes `h:` +
its sha256 hex (it would break Redis hash-tag slots); the original is kept in `raw` for traces.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

import orjson

from orca_cli.immutable import immutable
from orca_cli.types import Api
from orca_cli.wire.hygiene import is_agent_context, strip_injected
from orca_cli.wire.responses_input import input_items, item_kind

__all__ = [
    "AGENT_SESSION_HEADERS",
    "MAX_SESSION_ID_BYTES",
    "SESSION_HEADERS",
    "SessionId",
    "derive_session_id",
    "resolve_session_id",
    "sanitize_session_id",
]

MAX_SESSION_ID_BYTES = 128
# User messages an agent sends before the conversation itself, which name no conversation
# (Aider 0.86, aider/coders/base_coder.py `format_chat_chunks` and base_prompts.py): its
# examples end with `EXAMPLES_END`'s message; each of the others opens with one of these.
EXAMPLES_END = "I switched to a new code base. Please don't consider the above files"
AGENT_SCAFFOLD: tuple[str, ...] = (
    EXAMPLES_END,
    "Here are summaries of some files present in my git repository.",
    "Here are some READ ONLY files, provided for your reference.",
    "I have *added these files to the chat* so you can go ahead and edit them.",
    "I am not sharing any files that you can edit yet.",
    "Don't try and edit any existing code without asking me to add the files to the chat!",
)
_EXAMPLES_SPAN = 24  # messages after the first user message in which an examples' end is sought
# The session headers coding agents send on their own (lower-case name, agent), in chain order.
AGENT_SESSION_HEADERS: tuple[tuple[str, str], ...] = (
    ("x-claude-code-session-id", "claude-code"),
    ("session_id", "codex"),
    ("session-id", "codex"),
    ("conversation_id", "codex"),
    ("thread-id", "codex"),
    ("x-opencode-session", "opencode"),
    ("x-amp-thread-id", "amp"),
)
# Every header of the chain, in order: orca's own, the agents', then the generic one.
SESSION_HEADERS: tuple[str, ...] = (
    "x-orca-session",
    *(name for name, _ in AGENT_SESSION_HEADERS),
    "x-session-id",
)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f{}]")
_SESSION_MARK = "_session_"


@immutable
class SessionId:
    id: str  # safe for store keys
    raw: str | None  # the value as received (None for a derived id); for traces only
    source: str  # "header:<name>", "body:<path>" or "derived"
    explicit: bool  # long-pin eligible (SPEC §5)


def sanitize_session_id(raw: str) -> str:
    data = raw.encode("utf-8", "surrogatepass")
    if len(data) > MAX_SESSION_ID_BYTES or _UNSAFE.search(raw):
        return "h:" + hashlib.sha256(data).hexdigest()
    return raw


def _clean(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def _explicit(value: str, source: str) -> SessionId:
    return SessionId(sanitize_session_id(value), value, source, True)


def _from_user_id(user_id: Any) -> str | None:
    """Claude Code's `metadata.user_id`: `user_<h>_account_<uuid>_session_<uuid>`, or a JSON
    object text with a `session_id` (newer releases)."""
    text = _clean(user_id)
    if text is None:
        return None
    if text.startswith("{"):
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        return _clean(doc.get("session_id")) if isinstance(doc, dict) else None
    _, mark, rest = text.partition(_SESSION_MARK)
    return _clean(rest) if mark else None


def resolve_session_id(
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    router: str,
    api: Api,
) -> SessionId:
    """`headers` have lower-cased names. Always returns an id (derived as the last resort)."""
    for name in SESSION_HEADERS:
        value = _clean(headers.get(name))
        if value is not None:
            return _explicit(value, f"header:{name}")
    if not isinstance(body, Mapping):
        body = {}
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        value = _clean(metadata.get("session_id"))
        if value is not None:
            return _explicit(value, "body:metadata.session_id")
    if api != "anthropic":
        value = _clean(body.get("prompt_cache_key"))
        if value is not None:
            return _explicit(value, "body:prompt_cache_key")
    elif isinstance(metadata, Mapping):
        value = _from_user_id(metadata.get("user_id"))
        if value is not None:
            return _explicit(value, "body:metadata.user_id")
    return SessionId(derive_session_id(body, router=router, api=api), None, "derived", False)


def derive_session_id(body: Mapping[str, Any], *, router: str, api: Api) -> str:
    """`d:` + sha256(router, tool names, system prompt text, first user message text)[:32].

    Stable across the turns of one conversation: every input is fixed by its first turn.
    """
    if api == "responses":
        r_system, r_first = _responses_material(body)
        material = [router, _tool_names(body.get("tools")), r_system, r_first]
        return "d:" + hashlib.sha256(orjson.dumps(material)).hexdigest()[:32]
    messages = body.get("messages")
    if messages is None and api == "openai":
        messages = body.get("input")  # the Responses API
    msgs = [m for m in messages if isinstance(m, Mapping)] if isinstance(messages, list) else []
    system: list[str] = []
    if api == "anthropic":
        system.append(_text(body.get("system")))
    first_user = messages if isinstance(messages, str) else ""
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role == "user":
            first_user = _text(m.get("content"))
            first_user = _after_scaffold(msgs, i, first_user)
            break
        if api == "openai" and role in ("system", "developer"):
            system.append(_text(m.get("content")))
    if api == "openai" and isinstance(body.get("instructions"), str):
        system.append(body["instructions"])
    material = [
        router,
        _tool_names(body.get("tools")),
        "\n".join(s for s in system if s),
        first_user,
    ]
    return "d:" + hashlib.sha256(orjson.dumps(material)).hexdigest()[:32]


def _after_scaffold(msgs: list[Mapping[str, Any]], first: int, text: str) -> str:
    """The first user text at or after `msgs[first]` that is not an agent's scaffolding (see
    the module docstring); `text` (the first one's) when there is none to skip, or when only
    scaffolding follows."""
    end = -1
    if not text.startswith(AGENT_SCAFFOLD):
        for j in range(first + 1, min(len(msgs), first + 1 + _EXAMPLES_SPAN)):
            m = msgs[j]
            content = m.get("content")  # Aider sends plain strings: nothing else is read
            if m.get("role") == "user" and isinstance(content, str) and content.startswith(
                    EXAMPLES_END):
                end = j
                break
        if end < 0:
            return text  # no agent scaffolding: the first user message is the ask
    for m in msgs[max(first, end + 1):]:
        if m.get("role") == "user":
            found = _text(m.get("content"))
            if not found.startswith(AGENT_SCAFFOLD):
                # Its first line: Aider appends its reminder to the current ask, and a run
                # with --restore-chat-history re-reads the ask from its Markdown log, with
                # other trailing whitespace.
                return found.strip().split("\n", 1)[0].strip()
    return text


def _responses_material(body: Mapping[str, Any]) -> tuple[str, str]:
    """(system prompt, first user text) of a Responses body (see the module docstring)."""
    system: list[str] = []
    if isinstance(body.get("instructions"), str):
        system.append(body["instructions"])
    first_user = ""
    for item in input_items(body):
        if not isinstance(item, Mapping) or item_kind(item) != "message":
            continue
        role = item.get("role")
        if role in ("system", "developer"):
            system.append(_text(item.get("content")))
        elif role == "user":
            first_user = _authored_text(item.get("content"))
            if first_user:
                break
    return "\n".join(s for s in system if s), first_user


def _authored_text(content: Any) -> str:
    """The message's text without injected blocks and without parts of agent context."""
    parts = content if isinstance(content, list) else [content]
    kept = (strip_injected(_text([p])) for p in parts)
    return "\n".join(t for t in kept if t and not is_agent_context(t))


def _text(content: Any) -> str:
    """The text of a string or a list of content blocks (`{"type": "text", "text": ...}`)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def _tool_names(tools: Any) -> list[str]:
    names: list[str] = []
    if not isinstance(tools, list):
        return names
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        fn = tool.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else tool.get("name")
        if isinstance(name, str):
            names.append(name)
    return names
