"""Scoring text from OpenAI Responses API bodies (SPEC §13.1, §4) as Codex CLI sends them."""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.routing.features import Scorer
from orca_cli.wire.transcript import (
    detect_api,
    has_tools,
    latest_turn,
    opening_ask,
    transcript,
)

ENC = "gAAAAA" + "Z" * 4000  # an opaque encrypted reasoning blob


def _codex_body(*tail: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "gpt-5-codex",
        "instructions": "You are Codex, a coding agent.",
        "input": [
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "sandbox: workspace-write"}]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text",
                 "text": "<environment_context><cwd>/x</cwd></environment_context>"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "fix the failing test"}]},
            {"type": "reasoning", "summary": [], "encrypted_content": ENC},
            {"type": "function_call", "name": "shell", "call_id": "c1",
             "arguments": '{"command":["pytest"]}'},
            {"type": "function_call_output", "call_id": "c1", "output": "1 failed"},
            {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c2",
             "input": "*** Begin Patch\n*** End Patch"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done!"},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Fixed it."}]},
            *tail,
        ],
        "tools": [
            {"type": "function", "name": "shell", "parameters": {"type": "object"}},
            {"type": "custom", "name": "apply_patch",
             "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
            {"type": "web_search"},
        ],
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "019a-conv",
    }


