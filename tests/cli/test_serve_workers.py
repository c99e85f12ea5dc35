"""`orca serve --workers N` (SPEC §18): N processes on one port sharing sessions through Redis,
one admin token, a graceful stop; refused on the memory store. Real processes, a real Redis,
real sockets (one new connection per request, so the kernel spreads them over the workers).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis

from tests.agents.kit import wait_for_base
from tests.state.conftest import REDIS_URL

REPO = Path(__file__).resolve().parents[2]
CONFIG = """
[state]
backend = "redis"
redis_url = "{url}"
key_prefix = "{prefix}"

[[channels]]
name = "sim-cheap"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-1"]
models = ["small"]

[[channels]]
name = "sim-frontier"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-2"]
models = ["big"]

[models.big]
input = 5.0

[routers.coding]
strategy = "cheapest"
allowed_models = ["small", "big"]
strong_pool = ["big"]
[routers.coding.escalation]
mode = "auto"
share_cap = 1.0  # one session asking strong is the whole traffic here

[workspace]
share_cap = 1.0
"""


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture
def prefix() -> Iterator[str]:
    name = f"orca-workers-{uuid.uuid4().hex[:10]}"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{name}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def _start(tmp_path: Path, prefix: str, workers: int) -> tuple[subprocess.Popen[bytes], str,
                                                                  Path]:
    config = tmp_path / "orca.toml"
    config.write_text(CONFIG.format(url=REDIS_URL, prefix=prefix))
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "orca_cli", "serve", "--config",
                                 str(config), "--port", "0", "--workers", str(workers)],
                                env=_env(), cwd=tmp_path, stdout=sink, stderr=subprocess.STDOUT)
    try:
        # The banner prints once a worker answers (`orca serve --workers`).
        return proc, wait_for_base(proc, log, 30.0), log
    except AssertionError:
        proc.kill()
        raise


def _pid(base: str) -> int:
    """The pid of the worker that answered one request on a new connection."""
    r = httpx.get(base + "/healthz", headers={"connection": "close"}, timeout=5)
    assert r.status_code == 200
    return int(r.json()["pid"])


def _children(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                         text=True, check=False).stdout
    return {int(p) for p in out.split()}


def test_workers_need_the_redis_store(tmp_path: Path) -> None:
    config = tmp_path / "orca.toml"
    config.write_text("[[channels]]" + CONFIG.split("[[channels]]", 1)[1])  # no [state]: memory
    proc = subprocess.run([sys.executable, "-m", "orca_cli", "serve", "--config", str(config),
                           "--port", "0", "--workers", "2"], env=_env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "--workers 2 needs the Redis store" in proc.stderr
    assert "listening" not in proc.stderr


def test_two_workers_share_one_port_and_every_session(tmp_path: Path, prefix: str) -> None:
    proc, base, log = _start(tmp_path, prefix, 2)
    try:
        workers = _children(proc.pid)
        assert len(workers) == 2, workers
        # New connections land on both workers (each binds the port with SO_REUSEPORT).
        seen = {_pid(base) for _ in range(40)}
        assert seen == workers, (seen, workers)
        # A session escalated on one worker is strong on whichever worker serves it next.
        body = {"model": "orca/coding", "messages": [{"role": "user", "content": "fix it"}]}
        first = httpx.post(base + "/v1/chat/completions", json=body, timeout=10, headers={
            "x-orca-session": "shared-1", "x-orcarouter-tier": "strong", "connection": "close"})
        assert first.status_code == 200, first.text
        assert first.headers["x-orca-session-tier"].startswith("strong")
        tiers = set()
        for i in range(20):
            turn = {**body, "messages": [*body["messages"],
                                         {"role": "assistant", "content": "done"},
                                         {"role": "user", "content": f"and step {i}"}]}
            r = httpx.post(base + "/v1/chat/completions", json=turn, timeout=10, headers={
                "x-orca-session": "shared-1", "connection": "close"})
            assert r.status_code == 200, r.text
            tiers.add((r.headers["x-orca-session-tier"], r.headers["x-orca-model"]))
        assert {(t.split(";")[0], m) for t, m in tiers} == {("strong", "big")}, tiers
        # One admin token for every worker: the operator CLI reads the session from any.
        shown = subprocess.run([sys.executable, "-m", "orca_cli", "session", "show", "shared-1",
                                "--url", base, "--json"], env=_env(), cwd=tmp_path,
                               capture_output=True, text=True, timeout=60, check=False)
        assert shown.returncode == 0, shown.stderr
        assert '"strong"' in shown.stdout
        # A worker that dies is started again; the port keeps answering meanwhile.
        dead = min(workers)
        os.kill(dead, signal.SIGKILL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and len(_children(proc.pid) - {dead}) < 2:
            assert _pid(base) != dead or _alive(dead)
            time.sleep(0.1)
        restarted = _children(proc.pid) - {dead}
        assert len(restarted) == 2, restarted
        workers |= restarted
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    assert code == 0, log.read_text()
    assert not any(_alive(p) for p in workers), "a worker outlived the sidecar"
    text = log.read_text()
    assert "2 workers" in text and "Traceback" not in text, text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/status").exists() and "zombie" not in Path(
        f"/proc/{pid}/status").read_text()
