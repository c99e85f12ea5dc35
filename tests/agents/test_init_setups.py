"""`orca init --agent NAME` (SPEC §14.5): the set-up it prints (and with `--write` writes) is
run as printed, with the agent itself, against `orca serve`; the request must reach orca and be
served. Only the printed `export` lines and written files point the agent at orca here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agents.kit import REPO, Orca, agent_binary, agent_env, agents_dir, run_agent
from tests.unavailable import unavailable

_EXPORT = re.compile(r"^export (\w+)=(\S+)", re.MULTILINE)


def init(orca: Orca, agent: str, env: dict[str, str], cwd: Path, *extra: str) -> str:
    """Run `orca init --agent` as a user would; its stdout is the set-up."""
    full = {**env, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "orca_cli", "init", "--agent", agent,
                           "--url", orca.base, "--path", str(cwd / "orca.toml"), *extra],
                          check=False, capture_output=True, text=True, env=full, cwd=cwd,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def exports(setup: str) -> dict[str, str]:
    return dict(_EXPORT.findall(setup))


def served(orca: Orca) -> list[dict[str, Any]]:
    rows = orca.cli("requests")
    assert rows, orca.server_log()
    assert all(r["status"] == 200 for r in rows), rows
    return list(rows)


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    return home, work


def test_claude_code_setup_as_printed(orca: Orca, tmp_path: Path) -> None:
    claude = agent_binary("claude")
    home, work = _dirs(tmp_path)
    env = agent_env(home)
    setup = init(orca, "claude-code", env, work,
                 "--settings", str(home / ".claude" / "settings.json"))
    assert exports(setup)["ANTHROPIC_BASE_URL"] == orca.base
    run = run_agent([claude, "-p", "Explain what the parser tests check"],
                    {**env, **exports(setup)}, work)
    assert run.returncode == 0, (run.stderr, orca.server_log())
    assert {r["inbound_api"] for r in served(orca)} == {"anthropic"}


def test_codex_block_as_written_is_accepted_by_codex(orca: Orca, tmp_path: Path) -> None:
    """The printed block is valid TOML that `codex exec` runs with (written by --write into
    $CODEX_HOME/config.toml, next to a setting of the user's that stays)."""
    import tomllib

    codex = agent_binary("codex")
    home, work = _dirs(tmp_path)
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text("# mine\n[analytics]\nenabled = false\n")
    env = agent_env(home, CODEX_HOME=str(codex_home))
    setup = init(orca, "codex", env, work, "--write")
    block = setup.split("\n", 1)[1].split("\nexport ", 1)[0]
    assert tomllib.loads(block)["model_providers"]["orca"]["wire_api"] == "responses"
    written = (codex_home / "config.toml").read_text()
    assert "# mine" in written and tomllib.loads(written)["analytics"] == {"enabled": False}
    run = run_agent([codex, "exec", "--skip-git-repo-check", "Explain the parser tests"],
                    {**env, **exports(setup)}, work)
    assert run.returncode == 0, (run.stderr[-3000:], orca.server_log())
    assert {r["inbound_api"] for r in served(orca)} == {"responses"}


def test_aider_setup_as_printed(orca: Orca, tmp_path: Path) -> None:
    """Aider reads OPENAI_API_BASE (not OPENAI_BASE_URL): the printed exports alone point it."""
    aider = agent_binary("aider")
    home, work = _dirs(tmp_path)
    env = agent_env(home, LITELLM_LOCAL_MODEL_COST_MAP="True")
    setup = init(orca, "aider", env, work)
    command = setup.strip().splitlines()[-1].split()
    assert command[0] == "aider"
    run = run_agent([aider, *command[1:], "--no-git", "--yes-always", "--no-check-update",
                     "--analytics-disable", "--no-show-model-warnings",
                     "--no-show-release-notes", "--no-pretty", "--no-stream",
                     "--message", "Explain the parser tests"],
                    {**env, **exports(setup)}, work)
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:], orca.server_log())
    assert {r["router"] for r in served(orca)} <= {"coding", "background"}


def test_llm_setup_as_written(orca: Orca, tmp_path: Path) -> None:
    llm = agent_binary("llm")
    home, work = _dirs(tmp_path)
    user_path = home / "llm"
    env = agent_env(home, LLM_USER_PATH=str(user_path))
    init(orca, "llm", env, work, "--write")
    assert (user_path / "extra-openai-models.yaml").exists()
    run = run_agent([llm, "-m", "orca", "--key", "orca", "Explain the parser tests"], env, work)
    assert run.returncode == 0, (run.stderr, orca.server_log())
    assert [r["requested_model"] for r in served(orca)] == ["orca/coding"]


def test_opencode_setup_as_written(orca: Orca, tmp_path: Path) -> None:
    """OpenCode (npm `opencode-ai`) with the ./opencode.json `--write` makes; two runs, the
    second `--continue`, are one session on one key."""
    opencode = agents_dir() / "npm" / "node_modules" / ".bin" / "opencode"
    if not os.access(opencode, os.X_OK):
        unavailable(f"OpenCode is not installed at {opencode}; install the agents with "
                    ".ci/install-agents")
    home, work = _dirs(tmp_path)
    env = agent_env(home)
    setup = init(orca, "opencode", env, work, "--write")
    env.update(exports(setup))
    for argv in (["run", "Explain the parser tests"], ["run", "--continue", "And the gaps?"]):
        run = run_agent([opencode, *argv], env, work)
        assert run.returncode == 0, (run.stderr[-2000:], orca.server_log())
    rows = served(orca)
    main = [r for r in rows if r["router"] == "coding"]
    assert len(main) == 2 and len({r["session_id"] for r in main}) == 1, rows
    assert len({(r["channel"], r["key_index"]) for r in main}) == 1, rows
    # each turn's delta is the typed ask, not OpenCode's prompt or context
    turns = [t for t in orca.requests(main[0]["session_id"]) if t["router"] == "coding"]
    assert len(turns) == 2
    for t in turns:
        delta = t["difficulty"]["delta"]
        assert delta["features"]["log_prompt_tokens"]["value"] < 4.0, delta
