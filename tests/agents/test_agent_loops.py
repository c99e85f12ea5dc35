"""Real agents' tool loops against a scripted model: strikes and explicit asks (SPEC §6, §19).

The upstream is scripted (`orca_cli.testing.upstream` on a loopback port, answers rendered by
the sim's renderers): while the agent's transcript holds fewer than N results of a command,
the model asks the agent's own shell tool to run it, then answers in text. The agent really
runs the command each time and sends its real output back (Claude Code's Bash result,
Codex's exec result), so what orca sees is the agents' own request shapes and result formats.

- A failure loop: `python3 broken.py` fails with the same traceback every time. The session
  must escalate by strikes on the third failing run (two repeats), every later request must
  be served strong, and the trace must say which failure came back.
- An explicit ask: Claude Code sends its custom headers on every request, so a
  `X-OrcaRouter-Tier: once` covers the whole tool loop of its turn, counted once; the next
  turn without it is base again, and a second `once` is denied by `max_per_session`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orca_cli.proxy.sim import Answer, render_body, render_stream
from orca_cli.proxy.sim.responses import render_response_body
from orca_cli.testing.upstream import Act, FakeUpstream, Script, Seen, fake_upstream
from tests.agents.kit import Orca, agent_binary, agent_env, run_agent, serving
from tests.agents.test_codex import codex_config

LOOPS = 4  # failing runs the model asks for before it gives up
COMMAND = "python3 broken.py"
BROKEN = """\
import json


def load(path):
    with open(path) as f:
        return json.load(f)["settings"]


print(load("config.json"))
"""
CHEAP, STRONG = "loop-cheap", "loop-strong"


def _tool_results(seen: Seen) -> int:
    """Tool results in the transcript: Messages `tool_result` blocks, Responses outputs."""
    body = seen.body
    if seen.api == "anthropic":
        return sum(1 for m in body.get("messages", []) if isinstance(m.get("content"), list)
                   for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
    return sum(1 for item in body.get("input", []) if isinstance(item, dict)
               and item.get("type") in ("function_call_output", "custom_tool_call_output"))


def _shell_call(seen: Seen, command: str = COMMAND) -> tuple[str, str] | None:
    """(tool name, arguments JSON) running `command` with the agent's shell tool, if it has
    one."""
    names = {t.get("name") for t in seen.body.get("tools", []) if isinstance(t, dict)}
    if "Bash" in names:  # Claude Code
        return "Bash", json.dumps({"command": command, "description": "Run the script"})
    if "exec_command" in names:  # Codex >= 0.171
        return "exec_command", json.dumps({"cmd": command})
    if "shell" in names:  # older Codex
        return "shell", json.dumps({"command": ["bash", "-lc", command]})
    return None


def reply(seen: Seen, text: str, tool: tuple[str, str, str] | None = None, *,
          id_hex: str = "0001", output_tokens: int = 12) -> Act:
    """A provider's answer to `seen` in its own format, streamed when it asked: `text`, or a
    call of `tool` (call id, name, arguments JSON)."""
    answer = Answer(id_hex=id_hex, model=str(seen.body.get("model", "m")), created=0,
                    text=text, tool=tool, finish="tool_calls" if tool else "stop",
                    prompt_tokens=max(1, len(seen.raw) // 4), cached_tokens=0,
                    cache_write_tokens=0, output_tokens=output_tokens, request=seen.body)
    if seen.stream:
        return Act(events=tuple(render_stream(seen.api, answer, include_usage=True)))
    body = (render_response_body(answer) if seen.api == "responses"
            else render_body(seen.api, answer))
    return Act(body=body)


def model(command: str, loops: int) -> Script:
    """A model that has the agent run `command` until its transcript holds `loops` results
    of it, then answers in text."""
    def answer(seen: Seen) -> Act:
        done = _tool_results(seen)
        call = _shell_call(seen, command)
        tool = (f"call_loop_{done}", *call) if call is not None and done < loops else None
        return reply(seen, "Done with the script; stopping here.", tool, id_hex=f"{done:04x}")
    return answer


script = model(COMMAND, LOOPS)  # run the broken script until it failed `LOOPS` times


@contextlib.contextmanager
def scripted_upstream(answer: Script = script) -> Iterator[FakeUpstream]:
    """The fake provider on its own event loop in a thread (the agents and `orca serve` are
    subprocesses that reach it over loopback)."""
    loop = asyncio.new_event_loop()
    ready: list[FakeUpstream] = []
    stop = asyncio.Event()

    async def run() -> None:
        async with fake_upstream() as fake:
            fake.always.update({"a": answer, "r": answer})
            ready.append(fake)
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(run(),), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not ready and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ready, "the scripted upstream did not start"
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        loop.close()


def _config(fake: FakeUpstream) -> str:
    """Claude Code's model names go to a Messages channel, Codex's to a Responses one; each
    router keeps a cheap base tier and a strong tier on its channel."""
    return f"""
[[channels]]
name = "up-messages"
type = "anthropic"
base_url = "{fake.url("a", versioned=False)}"
keys = ["loop-key-messages"]
models = ["{CHEAP}-claude", "{STRONG}-claude"]

