"""The real Codex on its own default model, served translated (SPEC §13.2).

For a model of its catalog (its default `gpt-6.2-sol`) Codex 0.171 runs in "code mode": the
request's top-level `tools` is empty and its tools travel as an `additional_tools` input item
(`role: "developer"`, namespaces `functions` with the `exec` custom tool that runs
JavaScript orchestrating the nested tools, `clock` and `collaboration`;
tests/agents/CAPTURES.md). A router that serves the turn on a Claude model must hand those
tools to the model, and the model's call of one must come back to Codex as the namespaced
custom tool call Codex runs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

from orca_cli.testing.upstream import Act, FakeUpstream, Script, Seen
from tests.agents.kit import Orca, Run, agent_binary, agent_env, run_agent, serving
from tests.agents.test_agent_loops import reply, scripted_upstream
from tests.agents.test_codex import codex_config
from tests.e2e.translation.kit import one_channel_two_tier

CLAUDE = "claude-sonnet-4-6"
CODEX_DEFAULT = "gpt-6.2-sol"  # what Codex 0.171 asks for with no `model` line
SCRIPT = "text('the parser checks ids')"


def _tool_names(seen: Seen) -> set[str]:
    return {str(t.get("name")) for t in seen.body.get("tools", []) if isinstance(t, dict)}


def _script_result(seen: Seen) -> str | None:
    for m in seen.body.get("messages", []):
        for b in m.get("content") if isinstance(m.get("content"), list) else ():
            if isinstance(b, dict) and b.get("type") == "tool_result":
                content = b.get("content")
                return json.dumps(content) if not isinstance(content, str) else content
    return None


def claude(seen: Seen) -> Act:
    """A Claude model that runs one script with Codex's `exec` tool, then answers."""
    if "functions__exec" in _tool_names(seen) and _script_result(seen) is None:
        return reply(seen, "", ("toolu_exec_1", "functions__exec",
                                json.dumps({"input": SCRIPT})))
    return reply(seen, "The parser tests check ids.")


def _config(url: str) -> str:
    # Codex's default model reaches the router through the example config's alias
    return one_channel_two_tier(url, "anthropic", "code-mode-key", ("claude-haiku-4-5", 1.0, 5.0),
                                (CLAUDE, 3.0, 15.0), ("gpt-6*", "coding"))


@contextlib.contextmanager
def codex_on_claude(tmp_path: Path, model: Script, prompt: str
                    ) -> Iterator[tuple[Run, FakeUpstream, Orca]]:
    """`codex exec prompt` on its default model through orca, served by the scripted Claude
    `model`; (the run, the fake provider, orca), inside the serving context."""
    codex = agent_binary("codex")
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with scripted_upstream(model) as fake, \
            serving(tmp_path, _config(fake.url("a", versioned=False))) as orca:
        (home / "config.toml").write_text(codex_config(orca, CODEX_DEFAULT))
        env = agent_env(home, CODEX_HOME=str(home), ORCA_API_KEY="orca-dummy-key",
                        ORCA_TEST_REQUEST_ID="code-mode-1")
        run = run_agent([codex, "exec", "--skip-git-repo-check",
                         "--dangerously-bypass-approvals-and-sandbox", prompt], env, work)
        assert run.returncode == 0, (run.stdout, run.stderr[-3000:], orca.server_log())
        yield run, fake, orca


def test_codex_code_mode_tools_reach_a_claude_model_and_its_call_runs(tmp_path: Path) -> None:
    with codex_on_claude(tmp_path, claude, "Explain what the parser tests check") as (
            run, fake, orca):
        calls = fake.calls("a")
        assert calls, orca.server_log()
        # the additional_tools item's namespaced tools, flattened as Codex itself names them
        assert {"functions__exec", "functions__wait", "clock__sleep",
                "collaboration__spawn_agent"} <= _tool_names(calls[0]), _tool_names(calls[0])
        exec_tool = next(t for t in calls[0].body["tools"] if t["name"] == "functions__exec")
        assert "JavaScript" in exec_tool["description"]
        # Codex ran the model's script and sent its output back
        results = [r for r in (_script_result(s) for s in calls) if r is not None]
        assert results and "the parser checks ids" in results[-1], results
        assert "The parser tests check ids." in run.stdout
        trace = orca.explain("code-mode-1")
        assert trace["selected"]["model"] in ("claude-haiku-4-5", CLAUDE), trace["selected"]
        assert trace["translation"]["to"] == "anthropic", trace["translation"]


def _texts(seen: Seen) -> str:
    return json.dumps(seen.body.get("messages", []))


def multi_agent_claude(seen: Seen) -> Act:
    """A Claude model that has Codex spawn a sub-agent, waits for it, then answers with what
    it found; the sub-agent (its task arrives as an `agent_message`) answers its task."""
    texts = _texts(seen)
    if "Message Type: NEW_TASK" in texts:
        return reply(seen, "The parser is in src/parser.py.")
    if "Message Type: FINAL_ANSWER" in texts:
        return reply(seen, "Done: the helper found the parser in src/parser.py.")
    if "call_spawn" not in texts:
        return reply(seen, "", ("call_spawn", "collaboration__spawn_agent", json.dumps(
            {"task_name": "find_parser", "message": "Find the parser module",
             "fork_turns": "none"})))
    return reply(seen, "", ("call_wait", "collaboration__wait_agent",
                            json.dumps({"timeout_ms": 10000})))


def test_codex_sub_agents_reach_a_claude_model_and_report_back(tmp_path: Path) -> None:
    """Codex's sub-agents (the `collaboration` namespace): the sub-agent's task and its final
    answer travel as `agent_message` input items (author, recipient, the text), under the
    parent's `session-id`; served translated, each is the user's input."""
    with codex_on_claude(tmp_path, multi_agent_claude, "Find the parser with a helper agent"
                         ) as (run, fake, orca):
        assert "Done: the helper found the parser" in run.stdout
        texts = [_texts(s) for s in fake.calls("a")]
        assert any("Message Type: NEW_TASK" in t and "Find the parser module" in t
                   for t in texts), texts  # the sub-agent's task, translated
        assert any("Payload:\\nThe parser is in src/parser.py." in t for t in texts)
        sessions = {r.get("session_id") for r in orca.cli("requests", "--limit", "20")}
        assert len(sessions) == 1, sessions  # the sub-agent under the parent's session id
