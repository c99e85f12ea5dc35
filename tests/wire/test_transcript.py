"""Scoring text extraction from both wire formats (SPEC §4; §1.1 format detection)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from orca_cli.routing.features import Scorer
from orca_cli.wire.transcript import (
    Transcript,
    Turn,
    detect_api,
    has_tools,
    latest_turn,
    opening_ask,
    opening_fingerprint,
    strip_injected,
    transcript,
)

SYS = "You are a coding agent."


# ------------------------------------------------------------------ hygiene


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("plain text", "plain text"),
        ("<system-reminder>x</system-reminder>ask", "ask"),
        ("a\n<system-reminder>\nline\nline\n</system-reminder>\nb", "a\n\nb"),
        ("<system-reminder>1</system-reminder>keep<system-reminder>2</system-reminder>", "keep"),
        ("<environment_context><cwd>/x</cwd></environment_context>\nhi", "hi"),
        ("<system-reminder>never closed", "<system-reminder>never closed"),  # left alone
        ("talk about <system-reminder> tags", "talk about <system-reminder> tags"),
        ("<system-reminder>only</system-reminder>", ""),
    ],
)
def test_strip_injected_removes_closed_blocks_only(text: str, clean: str) -> None:
    assert strip_injected(text) == clean


def test_a_text_without_blocks_is_returned_as_the_same_object() -> None:
    text = "no reminders here " * 100
    assert strip_injected(text) is text


# ------------------------------------------------------------------ OpenAI


def _openai(*messages: dict[str, Any], tools: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "system", "content": SYS},
                                                       *messages]}
    if tools:
        body["tools"] = [{"type": "function", "function": {"name": "sh", "parameters": {}}}]
    return body


def test_openai_latest_turn_is_what_follows_the_last_assistant() -> None:
    body = _openai(
        {"role": "user", "content": "old ask"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "out 1"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "out 2"}]},
        {"role": "user", "content": [{"type": "text", "text": "now this"},
                                     {"type": "image_url", "image_url": {"url": "x"}}]},
    )
    turn = latest_turn(body, "openai")
    assert turn == Turn(("now this",), ("out 1", "out 2"), 6)
    assert turn.is_user_turn and not turn.is_tool_continuation
    assert turn.chars == len("now this") + len("out 1") + len("out 2")


def test_openai_first_turn_has_no_assistant_and_skips_system_messages() -> None:
    body = _openai({"role": "developer", "content": "dev rules"}, {"role": "user", "content": "hi"})
    assert latest_turn(body, "openai") == Turn(("hi",), (), 3)


def test_openai_tool_only_turn_is_a_continuation() -> None:
    body = _openai({"role": "user", "content": "ask"},
                   {"role": "assistant", "content": "running"},
                   {"role": "tool", "tool_call_id": "c", "content": "ok"})
    turn = latest_turn(body, "openai")
    assert turn.is_tool_continuation and not turn.is_user_turn


def test_a_trailing_assistant_message_leaves_an_empty_turn() -> None:
    body = _openai({"role": "user", "content": "ask"}, {"role": "assistant", "content": "pre"})
    turn = latest_turn(body, "openai")
    assert turn == Turn((), (), 3)
    assert not turn.is_user_turn and not turn.is_tool_continuation


def test_openai_transcript_reads_system_developer_text_and_tool_call_arguments() -> None:
    args = '{"command": "go build ./..."}'
    body = _openai(
        {"role": "developer", "content": [{"type": "text", "text": "dev"}]},
        {"role": "user", "content": "ask"},
        {"role": "assistant", "content": "ok", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "sh", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "c", "content": "result"},
    )
    t = transcript(body, "openai")
    assert t.system == f"{SYS}\ndev"
    assert t.texts == ("ask", "ok", "result")
    assert t.call_chars == len(args)
    assert t.tools_chars == len(orjson.dumps(body["tools"]))
    assert t.has_tools and t.message_count == 5
    assert t.chars == len(t.system) + t.tools_chars + t.call_chars + len("askokresult")


def test_openai_ignores_a_top_level_system_key() -> None:
    body = {"system": "not openai", "messages": [{"role": "user", "content": "x"}]}
    assert transcript(body, "openai").system == ""


# ------------------------------------------------------------------ Anthropic


def _anthropic(*messages: dict[str, Any], system: Any = SYS) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "system": system, "messages": list(messages),
            "tools": [{"name": "sh", "input_schema": {"type": "object"}}]}


def test_anthropic_latest_turn_reads_text_and_tool_result_blocks() -> None:
    body = _anthropic(
        {"role": "user", "content": "old"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "tool_use", "id": "t1", "name": "sh", "input": {"command": "ls"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "string result"},
            {"type": "tool_result", "tool_use_id": "t2", "content": [
                {"type": "text", "text": "block result"},
                {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]},
            {"type": "text", "text": "and a question"},
            {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
        ]},
    )
    turn = latest_turn(body, "anthropic")
    assert turn == Turn(("and a question",), ("string result", "block result"), 3)


def test_anthropic_tool_results_across_several_user_messages_keep_their_order() -> None:
    body = _anthropic(
        {"role": "assistant", "content": "x"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "1"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "2"}]},
    )
    assert latest_turn(body, "anthropic").tool_results == ("1", "2")


@pytest.mark.parametrize("system", [SYS, [{"type": "text", "text": SYS,
                                          "cache_control": {"type": "ephemeral"}}]])
def test_anthropic_transcript_reads_system_text_tool_use_inputs_and_skips_thinking(
    system: Any,
) -> None:
    body = _anthropic(
        {"role": "user", "content": "ask"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "long private reasoning", "signature": "s"},
            {"type": "text", "text": "calling"},
            {"type": "tool_use", "id": "t", "name": "sh", "input": {"command": "ls -la"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "a b"}]},
        system=system,
    )
    t = transcript(body, "anthropic")
    assert t == Transcript(
        system=SYS, texts=("ask", "calling", "a b"),
        tools_chars=len(orjson.dumps(body["tools"])),
        call_chars=len(orjson.dumps({"command": "ls -la"})), has_tools=True, message_count=3,
    )


CLINE_ENV = ("<environment_details>\n# VSCode Visible Files\nsrc/parser.ts\n\n# Current Time\n"
             "12/6/2026, 9:00:00 AM\n\n# Current Working Directory (/repo) Files\n"
             + "\n".join(f"src/m{i}/handler_{j}.ts" for i in range(40) for j in range(8))
             + "\n</environment_details>")


def test_clines_environment_details_are_not_the_ask_and_leave_tool_results_alone() -> None:
    """Cline, Roo Code and Kilo Code append `<environment_details>` (on a task's first message
    the whole file tree) to every user message and tool result: the first ask is the task, and
    a tool result followed by the block is a tool continuation, in both formats."""
    task = "<task>\nFix the typo in README\n</task>"
    first = _anthropic({"role": "user", "content": [{"type": "text", "text": task},
                                                    {"type": "text", "text": CLINE_ENV}]})
    assert latest_turn(first, "anthropic").user_texts == (task,)
    cont = _anthropic(
        *first["messages"],
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read",
                                           "input": {"path": "README.md"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "Thsi is a typo."},
            {"type": "text", "text": CLINE_ENV}]})
    delta = Scorer().delta(cont, "anthropic")
    assert delta.is_tool_continuation and not delta.is_user_turn
    # Cline's OpenAI provider sends the tool result as a `tool` message and the block as a
    # user message after it
    oa = _openai(
        {"role": "user", "content": [{"type": "text", "text": task},
                                     {"type": "text", "text": CLINE_ENV}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Thsi is a typo."},
        {"role": "user", "content": [{"type": "text", "text": CLINE_ENV}]})
    delta = Scorer().delta(oa, "openai")
    assert delta.is_tool_continuation and delta.tool_result_texts == ("Thsi is a typo.",)
    assert Scorer().delta(first, "anthropic").difficulty.score < 0.35


def test_clines_text_protocol_tool_results_are_tool_results() -> None:
    """With tools called in XML inside the assistant's text, Cline (Roo Code, Kilo Code) sends
    a tool's output back as text blocks after a `[tool for '…'] Result:` marker: a tool
    continuation, in both formats; text before the marker stays the user's."""
    called = {"role": "assistant", "content": "<read_file>\n<path>README.md</path>\n</read_file>"}
    output = "# Readme\nThsi is a typo."
    body = _anthropic(
        {"role": "user", "content": [{"type": "text", "text": "<task>\nfix it\n</task>"}]},
        called,
        {"role": "user", "content": [
            {"type": "text", "text": "[read_file for 'README.md'] Result:"},
            {"type": "text", "text": output},
            {"type": "text", "text": CLINE_ENV}]})
    turn = latest_turn(body, "anthropic")
    assert turn.user_texts == () and turn.tool_results == (output,)
    assert Scorer().delta(body, "anthropic").is_tool_continuation
    oa = _openai(
        {"role": "user", "content": [{"type": "text", "text": "<task>\nfix it\n</task>"}]},
        called,
        {"role": "user", "content": [
            {"type": "text", "text": "also keep the heading"},
            {"type": "text", "text": "[execute_command for 'npm test'] Result:"},
            {"type": "text", "text": "FAIL src/parser.test.ts"}]})
    turn = latest_turn(oa, "openai")
    assert turn.user_texts == ("also keep the heading",)
    assert turn.tool_results == ("FAIL src/parser.test.ts",)
    # the full transcript still reads the output as message text
    assert "FAIL src/parser.test.ts" in transcript(oa, "openai").texts


