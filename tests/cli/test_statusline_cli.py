"""`orca statusline`, `orca init --agent claude-code` and how the operator CLI finds its
sidecar (SPEC §15, §20), through the real commands against running sidecars."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orca_cli.config.schema import StateConfig
from orca_cli.proxy.token import SidecarRecord, write_sidecar_record
from orca_cli.statusline import format_status
from orca_cli.testing import closed_port
from tests.cli.test_operator_cli import Agent, _cfg, orca, serving

ROOT = Path(__file__).resolve().parents[2]


def run_orca(*args: str, stdin: str = "", env: dict[str, str] | None = None) -> tuple[int, str]:
    """The real `python -m orca_cli` process (the statusline's early dispatch included)."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    p = subprocess.run([sys.executable, "-m", "orca_cli", *args], check=False, input=stdin,
                       capture_output=True, text=True, env=full, timeout=30)
    return p.returncode, p.stdout


@pytest.fixture
def sidecar() -> Iterator[Agent]:
    with serving(_cfg(), StateConfig()) as sc:
        yield sc


def _record(sc: Agent) -> None:
    port = int(sc.base.rsplit(":", 1)[1])
    write_sidecar_record(SidecarRecord(url=sc.base, port=port, pid=os.getpid(), token=sc.token,
                                       started_at=time.time()))


def test_statusline_reads_claude_code_json_and_shows_the_session(sidecar: Agent) -> None:
    sidecar.turn("cc-session-1")
    sidecar.turn("cc-session-1", 2, **{"x-orcarouter-tier": "strong"})
    stdin = json.dumps({"session_id": "cc-session-1", "model": {"id": "claude-sonnet-4-5",
                        "display_name": "Sonnet"}, "workspace": {"current_dir": "/x"}})
    code, out = run_orca("statusline", "--url", sidecar.base, stdin=stdin)
    assert code == 0
    line = out.strip()
    assert line.startswith("orca strong:explicit · ") and "\n" not in line
    for part in ("$0.0", "cache ", "warm ", "streak 0/2", "strikes 0/2", "0 esc left",
                 "share warm-up 2/20"):
        assert part in line, (part, line)
    code, out = run_orca("statusline", "--session", "never-seen", "--url", sidecar.base)
    assert code == 0 and out.strip() == "orca: no requests from this session yet"
    sidecar.turn("cc-session-2")  # "cc-sess" is under 8 characters; "cc-session" is shared
    code, out = run_orca("statusline", "--session", "cc-session", "--url", sidecar.base)
    assert code == 0 and out.startswith("orca: session id prefix 'cc-session' matches 2"), out
    # --json: the status document the line is made of (README: every command has --json)
    code, out = run_orca("statusline", "--session", "cc-session-1", "--url", sidecar.base,
                         "--json")
    doc = json.loads(out)
    assert code == 0 and (doc["session_id"], doc["tier"], doc["reason"]) == (
        "cc-session-1", "strong", "explicit")
    assert {"model", "figures", "cache_clock_s", "share", "session_tier"} <= set(doc)


def test_statusline_takes_the_admin_token_from_the_environment(sidecar: Agent,
                                                               tmp_path: Path) -> None:
    sidecar.turn("cc-env-token")
    env = {"XDG_STATE_HOME": str(tmp_path)}  # no token file, no record: only the variable
    code, out = run_orca("statusline", "--session", "cc-env-token", "--url", sidecar.base,
                         env={**env, "ORCA_ADMIN_TOKEN": sidecar.token})
    assert code == 0 and out.startswith("orca base:"), out
    code, out = run_orca("statusline", "--session", "cc-env-token", "--url", sidecar.base,
                         env=env)
    assert code == 0 and not out.startswith("orca base:"), out


def test_statusline_never_fails_without_a_sidecar(closed_port_url: str) -> None:
    code, out = run_orca("statusline", "--url", closed_port_url,
                         stdin='{"session_id": "x"}')
    assert (code, out) == (0, "orca: not running\n")
    code, out = run_orca("statusline", "--url", closed_port_url, stdin="not json")
    assert code == 0 and out.startswith("orca: ")


@pytest.fixture
def closed_port_url() -> str:
    return f"http://127.0.0.1:{closed_port()}"


def test_format_status_shows_share_against_cap_after_warm_up() -> None:
    doc = {"tier": "base", "reason": "default", "model": "m", "figures": {"cost_usd": 0.5,
           "cached_share": 0.875}, "cache_clock_s": 61.0, "difficulty_streak": 1,
           "streak_needed": 2, "strikes": 0, "strikes_needed": 2, "escalations_left": 1,
           "share": {"warmup": False, "ratio": 0.12, "cap": 0.2}}
    assert format_status(doc) == ("orca base:default · m · $0.5000 · cache 88% warm 1:01 · "
                                  "streak 1/2 · strikes 0/2 · 1 esc left · share 12%/20%")


