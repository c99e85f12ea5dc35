"""Aider (`aider-chat`) against `orca serve` (SPEC §14.6).

Aider reaches orca as an OpenAI-compatible base URL (`--openai-api-base`, model
`openai/orca/coding`); the second run restores the chat history. Aider sends no session
header: orca derives the session from the conversation's start, so both turns share it, one
model and key, cached from turn 2. Aider's own fetch of litellm's price list goes to the dead
proxy and is ignored by Aider.
"""

from __future__ import annotations

from pathlib import Path

from tests.agents.kit import (
    Orca,
    agent_binary,
    agent_env,
    assert_one_session,
    run_agent,
)

QUESTIONS = ["Explain what the parser module tests check",
             "Now list the parser edge cases they miss"]


def _settings(request_id: str) -> str:
    return f"""- name: openai/orca/coding
  extra_params:
    extra_headers:
      X-Request-Id: {request_id}
"""


def test_two_runs_with_restored_history_are_one_derived_session(orca: Orca,
                                                                 tmp_path: Path) -> None:
    aider = agent_binary("aider")
    work = tmp_path / "work"
    work.mkdir()
    env = agent_env(tmp_path, LITELLM_LOCAL_MODEL_COST_MAP="True")
    for turn, question in enumerate(QUESTIONS, start=1):
        (work / "settings.yml").write_text(_settings(f"aider-{turn}"))
        argv: list[str | Path] = [aider, "--openai-api-base", f"{orca.base}/v1", "--openai-api-key",
                "orca-dummy-key", "--model", "openai/orca/coding", "--weak-model",
                "openai/orca/background", "--model-settings-file", "settings.yml", "--no-git",
                "--yes-always", "--no-check-update", "--analytics-disable",
                "--no-show-model-warnings", "--no-show-release-notes", "--no-pretty",
                "--no-stream", "--message", question]
        if turn > 1:
            argv.insert(-2, "--restore-chat-history")
        run = run_agent(argv, env, work)
        assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:], orca.server_log())
        assert "Tokens:" in run.stdout
    traces = [orca.explain("aider-1"), orca.explain("aider-2")]
    session_id = assert_one_session(traces)
    assert session_id.startswith("d:")
    assert {t["requested_model"] for t in traces} == {"orca/coding"}
    assert {t["router"] for t in traces} == {"coding"}