def test_user_turn_is_the_latest_user_message() -> None:
    body = _codex_body({"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "now add a test"}]})
    turn = latest_turn(body, "responses")
    assert turn.user_texts == ("now add a test",)
    assert turn.tool_results == ()
    assert turn.is_user_turn
    assert turn.message_count == 10


def test_tool_outputs_after_a_call_are_a_tool_continuation() -> None:
    body = _codex_body(
        {"type": "function_call", "name": "shell", "call_id": "c3", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c3", "output": "ok: 3 passed"},
        {"type": "custom_tool_call_output", "call_id": "c4",
         "output": [{"type": "input_text", "text": "patched"}]},
    )
    turn = latest_turn(body, "responses")
    assert turn.user_texts == ()
    assert turn.tool_results == ("ok: 3 passed", "patched")
    assert turn.is_tool_continuation


def test_a_developer_message_steering_the_turn_is_user_authored() -> None:
    body = _codex_body({"role": "developer", "content": "stop and summarise"})
    assert latest_turn(body, "responses").user_texts == ("stop and summarise",)


def test_reasoning_ends_the_walk_and_is_never_text() -> None:
    body = _codex_body({"type": "reasoning", "encrypted_content": ENC})
    assert latest_turn(body, "responses").chars == 0
    t = transcript(body, "responses")
    assert all("ZZZZ" not in text for text in t.texts)
    assert t.chars < len(ENC)


def test_full_transcript_reads_instructions_items_and_tools() -> None:
    t = transcript(_codex_body(), "responses")
    assert t.system == "You are Codex, a coding agent.\nsandbox: workspace-write"
    # the environment_context block is agent boilerplate: stripped, so that message is gone
    assert t.texts == ("fix the failing test", "1 failed", "Done!", "Fixed it.")
    assert t.call_chars == len('{"command":["pytest"]}') + len("*** Begin Patch\n*** End Patch")
    assert t.has_tools and t.tools_chars > 0
    assert t.message_count == 9


def test_input_as_a_string_is_one_user_message() -> None:
    body = {"model": "m", "input": "write a haiku", "instructions": "be brief"}
    assert latest_turn(body, "responses").user_texts == ("write a haiku",)
    t = transcript(body, "responses")
    assert (t.system, t.texts, t.message_count) == ("be brief", ("write a haiku",), 1)
    assert not has_tools(body)


def test_junk_is_skipped_never_raised() -> None:
    for body in (None, [], {"input": 3}, {"input": [None, 1, {"type": 5}, {"role": "user"}]},
                 {"input": [{"type": "function_call_output", "output": {"x": 1}}]}):
        assert latest_turn(body, "responses").chars == 0
        assert transcript(body, "responses").chars == 0


def test_detect_api_recognises_responses_bodies() -> None:
    assert detect_api({"model": "m", "input": "hi"}) == "responses"
    assert detect_api({"model": "m", "instructions": "x", "input": []}) == "responses"
    assert detect_api({"model": "m", "messages": [], "input": "x"}) == "openai"


def test_scorer_reads_responses_bodies() -> None:
    scorer = Scorer()
    long_ask = "refactor the scheduler and explain the trade-offs " * 400
    short = scorer.delta(_codex_body({"role": "user", "content": "thanks"}), "responses")
    long = scorer.delta(_codex_body({"role": "user", "content": long_ask}), "responses")
    assert short.is_user_turn and long.is_user_turn
    assert long.score > short.score
    assert long.user_texts == (long_ask,)
    tool = scorer.delta(_codex_body({"type": "function_call_output", "output": "boom"}), "responses")
    assert tool.is_tool_continuation and tool.tool_result_texts == ("boom",)


AGENTS_MD = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nuse uv\n</INSTRUCTIONS>"


def test_codex_context_messages_are_not_the_user_turn() -> None:
    """Turn 1 of a Codex conversation: permissions (developer), AGENTS.md and environment
    (user) messages come before the ask; only the ask is user-authored."""
    body = {"instructions": "You are Codex.", "input": [
        {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<permissions instructions>\nsandbox: read-only"}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": AGENTS_MD},
            {"type": "input_text",
             "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}]},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "add a --verbose flag"}]},
    ]}
    turn = latest_turn(body, "responses")
    assert turn.user_texts == ("add a --verbose flag",)
    t = transcript(body, "responses")
    assert t.texts == ("add a --verbose flag",)
    assert "sandbox: read-only" in t.system  # developer text is still system text


CODEX_BASE = ("You are a coding agent running in the Codex CLI, a terminal-based coding "
              "assistant. You must reason step by step, analyze why tests fail and prove the "
              "fix is correct before you finish. " * 120)  # ~17 KB, as Codex 0.171 sends it


def test_developer_messages_opening_a_conversation_are_its_system_prompt() -> None:
    """Codex 0.171 sends no `instructions`: its base instructions are the first developer
    message of turn 1, before the first user message. Read as the ask, they made a one-line
    ask score like 17 KB of reasoning prose."""
    body = {"input": [
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": CODEX_BASE}]},
        {"type": "message", "role": "developer", "content": [
            {"type": "input_text", "text": "<skills_instructions>\n## Skills\n</skills_instructions>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text",
         "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}]},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Fix the typo in README"}]},
    ], "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]}
    assert latest_turn(body, "responses").user_texts == ("Fix the typo in README",)
    assert CODEX_BASE in transcript(body, "responses").system
    delta = Scorer().delta(body, "responses")
    assert delta.is_user_turn and delta.difficulty.score < 0.35
    # continuing a stored response, the request's input is only the new turn: a developer
    # message there steers it, whatever comes after
    cont = {"previous_response_id": "resp_1", "input": [
        {"role": "developer", "content": "stop and summarise"},
        {"role": "user", "content": "then list what is left"}]}
    assert latest_turn(cont, "responses").user_texts == (
        "stop and summarise", "then list what is left")
    # a developer message after the conversation's first user message steers the turn
    later = {"input": [{"role": "user", "content": "add a flag"},
                       {"role": "developer", "content": "use argparse"}]}
    assert latest_turn(later, "responses").user_texts == ("add a flag", "use argparse")


def test_a_context_only_turn_is_not_a_user_turn() -> None:
    body = _codex_body({"role": "user", "content": [
        {"type": "input_text", "text": "<turn_aborted>\nThe user interrupted.\n</turn_aborted>"}]})
    assert not latest_turn(body, "responses").is_user_turn


def test_an_ask_after_a_stripped_block_in_one_part_is_kept() -> None:
    body = {"input": [{"role": "user", "content": [{"type": "input_text",
             "text": "<environment_context>x</environment_context>\nfix the flaky test"}]}]}
    assert latest_turn(body, "responses").user_texts == ("fix the flaky test",)


def test_the_opening_ask_of_a_codex_body_is_the_first_typed_prompt() -> None:
    """Codex's developer and environment-context messages come first; its AGENTS.md message
    is context too: the opening is what the person (or the spawning agent) asked."""
    body = _codex_body()
    body["input"].insert(1, {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>"
                                       "be brief</INSTRUCTIONS>"}]})
    assert opening_ask(body, "responses") == "fix the failing test"
    assert opening_ask({"input": "list the callers of main"}, "responses") == \
        "list the callers of main"


def test_code_mode_tools_declared_by_an_input_item_are_tools() -> None:
    """Codex's code mode (tests/agents/CAPTURES.md): no `tools`, an `additional_tools` item
    first. The request defines tools (scorer, auto router); the item is no text of the
    conversation. Side-request rules read the request's own `tools` only: the TUI's title
    request carries the same item, and its title schema must still match."""
    from orca_cli.config.housekeeping import DEFAULT_HOUSEKEEPING
    from orca_cli.routing.auto.classify import hard_facts
    from orca_cli.routing.side import match_housekeeping
    from orca_cli.wire.side_facts import side_facts

    declared = [{"type": "namespace", "name": "functions", "description": "", "tools": [
        {"type": "custom", "name": "exec", "description": "Run JavaScript code."}]}]
    body = _codex_body()
    del body["tools"]
    plain = transcript(body, "responses")
    body["input"].insert(0, {"type": "additional_tools", "id": "at_1", "role": "developer",
                             "tools": declared})
    assert has_tools(body) and hard_facts(body)[0]
    title = {**body, "text": {"format": {"type": "json_schema", "name": "codex_output_schema",
                                         "schema": {"type": "object",
                                                    "properties": {"title": {}}}}}}
    facts = side_facts(title, "responses")
    assert not facts.has_tools and facts.schema_keys == frozenset({"title"})
    rule = match_housekeeping(DEFAULT_HOUSEKEEPING, facts.system_text, facts.has_tools,
                              facts.max_tokens, first_instruction=facts.first_instruction,
                              schema_keys=facts.schema_keys)
    assert rule is not None and rule.name == "claude-code-title"  # the first title rule
    full = transcript(body, "responses")
    assert full.has_tools and full.tools_chars == len(orjson.dumps(declared))
    assert (full.system, full.texts) == (plain.system, plain.texts)
    empty = {**body, "input": [{"type": "additional_tools", "tools": []}, *body["input"][1:]]}
    assert not has_tools(empty) and not transcript(empty, "responses").has_tools


def _agent_message(kind: str, author: str, recipient: str, payload: str) -> dict[str, Any]:
    """Codex 0.171's message between agents (captured, tests/agents/CAPTURES.md)."""
    return {"type": "agent_message", "id": "amsg_1", "author": author, "recipient": recipient,
            "content": [{"type": "input_text", "text": f"Message Type: {kind}\nTask name: "
                         f"{recipient}\nSender: {author}\nPayload:\n"},
                        {"type": "encrypted_content", "encrypted_content": payload}]}


def test_a_codex_sub_agent_is_a_conversation_of_its_own_and_its_messages_are_read() -> None:
    """A sub-agent's requests share the parent's session id; its task (an `agent_message`)
    is its opening ask, so it is told apart from the parent; another agent's message is read
    like a tool's result, never as the user's."""
    from orca_cli.wire.transcript import opening_fingerprint

    parent = _codex_body()
    context = parent["input"][:2]  # developer and environment messages only
    sub = {**parent, "input": [*context, _agent_message(
        "NEW_TASK", "/root", "/root/find_parser", "gAAAAB" + "x" * 60)]}
    other = {**parent, "input": [*context, _agent_message(
        "NEW_TASK", "/root", "/root/run_tests", "gAAAAB" + "x" * 60)]}
    fingerprints = {opening_fingerprint(b, "responses") for b in (parent, sub, other)}
    assert len(fingerprints) == 3 and "" not in fingerprints
    turn = latest_turn(sub, "responses")
    assert not turn.is_user_turn
    assert turn.tool_results[0].startswith("Message Type: NEW_TASK")
    assert "gAAAAB" not in " ".join(turn.tool_results)  # ciphertext is never read
    back = {**parent, "input": [*parent["input"], _agent_message(
        "FINAL_ANSWER", "/root/find_parser", "/root", "")]}
    assert opening_fingerprint(back, "responses") == opening_fingerprint(parent, "responses")
    assert "Message Type: FINAL_ANSWER" in " ".join(transcript(back, "responses").texts)


def test_a_sub_agents_plain_task_is_read_and_openai_ciphertext_is_not() -> None:
    """A parent served on another maker's model writes the task in plain text: the scorer
    reads it (a hard task keeps a strong session's sub-agent strong, `escalation._sub_agent`)."""
    parent = _codex_body()
    task = "Why does the scheduler deadlock? Find the race condition in the lock order."
    sub = {**parent, "input": [*parent["input"][:2], _agent_message(
        "NEW_TASK", "/root", "/root/debug", task)]}
    assert task in latest_turn(sub, "responses").tool_results
    assert task in " ".join(transcript(sub, "responses").texts)
    hidden = {**sub, "input": [*parent["input"][:2], _agent_message(
        "NEW_TASK", "/root", "/root/debug", "gAAAAB" + "q" * 80)]}
    assert all("gAAAAB" not in t for t in latest_turn(hidden, "responses").tool_results)
    easy = Scorer().delta(hidden, "responses").score
    assert Scorer().delta(sub, "responses").score > easy
