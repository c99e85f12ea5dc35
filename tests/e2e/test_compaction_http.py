"""An agent's context compaction through the real HTTP path (SPEC §6.2, §6.5, §19).

When a conversation fills its window, Claude Code (`/compact`, auto-compact) and Codex (local
compaction, for a provider that is not OpenAI's) first ask the model for a summary, then go on
with a body that opens with that summary and often holds no assistant message at all
(captured from Claude Code 2.1.332 and Codex 0.171, tests/agents/CAPTURES.md). That body is
the same conversation going on, not a sub-agent's first request: a strong session stays
strong on it, and the summary (the agent's text) is not read as the person's ask.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.tier_bodies import Conversation
from tests.e2e.tier_kit import STRONG_MODEL, Launch, Reply, TierStack, evals, ok, tier_config
from tests.e2e.translation.kit import explained
from tests.routing.bodies import HARD_PROSE, SYSTEM_PROMPT, goroutine_dump, python_traceback

# The agents' own words (their compaction instruction and summary openers), then a summary of
# the kind a model writes: short here, so that it would score easy as the opening of a new
# conversation.
CLAUDE_COMPACT = ("CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use "
                  "Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n\nYour task is to "
                  "create a detailed summary of the conversation so far.")
CLAUDE_SUMMARY = ("This session is being continued from a previous conversation that ran out "
                  "of context. The summary below covers the earlier portion of the "
                  "conversation.\n\n<system-reminder>\n<tools-used-before-summary>"
                  "</tools-used-before-summary>\n</system-reminder>\nSummary:\n1. Primary "
                  "Request: list the parser's edge cases.\n2. Pending Tasks: fix the first "
                  "one.\n\nContinue the conversation from where it left off without asking "
                  "the user any further questions.")
CODEX_COMPACT = ("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary "
                 "for another LLM that will resume the task.")
CODEX_SUMMARY = ("Another language model started to solve this problem and produced a summary "
                 "of its thinking process. You also have access to the state of the tools "
                 "that were used by that language model.\n\nThe parser's edge cases are "
                 "listed; the first one is next.")
NEXT_ASK = "ok, fix the first one"
_TOOLS = [{"name": "Bash", "description": "Run a shell command",
           "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
_RESPONSES_TOOLS = [{"type": "function", "name": "shell", "description": "Run a command",
                     "parameters": {"type": "object",
                                    "properties": {"command": {"type": "string"}}}}]


async def _post(st: TierStack, path: str, body: dict[str, Any], session: str,
                tier: str | None = None) -> Reply:
    st.clock.advance(st.step_s)
    headers = {"x-orca-session": session, "x-api-key": "k", "authorization": "Bearer k"}
    if tier is not None:
        headers["x-orcarouter-tier"] = tier
    resp = await st.http.post(path, json=body, headers=headers)
    await st.sidecar.idle()
    return ok(Reply(resp.status_code, resp.headers, resp.text))


def _messages(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "orca/coding", "max_tokens": 512, "system": SYSTEM_PROMPT,
            "tools": _TOOLS, "messages": messages}


def _responses(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "orca/coding", "stream": False, "tools": _RESPONSES_TOOLS,
            "input": [{"type": "message", "role": "developer",
                       "content": [{"type": "input_text", "text": SYSTEM_PROMPT}]}, *items]}


def _said(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


async def _assert_kept_strong(st: TierStack, after: Reply, compact: Reply) -> None:
    for reply in (compact, after):
        assert (reply.tier, reply.reason, reply.model) == ("strong", "explicit", STRONG_MODEL)
    trace = await st.trace(after)
    ev = evals(trace)
    assert "sub_agent" not in ev
    # the summary is the agent's text: the turn is the person's new ask alone, and it counts
    assert ev["B"]["user_turn"] is True and ev["B"]["delta"] < 0.35
    assert trace["difficulty"]["compacted"] is True
    shown = explained(dict(trace))
    assert "difficulty (the turn after an agent's compaction summary)" in shown, shown
    # the request that asked for the summary holds no user-authored text
    asked = await st.trace(compact)
    assert evals(asked)["B"]["user_turn"] is False and asked["difficulty"]["compacted"] is False
    assert "(not a user turn: neutral)" in explained(dict(asked))



async def test_claude_codes_compacted_conversation_stays_on_the_strong_tier(
        launch: Launch) -> None:
    """Found with the real Claude Code's shape: after `/compact` its body is one user message
    (reminders, the summary, the `/compact` record, the new ask) with no assistant message.
    Read as a new conversation opening with an easy ask, it was served from base as a
    sub-agent (`base; reason=sub_agent`) and stayed there, inside the warm window."""
    both = {"api": ["anthropic", "openai"]}
    st = await launch(tier_config(base_channel=both, strong_channel=both))
    history: list[dict[str, Any]] = [{"role": "user", "content": "list the parser's edge cases"}]
    first = await _post(st, "/v1/messages", _messages(history), "cc-compact")
    history.append({"role": "assistant", "content": "Empty input, a trailing comma, ..."})
    history.append({"role": "user", "content": "which of them do the tests cover?"})
    second = await _post(st, "/v1/messages", _messages(history), "cc-compact", tier="strong")
    history.append({"role": "assistant", "content": "Only the first two."})
    compact = await _post(st, "/v1/messages", _messages(
        [*history, {"role": "user", "content": CLAUDE_COMPACT}]), "cc-compact")
    after = await _post(st, "/v1/messages", _messages([{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nToday's date is 2026-12-06.\n"
                                 "</system-reminder>"},
        {"type": "text", "text": CLAUDE_SUMMARY},
        {"type": "text", "text": "<command-name>/compact</command-name>"},
        {"type": "text", "text": NEXT_ASK}]}]), "cc-compact")
    assert (first.tier, second.tier) == ("base", "strong")
    await _assert_kept_strong(st, after, compact)


async def test_codexs_compacted_conversation_stays_on_the_strong_tier(launch: Launch) -> None:
    """Codex keeps the person's earlier messages, adds the summary as a user message of its
    own and the new ask after it; no assistant message is left. The same session was served
    from base as a sub-agent before (seen with the real Codex, `base:sub_agent`)."""
    both = {"api": ["responses", "openai"]}
    st = await launch(tier_config(base_channel=both, strong_channel=both))
    items = [_said("user", "list the parser's edge cases")]
    first = await _post(st, "/v1/responses", _responses(items), "codex-compact")
    items += [_said("assistant", "Empty input, a trailing comma, ..."),
              _said("user", "which of them do the tests cover?")]
    second = await _post(st, "/v1/responses", _responses(items), "codex-compact", "strong")
    items.append(_said("assistant", "Only the first two."))
    compact = await _post(st, "/v1/responses",
                          _responses([*items, _said("user", CODEX_COMPACT)]), "codex-compact")
    kept = [_said("user", "list the parser's edge cases"),
            _said("user", "which of them do the tests cover?")]
    after = await _post(st, "/v1/responses", _responses(
        [*kept, _said("user", CODEX_SUMMARY), _said("user", NEXT_ASK)]), "codex-compact")
    assert (first.tier, second.tier) == ("base", "strong")
    await _assert_kept_strong(st, after, compact)


async def test_a_compaction_between_two_hard_turns_keeps_the_difficulty_streak(
        launch: Launch) -> None:
    """The compaction request is the agent's, not a user turn: it neither extends nor resets
    the streak, and the hard ask after the summary is the turn that completes it."""
    st = await launch()
    conv = Conversation()
    first = ok(await st.chat(conv.user_turn(f"{HARD_PROSE}\n\n{goroutine_dump(8)}"),
                             session="hard-compact"))
    conv.reply("The promote path upgrades the lock without rechecking.")
    compact = ok(await st.chat(conv.user_turn(CLAUDE_COMPACT), session="hard-compact"))
    conv.messages = [{"role": "user", "content": CLAUDE_SUMMARY},
                     {"role": "user", "content": f"{HARD_PROSE}\n\n{python_traceback(6)}"}]
    second = ok(await st.chat(conv.body(), session="hard-compact"))
    assert [r.tier_header for r in (first, compact, second)] == [
        "base; reason=default", "base; reason=default", "strong; reason=difficulty"]
    b = [evals(await st.trace(r))["B"] for r in (first, compact, second)]
    assert (b[0]["streak"], b[1]["user_turn"], b[1]["streak"]) == (1, False, 1)
    assert b[2]["hard"] and b[2]["streak"] == 2 and b[2]["fires"]


async def test_openais_server_side_compaction_is_refused_with_the_fix(launch: Launch) -> None:
    """Codex's built-in `openai` provider (`openai_base_url`) compacts on OpenAI's servers: its
    request ends with a `compaction_trigger` item, whose answer must be OpenAI's encrypted
    `compaction` item. Another server's plain answer made Codex fail the turn ("expected
    exactly one compaction output item"); no channel here is OpenAI's own, so nothing is sent
    and the 400, which Codex prints, says how to set Codex up to compact on any model."""
    both = {"api": ["responses", "openai"]}
    st = await launch(tier_config(base_channel=both, strong_channel=both))
    items = [_said("user", "list the parser's edge cases"),
             _said("assistant", "Empty input, a trailing comma, ..."),
             {"type": "compaction_trigger"}]
    st.clock.advance(st.step_s)
    resp = await st.http.post("/v1/responses", json=_responses(items),
                              headers={"x-orca-session": "remote-compact"})
    await st.sidecar.idle()
    assert resp.status_code == 400, resp.text
    message = resp.json()["error"]["message"]
    assert "item:compaction_trigger" in message and "orca init --agent codex" in message
    assert not st.sim("sim-base").calls and not st.sim("sim-strong").calls
    # the conversation itself is served as ever
    ok_items = [*items[:2], _said("user", "which of them do the tests cover?")]
    await _post(st, "/v1/responses", _responses(ok_items), "remote-compact")