def test_operator_cli_finds_the_right_sidecar_by_record_url_and_token(tmp_path: Path) -> None:
    with serving(_cfg(), StateConfig()) as first, \
            serving(_cfg(), StateConfig()) as second:
        first.turn("on-first")
        second.turn("on-second")
        _record(first)
        time.sleep(0.01)  # started_at orders the records
        _record(second)
        # admin.token now holds only the second sidecar's token; the records hold both
        code, out, err = orca("requests", "--json")
        assert code == 0, err
        assert [r["session_id"] for r in json.loads(out)] == ["on-second"]
        assert f"sidecar {second.base}" in err and "one of 2 running" in err
        os.environ["ORCA_URL"] = first.base
        try:
            code, out, err = orca("requests", "--json")
        finally:
            del os.environ["ORCA_URL"]
        assert code == 0 and [r["session_id"] for r in json.loads(out)] == ["on-first"], err
        assert "from $ORCA_URL" in err
        code, _, err = orca("requests", "--url", first.base, "--token", "wrong")
        assert code == 1 and "refused the admin token" in err
        code, out, _ = orca("requests", "--json", "--url", first.base, "--token", first.token)
        assert code == 0 and json.loads(out)[0]["session_id"] == "on-first"


def test_operator_commands_load_a_config_whose_keys_are_unset(sidecar: Agent,
                                                             tmp_path: Path) -> None:
    port = sidecar.base.rsplit(":", 1)[1]
    text = _config_text().replace("port = 8787", f"port = {port}", 1)
    cfg = tmp_path / "orca.toml"
    cfg.write_text(text + '\n[[channels]]\nname = "real"\ntype = "anthropic"\n'
                   'base_url = "https://api.anthropic.com"\nkeys = ["${ANTHROPIC_API_KEY}"]\n')
    sidecar.turn("keyless")
    assert "ANTHROPIC_API_KEY" not in os.environ
    code, out, err = orca("requests", "--json", "--config", str(cfg))
    assert code == 0, err
    assert json.loads(out)[0]["session_id"] == "keyless" and "from the config" in err


def _config_text() -> str:
    from orca_cli.config.template import example_text

    return example_text()


def test_init_agent_claude_code_writes_the_status_line(tmp_path: Path) -> None:
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "sonnet", "env": {"A": "1"}}))
    code, out, err = orca("init", "--agent", "claude-code", "--settings", str(settings),
                          "--path", str(tmp_path / "orca.toml"))
    assert code == 0, err
    doc = json.loads(settings.read_text())
    assert doc["statusLine"] == {"type": "command", "command": "orca statusline", "padding": 0}
    assert doc["model"] == "sonnet" and doc["env"] == {"A": "1"}
    assert "status line set" in out
    assert not (tmp_path / "orca.toml").exists()  # the config only with --write
    code, out, _ = orca("init", "--agent", "claude-code", "--settings", str(settings),
                        "--path", str(tmp_path / "orca.toml"), "--write")
    assert code == 0 and "already shows" in out and (tmp_path / "orca.toml").exists()
    settings.write_text(json.dumps({"statusLine": {"type": "command", "command": "mine"}}))
    code, _, err = orca("init", "--agent", "claude-code", "--settings", str(settings),
                        "--path", str(tmp_path / "orca.toml"))
    assert code == 1 and "--force" in err
    assert json.loads(settings.read_text())["statusLine"]["command"] == "mine"


def test_demo_keep_leaves_a_sidecar_the_operator_commands_reach(tmp_path: Path) -> None:
    """`orca demo --keep`: the closing line's commands work; SIGTERM removes the record."""
    import signal

    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(tmp_path / "st")}
    records = tmp_path / "st" / "orca" / "sidecars"
    out_path = tmp_path / "demo.out"
    with out_path.open("w") as out_f:
        proc = subprocess.Popen([sys.executable, "-m", "orca_cli", "demo", "--keep"],
                                stdout=out_f, stderr=subprocess.DEVNULL, env=env)
        try:
            deadline = time.monotonic() + 60
            while not list(records.glob("*.json")) and time.monotonic() < deadline:
                assert proc.poll() is None, out_path.read_text()
                time.sleep(0.05)
            text = out_path.read_text()
            assert "keeps running at http://127.0.0.1:" in text
            assert "orca demo --keep" not in text  # it suggests what works now
            assert "orca session show demo-failure-loop" in text  # the session it ran
            code, out = run_orca("requests", "--json", "-n", "50", env=env)
            rows = json.loads(out)
            assert code == 0 and len(rows) == 21
            code, out = run_orca("session", "show", "demo-failure-loop", env=env)
            assert code == 0 and "cost so far" in out
            code, out = run_orca("statusline", "--session", "demo-failure-loop", env=env)
            # strong in its state, but 6 of the demo's 21 requests were strong: past the
            # warm-up the workspace cap (0.20) serves its next request from base, and says so
            assert code == 0 and out.startswith("orca base:denied:workspace_cap · "), out
            code, out = run_orca("explain", rows[0]["request_id"][4:12], env=env)
            assert code == 0 and out.startswith(rows[0]["request_id"])
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0
    assert not list(records.glob("*.json"))