[[channels]]
name = "up-responses"
type = "openai"
api = ["responses"]
base_url = "{fake.url("r")}"
keys = ["loop-key-responses"]
models = ["{CHEAP}-gpt", "{STRONG}-gpt"]

[models."{CHEAP}-claude"]
input = 1.0
output = 5.0
[models."{STRONG}-claude"]
input = 15.0
output = 75.0
[models."{CHEAP}-gpt"]
input = 0.4
output = 1.6
[models."{STRONG}-gpt"]
input = 2.0
output = 8.0

[routers.claude]
strategy = "cheapest"
allowed_models = ["{CHEAP}-claude", "{STRONG}-claude"]
strong_pool = ["{STRONG}-claude"]
[routers.claude.escalation]
mode = "auto"
strikes = 2

[routers.codex]
strategy = "cheapest"
allowed_models = ["{CHEAP}-gpt", "{STRONG}-gpt"]
strong_pool = ["{STRONG}-gpt"]
[routers.codex.escalation]
mode = "auto"
strikes = 2

[aliases]
"claude-*" = "orca/claude"
"""


def _project(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "broken.py").write_text(BROKEN)
    (work / "config.json").write_text('{"name": "demo"}\n')
    return work


def _loop_traces(orca: Orca, session_id: str) -> list[dict[str, Any]]:
    """The session's requests that carried tools, oldest first (side requests aside)."""
    return [t for t in orca.requests(session_id) if t.get("router") in ("claude", "codex")]


def _assert_escalated_by_strikes(traces: list[dict[str, Any]], label: str) -> None:
    tiers = [(t["tier"]["decision"], t["tier"]["reason"], t["selected"]["model"])
             for t in traces]
    first = next(i for i, t in enumerate(tiers) if t[0] == "strong")
    assert all(t[0] == "base" for t in tiers[:first]), tiers
    assert all(t[0] == "strong" and t[2].startswith(STRONG) for t in tiers[first:]), tiers
    assert tiers[first][1] == "strikes", tiers
    # request i carries the agent's i-th result: the third failing run, the first's second
    # repeat, escalated
    assert first == 3, tiers
    c = traces[first]["tier"]["evaluations"]["C"]
    assert c["fires"] and c["strikes"] == 2 and label in c["repeated"], c


