"""`orca init --agent NAME [--write]` and `orca serve`'s banner (SPEC §14.5): what they print
and what they write, without the agents (tests/agents/test_init_setups.py runs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from orca_cli.cli.agent_setup import Setup, banner_lines, setup_for
from orca_cli.config.load import load

ROOT = Path(__file__).resolve().parents[2]
BASE = "http://127.0.0.1:8799"


def orca_init(tmp_path: Path, *args: str, **env: str) -> tuple[int, str, str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"), **env}
    p = subprocess.run([sys.executable, "-m", "orca_cli", "init", "--path",
                        str(tmp_path / "orca.toml"), *args], check=False, capture_output=True,
                       text=True, env=full, cwd=tmp_path, timeout=60)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("agent,needles", [
    ("claude-code", ["export ANTHROPIC_BASE_URL=" + BASE, "export ANTHROPIC_API_KEY=orca"]),
    ("codex", ['base_url = "' + BASE + '/v1"', 'wire_api = "responses"',
               'model_provider = "orca"', "export ORCA_API_KEY=orca"]),
    ("aider", ["export OPENAI_API_BASE=" + BASE + "/v1",
               "aider --model openai/orca/coding --weak-model openai/orca/background"]),
    ("llm", ["model_name: orca/coding", f'api_base: "{BASE}/v1"']),
    ("opencode", ['"baseURL": "' + BASE + '/v1"', '"model": "orca/orca/coding"']),
])
def test_each_agent_setup_is_printed(tmp_path: Path, agent: str, needles: list[str]) -> None:
    code, out, err = orca_init(tmp_path, "--agent", agent, "--url", BASE,
                               "--settings", str(tmp_path / "cc.json"))
    assert code == 0, err
    for needle in needles:
        assert needle in out, out
    assert not (tmp_path / "orca.toml").exists()  # without --write it only prints


def test_write_also_writes_a_missing_config_and_never_replaces_one(tmp_path: Path) -> None:
    """`--write` writes the files: the config when there is none, the agent's own file; an
    existing config stays as it is, `--force` (which replaces the agent's provider) included."""
    codex_home = tmp_path / "codex"
    code, _, err = orca_init(tmp_path, "--agent", "codex", "--write", "--url", BASE,
                             CODEX_HOME=str(codex_home))
    assert code == 0, err
    assert (tmp_path / "orca.toml").exists() and (codex_home / "config.toml").exists()
    (tmp_path / "orca.toml").write_text("# mine\n")
    code, _, err = orca_init(tmp_path, "--agent", "codex", "--write", "--force", "--url",
                             BASE, CODEX_HOME=str(codex_home))
    assert code == 0, err
    assert (tmp_path / "orca.toml").read_text() == "# mine\n"


def test_the_url_defaults_to_the_configs_server(tmp_path: Path) -> None:
    (tmp_path / "orca.toml").write_text("[server]\nport = 9911\n")
    code, out, _ = orca_init(tmp_path, "--agent", "aider")
    assert code == 0 and "OPENAI_API_BASE=http://127.0.0.1:9911/v1" in out


def test_codex_write_keeps_the_users_settings_and_refuses_to_clobber(tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    cfg = codex_home / "config.toml"
    cfg.write_text("# my settings\n[analytics]\nenabled = false\n")
    code, out, err = orca_init(tmp_path, "--agent", "codex", "--write", "--url", BASE,
                               CODEX_HOME=str(codex_home))
    assert code == 0, err
    doc = tomllib.loads(cfg.read_text())
    assert doc["model_provider"] == "orca" and doc["analytics"] == {"enabled": False}
    assert doc["model_providers"]["orca"] == {"name": "orca", "base_url": BASE + "/v1",
                                              "env_key": "ORCA_API_KEY",
                                              "wire_api": "responses"}
    assert "# my settings" in cfg.read_text()
    code, out, _ = orca_init(tmp_path, "--agent", "codex", "--write", "--url", BASE,
                             CODEX_HOME=str(codex_home))
    assert code == 0 and "already uses orca" in out
    code, _, err = orca_init(tmp_path, "--agent", "codex", "--write", "--url",
                             "http://127.0.0.1:1", CODEX_HOME=str(codex_home))
    assert code == 1 and "--force" in err
    assert tomllib.loads(cfg.read_text())["model_providers"]["orca"]["base_url"] == BASE + "/v1"
    code, _, err = orca_init(tmp_path, "--agent", "codex", "--write", "--force", "--url",
                             "http://127.0.0.1:1", CODEX_HOME=str(codex_home))
    assert code == 0, err
    doc = tomllib.loads(cfg.read_text())
    assert doc["model_providers"]["orca"]["base_url"] == "http://127.0.0.1:1/v1"
    assert doc["analytics"] == {"enabled": False}


def test_llm_and_opencode_write_once(tmp_path: Path) -> None:
    user = tmp_path / "llm"
    for _ in range(2):
        code, _, err = orca_init(tmp_path, "--agent", "llm", "--write", "--url", BASE,
                                 LLM_USER_PATH=str(user))
        assert code == 0, err
    assert (user / "extra-openai-models.yaml").read_text().count("model_id: orca") == 1
    (tmp_path / "opencode.json").write_text(json.dumps({"theme": "dark"}))
    code, _, err = orca_init(tmp_path, "--agent", "opencode", "--write", "--url", BASE)
    assert code == 0, err
    doc = json.loads((tmp_path / "opencode.json").read_text())
    assert doc["theme"] == "dark" and doc["model"] == "orca/orca/coding"
    assert doc["provider"]["orca"]["options"]["baseURL"] == BASE + "/v1"


def test_aider_write_writes_the_config_and_prints_the_environment(tmp_path: Path) -> None:
    """Aider is set up by environment variables alone: `--write` writes `./orca.toml` when
    missing (as for every agent, README) and prints the variables; it never replaces one."""
    code, out, err = orca_init(tmp_path, "--agent", "aider", "--write")
    assert code == 0, err
    assert (tmp_path / "orca.toml").exists() and "OPENAI_API_BASE=" in out
    (tmp_path / "orca.toml").write_text("# mine\n")
    code, out, err = orca_init(tmp_path, "--agent", "aider", "--write")
    assert code == 0 and (tmp_path / "orca.toml").read_text() == "# mine\n"


def test_banner_names_every_agent_and_the_key_to_give() -> None:
    cfg = load(str(ROOT / "orca.toml.example"))
    lines = "\n".join(banner_lines(setup_for(cfg, BASE)))
    for needle in ("ANTHROPIC_BASE_URL=" + BASE, "ANTHROPIC_API_KEY=orca",
                   'base_url = "' + BASE + '/v1"', 'wire_api = "responses"',
                   "OPENAI_API_BASE=" + BASE + "/v1",
                   # the banner's aider line is `orca init --agent aider`'s: its weak model too
                   "aider --model openai/orca/coding --weak-model openai/orca/background",
                   "OpenCode", "llm", "any non-empty API key"):
        assert needle in lines, lines
    assert "OPENAI_BASE_URL" not in lines
    tokened = banner_lines(Setup(base=BASE, key="$ORCA_INBOUND_TOKEN"))
    assert "inbound_token" in tokened[0]


def test_banner_says_when_the_agents_key_matters(tmp_path: Path) -> None:
    """An inbound token is the key to give; a pass_through_auth channel forwards the agent's
    own key, so "any key" would be wrong."""
    text = (ROOT / "orca.toml.example").read_text()
    text = text.replace('inbound_token = "${ORCA_INBOUND_TOKEN:-}"', 'inbound_token = "t0k"')
    text = text.replace("pass_through_auth = false\nlatency_ms = 20",
                        "pass_through_auth = true\nlatency_ms = 20", 1)
    path = tmp_path / "orca.toml"
    path.write_text(text)
    setup = setup_for(load(str(path)), BASE)
    first = banner_lines(setup)[0]
    assert "inbound_token" in first and "pass_through_auth" in first, first
    assert "ANTHROPIC_API_KEY=$ORCA_INBOUND_TOKEN" in "\n".join(banner_lines(setup))


def test_an_agent_file_that_cannot_take_the_set_up_fails_before_anything_is_written(
        tmp_path: Path) -> None:
    """OpenCode reads JSONC; a rewrite would lose the comments, so `--write` refuses — and
    leaves no `orca.toml` behind, nor a touched opencode.json."""
    jsonc = '{\n  // my settings\n  "theme": "dark",\n}\n'
    (tmp_path / "opencode.json").write_text(jsonc)
    code, _out, err = orca_init(tmp_path, "--agent", "opencode", "--write")
    assert code == 1 and "JSONC" in err and "by hand" in err
    assert not (tmp_path / "orca.toml").exists()
    assert (tmp_path / "opencode.json").read_text() == jsonc
