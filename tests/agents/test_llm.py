"""simonw's `llm` CLI against `orca serve` (SPEC §14.6).

`llm` reaches orca as an extra OpenAI-compatible model (`extra-openai-models.yaml`); `llm -c`
continues the conversation. It sends no session header, so orca derives the session id from the
conversation's start (§1.4): both turns land in one derived session, one model and key.
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


def _models_yaml(orca: Orca, request_id: str) -> str:
    return f"""- model_id: orca
  model_name: orca/coding
  api_base: "{orca.base}/v1"
  api_key_name: orca
  headers:
    X-Request-Id: {request_id}
"""


def test_prompt_then_continue_is_one_derived_session(orca: Orca, tmp_path: Path) -> None:
    llm = agent_binary("llm")
    user_path, work = tmp_path / "llm", tmp_path / "work"
    user_path.mkdir()
    work.mkdir()
    env = agent_env(tmp_path, LLM_USER_PATH=str(user_path))
    turns = [["-m", "orca", "Explain what the parser module tests check"],
             ["-c", "Now list the parser edge cases they miss"]]
    for turn, args in enumerate(turns, start=1):
        (user_path / "extra-openai-models.yaml").write_text(_models_yaml(orca, f"llm-{turn}"))
        run = run_agent([llm, *args, "--key", "orca-dummy-key"], env, work)
        assert run.returncode == 0, (run.stderr, orca.server_log())
        assert run.stdout.strip()
    traces = [orca.explain("llm-1"), orca.explain("llm-2")]
    session_id = assert_one_session(traces)
    assert session_id.startswith("d:")
    assert {t["session_source"] for t in traces} == {"derived"}
    assert {t["requested_model"] for t in traces} == {"orca/coding"}