def test_injected_blocks_are_removed_everywhere_and_the_body_is_not_mutated() -> None:
    r = "<system-reminder>noise</system-reminder>"
    body = _anthropic(
        {"role": "user", "content": [{"type": "text", "text": f"{r}ask"}]},
        {"role": "assistant", "content": f"ok{r}"},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text",
                                                                   "text": f"out{r}"}]},
            {"type": "text", "text": r}]},
        system=f"{SYS}{r}",
    )
    before = copy.deepcopy(body)
    assert latest_turn(body, "anthropic") == Turn((), ("out",), 3)
    t = transcript(body, "anthropic")
    assert t.system == SYS and t.texts == ("ask", "ok", "out")
    assert body == before


# ------------------------------------------------------------------ detection and tools


@pytest.mark.parametrize(
    ("body", "api"),
    [
        ({"system": "x", "messages": []}, "anthropic"),
        ({"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]},
         "anthropic"),
        ({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "input": {}}]}]},
         "anthropic"),
        ({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64"}}]}]}, "anthropic"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "openai"),
        ({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [
            {"type": "text", "text": "hi"}]}]}, "openai"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "openai"),
        ({"messages": [{"role": "assistant", "tool_calls": []}]}, "openai"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}, "openai"),
        ({"messages": "junk"}, "openai"),
        ([], "openai"),
    ],
)
def test_detect_api(body: Any, api: str) -> None:
    assert detect_api(body) == api


