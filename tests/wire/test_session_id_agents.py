"""Agent session headers and the Responses API in the session id chain (SPEC §1.4, §13.1)."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.wire.session_id import (
    AGENT_SESSION_HEADERS,
    SESSION_HEADERS,
    SessionId,
    derive_session_id,
    resolve_session_id,
)

CODEX_FIRST_TURN: dict[str, Any] = {
    "model": "gpt-5-codex",
    "instructions": "You are Codex.",
    "input": [
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": "<permissions instructions>x"}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<user_instructions>AGENTS.md</user_instructions>"}]},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>/repo</environment_context>"}]},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "fix the build"}]},
    ],
    "tools": [{"type": "function", "name": "shell", "parameters": {}},
              {"type": "custom", "name": "apply_patch", "format": {"type": "text"}}],
    "store": False,
}


@pytest.mark.parametrize(
    ("header", "agent"),
    [
        ("x-claude-code-session-id", "claude-code"),
        ("session_id", "codex"),
        ("session-id", "codex"),
        ("conversation_id", "codex"),
        ("thread-id", "codex"),
        ("x-opencode-session", "opencode"),
        ("x-amp-thread-id", "amp"),
    ],
)
@pytest.mark.parametrize("api", ["openai", "anthropic", "responses"])
def test_each_agent_header_names_the_session(header: str, agent: str, api: str) -> None:
    assert (header, agent) in AGENT_SESSION_HEADERS
    got = resolve_session_id({header: " conv-1 "}, {"prompt_cache_key": "pck"},
                             router="coding", api=api)  # type: ignore[arg-type]
    assert got == SessionId("conv-1", "conv-1", f"header:{header}", True)
    # orca's own header still wins over every agent's
    both = resolve_session_id({header: "a", "x-orca-session": "o"}, {}, router="coding",
                              api=api)  # type: ignore[arg-type]
    assert both.id == "o"


def test_chain_order_is_orca_agents_generic() -> None:
    assert SESSION_HEADERS[0] == "x-orca-session"
    assert SESSION_HEADERS[-1] == "x-session-id"
    assert SESSION_HEADERS[1:-1] == tuple(name for name, _ in AGENT_SESSION_HEADERS)
    # Codex: the legacy spelling before the current one
    headers = {"session-id": "new", "session_id": "old"}
    assert resolve_session_id(headers, {}, router="r", api="responses").id == "old"


def test_prompt_cache_key_joins_the_chain_for_responses() -> None:
    body = {**CODEX_FIRST_TURN, "prompt_cache_key": "019a2b-conv"}
    got = resolve_session_id({}, body, router="coding", api="responses")
    assert got == SessionId("019a2b-conv", "019a2b-conv", "body:prompt_cache_key", True)
    # after explicit headers ...
    assert resolve_session_id({"x-session-id": "h"}, body, router="coding",
                              api="responses").id == "h"
    # ... and before the derived id
    plain = resolve_session_id({}, CODEX_FIRST_TURN, router="coding", api="responses")
    assert plain.source == "derived" and not plain.explicit


def test_responses_derived_id_is_stable_across_turns_and_ignores_injected_blocks() -> None:
    first = derive_session_id(CODEX_FIRST_TURN, router="coding", api="responses")
    later = {**CODEX_FIRST_TURN, "input": [
        *CODEX_FIRST_TURN["input"],
        {"type": "reasoning", "encrypted_content": "gAAA"},
        {"type": "function_call", "name": "shell", "call_id": "c", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
        {"type": "message", "role": "user", "content": "and the docs"},
    ]}
    assert derive_session_id(later, router="coding", api="responses") == first
    assert first.startswith("d:") and len(first) == 34
    other_ask = {**CODEX_FIRST_TURN, "input": [*CODEX_FIRST_TURN["input"][:3],
                                               {"role": "user", "content": "write docs"}]}
    assert derive_session_id(other_ask, router="coding", api="responses") != first
    assert derive_session_id(CODEX_FIRST_TURN, router="other", api="responses") != first
    other_instr = {**CODEX_FIRST_TURN, "instructions": "You are someone else."}
    assert derive_session_id(other_instr, router="coding", api="responses") != first


def test_responses_derived_id_from_a_string_input_and_junk() -> None:
    a = derive_session_id({"input": "hi", "instructions": "x"}, router="r", api="responses")
    assert a == derive_session_id({"input": "hi", "instructions": "x"}, router="r",
                                  api="responses")
    assert a != derive_session_id({"input": "ho", "instructions": "x"}, router="r",
                                  api="responses")
    for junk in ({}, {"input": 5}, {"input": [None, {"role": 3}]}, {"instructions": 7}):
        assert derive_session_id(junk, router="r", api="responses").startswith("d:")


def test_responses_derived_id_skips_agents_md_and_environment_parts() -> None:
    agents = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nuse uv\n</INSTRUCTIONS>"
    env = "<environment_context><cwd>/repo</cwd></environment_context>"

    def first_turn(ask: str) -> dict[str, Any]:
        return {"instructions": "You are Codex.", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": agents},
                                         {"type": "input_text", "text": env}]},
            {"role": "user", "content": [{"type": "input_text", "text": ask}]},
        ]}

    a = derive_session_id(first_turn("fix the build"), router="r", api="responses")
    b = derive_session_id(first_turn("write the docs"), router="r", api="responses")
    assert a != b  # two conversations in one directory are two sessions


def _aider(ask: str, *, repo_map: str = "src/app.py:\n  def main()", history: bool = False
           ) -> dict[str, Any]:
    """A Chat Completions body laid out as Aider 0.86 lays out its messages
    (`format_chat_chunks`): system, its edit-format examples ended by "I switched to a new
    code base…", the repo map, the history, the chat files, the current ask."""
    example = [
        {"role": "user", "content": "Change get_factorial() to use math.factorial"},
        {"role": "assistant", "content": "To make this change we need to modify `mathweb`..."},
        {"role": "user", "content": "I switched to a new code base. Please don't consider the "
                                    "above files or try to edit them any longer."},
        {"role": "assistant", "content": "Ok."}]
    repo = [{"role": "user", "content": "Here are summaries of some files present in my git "
                                        f"repository.\nDo not propose changes...\n{repo_map}"},
            {"role": "assistant", "content": "Ok, I won't try and edit those files without "
                                             "asking first."}]
    files = [{"role": "user", "content": "I have *added these files to the chat* so you can go "
                                         "ahead and edit them.\n\ncalc.py\n```\nx = 1\n```"},
             {"role": "assistant", "content": "Ok, any changes I propose will be to those files."}]
    # A restored history re-reads the ask from Aider's Markdown log (other trailing
    # whitespace, no assistant turn when it had none); the current ask carries the reminder.
    done = [{"role": "user", "content": f"{ask}  \n"}] if history else []
    reminder = "\n\nTo suggest changes to a file you MUST return the entire content"
    cur = [{"role": "user", "content": ("and add a test" if history else ask) + reminder}]
    return {"model": "orca/coding", "messages": [
        {"role": "system", "content": "Act as an expert software developer."},
        *example, *repo, *done, *files, *cur]}


def test_aider_conversations_are_told_apart_by_the_users_own_ask() -> None:
    """Aider sends no session header and opens every request with the same examples: the
    derived id hashes the first user message after its scaffolding, so two conversations in
    two repositories are two sessions, and one conversation keeps its id turn after turn."""
    one = derive_session_id(_aider("rename x to count in calc.py"), router="coding",
                            api="openai")
    other = derive_session_id(_aider("why does main() crash?", repo_map="lib/x.py"),
                              router="coding", api="openai")
    later = derive_session_id(_aider("rename x to count in calc.py", history=True),
                              router="coding", api="openai")
    assert one != other and one == later


def test_a_body_without_agent_scaffolding_derives_as_before() -> None:
    body = {"messages": [{"role": "system", "content": "s"},
                         {"role": "user", "content": "Change get_factorial() to use x"},
                         {"role": "assistant", "content": "ok"},
                         {"role": "user", "content": "thanks"}]}
    plain = {"messages": [{"role": "system", "content": "s"},
                          {"role": "user", "content": "Change get_factorial() to use x"}]}
    assert derive_session_id(body, router="r", api="openai") == derive_session_id(
        plain, router="r", api="openai")
