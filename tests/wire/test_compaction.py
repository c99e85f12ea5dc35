"""An agent's compaction in the transcript readers: the instruction and the summary are the
agent's text, and the latest turn starts after the summary (`Turn.compacted`)."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.wire.hygiene import COMPACTION_OPENERS, is_compaction_summary
from orca_cli.wire.transcript import Api, latest_turn, opening_ask, transcript
from tests.e2e.test_compaction_http import (
    CLAUDE_COMPACT,
    CLAUDE_SUMMARY,
    CODEX_COMPACT,
    CODEX_SUMMARY,
    NEXT_ASK,
)

OPENER = "list the parser's edge cases"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _said(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


@pytest.mark.parametrize("messages", [
    # Claude Code 2.1.332: one user message, the summary among its text blocks
    [{"role": "user", "content": [_text("<system-reminder>x</system-reminder>"),
                                  _text(CLAUDE_SUMMARY), _text(NEXT_ASK)]}],
    # the summary as a message of its own (a string), the new ask in the next one
    [{"role": "user", "content": CLAUDE_SUMMARY}, {"role": "user", "content": NEXT_ASK}],
], ids=["blocks", "messages"])
@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_the_turn_after_a_summary_is_the_new_ask_alone(messages: list[dict[str, Any]],
                                                       api: Api) -> None:
    body = {"messages": messages}
    turn = latest_turn(body, api)
    assert turn.user_texts == (NEXT_ASK,) and turn.compacted and turn.is_user_turn
    # the full transcript still reads it: it is what the conversation holds now
    assert any("Primary Request" in t for t in transcript(body, api).texts)


def test_a_summary_before_the_last_answer_changes_nothing() -> None:
    """Claude Code may keep the latest exchange after the summary: the turn ends at that
    answer, as any turn does."""
    body = {"messages": [{"role": "user", "content": CLAUDE_SUMMARY},
                         {"role": "assistant", "content": "Only the first two."},
                         {"role": "user", "content": NEXT_ASK}]}
    turn = latest_turn(body, "anthropic")
    assert turn.user_texts == (NEXT_ASK,) and not turn.compacted


@pytest.mark.parametrize("api", ["anthropic", "openai"])
def test_the_request_that_asks_for_the_summary_holds_no_user_text(api: Api) -> None:
    body = {"messages": [{"role": "user", "content": OPENER},
                         {"role": "assistant", "content": "Empty input, ..."},
                         {"role": "user", "content": CLAUDE_COMPACT}]}
    turn = latest_turn(body, api)
    assert turn.user_texts == () and not turn.is_user_turn and not turn.is_tool_continuation
    assert not turn.compacted


def test_codexs_summary_ends_the_turn_and_keeps_the_opening_ask() -> None:
    body = {"input": [_said("user", OPENER), _said("user", "which do the tests cover?"),
                      _said("user", CODEX_SUMMARY), _said("user", NEXT_ASK)]}
    turn = latest_turn(body, "responses")
    assert turn.user_texts == (NEXT_ASK,) and turn.compacted
    assert opening_ask(body, "responses") == OPENER
    request = {"input": [_said("user", OPENER), _said("assistant", "Empty input, ..."),
                         _said("user", CODEX_COMPACT)]}
    assert latest_turn(request, "responses").user_texts == ()


def test_only_the_agents_own_openers_count() -> None:
    assert is_compaction_summary(CLAUDE_SUMMARY) and is_compaction_summary(CODEX_SUMMARY)
    assert all(t.startswith(COMPACTION_OPENERS) for t in (CLAUDE_COMPACT, CODEX_COMPACT))
    assert not is_compaction_summary(CLAUDE_COMPACT)
    quoted = f"Why does Codex say: {CODEX_SUMMARY}"
    assert not quoted.startswith(COMPACTION_OPENERS)
    body = {"messages": [{"role": "user", "content": quoted}]}
    turn = latest_turn(body, "openai")
    assert turn.user_texts == (quoted,) and not turn.compacted