def test_claude_code_in_a_failure_loop_escalates_by_strikes(tmp_path: Path) -> None:
    claude = agent_binary("claude")
    with scripted_upstream() as fake, serving(tmp_path, _config(fake)) as orca:
        home, work = tmp_path / "home", _project(tmp_path)
        home.mkdir()
        env = agent_env(home, ANTHROPIC_BASE_URL=orca.base, ANTHROPIC_API_KEY="orca-dummy-key",
                        ANTHROPIC_MODEL="claude-sonnet-4-5",
                        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        run = run_agent([claude, "-p", "Run broken.py and fix what fails",
                         "--allowedTools", f"Bash({COMMAND})"], env, work)
        assert run.returncode == 0, (run.stdout, run.stderr[-3000:], orca.server_log())
        calls = [s for s in fake.calls("a") if _shell_call(s) is not None]
        assert [_tool_results(s) for s in calls] == list(range(LOOPS + 1)), (
            "Claude Code did not run the command each time")
        # Claude Code marks a failed Bash result `is_error: true`: a real failure strikes
        last = calls[-1].body["messages"]
        assert any(b.get("is_error") is True for m in last if isinstance(m["content"], list)
                   for b in m["content"] if isinstance(b, dict)), last[-1]
        session_id = orca.explain(orca.cli("requests")[0]["request_id"])["session_id"]
        traces = _loop_traces(orca, session_id)
        assert len(traces) == LOOPS + 1, [t.get("router") for t in traces]
        _assert_escalated_by_strikes(traces, "error line: traceback")
        shown = orca.session(session_id)
        assert (shown["tier"], shown["reason"]) == ("strong", "strikes"), shown
        assert all("error line: traceback" in s["what"] for s in shown["strikes"]), shown


# Codex's code mode (its default model, tests/agents/CAPTURES.md): its shell runs inside the
# `exec` tool's JavaScript, whose output comes back as a `custom_tool_call_output`.
SCRIPT = ('const r = await tools.exec_command({cmd: "' + COMMAND + '"}); '
          'text(r.output); text("exit code " + r.exit_code);')


def _declares_exec(seen: Seen) -> bool:
    return any(isinstance(item, dict) and item.get("type") == "additional_tools"
               and "exec" in json.dumps(item.get("tools")) for item in seen.body.get("input", []))


def code_mode_model(seen: Seen) -> Act:
    """A model that runs the script with Codex's `exec` tool `LOOPS` times, then answers."""
    done = _tool_results(seen)
    if not _declares_exec(seen) or done >= LOOPS:
        return reply(seen, "Done with the script; stopping here.", id_hex=f"{done:04x}")
    answer = Answer(id_hex=f"{done:04x}", model=str(seen.body.get("model", "m")), created=0,
                    text="", tool=(f"call_exec_{done}", "exec", SCRIPT), finish="tool_calls",
                    prompt_tokens=max(1, len(seen.raw) // 4), cached_tokens=0,
                    cache_write_tokens=0, output_tokens=12, tool_kind="custom",
                    request=seen.body)
    return Act(events=tuple(render_stream(seen.api, answer, include_usage=True)))


@pytest.mark.parametrize("mode", ["tools", "code"])
def test_codex_in_a_failure_loop_escalates_by_strikes(tmp_path: Path, mode: str) -> None:
    """`tools`: Codex asked for a router by name, its shell a function tool. `code`: Codex on
    its default model (code mode, which the example's `"gpt-6*"` alias routes), its shell run
    inside the `exec` tool's JavaScript, the failures in that tool's output."""
    codex = agent_binary("codex")
    code = mode == "code"
    answer, model_name = (code_mode_model, "gpt-6.2-sol") if code else (script, "orca/codex")
    loops: Callable[[Seen], bool] = (
        _declares_exec if code else (lambda s: _shell_call(s) is not None))
    with scripted_upstream(answer) as fake, \
            serving(tmp_path, _config(fake) + '"gpt-6*" = "orca/codex"\n') as orca:
        home, work = tmp_path / "codex-home", _project(tmp_path)
        home.mkdir()
        (home / "config.toml").write_text(codex_config(orca, model_name,
                                                       request_id_header=False))
        env = agent_env(home, CODEX_HOME=str(home), ORCA_API_KEY="orca-dummy-key")
        run = run_agent([codex, "exec", "--skip-git-repo-check",
                         "--dangerously-bypass-approvals-and-sandbox",
                         "Run broken.py and fix what fails"], env, work)
        assert run.returncode == 0, (run.stdout, run.stderr[-3000:], orca.server_log())
        calls = [s for s in fake.calls("r") if loops(s)]
        assert [_tool_results(s) for s in calls] == list(range(LOOPS + 1)), (
            "Codex did not run the command each time")
        assert "KeyError" in json.dumps(calls[-1].body["input"][-1])  # the script really ran
        session_id = orca.explain(orca.cli("requests")[0]["request_id"])["session_id"]
        traces = _loop_traces(orca, session_id)
        assert len(traces) == LOOPS + 1, [t.get("router") for t in traces]
        _assert_escalated_by_strikes(traces, "error line: traceback")
        shown = orca.session(session_id)
        assert (shown["tier"], shown["reason"]) == ("strong", "strikes"), shown
        assert all("error line: traceback" in s["what"] for s in shown["strikes"]), shown


OK_COMMAND = "python3 ok.py"


def _claude(orca: Orca, home: Path, work: Path, prompt: str, *, ask: str | None = None,
            resume: bool = False) -> None:
    env = agent_env(home, ANTHROPIC_BASE_URL=orca.base, ANTHROPIC_API_KEY="orca-dummy-key",
                    ANTHROPIC_MODEL="claude-sonnet-4-5",
                    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    if ask is not None:
        env["ANTHROPIC_CUSTOM_HEADERS"] = f"X-OrcaRouter-Tier: {ask}"
    argv: list[str | Path] = [agent_binary("claude"), "-p", *(["--continue"] if resume else []),
                              prompt, "--allowedTools", f"Bash({OK_COMMAND})"]
    run = run_agent(argv, env, work)
    assert run.returncode == 0, (run.stdout, run.stderr[-3000:], orca.server_log())


def test_claude_code_once_serves_its_whole_tool_loop_strong_and_counts_once(
        tmp_path: Path) -> None:
    with scripted_upstream(model(OK_COMMAND, 2)) as fake, \
            serving(tmp_path, _config(fake)) as orca:
        home, work = tmp_path / "home", _project(tmp_path)
        home.mkdir()
        (work / "ok.py").write_text('print("ok")\n')
        _claude(orca, home, work, "Run ok.py twice", ask="once")
        session_id = orca.explain(orca.cli("requests")[0]["request_id"])["session_id"]
        loop = _loop_traces(orca, session_id)
        assert len(loop) == 3, len(loop)  # the ask, then the agent's two results
        assert [(t["tier"]["decision"], t["tier"]["reason"]) for t in loop] == [
            ("strong", "once")] * 3
        assert {t["selected"]["model"] for t in loop} == {f"{STRONG}-claude"}
        assert orca.session(session_id)["escalation_count"] == 1

        _claude(orca, home, work, "Thanks, that is all", resume=True)  # no header
        after = _loop_traces(orca, session_id)[3:]
        assert [(t["tier"]["decision"], t["selected"]["model"]) for t in after] == [
            ("base", f"{CHEAP}-claude")], after

        _claude(orca, home, work, "One more look, please", ask="once", resume=True)
        denied = _loop_traces(orca, session_id)[4:]
        assert [(t["tier"]["decision"], t["tier"]["reason"]) for t in denied] == [
            ("base", "denied:session_cap")], denied
        events = [(e["event"], e.get("reason")) for e in orca.cli("audit")
                  if e.get("session") == session_id]
        assert sorted(events) == [("denied_cap", "denied:session_cap"), ("once", "once")], events
