"""Side-request rules: `match_housekeeping` (SPEC §14.1)."""

from __future__ import annotations

from orca_cli.config.housekeeping import DEFAULT_HOUSEKEEPING, HousekeepingRule
from orca_cli.routing.side import match_housekeeping

TITLE = HousekeepingRule("title", "t", ("You are a title generator",))
SMALL = HousekeepingRule("small", "s", ("Summarize",), no_tools=False, max_tokens_le=100)


def _name(rule: HousekeepingRule | None) -> str | None:
    return None if rule is None else rule.name


def test_opening_words_match_ignoring_case_and_whitespace() -> None:
    text = "  you are a   TITLE\ngenerator. You output ONLY a thread title."
    assert _name(match_housekeeping([TITLE], text, False, None)) == "title"


def test_words_inside_the_prompt_do_not_match_only_openings_do() -> None:
    text = "Help the user. You are a title generator only on Sundays."
    assert match_housekeeping([TITLE], text, False, None) is None


def test_a_later_system_block_opening_matches() -> None:
    text = ("You are Claude Code, Anthropic's official CLI for Claude.\n\n"
            "Analyze if this message indicates a new conversation topic. If it does, ...")
    assert _name(match_housekeeping(DEFAULT_HOUSEKEEPING, text, False, 32000)) == (
        "claude-code-topic")


def test_the_first_instruction_is_read_when_the_system_prompt_does_not_match() -> None:
    instruction = ("You are a helpful assistant. You will be presented with a user prompt, and "
                   "your job is to provide a short title for a task that will be created")
    got = match_housekeeping(DEFAULT_HOUSEKEEPING, "", False, None,
                             first_instruction=instruction)
    assert _name(got) == "codex-title"


def test_tools_exclude_a_no_tools_rule() -> None:
    text = "You are a title generator."
    assert match_housekeeping([TITLE], text, True, None) is None
    assert _name(match_housekeeping([TITLE], text, False, None)) == "title"


def test_max_tokens_le_bounds_the_request_and_a_missing_limit_does_not_match() -> None:
    assert _name(match_housekeeping([SMALL], "Summarize this", True, 100)) == "small"
    assert match_housekeeping([SMALL], "Summarize this", True, 101) is None
    assert match_housekeeping([SMALL], "Summarize this", True, None) is None


def test_the_first_matching_rule_in_order_wins_and_no_rules_match_nothing() -> None:
    other = HousekeepingRule("other", "o", ("You are a title",))
    text = "You are a title generator"
    assert _name(match_housekeeping([other, TITLE], text, False, None)) == "other"
    assert _name(match_housekeeping([TITLE, other], text, False, None)) == "title"
    assert match_housekeeping([], text, False, None) is None


def test_shipped_rules_recognise_each_agents_housekeeping_and_not_a_main_turn() -> None:
    cases = {
        "claude-code-title": "Generate a concise, sentence-case title for this session.",
        "opencode-title": "You are a title generator. You output ONLY a thread title.",
        "aider-commit": "You are an expert software engineer that generates concise, one-line "
                        "Git commit messages based on the provided diffs.",
        "aider-summarize": "*Briefly* summarize this partial conversation about programming.\n"
                           "Include less detail about older parts and more detail about the "
                           "most recent messages.",
        "cline-commit": "You are a helpful assistant that generates informative git commit "
                        "messages based on git diffs output.",
    }
    for name, text in cases.items():
        assert _name(match_housekeeping(DEFAULT_HOUSEKEEPING, text, False, None)) == name
    main = "You are Claude Code, Anthropic's official CLI for Claude.\n\nYou are an agent..."
    assert match_housekeeping(DEFAULT_HOUSEKEEPING, main, False, None) is None
    assert match_housekeeping(DEFAULT_HOUSEKEEPING, cases["opencode-title"], True, None) is None


def test_a_title_schema_matches_whatever_the_prompt_says() -> None:
    from orca_cli.config.housekeeping import DEFAULT_HOUSEKEEPING

    rule = match_housekeeping(DEFAULT_HOUSEKEEPING, "You are a coding agent running in the",
                              False, None, schema_keys=frozenset({"title"}))
    assert rule is not None and rule.name == "claude-code-title"
    assert match_housekeeping(DEFAULT_HOUSEKEEPING, "You are a coding agent", False, None,
                              schema_keys=frozenset({"title", "summary"})) is None
    assert match_housekeeping(DEFAULT_HOUSEKEEPING, "You are a coding agent", True, None,
                              schema_keys=frozenset({"title"})) is None  # tools: a real turn
