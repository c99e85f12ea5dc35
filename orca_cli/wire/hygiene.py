"""What agents inject into every turn, removed before text is scored (SPEC §4, §6.3).

The body is never mutated; only the text handed to the scorer and the strike producers is.

* `strip_injected(text)`: removes closed `<system-reminder>…</system-reminder>` (Claude Code),
  `<environment_context>…</environment_context>` and `<user_instructions>…</user_instructions>`
  (Codex CLI) and `<environment_details>…</environment_details>` (Cline, Roo Code, Kilo Code:
  open tabs, the time, the mode, on a task's first message the whole file tree, appended to
  every user message and tool result) blocks anywhere in a text, and the whitespace they leave
  at its ends. Every format gets this. A text that was only such a block is no text at all, so
  a tool result with Cline's block after it is a tool continuation, not a user turn.
* `is_agent_context(text)`: a text (already stripped) that is context Codex CLI sends as a
  user or developer message rather than something the person typed: the AGENTS.md heading
  and its `<INSTRUCTIONS>` block, permission / sandbox instructions, skills, plugins, app
  context, sub-agent notifications and turn-aborted markers. Only the Responses reader asks,
  since only Codex sends these as whole messages.
* `is_tool_result_marker(text)`: the text block that opens a tool's output in Cline's, Roo
  Code's and Kilo Code's text protocol (tools called in XML inside the assistant's text, the
  output sent back in the next user message): `[read_file for 'src/a.ts'] Result:`, then the
  output's own blocks. The transcript readers take what follows it as a tool result, as they
  take a `tool_result` block, so such a request is a tool continuation, not a user turn.
* `COMPACTION_OPENERS`: how the texts an agent writes when it compacts its context open,
  never typed by the person: the instruction that asks the model for a summary of the
  conversation (Claude Code's `/compact` and auto-compact, Codex's local compaction), and the
  summary that then stands for the conversation's earlier turns (`SUMMARY_OPENERS`,
  `is_compaction_summary`). The latest-turn and opening-ask readers take neither as user
  text, and the summary ends the latest turn as an assistant message does
  (`wire.transcript.latest_turn`).
"""

from __future__ import annotations

import re

__all__ = ["AGENT_CONTEXT_OPENERS", "COMPACTION_HEADS", "COMPACTION_OPENERS", "SUMMARY_OPENERS",
           "is_agent_context", "is_compaction_summary", "is_tool_result_marker",
           "strip_injected"]

_INJECTED_TAGS = ("system-reminder", "environment_context", "user_instructions",
                  "environment_details")
_INJECTED_OPENERS = tuple(f"<{t}>" for t in _INJECTED_TAGS)
_INJECTED = re.compile(
    "|".join(f"<{t}>.*?</{t}>" for t in _INJECTED_TAGS),
    re.DOTALL,
)
AGENT_CONTEXT_OPENERS: tuple[str, ...] = (
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "<app-context>",
    "<collaboration_mode>",
    "<skills_instructions>",
    "<plugins_instructions>",
    "<recommended_plugins>",
    "<skill>",
    "<subagent_notification>",
    "<turn_aborted>",
)


def strip_injected(text: str) -> str:
    """`text` without the per-turn blocks agents inject, and without the whitespace they
    leave at its ends; a text without them is returned as is (the check is a substring
    search, the regex runs only when a block is present). A text without `<` (most tool
    output) is settled by one byte search instead of one search per opener."""
    if "<" not in text:
        return text
    for opener in _INJECTED_OPENERS:
        if opener in text:
            return _INJECTED.sub("", text).strip()
    return text


# Cline's `${toolDescription()} Result:`: a tool name, optionally " for '<what it acted on>'"
# (a path, a command, a question: any text, newlines included), then "] Result:".
_TOOL_RESULT_MARKER = re.compile(r"\[[a-z][a-z0-9_]*(?: for .+)?\] Result:", re.DOTALL)


def is_tool_result_marker(text: str) -> bool:
    """The whole text block is a text-protocol tool result's opening line
    (`[execute_command for 'npm test'] Result:`). Two cheap tests settle nearly every text
    before the pattern runs."""
    return (text[:1] == "[" and text.endswith("] Result:")
            and _TOOL_RESULT_MARKER.fullmatch(text) is not None)


def is_agent_context(text: str) -> bool:
    """The text opens with one of `AGENT_CONTEXT_OPENERS` (leading whitespace ignored)."""
    return text.lstrip().startswith(AGENT_CONTEXT_OPENERS)


# How the agents open a compacted conversation's summary, word for word (captured from Claude
# Code 2.1.332 and Codex CLI 0.171, tests/agents/CAPTURES.md). Claude Code sends it as the
# first user message's text (its new ask follows, in the same message or the next); Codex as
# a user message of its own after the user messages it keeps, before the new one.
SUMMARY_OPENERS: tuple[str, ...] = (
    "This session is being continued from a previous conversation that ran out of context.",
    "Another language model started to solve this problem and produced a summary of its "
    "thinking process.",
)
# ... and how they ask the model for that summary (Codex's default `compact_prompt`).
COMPACTION_OPENERS: tuple[str, ...] = (
    *SUMMARY_OPENERS,
    "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.",
    "You are performing a CONTEXT CHECKPOINT COMPACTION.",
)
# Their first characters: a text opening with none of them (an agent's `<system-reminder>`, most
# asks) is settled by one set lookup, not a test of each opener (0.015 µs against 0.09).
COMPACTION_HEADS = frozenset(opener[0] for opener in COMPACTION_OPENERS)


def is_compaction_summary(text: str) -> bool:
    """The text opens with an agent's compaction summary (the agents write it first)."""
    return text.startswith(SUMMARY_OPENERS)
