"""Agent-sized prefixes for `orca replay --agent-shaped` (SPEC §19).

A real coding agent sends the same large prefix on every request: Claude Code a 15–25 KB
system prompt and 15+ tool schemas, Codex about 10 KB of instructions and its tool set. The
built-in corpus uses a 2.3 KB prompt and two tools; with `agent_shaped` each session carries
one of these prefixes instead, in its agent's wire format: Claude-Code-sized Anthropic
Messages sessions, and Codex-sized Responses API sessions (the half the built-in corpus sends
as Chat Completions) whose prompt is the first `developer` input item, with no
`instructions`, as Codex CLI 0.171 sends it (tests/agents/CAPTURES.md). Every user turn is
followed by tool-result continuations (the agent's loop); the session starts with a title
side request (no tools, its own short prompt): Claude Code's under the session's id, the Codex
TUI's under a session id of its own (`codex exec` sends none); half the hard turns spawn a
search sub-agent under the same session id. So the figures show what the full-transcript
score alone would do to banding and what the banding score does.

The search sub-agent names the model its agent gives it: the main one. Claude Code's
documentation has its built-in Explore sub-agent on the small model (Haiku), but Claude Code
2.1.332 pointed at orca sends Explore's requests with the main model's name (its sub-agent
record says `"model": "claude-opus-5-5", "modelNotNamed": true`; only
`CLAUDE_CODE_SUBAGENT_MODEL=claude-haiku-4-5` names Haiku). Codex's sub-agents inherit the
main agent's model unless a custom agent file sets one. So on both formats they name the
session's router like the main conversation, where a strong session serves a sub-agent that
opens with an easy ask from its base tier (`escalation._sub_agent`).

The texts are synthetic (no vendor prompt is copied): sections of operating rules and tool
schemas of the real sizes, which is all the scorers read from a prefix.
"""

from __future__ import annotations

from typing import Any, Literal

from orca_cli.replay.texts import TOOL_SPECS
from orca_cli.replay.wire import MODEL
from orca_cli.wire.transcript import Api

__all__ = ["AGENTS", "CODEX_TITLE_SYSTEM", "SUB_AGENT_SYSTEM", "TITLE_SYSTEM", "Agent",
           "agent_api", "agent_system", "agent_tools", "sub_agent_model"]

# Side requests under the session id: the title request at session start, and sub-agents.
TITLE_SYSTEM = ("Summarize this coding conversation in a title of at most 8 words. Answer "
                "with a JSON object {\"title\": ...} and nothing else.")
CODEX_TITLE_SYSTEM = ("Generate a concise title for this task, at most 36 characters. Answer "
                      "with a JSON object {\"title\": ...} and nothing else.")
SUB_AGENT_SYSTEM = ("You are a search agent working for a coding assistant. Use the tools to "
                    "find what you are asked for and report it concisely with file paths and "
                    "line numbers. Do not modify files.")


Agent = Literal["claude-code", "codex"]
# (system prompt bytes, tools) per agent
AGENTS: dict[Agent, tuple[int, int]] = {"claude-code": (20_000, 17), "codex": (10_000, 8)}

_RULES = (
    "Follow the repository's conventions before your own; read the surrounding code first.",
    "Keep changes minimal and focused on the task; do not refactor what was not asked for.",
    "Never commit, push or rewrite history unless the user asks for it explicitly.",
    "Prefer the project's own scripts for building and testing over ad-hoc commands.",
    "When a command fails, read its output before trying again; do not repeat it blindly.",
    "Answer concisely: state what changed and where, then stop.",
    "Use the task list tool to plan multi-step work and mark items done as you go.",
    "Never print secrets or credentials; redact them if a tool output contains any.",
)
_NAMES = ("Task", "Bash", "Glob", "Grep", "LS", "Read", "Edit", "MultiEdit", "Write",
          "NotebookEdit", "WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell",
          "ExitPlanMode", "SlashCommand", "shell", "apply_patch", "update_plan", "view_image")


def agent_api(agent: Agent) -> Api:
    """The wire format the agent speaks: Claude Code the Messages API, Codex the Responses
    API."""
    return "anthropic" if agent == "claude-code" else "responses"


def agent_system(agent: Agent, base: str) -> str:
    """`base` followed by rule sections until the agent's system-prompt size."""
    size = AGENTS[agent][0]
    parts = [base]
    n = len(base)
    i = 0
    while n < size:
        section = f"\n\n# Section {i + 1}\n" + "\n".join(
            f"- {_RULES[(i + j) % len(_RULES)]}" for j in range(6))
        parts.append(section)
        n += len(section)
        i += 1
    return "".join(parts)[:size]


def agent_tools(agent: Agent) -> tuple[tuple[str, str, dict[str, Any]], ...]:
    """The built-in corpus's two tools plus schemas of a real agent's size, to its count."""
    count = AGENTS[agent][1]
    extra = []
    names = _NAMES[:12] if agent == "claude-code" else _NAMES[17:]
    for i in range(count - len(TOOL_SPECS)):
        name = names[i % len(names)] + (f"_{i // len(names)}" if i >= len(names) else "")
        desc = (f"{name}: performs one operation on the workspace and returns its result. "
                + " ".join(_RULES[:4]))
        params = {"type": "object", "properties": {
            f"arg{j}": {"type": "string", "description": _RULES[j % len(_RULES)]}
            for j in range(5)}, "required": ["arg0"]}
        extra.append((name, desc, params))
    return (*TOOL_SPECS, *extra)


def sub_agent_model(api: Api) -> str:
    """The model a search sub-agent's requests name: the session's own, under Claude Code
    (observed with 2.1.332, module docstring) and Codex alike."""
    del api
    return MODEL