@pytest.mark.parametrize(("tools", "expected"), [
    ([{"name": "x"}], True), ([], False), (None, False), ("x", False), ({"a": 1}, False)])
def test_has_tools_needs_a_non_empty_list(tools: Any, expected: bool) -> None:
    assert has_tools({"tools": tools}) is expected
    assert has_tools("not a body") is False


@pytest.mark.parametrize("body", [None, 3, "x", [], {}, {"messages": {"a": 1}},
                                  {"messages": [None, 1, {"role": ["x"]}, {"content": 5}]}])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_junk_yields_empty_extractions(body: Any, api: str) -> None:
    turn = latest_turn(body, api)  # type: ignore[arg-type]
    assert turn.user_texts == () and turn.tool_results == ()
    t = transcript(body, api)  # type: ignore[arg-type]
    assert t.texts == () and t.system == "" and not t.has_tools


# ------------------------------------------------------------------ the opening ask


def test_the_opening_ask_names_the_conversation_in_every_request_of_it() -> None:
    """Claude Code: the first user message holds injected reminders and the ask; later
    requests re-send it, so the opening (and its fingerprint) stays the same."""
    first = {"system": [{"type": "text", "text": SYS}], "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>todo list empty</system-reminder>"},
            {"type": "text", "text": "find every caller of load_config"}]}]}
    later = copy.deepcopy(first)
    later["messages"] += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Grep",
                                           "input": {"pattern": "load_config"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "src/a.py:3"}]}]
    assert opening_ask(first, "anthropic") == "find every caller of load_config"
    assert opening_fingerprint(first, "anthropic") == opening_fingerprint(later, "anthropic")
    other = copy.deepcopy(first)
    other["messages"][0]["content"][1]["text"] = "why does the cache race?"
    assert opening_fingerprint(other, "anthropic") != opening_fingerprint(first, "anthropic")
    assert len(opening_fingerprint(first, "anthropic")) == 16


def test_the_opening_ask_skips_system_messages_and_tool_results() -> None:
    body = {"messages": [{"role": "system", "content": SYS},
                         {"role": "user", "content": [
                             {"type": "tool_result", "tool_use_id": "x", "content": "out"}]},
                         {"role": "user", "content": "rename cfg to config"},
                         {"role": "user", "content": "and the tests"}]}
    assert opening_ask(body, "openai") == "rename cfg to config"


@pytest.mark.parametrize("body", [None, {}, {"messages": "x"}, {"messages": [
    {"role": "user", "content": "<system-reminder>only this</system-reminder>"}]}])
@pytest.mark.parametrize("api", ["openai", "anthropic", "responses"])
def test_no_opening_ask_gives_no_fingerprint(body: Any, api: str) -> None:
    assert opening_ask(body, api) == "" and opening_fingerprint(body, api) == ""  # type: ignore[arg-type]
