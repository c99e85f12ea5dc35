"""`[[housekeeping]]`: rules that recognise an agent's side requests (SPEC §14.1).

Agents mix one-purpose requests into a session — a title, a topic check, a commit message —
under the session's own id. A rule recognises one by the opening words of the system prompt
(any of its blocks) or of the first instruction, the absence of tools and, optionally, a small
`max_tokens`. The matcher is `orca_cli.routing.side.match_housekeeping`.

The defaults below ship for current agents and apply while the config has no
`[[housekeeping]]` table; a config's own rules replace them all (copy the ones to keep;
`housekeeping = []` turns detection off). `orca config show` lists the effective rules.
An agent's context compaction (its whole history plus a summarise instruction) is deliberately
not matched: it stays on the session's pinned model, where its prefix is cached.
"""

from __future__ import annotations

from orca_cli.immutable import immutable

__all__ = ["DEFAULT_HOUSEKEEPING", "HousekeepingRule"]


@immutable
class HousekeepingRule:
    """One side-request rule. `system_prefix` lists opening words or phrases (case and runs of
    whitespace ignored); `no_tools` requires a request without tools; `max_tokens_le`, when
    set, requires `max_tokens` (or its format's equivalent) at most this."""

    name: str
    agent: str = ""
    system_prefix: tuple[str, ...] = ()
    no_tools: bool = True
    max_tokens_le: int | None = None
    # Also a match: the request asks for structured output whose JSON schema has exactly these
    # property names (Claude Code's and Codex's title requests ask for `{"title": …}`).
    output_schema_keys: tuple[str, ...] = ()


_CODEX_TITLE = (
    "You are a helpful assistant. You will be presented with a user prompt, and your job is to "
    "provide a short title"
)
_AIDER_COMMIT = (
    "You are an expert software engineer that generates concise, one-line Git commit messages"
)
# Aider's history summary (aider/prompts.py `summarize`), sent to its weak model.
_AIDER_SUMMARIZE = "*Briefly* summarize this partial conversation about programming"

DEFAULT_HOUSEKEEPING: tuple[HousekeepingRule, ...] = (
    HousekeepingRule(
        "claude-code-title", "claude-code",
        ("You are naming a coding session", "Generate a concise, sentence-case title",
         "Please write a 5-10 word title", "Summarize this coding conversation"),
        output_schema_keys=("title",),
    ),
    HousekeepingRule(
        "claude-code-topic", "claude-code",
        ("Analyze if this message indicates a new conversation topic",),
    ),
    HousekeepingRule(
        "codex-title", "codex",
        (_CODEX_TITLE, "Generate a concise title for this task"),
        output_schema_keys=("title",),
    ),
    HousekeepingRule("opencode-title", "opencode", ("You are a title generator",)),
    HousekeepingRule(
        "aider-commit", "aider",
        (_AIDER_COMMIT,),
    ),
    HousekeepingRule("aider-summarize", "aider", (_AIDER_SUMMARIZE,)),
    HousekeepingRule(
        "cline-commit", "cline",
        ("You are a helpful assistant that generates informative git commit messages",),
    ),
)
