"""Codex CLI (`@openai/codex`) against `orca serve` (SPEC §13.1, §14.6).

A provider block with `wire_api = "responses"` points Codex at orca; `codex exec` then
`codex exec resume --last` make two turns of one session (Codex's `session-id` header and
`prompt_cache_key`, tests/agents/CAPTURES.md), served by one model and key, cached from turn 2.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.agents.kit import (
    EXAMPLE,
    Orca,
    Terminal,
    agent_binary,
    agent_env,
    assert_one_session,
    kill_processes_under,
    run_agent,
    serving,
)

MODEL = "orca/coding"


def codex_config(orca: Orca, model: str = MODEL, *, request_id_header: bool = True) -> str:
    """The provider block the README documents (plus the test's X-Request-Id header, unless
    `request_id_header` is false)."""
    header = ('env_http_headers = { "X-Request-Id" = "ORCA_TEST_REQUEST_ID" }\n'
              if request_id_header else "")
    return f"""model = "{model}"
model_provider = "orca"

[model_providers.orca]
name = "orca"
base_url = "{orca.base}/v1"
env_key = "ORCA_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
{header}
[analytics]
enabled = false
"""


def _codex_turns(orca: Orca, tmp_path: Path) -> list[dict[str, Any]]:
    codex = agent_binary("codex")
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(codex_config(orca))
    traces = []
    argvs: list[list[str | Path]] = [
        [codex, "exec", "--skip-git-repo-check", "Explain what the parser tests check"],
        [codex, "exec", "--skip-git-repo-check", "resume", "--last",
         "Now list the parser edge cases they miss"]]
    for turn, argv in enumerate(argvs, start=1):
        env = agent_env(home, CODEX_HOME=str(home), ORCA_API_KEY="orca-dummy-key",
                        ORCA_TEST_REQUEST_ID=f"codex-{turn}")
        run = run_agent(argv, env, work)
        assert run.returncode == 0, (run.stdout, run.stderr[-3000:], orca.server_log())
        assert run.stdout.strip()
        traces.append(orca.explain(f"codex-{turn}"))
    return traces


def test_exec_then_resume_is_one_pinned_session(orca: Orca, tmp_path: Path) -> None:
    traces = _codex_turns(orca, tmp_path)
    session_id = assert_one_session(traces)
    assert {t["inbound_api"] for t in traces} == {"responses"}
    assert {t["router"] for t in traces} == {"coding"}
    assert {t["requested_model"] for t in traces} == {MODEL}
    # Codex 0.171 sends `session-id` (and prompt_cache_key = the same id): either resolves it
    assert all("session" in str(t["session_source"]) or "prompt_cache_key" in
               str(t["session_source"]) for t in traces), [t["session_source"] for t in traces]
    shown = orca.session(session_id)
    assert session_id in str(shown)
    # Turn 1's delta is the typed ask alone: Codex's ~17 KB base instructions (its first
    # developer message, CAPTURES.md) are the system prompt, not the ask (~4,250 tokens,
    # log 8.35, when they were read as one).
    first = traces[0]["difficulty"]["delta"]
    assert traces[0]["difficulty"]["user_turn"]
    assert first["features"]["log_prompt_tokens"]["value"] < 4.0, first
    assert first["features"]["system_prompt_log_len"]["value"] == 0.0
    assert traces[0]["difficulty"]["full"]["features"]["system_prompt_log_len"]["value"] > 9.0


def test_a_session_codex_compacts_stays_on_its_tier(orca: Orca, tmp_path: Path) -> None:
    """Codex compacts a conversation that passed `model_auto_compact_token_limit` before its
    next turn: a summary request, then the turn with the person's messages, the summary and
    the new ask, and no assistant message left. Read as a sub-agent's first request, an
    escalated session was served `base; reason=sub_agent` from there on; it stays strong."""
    codex = agent_binary("codex")
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        codex_config(orca, request_id_header=False)
        .replace('model_provider = "orca"\n',
                 'model_provider = "orca"\nmodel_auto_compact_token_limit = 3000\n'))
    env = agent_env(home, CODEX_HOME=str(home), ORCA_API_KEY="orca-dummy-key")
    first = run_agent([codex, "exec", "--skip-git-repo-check",
                       "Explain what the parser tests check"], env, work)
    assert first.returncode == 0, (first.stderr[-3000:], orca.server_log())
    (session,) = {row["session_id"] for row in orca.cli("session", "list")}
    orca.cli("escalate", session)
    for ask in ("Now list the parser edge cases they miss", "ok, fix the first one"):
        run = run_agent([codex, "exec", "--skip-git-repo-check", "resume", "--last", ask],
                        env, work)
        assert run.returncode == 0, (run.stderr[-3000:], orca.server_log())
    rollout = "".join(p.read_text() for p in (home / "sessions").rglob("*.jsonl"))
    assert '"type":"compacted"' in rollout  # Codex did compact
    served = [(t["tier"]["decision"], t["tier"]["reason"]) for t in orca.requests(session)]
    assert served[0] == ("base", "default") and len(served) >= 4, served
    assert set(served[1:]) == {("strong", "explicit")}, served


def test_codexs_built_in_provider_is_served_and_told_how_to_compact(
        orca: Orca, tmp_path: Path) -> None:
    """`openai_base_url` on Codex's built-in provider: it asks for WebSocket mode first (a
    426 sends it on over HTTP, with no warning in orca's log), and compacts on OpenAI's
    servers, which no sim channel can answer: Codex prints orca's 400 with the fix."""
    codex = agent_binary("codex")
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        f'model = "{MODEL}"\nopenai_base_url = "{orca.base}/v1"\n'
        "model_auto_compact_token_limit = 3000\n[analytics]\nenabled = false\n")
    env = agent_env(home, CODEX_HOME=str(home), OPENAI_API_KEY="orca-dummy-key")
    first = run_agent([codex, "exec", "--skip-git-repo-check",
                       "Explain what the parser tests check"], env, work)
    assert first.returncode == 0, (first.stderr[-3000:], orca.server_log())
    assert "WebSocket" not in orca.server_log()
    second = run_agent([codex, "exec", "--skip-git-repo-check", "resume", "--last",
                        "Now list the parser edge cases they miss"], env, work)
    assert second.returncode != 0
    assert "give Codex a provider block of its own" in second.stderr, second.stderr[-3000:]


