"""`orca serve`'s request log through a real process: the lines of the last requests before a
graceful stop are written, though the log batches its writes (SPEC §15)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from orca_cli.trace.log import short_id
from tests.agents.kit import wait_for_base

REPO = Path(__file__).resolve().parents[2]
CONFIG = """
[[channels]]
name = "sim-cheap"
type = "sim"
api = ["openai"]
keys = ["sim-key-1"]
models = ["small"]

[routers.coding]
strategy = "cheapest"
allowed_models = ["small"]
"""


def test_a_request_answered_just_before_sigterm_has_its_log_line(tmp_path: Path) -> None:
    config = tmp_path / "orca.toml"
    config.write_text(CONFIG)
    log = tmp_path / "serve.log"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "orca_cli", "serve", "--config",
                                 str(config), "--port", "0"], env=env, cwd=tmp_path,
                                stdout=sink, stderr=subprocess.STDOUT)
    try:
        base = wait_for_base(proc, log, 30.0)
        r = httpx.post(base + "/v1/chat/completions", timeout=10, json={
            "model": "orca/coding", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200
        rid = r.headers["x-orca-request-id"]
        proc.send_signal(signal.SIGTERM)  # well within the log's flush period
        # A graceful stop; uvicorn re-raises the signal once it has shut down
        assert proc.wait(timeout=20) in (0, -signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = [x for x in log.read_text().splitlines() if short_id(rid) in x]
    assert len(lines) == 1 and " 200 " in lines[0], log.read_text()
