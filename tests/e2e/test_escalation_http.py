"""Frontier Escalation through the real HTTP path (SPEC §6, issue 5's stories).

Each story drives a sidecar on a loopback port with plain HTTP (and once with the OpenAI SDK),
over a memory store and a real Redis store, with a fake clock moved between turns. It observes
only what an operator could: `X-Orca-Session-Tier` / `X-Orca-Model` headers, stored traces,
audit events and the tier state read back through the store interface.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import openai
import pytest

from tests.e2e.tier_bodies import (
    FIX_THE_BUILD,
    VOLATILE,
    Conversation,
    build_failure,
    passing_tool_output,
    volatile_failure,
)
from tests.e2e.tier_kit import (
    BASE_MODELS,
    STRONG_MODEL,
    Launch,
    Reply,
    TierStack,
    evals,
    ok,
    tier_config,
)
from tests.routing.bodies import HARD_PROSE, SYSTEM_PROMPT, goroutine_dump, python_traceback

# --- failure loop: strikes, never difficulty ---------------------------------------------------

async def _failure_loop(st: TierStack, session: str, *, continuations: int,
                        stream: bool = False,
                        failure: Callable[[int], str] = build_failure) -> list[Reply]:
    """User turns of "fix the build"; from turn 2 each carries the same broken build (new
    numbers every run). `continuations` benign tool continuations follow each user turn."""
    conv = Conversation()
    replies: list[Reply] = []
    for turn in range(1, 6):
        out = failure(turn) if turn >= 2 else None
        reply = ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=out),
                                  session=session, stream=stream))
        replies.append(reply)
        conv.reply("Patched the call site; rebuilding.")
        for k in range(continuations):
            cont = ok(await st.chat(conv.tool_continuation(passing_tool_output(10 * turn + k)),
                                     session=session, stream=stream))
            assert cont.tier == replies[-1].tier or reply.reason == "strikes"
            conv.reply("Read it.")
    return replies


@pytest.mark.parametrize("continuations", [0, 2])
async def test_failure_loop_escalates_by_strikes_on_turn_4_never_by_difficulty(
        launch: Launch, continuations: int) -> None:
    st = await launch()
    replies = await _failure_loop(st, "loop-1", continuations=continuations)
    headers = [r.tier_header for r in replies]
    assert headers[:3] == ["base; reason=default"] * 3, headers
    assert headers[3] == "strong; reason=strikes", headers
    assert headers[4] == "strong; reason=strikes", headers  # a strong session repeats it
    assert replies[3].model == STRONG_MODEL
    assert {r.model for r in replies[:3]} == {replies[0].model} <= set(BASE_MODELS)

    for r in replies:
        b = evals(await st.trace(r))["B"]
        assert not b["hard"] and b["streak"] == 0 and not b["fires"]
    escalating = await st.trace(replies[3])
    c = evals(escalating)["C"]
    assert c["request_strike"] and c["strikes"] == 2 and c["fires"]
    assert escalating["committed"] is True
    assert [i["type"] for i in escalating["intents"] if i["type"] == "Escalate"] == ["Escalate"]
    # Turn 3 struck once: the repeat of turn 2's signature, numbers and addresses aside.
    assert evals(await st.trace(replies[2]))["C"]["strikes"] == 1

    state = await st.state("loop-1")
    assert state is not None
    assert (state.tier, state.trigger, state.escalation_count) == ("strong", "strikes", 1)
    escalated = await st.audit("escalated")
    assert [(e["session"], e["trigger"], e["actor"], e["request_id"]) for e in escalated] == [
        ("loop-1", "strikes", "engine", replies[3].request_id)]
    assert await st.stat("escalations:strikes") == 1


@pytest.mark.parametrize("kind", sorted(VOLATILE))
async def test_a_repeat_strikes_whatever_changed_between_runs(launch: Launch, kind: str) -> None:
    """Each run differs from the last only by one kind of volatile part of its error line."""
    st = await launch()
    replies = await _failure_loop(st, f"vol-{kind}", continuations=0,
                                  failure=lambda n: volatile_failure(kind, n))
    assert [r.reason for r in replies] == ["default"] * 3 + ["strikes"] * 2


async def test_different_failures_never_strike(launch: Launch) -> None:
    kinds = sorted(VOLATILE)
    st = await launch()
    replies = await _failure_loop(st, "varied", continuations=0,
                                  failure=lambda n: volatile_failure(kinds[n - 2], n))
    assert {r.tier_header for r in replies} == {"base; reason=default"}
    for r in replies:
        assert evals(await st.trace(r))["C"]["strikes"] == 0


async def test_failure_loop_streamed_escalates_the_same(launch: Launch) -> None:
    st = await launch()
    replies = await _failure_loop(st, "loop-sse", continuations=1, stream=True)
    assert [r.reason for r in replies] == ["default"] * 3 + ["strikes"] * 2
    assert "data: [DONE]" in replies[3].body


async def test_failure_loop_through_the_openai_sdk(launch: Launch) -> None:
    st = await launch()
    client = openai.AsyncOpenAI(base_url=st.base_url + "/v1", api_key="agent", max_retries=0,
                                default_headers={"X-Orca-Session": "loop-sdk"})
    conv = Conversation()
    seen: list[str] = []
    try:
        for turn in range(1, 5):
            body = conv.user_turn(FIX_THE_BUILD,
                                  tool_output=build_failure(turn) if turn >= 2 else None)
            raw = await client.chat.completions.with_raw_response.create(
                model=body["model"], messages=body["messages"], tools=body["tools"])
            seen.append(raw.headers["x-orca-session-tier"])
            assert raw.parse().choices[0].message is not None
            conv.reply("Patched; rebuilding.")
    finally:
        await client.close()
    assert seen == ["base; reason=default"] * 3 + ["strong; reason=strikes"]


async def test_errors_in_tool_continuations_strike_and_never_feed_the_streak(
        launch: Launch) -> None:
    """The agent loops alone on `go build` (no user text in between): the continuations carry
    the errors; strikes escalate on the third failing build, the streak never moves."""
    st = await launch()
    conv = Conversation()
    ok(await st.chat(conv.user_turn(FIX_THE_BUILD), session="agent-loop"))
    replies = []
    for n in range(1, 4):
        conv.reply("Editing handler.go.")
        replies.append(ok(await st.chat(conv.tool_continuation(build_failure(n),
                                                                "go build ./..."),
                                         session="agent-loop")))
    assert [r.tier_header for r in replies] == [
        "base; reason=default", "base; reason=default", "strong; reason=strikes"]
    for r in replies:
        b = evals(await st.trace(r))["B"]
        assert b["user_turn"] is False and b["streak"] == 0
    state = await st.state("agent-loop")
    assert state is not None and state.streak == 0 and state.trigger == "strikes"


# --- latent-hard: difficulty, no earlier than the second hard turn ---------------------------

def _hard(paste: str) -> str:
    return f"{HARD_PROSE}\n\n{paste}"


async def test_latent_hard_session_escalates_by_difficulty_on_its_second_hard_turn(
        launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    opener = ok(await st.chat(conv.user_turn("Can you add a --verbose flag to the CLI?"),
                               session="hard-1"))
    conv.reply("Added `--verbose`; it sets the log level to debug.")
    first = ok(await st.chat(conv.user_turn(_hard(goroutine_dump(8))), session="hard-1"))
    conv.reply("The promote path upgrades the lock without rechecking; here is why.")
    second = ok(await st.chat(conv.user_turn(_hard(python_traceback(6))), session="hard-1"))
    assert opener.tier_header == "base; reason=default"
    assert first.tier_header == "base; reason=default"
    assert second.tier_header == "strong; reason=difficulty"
    assert second.model == STRONG_MODEL

    t_open, t_first, t_second = [evals(await st.trace(r))["B"]
                                 for r in (opener, first, second)]
    assert t_open["delta"] < 0.3 and not t_open["hard"]
    assert t_first["hard"] and t_first["streak"] == 1 and not t_first["fires"]
    assert t_second["hard"] and t_second["streak"] == 2 and t_second["fires"]
    assert not evals(await st.trace(second))["C"]["fires"]
    state = await st.state("hard-1")
    assert state is not None and (state.tier, state.trigger) == ("strong", "difficulty")
    assert [e["trigger"] for e in await st.audit("escalated")] == ["difficulty"]


async def test_hard_turns_around_a_tool_continuation_still_corroborate(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    first = ok(await st.chat(conv.user_turn(_hard(goroutine_dump(8))), session="hard-2"))
    cont = ok(await st.chat(conv.tool_continuation(passing_tool_output(1), "go test ./..."),
                             session="hard-2"))
    conv.reply("The test passes locally; the race needs load.")
    second = ok(await st.chat(conv.user_turn(_hard(python_traceback(6))), session="hard-2"))
    assert [r.reason for r in (first, cont, second)] == ["default", "default", "difficulty"]
    b = evals(await st.trace(cont))["B"]
    assert b["user_turn"] is False and b["streak"] == 1  # neither extended nor reset


async def test_a_trivial_turn_between_hard_turns_resets_the_streak(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    r1 = ok(await st.chat(conv.user_turn(_hard(goroutine_dump(8))), session="hard-3"))
    conv.reply("Looking into it.")
    r2 = ok(await st.chat(conv.trivial_edit(0), session="hard-3"))
    r3 = ok(await st.chat(conv.user_turn(_hard(python_traceback(6))), session="hard-3"))
    assert [r.tier_header for r in (r1, r2, r3)] == ["base; reason=default"] * 3
    assert evals(await st.trace(r3))["B"]["streak"] == 1


async def test_one_strike_and_one_hard_turn_do_not_corroborate(launch: Launch) -> None:
    """B and C corroborate only within their own class."""
    st = await launch()
    conv = Conversation()
    ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=None), session="mixed"))
    conv.reply("Building.")
    ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(1)),
                      session="mixed"))
    conv.reply("Trying a fix.")
    struck = ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=build_failure(2)),
                               session="mixed"))
    conv.reply("Still failing.")
    hard = ok(await st.chat(conv.user_turn(_hard(goroutine_dump(8))), session="mixed"))
    assert evals(await st.trace(struck))["C"]["strikes"] == 1
    assert evals(await st.trace(hard))["B"]["streak"] == 1
    assert hard.tier_header == "base; reason=default"


# --- trivial edits never escalate --------------------------------------------------------------

async def test_twenty_five_trivial_edits_never_escalate(launch: Launch) -> None:
    st = await launch()
    conv = Conversation()
    replies = [ok(await st.chat(conv.trivial_edit(i), session="edits")) for i in range(25)]
    assert {r.tier_header for r in replies} == {"base; reason=default"}
    assert {r.model for r in replies} == {replies[0].model}  # pinned to one base model
    state = await st.state("edits")
    assert state is not None
    assert (state.tier, state.escalation_count, state.streak, state.strikes) == (
        "base", 0, 0, ())
    assert state.turn == 25
    assert await st.audit() == []


def _real_failure(name: str) -> Callable[[int], str]:
    from tests.routing.test_strike_producers import fixture, next_attempt

    def run(turn: int) -> str:
        out = fixture(name)
        for _ in range(turn):
            out = next_attempt(out, {})
        return out
    return run


# What the trace says came back (`strikes.signature_label`): the failure's kind and code,
# never a word of the tool's output.
_REPEATED = {
    "go_build.txt": ["go:missing-return", "go:cannot-use", "go:declared-not-used",
                     "go:arguments", "error line: undefined"],
    "go_build_go120.txt": ["go:declared-not-used", "go:missing-return"],
    "tsc.txt": ["ts:TS2322", "ts:TS2554", "ts:TS2304"],
    "rustc.txt": ["rust:E0425", "rust:E0308", "error line: error"],
    "python_traceback.txt": ["error line: traceback", "error line: assert"],
    "jest.txt": ["jest:test", "jest:expect"],
    "codex_exec_json.txt": ["go:arguments", "tool:exit:2"],
    "claude_code_bash_exit.txt": ["tool:exit:1"],
}


@pytest.mark.parametrize("tool", sorted(_REPEATED))
async def test_a_real_tools_failure_loop_escalates_by_strikes(launch: Launch, tool: str) -> None:
    st = await launch()
    replies = await _failure_loop(st, f"loop-{tool}", continuations=0,
                                  failure=_real_failure(tool))
    headers = [r.tier_header for r in replies]
    assert headers[:3] == ["base; reason=default"] * 3, headers
    assert headers[3:] == ["strong; reason=strikes"] * 2, headers
    c = evals(await st.trace(replies[3]))["C"]
    assert c["request_strike"] and c["repeated"] == _REPEATED[tool]
    assert "repeated" not in evals(await st.trace(replies[1]))["C"]  # nothing seen before
    state = await st.state(f"loop-{tool}")  # `orca session show` lists each strike's kinds
    assert state is not None
    assert [(s.kind, s.what) for s in state.strikes] == [
        ("repeated_error", ", ".join(_REPEATED[tool]))] * len(state.strikes)
    assert state.strikes  # the strikes since escalation (the episode restarted there)


async def test_a_tool_output_nested_past_any_parser_is_served(launch: Launch) -> None:
    """A tool's output is any text (a file the agent printed): one shaped like Codex's exec
    result but nested deeper than a JSON parser reads is scanned as plain text and the turn
    is served, not answered 502 by a parser's recursion error."""
    st = await launch()
    deep = '{"output":"error: x\\n","metadata":' + "[" * 5000 + "]" * 5000 + "}"
    conv = Conversation()
    reply = ok(await st.chat(conv.user_turn(FIX_THE_BUILD, tool_output=deep), session="deep"))
    assert reply.tier_header == "base; reason=default"


