"""Claude Code's model names in the set-up (SPEC §14.5): `orca serve`'s banner and `orca init
--agent claude-code` add `ANTHROPIC_MODEL` (and the small model's variable) naming a router
when the config's aliases do not route the names Claude Code asks for by default; with aliases
that do, the set-up is the base URL and the key alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from orca_cli.cli.agent_setup import banner_lines, setup_for
from orca_cli.config.load import load

ROOT = Path(__file__).resolve().parents[2]
BASE = "http://127.0.0.1:8799"
_EXPORT = re.compile(r"^export (\w+)=(\S+)", re.MULTILINE)

NO_ALIASES = """
[[channels]]
name = "sim-a"
type = "sim"
api = "anthropic"
keys = ["k"]
models = ["sim-small", "sim-large"]

[routers.main]
allowed_models = ["sim-small", "sim-large"]

[routers.quick]
session_aware = false
allowed_models = ["sim-small"]
"""
OPUS_ONLY = NO_ALIASES + '\n[aliases]\n"claude-opus-*" = "orca/main"\n'
ALL_ALIASED = OPUS_ONLY + '"claude-haiku-*" = "orca/quick"\n'


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "orca.toml"
    path.write_text(text)
    return path


def _claude_banner(path: Path) -> str:
    lines = banner_lines(setup_for(load(str(path), environ={}), BASE))
    (line,) = [ln for ln in lines if ln.lstrip().startswith("Claude Code")]
    return line


def _init(tmp_path: Path, path: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home")}
    p = subprocess.run([sys.executable, "-m", "orca_cli", "init", "--agent", "claude-code",
                        "--path", str(path), "--url", BASE,
                        "--settings", str(tmp_path / "cc.json")],
                       check=False, capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return dict(_EXPORT.findall(p.stdout))


BASE_ENV = {"ANTHROPIC_BASE_URL": BASE, "ANTHROPIC_API_KEY": "orca"}


@pytest.mark.parametrize(("text", "extra"), [
    (NO_ALIASES, {"ANTHROPIC_MODEL": "orca/main",
                  "ANTHROPIC_DEFAULT_HAIKU_MODEL": "orca/quick"}),
    (OPUS_ONLY, {"ANTHROPIC_DEFAULT_HAIKU_MODEL": "orca/quick"}),
    (ALL_ALIASED, {}),
])
def test_the_banner_names_a_router_for_each_claude_code_name_no_alias_routes(
        tmp_path: Path, text: str, extra: dict[str, str]) -> None:
    line = _claude_banner(_config(tmp_path, text))
    assert line.split("export ", 1)[1].split() == [f"{k}={v}" for k, v in
                                                   {**BASE_ENV, **extra}.items()]


@pytest.mark.parametrize(("text", "extra"), [
    (NO_ALIASES, {"ANTHROPIC_MODEL": "orca/main",
                  "ANTHROPIC_DEFAULT_HAIKU_MODEL": "orca/quick"}),
    (OPUS_ONLY, {"ANTHROPIC_DEFAULT_HAIKU_MODEL": "orca/quick"}),
    (ALL_ALIASED, {}),
])
def test_init_prints_the_same_claude_code_variables(
        tmp_path: Path, text: str, extra: dict[str, str]) -> None:
    assert _init(tmp_path, _config(tmp_path, text)) == {**BASE_ENV, **extra}


def test_without_a_sessionless_router_the_small_model_is_the_main_router(
        tmp_path: Path) -> None:
    text = NO_ALIASES.split("[routers.quick]")[0]
    assert "ANTHROPIC_DEFAULT_HAIKU_MODEL=orca/main" in _claude_banner(_config(tmp_path, text))


def test_the_example_config_aliases_claude_codes_names(tmp_path: Path) -> None:
    path = ROOT / "orca.toml.example"
    assert _claude_banner(path).endswith(f"export ANTHROPIC_BASE_URL={BASE} "
                                         "ANTHROPIC_API_KEY=orca")
    assert _init(tmp_path, path) == BASE_ENV
