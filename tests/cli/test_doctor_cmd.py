"""`orca doctor`: each problem named with its fix, exit 1 on any failure."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.testing import closed_port


def _write(tmp_path: Path, extra: str) -> str:
    path = tmp_path / "orca.toml"
    path.write_text(f"""
[server]
port = {closed_port()}

{extra}

[[channels]]
name = "local"
type = "openai-compatible"
base_url = "http://127.0.0.1:{closed_port()}"
keys = ["sk-test-doctor-secret-1"]
models = ["m1"]

[models.m1]
input = 0.1
output = 0.2

[routers.main]
strategy = "cheapest"
allowed_models = ["m1"]

[routers.main.escalation]
mode = "off"
""")
    return str(path)


def test_doctor_names_an_unreachable_upstream_and_store_with_fixes(tmp_path: Path,
                                                                  monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    cfg = _write(tmp_path, f'[state]\nbackend = "redis"\nredis_url = '
                           f'"redis://127.0.0.1:{closed_port()}/15"\ntimeout_ms = 100')
    result = CliRunner().invoke(app, ["doctor", "--config", cfg, "--json"])
    assert result.exit_code == 1, result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["config"]["status"] in ("ok", "warn")  # e.g. no anthropic-format channel
    assert checks["store"]["status"] == "fail" and "redis_url" in checks["store"]["fix"]
    assert checks["channel local"]["status"] == "fail"
    assert "base_url" in checks["channel local"]["fix"]
    assert checks["port"]["status"] == "ok"
    assert checks["admin token"]["status"] == "warn"
    assert "sk-test-doctor-secret-1" not in result.output


def test_doctor_table_passes_on_the_example_config(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--path", str(tmp_path / "o.toml")]).exit_code == 0
    text = (tmp_path / "o.toml").read_text().replace("port = 8787", f"port = {closed_port()}")
    (tmp_path / "o.toml").write_text(text)
    result = runner.invoke(app, ["doctor", "--config", str(tmp_path / "o.toml")])
    assert result.exit_code == 0, result.output
    assert "sim channel" in result.stdout and "store answers" in result.stdout