# --- Codex 0.171 over /v1/responses: its shell results are plain text -------------------------

_CODEX_EXEC = {
    "type": "function", "name": "exec_command", "strict": False,
    "description": "Runs a command in a PTY, returning output or a session ID for ongoing "
                   "interaction.",
    "parameters": {"type": "object", "required": ["cmd"], "properties": {
        "cmd": {"type": "string", "description": "Shell command to execute."},
        "workdir": {"type": "string", "description": "Working directory for the command."}}},
}


def _codex171_result(turn: int, code: int, output: str) -> str:
    """A shell result as Codex 0.171 sends it (the captured format of
    tests/routing/fixtures/strikes/codex_exec_171.txt): its header changes every run."""
    return (f"Chunk ID: {0xa3f000 + 17 * turn:x}\nWall time: 0.{turn:04d} seconds\n"
            f"Process exited with code {code}\nOriginal token count: {10 + turn}\n"
            f"Output:\n{output}")


def _codex_json_result(turn: int, code: int, output: str) -> str:
    """The same result in the exec JSON of older Codex releases."""
    return json.dumps({"output": output,
                       "metadata": {"exit_code": code, "duration_seconds": turn / 10}})


_CODEX_RESULTS = {"0.171-text": _codex171_result, "exec-json": _codex_json_result}


