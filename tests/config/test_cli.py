"""`orca config check|show|path` and `orca init` through the real typer app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.config import load, template_text

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "orca.toml.example")
CANARY = "sk-canary-0f9e8d7c6b5a4"
SMALL = """
[[channels]]
name = "sim-a"
type = "sim"
keys = ["${CANARY_KEY}", "sim-literal-key"]
models = ["cheap", "big"]

[[channels]]
name = "sim-b"
type = "sim"
api = "anthropic"
keys = ["k"]
models = ["cheap-a", "big-a"]

[models.cheap]
[models.big]
[models.cheap-a]
[models.big-a]

[routers.coding]
weak_pool = ["cheap", "cheap-a"]
strong_pool = ["big", "big-a"]
"""


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_check_example_exits_0_with_no_environment() -> None:
    code, out, err = _run("config", "check", EXAMPLE)
    assert (code, out, err) == (0, f"ok: {EXAMPLE}\n", "")


def test_check_accepts_config_flag_and_discovery(tmp_path: Path) -> None:
    assert _run("config", "check", "--config", EXAMPLE)[0] == 0
    (tmp_path / "orca.toml").write_text(template_text())
    assert _run("config", "check")[:2] == (0, "ok: orca.toml\n")


def test_check_typo_exits_1_naming_file_and_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(template_text().replace("share_cap = 0.20                # max share",
                                           "sharecap = 0.20  # max share"))
    code, out, err = _run("config", "check", str(bad))
    assert code == 1 and out == ""
    assert (f"orca: {bad}: routers.coding.escalation.sharecap: unknown key; "
            "did you mean `share_cap`?") in err.splitlines()


def test_check_prints_every_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[server]\nport = 0\nhost = "0.0.0.0"\n[workspace]\nshare_cap = 1.5\n')
    code, _out, err = _run("config", "check", str(bad))
    lines = err.splitlines()
    assert code == 1
    assert f"orca: {bad}: server.port: must be in [1, 65535], got 0" in lines
    assert f"orca: {bad}: workspace.share_cap: must be in (0, 1], got 1.5" in lines
    assert any(line.startswith(f"orca: {bad}: server.inbound_token: is required") for line in lines)


def test_check_unset_key_of_enabled_channel_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(SMALL)
    code, _out, err = _run("config", "check", str(path))
    assert code == 1
    assert f"orca: {path}: channels[0].keys[0]: environment variable CANARY_KEY is not set" in err


def test_check_escalation_pool_error_and_format_warnings(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[[channels]]\nname = "s"\ntype = "sim"\nmodels = ["m"]\n'
                    '[models.m]\n[routers.r]\nallowed_models = ["m"]\n'
                    '[translation]\nenabled = false\n')
    code, _out, err = _run("config", "check", str(path))
    assert code == 1 and "routers.r.escalation.pool: escalation mode is \"auto\"" in err
    path.write_text(path.read_text() + '[routers.r.escalation]\nmode = "off"\n')
    code, out, err = _run("config", "check", str(path))
    assert (code, out) == (0, f"ok: {path}\n")
    assert err.startswith(f"orca: warning: {path}: routers.r: the base tier has no model served "
                          'by an enabled channel with api = "anthropic"')


def test_check_missing_named_file_exits_1() -> None:
    code, _out, err = _run("config", "check", "nope.toml")
    assert code == 1 and "nope.toml: no such config file" in err


def test_check_two_different_paths_is_a_usage_error() -> None:
    assert _run("config", "check", EXAMPLE, "--config", "other.toml")[0] == 2


def test_check_without_any_file_checks_the_defaults() -> None:
    code, out, err = _run("config", "check")
    assert (code, out) == (0, "ok: built-in defaults (no config file: `orca serve` needs one, "
                              "`orca init` writes it)\n")
    assert "no config file found" in err and "$ORCA_CONFIG" in err


def test_show_json_never_contains_a_key_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CANARY_KEY", CANARY)
    monkeypatch.setenv("ORCA_INBOUND_TOKEN", "tok-canary-secret")
    path = tmp_path / "c.toml"
    server = '[server]\ninbound_token = "${ORCA_INBOUND_TOKEN}"\n\n'
    path.write_text(server + SMALL)
    code, out, _err = _run("config", "show", "--json", "--config", str(path))
    assert code == 0
    doc = json.loads(out)  # exactly one JSON document
    assert CANARY not in out and "sim-literal-key" not in out and "tok-canary-secret" not in out
    assert doc["channels"][0]["keys"][0]["redacted"] is True
    assert doc["routers"]["coding"]["escalation"]["mode"] == "auto"
    code, out, _err = _run("config", "show", str(path))
    assert code == 0 and CANARY not in out and "[routers.coding.escalation]" in out
    assert "<redacted fp=" in out


def test_show_without_file_prints_defaults() -> None:
    code, out, err = _run("config", "show", "--json")
    assert code == 0 and json.loads(out)["server"]["port"] == 8787
    assert "built-in defaults" in err


def test_show_invalid_config_exits_1(tmp_path: Path) -> None:
    (tmp_path / "orca.toml").write_text("[server]\nport = -1\n")
    code, out, err = _run("config", "show", "--json")
    assert (code, out) == (1, "")
    assert err == "orca: orca.toml: server.port: must be in [1, 65535], got -1\n"


def test_path_prints_discovered_file(tmp_path: Path) -> None:
    assert _run("config", "path")[0] == 1
    (tmp_path / "orca.toml").write_text("")
    assert _run("config", "path")[:2] == (0, "orca.toml\n")


def test_init_writes_a_config_that_loads(tmp_path: Path) -> None:
    code, out, _err = _run("init")
    assert (code, out) == (0, "wrote orca.toml\n")
    cfg = load("orca.toml", environ={})
    assert cfg.source == "orca.toml" and "coding" in cfg.routers
    assert (tmp_path / "orca.toml").read_text() == template_text()


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "my.toml"
    assert _run("init", "--path", str(target))[0] == 0
    target.write_text("# mine\n")
    code, _out, err = _run("init", "--path", str(target))
    assert code == 1 and "already exists; pass --force" in err
    assert target.read_text() == "# mine\n"
    assert _run("init", "--path", str(target), "--force")[0] == 0
    assert target.read_text() == template_text()
