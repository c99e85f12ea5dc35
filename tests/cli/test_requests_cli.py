"""Seeing what orca does (SPEC §15) through the real CLI against a running sidecar: the
request log, `orca requests`, `orca explain last`."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orca_cli.config.schema import StateConfig
from orca_cli.trace.log import RequestLog
from tests.cli.test_operator_cli import Agent, _cfg, orca, serving
from tests.state.conftest import REDIS_URL, delete_prefix


class LockedIO(io.StringIO):
    """The sidecar thread writes while the test reads."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def write(self, s: str) -> int:
        with self.lock:
            return super().write(s)

    def text(self) -> str:
        with self.lock:
            return self.getvalue()


def wait_for(cond: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


@pytest.fixture
def logged() -> Iterator[tuple[Agent, LockedIO]]:
    out = LockedIO()
    with serving(_cfg(), StateConfig(), RequestLog(out, fmt="json")) as sc:
        yield sc, out


def test_request_log_has_one_line_per_request_refusals_included(
        logged: tuple[Agent, LockedIO]) -> None:
    sc, out = logged
    rid = sc.turn("agent-log").headers["x-orca-request-id"]
    bad = httpx.post(sc.base + "/v1/chat/completions", json={"model": "nope"}, timeout=10)
    assert bad.status_code == 404
    wait_for(lambda: out.text().count("\n") == 2)
    first, second = (json.loads(x) for x in out.text().splitlines())
    assert first["request_id"] == rid and first["session_id"] == "agent-log"
    assert (first["router"], first["tier"], first["reason"], first["status"]) == (
        "coding", "base", "default", 200)
    assert first["model"] and first["channel"] and first["prompt_tokens"] > 0
    assert second["request_id"] == bad.headers["x-orca-request-id"]
    assert second["status"] == 404 and "nope" in second["error"]
    assert "rename the variable" not in out.text()  # content-free


@pytest.fixture
def sidecar() -> Iterator[Agent]:
    with serving(_cfg(), StateConfig()) as sc:
        yield sc


def test_requests_lists_newest_first_and_filters(sidecar: Agent) -> None:
    a1 = sidecar.turn("agent-a").headers["x-orca-request-id"]
    b1 = sidecar.turn("agent-b").headers["x-orca-request-id"]
    a2 = sidecar.turn("agent-a", 2).headers["x-orca-request-id"]
    code, out, err = orca("requests", "--url", sidecar.base)
    assert code == 0, err
    lines = out.splitlines()
    assert [ln.split()[1] for ln in lines] == [a2[4:12], b1[4:12], a1[4:12]]
    assert "coding" in lines[0] and "base:default" in lines[0] and " 200 " in lines[0]
    code, out, _ = orca("requests", "--session", "agent-a", "--json", "--url", sidecar.base)
    rows = json.loads(out)
    assert code == 0 and [r["request_id"] for r in rows] == [a2, a1]
    assert all(r["session_id"] == "agent-a" and r["model"] for r in rows)
    code, out, _ = orca("requests", "-n", "1", "--json", "--url", sidecar.base)
    assert [r["request_id"] for r in json.loads(out)] == [a2]
    code, out, err = orca("requests", "--router", "nobody", "--since", "5m", "--url", sidecar.base)
    assert code == 1 and out == "" and "unknown router 'nobody'" in err
    code, _, err = orca("requests", "--since", "yesterday", "--url", sidecar.base)
    assert code == 2 and "since must be a duration" in err


def test_explain_last_session_and_short_id(sidecar: Agent) -> None:
    a = sidecar.turn("agent-x").headers["x-orca-request-id"]
    b = sidecar.turn("agent-y").headers["x-orca-request-id"]
    code, out, err = orca("explain", "last", "--url", sidecar.base)
    assert code == 0 and out.startswith(b), err
    code, out, _ = orca("explain", "--url", sidecar.base)
    assert code == 0 and out.startswith(b)
    code, out, _ = orca("explain", "--session", "agent-x", "--json", "--url", sidecar.base)
    assert code == 0 and json.loads(out)["request_id"] == a
    code, out, _ = orca("explain", a[4:12], "--url", sidecar.base)
    assert code == 0 and out.startswith(a)
    code, _, err = orca("explain", "--session", "nobody", "--url", sidecar.base)
    assert code == 1 and "no request found for session 'nobody'" in err


def test_follow_prints_requests_as_they_finish(sidecar: Agent, tmp_path: Path) -> None:
    """The real `orca` process: only what finished after it started, one line each."""
    old = sidecar.turn("agent-old").headers["x-orca-request-id"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out_path = tmp_path / "follow.out"
    with out_path.open("w") as out_f:
        proc = subprocess.Popen([sys.executable, "-m", "orca_cli", "requests", "--follow",
                                 "-n", "1", "--json", "--url", sidecar.base],
                                stdout=out_f, stderr=subprocess.DEVNULL, env=env)
        try:
            wait_for(lambda: out_path.read_text().count("\n") == 1, 20)
            new = sidecar.turn("agent-new").headers["x-orca-request-id"]
            wait_for(lambda: out_path.read_text().count("\n") == 2, 20)
        finally:
            proc.terminate()
            proc.wait(10)
    rows = [json.loads(x) for x in out_path.read_text().splitlines()]
    assert [r["request_id"] for r in rows] == [old, new]


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_session_show_carries_the_running_figures(backend: str) -> None:
    state = StateConfig()
    prefix = f"orcatest-{uuid.uuid4().hex[:12]}"
    if backend == "redis":
        state = StateConfig(backend="redis", redis_url=REDIS_URL, key_prefix=prefix)
    try:
        with serving(_cfg(), state) as sc:
            sc.turn("agent-f")
            sc.turn("agent-f", 2)
            code, out, err = orca("session", "show", "agent-f", "--json", "--url", sc.base)
            assert code == 0, err
            doc = json.loads(out)
            traces = json.loads(orca("requests", "--json", "--url", sc.base)[1])
            f = doc["figures"]
            assert f["requests"] == 2 and f["side_requests"] == 0
            assert f["prompt_tokens"] == sum(t["prompt_tokens"] for t in traces)
            assert f["cached_tokens"] == sum(t["cached_tokens"] for t in traces)
            assert f["cost_usd"] == pytest.approx(sum(t["cost_usd"] for t in traces))
            assert 0 < doc["cache_clock_s"] <= 300
            code, out, _ = orca("session", "show", "agent-f", "--url", sc.base)
            assert code == 0 and "cost so far" in out and "until the pinned cache goes cold" in out
    finally:
        if backend == "redis":
            delete_prefix(REDIS_URL, prefix)
