"""The operator commands through the real typer app against a real sidecar (SPEC §1.1, §1.1a).

The sidecar runs uvicorn + OrcaApp + the admin API on its own event loop in a thread, so the
CLI's blocking httpx calls and the test's proxied requests reach it as any other process would.
The CLI finds the admin token where `orca serve` writes it ($XDG_STATE_HOME, per test).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.config.load import loads
from orca_cli.config.schema import Config, StateConfig
from orca_cli.config.template import example_text
from orca_cli.proxy.token import write_admin_token
from orca_cli.testing import sidecar_thread
from orca_cli.trace.log import TraceSink
from tests.state.conftest import REDIS_URL, delete_prefix, require_redis

MSGS = [{"role": "user", "content": "rename the variable x to count in utils.py"}]
SESSION_KEYS = {"session_id", "router", "tier", "reason", "escalation_count", "strikes",
                "clean_turns", "difficulty_streak", "pending", "pins", "channel_pins", "ttl_s"}


@dataclass(frozen=True)
class Agent:
    """An agent's side of a sidecar served from a thread (`orca_cli.testing.sidecar_thread`)."""

    base: str
    token: str = ""

    def turn(self, session: str, n: int = 1, **headers: str) -> httpx.Response:
        msgs: list[dict[str, Any]] = list(MSGS)
        for i in range(1, n):
            msgs += [{"role": "assistant", "content": f"done {i}"},
                     {"role": "user", "content": f"now step {i}"}]
        r = httpx.post(self.base + "/v1/chat/completions",
                       json={"model": "orca/coding", "messages": msgs},
                       headers={"x-orca-session": session, **headers}, timeout=10)
        assert r.status_code == 200, r.text
        return r


def _cfg() -> Config:
    return loads(example_text(), source="example")


@contextlib.contextmanager
def serving(cfg: Config, state: StateConfig, sink: TraceSink | None = None) -> Iterator[Agent]:
    """A sidecar served from a thread, its finished traces also sent to `sink`."""
    with sidecar_thread(cfg, state=state, admin_token=write_admin_token()) as served:
        if sink is not None:
            served.runtime.trace_sinks.append(sink.emit)
        yield Agent(served.url, served.admin_token)


@pytest.fixture
def sidecar() -> Iterator[Agent]:
    with serving(_cfg(), StateConfig()) as agent:
        yield agent