@pytest.mark.parametrize("model", [MODEL, "gpt-6.2-sol"])
def test_tui_title_request_leaves_no_session_of_its_own(orca: Orca, tmp_path: Path,
                                                        model: str) -> None:
    """§14.1: the Codex TUI sends a thread-title request beside the first turn, under a new
    session id of its own (`thread_source: "thread_title"`, a `title` output schema, no tools;
    CAPTURES.md). As a side request it writes no pin and no tier state: the only session orca
    keeps is the conversation's, the one Codex recorded. On its default model (code mode,
    which the example's `"gpt-6*"` alias routes) the title request carries the session's
    `additional_tools` item, as the main turn does; its title schema still tells it apart."""
    codex = agent_binary("codex")
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(codex_config(orca, model)
                                      + f'\n[projects."{work}"]\ntrust_level = "trusted"\n')
    env = agent_env(home, CODEX_HOME=str(home), ORCA_API_KEY="orca-dummy-key",
                    ORCA_TEST_REQUEST_ID="codex-tui", TERM="xterm-256color")
    term = Terminal([codex], env, work)
    deadline = time.monotonic() + 90
    prompt = b"Explain what the parser module tests check"
    try:
        term.wait_for(b"Ask Codex to do anything", deadline=deadline)   # the composer is up
        term.type(prompt)
        term.wait_for(prompt[-12:], deadline=deadline)
        term.type(b"\r")
        done, error = b"\x1b]7501;state=done:app=codex", b"\x1b]7501;state=error:app=codex"
        outcome = term.wait_for(done, error, deadline=deadline)   # the TUI's OSC status
        assert outcome == done, (bytes(term.screen[-3000:]), orca.server_log())
    finally:
        term.close()
        kill_processes_under(home)
    rollouts = [p.name for p in (home / "sessions").rglob("*.jsonl")]
    sessions = orca.cli("session", "list")
    ids = {row["session_id"] for row in sessions}
    seen = [(r.get("session_id"), r.get("tier"), r.get("side"), r.get("requested_model"))
            for r in orca.cli("requests", "--limit", "20")]
    assert len(ids) == 1, (sessions, seen, orca.server_log()[-4000:])
    (session_id,) = ids
    assert any(session_id in name for name in rollouts), (session_id, rollouts)


def test_a_spent_budget_reaches_the_developer_with_its_message(tmp_path: Path) -> None:
    """SPEC §17: a spent `[budgets]` budget is a 429 naming it and the command that raises
    it. Codex 0.171 drops the body of a plain 429 ("exceeded retry limit, last status: 429");
    the Responses API refusal is typed `usage_limit_reached` with the message in
    `x-codex-promo-message`, so Codex prints orca's words, and sends it once (no retries)."""
    config = EXAMPLE.read_text().replace("session_usd = 0 ", "session_usd = 0.000001 ", 1)
    assert "session_usd = 0.000001" in config
    codex = agent_binary("codex")
    home, work = tmp_path / "codex-home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with serving(tmp_path, config) as orca:
        (home / "config.toml").write_text(codex_config(orca))
        argvs: list[list[str | Path]] = [
            [codex, "exec", "--skip-git-repo-check", "Explain what the parser tests check"],
            [codex, "exec", "--skip-git-repo-check", "resume", "--last",
             "Now list the parser edge cases they miss"]]
        runs = []
        for turn, argv in enumerate(argvs, start=1):
            env = agent_env(home, CODEX_HOME=str(home), ORCA_API_KEY="orca-dummy-key",
                            ORCA_TEST_REQUEST_ID=f"codex-budget-{turn}")
            runs.append(run_agent(argv, env, work))
        served = orca.explain("codex-budget-1")
        refused = orca.explain("codex-budget-2")
        seen = orca.cli("requests", "--limit", "20")
    assert served["status"] == 200, (runs[0].stderr[-3000:], served)
    assert refused["status"] == 429, refused
    assert refused["tier"]["reason"] == "denied:budget", refused["tier"]
    out = runs[1].stdout + runs[1].stderr
    session = served["session_id"]
    assert f'budget session_usd for session "{session}" is spent' in out, out[-3000:]
    assert "`orca budget raise session_usd <usd>`" in out, out[-3000:]
    assert "exceeded retry limit" not in out
    assert sum(1 for r in seen if r.get("status") == 429) == 1, seen
