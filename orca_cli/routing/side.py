"""Side-request detection (SPEC §14.1): does a request match a `[[housekeeping]]` rule?

Pure: the caller extracts the texts from the body of whatever wire format it arrived in and
passes them here. A rule matches when

* one of its `system_prefix` phrases opens the system prompt, or one of its blocks (the caller
  joins blocks with a blank line, so each block starts a paragraph), or the first instruction
  (the first user message, or Responses `instructions` / first input item);
  or the request asks for structured output whose schema has exactly the rule's
  `output_schema_keys` (a title request's `{"title": …}`);
* the request has no tools, when the rule says `no_tools` (the default);
* `max_tokens` is at most `max_tokens_le`, when the rule sets it (a request without a limit
  does not match such a rule).

Comparison ignores case and runs of whitespace. Only the opening of each paragraph in the
first `SCAN_CHARS` characters is compared, so a long system prompt costs little. The first
matching rule, in config order, wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from orca_cli.config.housekeeping import HousekeepingRule

__all__ = ["SCAN_CHARS", "match_housekeeping"]

SCAN_CHARS = 8192


def match_housekeeping(
    rules: Sequence[HousekeepingRule],
    system_text: str,
    has_tools: bool,
    max_tokens: int | None,
    *,
    first_instruction: str = "",
    schema_keys: frozenset[str] | None = None,
) -> HousekeepingRule | None:
    """The first rule the request matches, or None (see the module docstring).
    `schema_keys`: the property names of the structured output the request asks for."""
    openings: list[str] | None = None
    for rule in rules:
        if rule.no_tools and has_tools:
            continue
        if rule.max_tokens_le is not None and (max_tokens is None
                                               or max_tokens > rule.max_tokens_le):
            continue
        if (rule.output_schema_keys and schema_keys is not None
                and schema_keys == frozenset(rule.output_schema_keys)):
            return rule
        if openings is None:
            openings = list(_openings((system_text, first_instruction)))
        if any(o.startswith(p) for p in map(_norm, rule.system_prefix) if p for o in openings):
            return rule
    return None


def _openings(texts: Iterable[str]) -> Iterable[str]:
    """The normalised start of every paragraph of each text (within `SCAN_CHARS`)."""
    for text in texts:
        for para in text[:SCAN_CHARS].split("\n\n"):
            if para.strip():
                yield _norm(para[:512])


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()