async def _codex_loop(st: TierStack, session: str, code: int, output: str,
                      result: Callable[[int, int, str], str] = _codex171_result) -> list[Reply]:
    """`codex exec "make the tests pass"`: the agent runs `./run_tests.sh` again after each
    result, every request a continuation carrying the whole history, as Codex sends it."""
    items: list[dict[str, object]] = [
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": SYSTEM_PROMPT}]},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "make the tests pass"}]}]
    replies: list[Reply] = []
    for turn in range(1, 7):
        if turn > 1:
            cid = f"call_{turn:03d}"
            items += [{"type": "function_call", "name": "exec_command", "call_id": cid,
                       "arguments": '{"cmd":"./run_tests.sh"}'},
                      {"type": "function_call_output", "call_id": cid,
                       "output": result(turn, code, output)}]
        body = {"model": "orca/coding", "instructions": "You are Codex.", "input": items,
                "tools": [_CODEX_EXEC], "tool_choice": "auto", "stream": False,
                "store": False}
        st.clock.advance(st.step_s)
        resp = await st.http.post("/v1/responses", json=body, headers={
            "authorization": "Bearer agent-key", "session-id": session,
            "originator": "codex_exec"})
        await st.sidecar.idle()
        replies.append(ok(Reply(resp.status_code, resp.headers, resp.json())))
    return replies


@pytest.mark.parametrize("shape", sorted(_CODEX_RESULTS))
async def test_a_codex_failure_loop_over_responses_escalates_by_strikes(
        launch: Launch, shape: str) -> None:
    """The same failed run (exit status 1, no error line of its own) three times: strikes on
    the second and third, the session escalates on the fourth request, never by difficulty,
    whether Codex reports it as 0.171's text or as the older exec JSON."""
    st = await launch()
    replies = await _codex_loop(st, f"codex-loop-{shape}", 1,
                                "3 passed, 1 did not pass: test_parse_empty\n",
                                _CODEX_RESULTS[shape])
    headers = [r.tier_header for r in replies]
    assert headers[:3] == ["base; reason=default"] * 3, headers
    assert headers[3:] == ["strong; reason=strikes"] * 3, headers
    assert [evals(await st.trace(r))["C"]["strikes"] for r in replies[:4]] == [0, 0, 1, 2]


@pytest.mark.parametrize("shape", sorted(_CODEX_RESULTS))
async def test_a_codex_loop_of_passing_runs_never_strikes(launch: Launch, shape: str) -> None:
    st = await launch()
    replies = await _codex_loop(st, f"codex-pass-{shape}", 0, "4 passed\n",
                                _CODEX_RESULTS[shape])
    assert {r.tier_header for r in replies} == {"base; reason=default"}
    for r in replies:
        assert evals(await st.trace(r))["C"]["strikes"] == 0


def _claude_turn(history: list[dict[str, object]], results: list[tuple[str, bool]]
                 ) -> list[dict[str, object]]:
    """The history with the assistant's Bash calls and their results as Claude Code sends
    them (`is_error` on each)."""
    n = len(history)
    calls = [{"type": "tool_use", "id": f"toolu_{n}_{i}", "name": "Bash",
              "input": {"command": "cat app.py"}} for i in range(len(results))]
    blocks = [{"type": "tool_result", "tool_use_id": f"toolu_{n}_{i}", "is_error": failed,
               "content": text} for i, (text, failed) in enumerate(results)]
    return [*history, {"role": "assistant", "content": calls},
            {"role": "user", "content": blocks}]


async def test_a_claude_code_session_that_rereads_a_source_file_never_strikes(
        launch: Launch) -> None:
    """Found with the real Claude Code: re-reading a file that defines an exception class
    and logs errors, every command succeeding, escalated by strikes on request 6. Results
    marked `is_error: false` sign nothing; a failing run beside them still does."""
    from tests.routing.test_strike_false_positives import SOURCE

    st = await launch(tier_config(base_channel={"api": ["openai", "anthropic"]}))
    history: list[dict[str, object]] = [{"role": "user", "content": "tidy the config loader"}]
    headers = []
    for turn in range(7):
        history = _claude_turn(history, [(SOURCE, False), ("3 passed in 0.11s", False)])
        body = {"model": "orca/coding", "max_tokens": 256, "messages": history}
        resp = await st.http.post("/v1/messages", json=body,
                                  headers={"x-orca-session": "cc-reread", "x-api-key": "k"})
        await st.sidecar.idle()
        assert resp.status_code == 200, resp.text
        headers.append(resp.headers["x-orca-session-tier"])
        trace = await st.store.get_trace(resp.headers["x-orca-request-id"])
        assert trace is not None and evals(trace)["C"]["strikes"] == 0, turn
    assert set(headers) == {"base; reason=default"}, headers