def orca(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_escalate_once_serves_the_next_request_strong(sidecar: Agent) -> None:
    sidecar.turn("agent-1")
    code, out, err = orca("escalate", "--once", "--reason", "stuck", "--url", sidecar.base)
    assert code == 0, err
    assert "agent-1" in err and "served strong once" in out
    nxt = sidecar.turn("agent-1", 2)
    assert nxt.headers["x-orca-session-tier"] == "strong; reason=once"
    sidecar.turn("agent-1", 3)
    code, out, err = orca("escalate", "agent-1", "--url", sidecar.base)
    assert code == 1 and "max_per_session" in err and out == ""


def test_explain_of_a_real_request_prints_the_tree(sidecar: Agent) -> None:
    rid = sidecar.turn("agent-2", 1, **{"x-request-id": "client-77"}).headers["x-orca-request-id"]
    code, out, err = orca("explain", rid, "--url", sidecar.base)
    assert code == 0, err
    for text in (rid, "client id client-77", "tier: base; reason=default", "A explicit",
                 "B difficulty", "difficulty", "delta", "log_prompt_tokens", "caps:",
                 "candidates", "attempts (1)", "usage:", "intents (committed)"):
        assert text in out, text
    code, out, _ = orca("explain", "client-77", "--json", "--url", sidecar.base)
    doc = json.loads(out)
    assert code == 0 and doc["request_id"] == rid
    for key in ("request_id", "client_request_id", "session_id", "router", "inbound_api", "tier",
                "difficulty", "caps", "pins", "candidates", "selected", "attempts", "usage",
                "cost_usd", "intents", "committed", "degraded", "algorithm_version"):
        assert key in doc
    assert set(doc["tier"]) >= {"decision", "reason", "trigger"}
    code, out, err = orca("explain", "req_unknown", "--url", sidecar.base)
    assert code == 1 and "no trace for request id" in err and out == ""


def test_session_show_and_list_json_keys(sidecar: Agent) -> None:
    sidecar.turn("agent-3")
    code, out, err = orca("session", "show", "agent-3", "--json", "--url", sidecar.base)
    assert code == 0, err
    doc = json.loads(out)
    assert SESSION_KEYS <= set(doc) and doc["tier"] == "base"
    assert set(doc["pins"]) == {"base", "strong"} and doc["pins"]["base"]["ttl_s"] > 0
    assert set(doc["channel_pins"]["base"]) == {"channel", "key_index", "key_fp", "ttl_s"}
    code, out, _ = orca("session", "list", "--json", "--url", sidecar.base)
    rows = json.loads(out)
    assert code == 0 and [r["session_id"] for r in rows] == ["agent-3"]
    assert SESSION_KEYS <= set(rows[0])
    code, out, _ = orca("session", "show", "--url", sidecar.base)
    assert code == 0 and "agent-3" in out and "base; reason=default" in out
    code, _, err = orca("session", "show", "nobody", "--url", sidecar.base)
    assert code == 1 and "no such session" in err


def test_several_recent_sessions_are_listed_and_exit_2(sidecar: Agent) -> None:
    sidecar.turn("agent-a")
    sidecar.turn("agent-b")
    code, out, err = orca("escalate", "--once", "--url", sidecar.base)
    assert code == 2 and out == ""
    assert "agent-a" in err and "agent-b" in err and "SESSION_ID" in err
    code, _, err = orca("reset", "--url", sidecar.base)
    assert code == 2


def test_reset_already_strong_pins_audit_and_stats(sidecar: Agent) -> None:
    sidecar.turn("agent-s", 1, **{"x-orcarouter-tier": "strong"})
    code, out, _ = orca("escalate", "agent-s", "--url", sidecar.base)
    assert code == 0 and "already in the strong tier" in out
    code, out, err = orca("reset", "agent-s", "--router", "coding", "--url", sidecar.base)
    assert code == 0 and "base tier" in out, err
    assert sidecar.turn("agent-s", 2).headers["x-orca-session-tier"] == "base; reason=reset"

    code, out, _ = orca("pins", "dump", "--json", "--url", sidecar.base)
    pins = json.loads(out)
    assert code == 0 and {(p["kind"], p["tier"]) for p in pins} >= {
        ("model", "base"), ("model", "strong"), ("channel", "strong")}
    assert all(set(p) >= {"kind", "router", "session", "tier", "value", "ttl_s"} for p in pins)
    code, out, _ = orca("pins", "dump", "--url", sidecar.base)
    assert code == 0 and "agent-s" in out

    code, out, _ = orca("audit", "--since", "10m", "--json", "--url", sidecar.base)
    events = json.loads(out)
    assert code == 0 and [(e["event"], e["actor"]) for e in events] == [
        ("escalated", "client"), ("reset", "cli")]
    code, out, _ = orca("audit", "--url", sidecar.base)
    assert code == 0 and "escalated" in out and "reset" in out

    code, out, _ = orca("stats", "--json", "--url", sidecar.base)
    doc = json.loads(out)
    coding = doc["routers"]["coding"]
    assert code == 0 and coding["requests"] == 2 and coding["strong_share"] == 0.5
    assert set(coding) >= {"requests", "strong_share", "escalations", "denials",
                           "cache_hit_ratio", "cost_usd", "shadow_would_escalate"}
    assert set(doc["workspace"]) >= {"requests", "strong_share"}
    code, out, _ = orca("stats", "--url", sidecar.base)
    assert code == 0 and "coding" in out and "50.0 %" in out


def test_a_wrong_token_is_refused_with_exit_1(sidecar: Agent) -> None:
    write_admin_token()  # a token of another run: the sidecar no longer accepts the file's
    code, out, err = orca("session", "list", "--url", sidecar.base)
    assert code == 1 and "refused the admin token" in err and out == ""


# Every command that talks to the admin API, each with what it needs to answer 0 (README,
# "Which sidecar the operator commands talk to").
ADMIN_COMMANDS = [["requests"], ["explain", "last"], ["session", "list"],
                  ["session", "show", "agent-t"], ["escalate", "agent-t", "--once"],
                  ["reset", "agent-t"], ["pins", "dump"], ["audit"], ["stats"]]


@pytest.mark.parametrize("cmd", ADMIN_COMMANDS, ids=" ".join)
def test_every_admin_command_takes_token_and_the_env_variable(sidecar: Agent,
                                                              cmd: list[str]) -> None:
    """`--token` and `$ORCA_ADMIN_TOKEN` override the token file on every operator command."""
    sidecar.turn("agent-t")
    write_admin_token()  # the file now holds another run's token: only the override works
    code, _, err = orca(*cmd, "--url", sidecar.base)
    assert code == 1 and "refused the admin token" in err
    code, _, err = orca(*cmd, "--url", sidecar.base, "--token", sidecar.token)
    assert code == 0, err
    result = CliRunner().invoke(app, [*cmd, "--url", sidecar.base],
                                env={"ORCA_ADMIN_TOKEN": sidecar.token})
    assert result.exit_code == 0, result.stderr
    code, _, err = orca(*cmd, "--url", sidecar.base, "--token", "not-the-token")
    assert code == 1 and "refused the admin token" in err


def test_memory_backend_without_a_sidecar_says_it_must_run(tmp_path: Path) -> None:
    write_admin_token()
    code, out, err = orca("session", "list", "--url", "http://127.0.0.1:9")
    assert code == 1 and out == ""
    assert "orca serve" in err and "memory store" in err


def test_redis_backend_without_a_sidecar_reads_the_store(tmp_path: Path) -> None:
    require_redis()
    prefix = f"orcatest-{uuid.uuid4().hex[:12]}"
    text = example_text().replace('backend = "memory"', 'backend = "redis"', 1)
    text = text.replace('redis_url = "redis://127.0.0.1:6379/0"', f'redis_url = "{REDIS_URL}"', 1)
    text = text.replace('key_prefix = "orca"', f'key_prefix = "{prefix}"', 1)
    path = tmp_path / "orca.toml"
    path.write_text(text)
    cfg = loads(text, source=str(path))
    try:
        with sidecar_thread(cfg, admin_token=write_admin_token()) as served:
            sc = Agent(served.url)
            sc.turn("agent-r")
        # The sidecar is gone; its token file stays behind and nothing listens on its port.
        code, out, err = orca("session", "show", "agent-r", "--json", "--config", str(path),
                              "--url", sc.base)
        assert code == 0, err
        assert json.loads(out)["session_id"] == "agent-r" and "Redis store directly" in err
        code, out, err = orca("escalate", "--once", "--config", str(path), "--url", sc.base)
        assert code == 0 and "agent-r" in err
        code, out, _ = orca("session", "show", "agent-r", "--json", "--config", str(path),
                            "--url", sc.base)
        assert json.loads(out)["pending"]["ask"] == "once"
        code, out, _ = orca("stats", "--json", "--config", str(path), "--url", sc.base)
        assert code == 0 and json.loads(out)["routers"]["coding"]["requests"] == 1
    finally:
        delete_prefix(REDIS_URL, prefix)


def test_the_audit_table_shows_an_operators_reason_beside_the_machine_one() -> None:
    from rich.console import Console

    from orca_cli.cli.audit import render_audit

    console = Console(width=200, record=True)
    console.print(render_audit([
        {"ts": 1.0, "router": "coding", "session": "s1", "event": "once", "trigger": "once",
         "reason": "once", "actor": "cli", "request_id": "r1", "note": "audit: stuck"},
        {"ts": 2.0, "router": "coding", "session": "s1", "event": "reset", "reason": "reset",
         "actor": "client", "request_id": "r2"}]))
    text = console.export_text()
    assert "once (audit: stuck)" in text and "reset (" not in text
