"""Several sidecars on one machine (same `$XDG_STATE_HOME`, different ports): `orca
statusline` and the operator commands talk to the one serving the project's config, and the
status line falls back to whichever sidecar knows the session (SPEC §15, §20)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orca_cli.config.discover import discover
from orca_cli.config.schema import StateConfig
from orca_cli.proxy.token import SidecarRecord, write_sidecar_record
from tests.cli.test_operator_cli import Agent, _cfg, orca, serving

ROOT = Path(__file__).resolve().parents[2]


def _record(sc: Agent, config: str | None) -> None:
    port = int(sc.base.rsplit(":", 1)[1])
    write_sidecar_record(SidecarRecord(url=sc.base, port=port, pid=os.getpid(), token=sc.token,
                                       config=config, started_at=time.time()))
    time.sleep(0.01)  # started_at orders the records: the last written is the newest


def _project(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir()
    (d / "orca.toml").write_text("# this project's config\n")
    return d


def _redis_project(root: Path, port: int) -> Path:
    """Project `a` on the test Redis store (its own empty key prefix), its server on `port`."""
    d = root / "a"
    d.mkdir()
    (d / "orca.toml").write_text(
        f'[server]\nport = {port}\n\n[state]\nbackend = "redis"\n'
        f'redis_url = "redis://127.0.0.1:6379/15"\nkey_prefix = "orca-test-own-{os.getpid()}"\n')
    return d


def statusline(cwd: Path, stdin: str) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "orca_cli", "statusline"], check=False,
                       input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=30)
    return p.returncode, p.stdout.strip()


@pytest.fixture
def two() -> Iterator[tuple[Agent, Agent]]:
    with serving(_cfg(), StateConfig()) as first, serving(_cfg(), StateConfig()) as second:
        yield first, second


def test_statusline_asks_the_sidecar_serving_the_projects_config(
        two: tuple[Agent, Agent], tmp_path: Path) -> None:
    first, second = two
    a, b = _project(tmp_path, "a"), _project(tmp_path, "b")
    first.turn("cc-on-first")
    _record(first, str(a / "orca.toml"))
    _record(second, str(b / "orca.toml"))  # the newest
    code, line = statusline(a, json.dumps({"session_id": "cc-on-first"}))
    assert code == 0 and line.startswith("orca base:default · "), line
    # Claude Code names the workspace; the status line may run from elsewhere.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, line = statusline(elsewhere, json.dumps({"session_id": "cc-on-first",
                                                   "workspace": {"current_dir": str(a)}}))
    assert code == 0 and line.startswith("orca base:default · "), line


def test_statusline_asks_each_sidecar_until_one_knows_the_session(
        two: tuple[Agent, Agent], tmp_path: Path) -> None:
    first, second = two
    first.turn("cc-only-first")
    _record(first, None)
    _record(second, str(_project(tmp_path, "b") / "orca.toml"))  # newest, and the project's
    code, line = statusline(tmp_path / "b", json.dumps({"session_id": "cc-only-first"}))
    assert code == 0 and line.startswith("orca base:default · "), line
    code, line = statusline(tmp_path, json.dumps({"session_id": "nobody-knows"}))
    assert (code, line) == (0, "orca: no requests from this session yet")


def test_operator_commands_talk_to_the_sidecar_serving_the_projects_config(
        two: tuple[Agent, Agent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = two
    a = _project(tmp_path, "a")
    first.turn("op-on-first")
    second.turn("op-on-second")
    _record(first, str(a / "orca.toml"))
    _record(second, str(_project(tmp_path, "b") / "orca.toml"))  # the newest
    monkeypatch.chdir(a)
    code, out, err = orca("requests", "--json")
    assert code == 0, err
    assert [r["session_id"] for r in json.loads(out)] == ["op-on-first"]
    assert f"sidecar {first.base}" in err and "orca.toml, one of 2 running" in err
    monkeypatch.chdir(tmp_path)  # no project config here: the newest, as before
    code, out, err = orca("requests", "--json")
    assert code == 0 and [r["session_id"] for r in json.loads(out)] == ["op-on-second"], err


def test_a_records_relative_config_is_read_against_the_sidecars_directory(
        tmp_path: Path) -> None:
    """Records written before configs were stored absolute name `orca.toml` as the sidecar's
    process found it; its directory tells which file that was."""
    from orca_cli.proxy.token import record_config

    old = SidecarRecord(url="http://127.0.0.1:1", port=1, pid=os.getpid(), token="t",
                        config="orca.toml")
    assert record_config(old) == os.path.realpath(Path.cwd() / "orca.toml")
    new = old._replace(config=str(tmp_path / "x" / ".." / "orca.toml"))
    assert record_config(new) == os.path.realpath(tmp_path / "orca.toml")
    assert record_config(old._replace(config=None)) is None


@pytest.mark.parametrize("where", ["local", "xdg", "named", "none"])
def test_the_status_lines_config_discovery_agrees_with_orcas(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from orca_cli.statusline import project_configs

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    xdg = Path(os.environ["XDG_CONFIG_HOME"]) / "orca"
    xdg.mkdir(parents=True)
    if where in ("local", "xdg"):
        (xdg / "orca.toml").write_text("")
    if where == "local":
        (work / "orca.toml").write_text("")
    if where == "named":
        (tmp_path / "named.toml").write_text("")
        monkeypatch.setenv("ORCA_CONFIG", "../named.toml")
    found = discover()
    assert project_configs([str(work)]) == ([os.path.realpath(found)] if found else [])


def test_serve_records_its_config_by_absolute_path(tmp_path: Path) -> None:
    """`orca serve --config orca.toml` run in the project: the record names the file so that
    a command run from any other directory can tell which project the sidecar serves."""
    import shutil

    from orca_cli.proxy.token import running_sidecars
    from tests.agents.kit import EXAMPLE, wait_for_base

    shutil.copyfile(EXAMPLE, tmp_path / "orca.toml")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "orca_cli", "serve", "--config",
                                 "orca.toml", "--port", "0", "--quiet"], env=env, cwd=tmp_path,
                                stdout=sink, stderr=subprocess.STDOUT)
    try:
        wait_for_base(proc, log, 30.0)
        [rec] = [r for r in running_sidecars() if r.pid == proc.pid]
        assert rec.config is not None and os.path.isabs(rec.config)
        assert os.path.realpath(rec.config) == os.path.realpath(tmp_path / "orca.toml")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_config_no_sidecar_serves_is_never_answered_by_another_configs_sidecar(
        two: tuple[Agent, Agent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A project on the Redis store whose sidecar is stopped, while another project's sidecar
    runs: the commands read this project's store directly (its sessions are there), never the
    other sidecar, which knows nothing of them."""
    from orca_cli.testing import closed_port

    _, second = two
    second.turn("op-elsewhere")
    _record(second, str(_project(tmp_path, "b") / "orca.toml"))
    a = _redis_project(tmp_path, closed_port())
    monkeypatch.chdir(a)
    code, out, err = orca("requests", "--json")
    assert code == 0, err
    assert json.loads(out) == [] and second.base not in err
    assert "reading the Redis store directly" in err, err


def test_a_config_on_another_configs_sidecars_port_is_never_answered_by_it(
        two: tuple[Agent, Agent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same port, another config: that sidecar knows nothing of this config's sessions.
    A Redis config reads its store directly; a memory one says its sidecar must run."""
    from urllib.parse import urlsplit

    _, second = two
    second.turn("op-elsewhere")
    _record(second, str(_project(tmp_path, "b") / "orca.toml"))
    port = urlsplit(second.base).port
    a = _redis_project(tmp_path, port)
    monkeypatch.chdir(a)
    code, out, err = orca("requests", "--json")
    assert code == 0, err
    assert json.loads(out) == [] and "serves" in err and "reading the Redis store directly" in err
    (a / "orca.toml").write_text(f"[server]\nport = {port}\n")
    code, out, err = orca("requests", "--json")
    assert code == 1 and out == "" and "serves" in err and "memory store" in err
