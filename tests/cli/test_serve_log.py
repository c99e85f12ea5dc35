"""`orca serve`'s request log through a real process: the lines of the last requests before a
graceful stop are written, though the log batches its writes (SPEC §15)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx

from orca_cli.trace.log import short_id
from tests.agents.kit import serving


def test_a_request_answered_just_before_sigterm_has_its_log_line(tmp_path: Path) -> None:
    with serving(tmp_path) as orca:
        r = httpx.post(orca.base + "/v1/chat/completions", timeout=10, json={
            "model": "orca/coding", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200
        rid = r.headers["x-orca-request-id"]
    # Leaving `serving` sent SIGTERM, well within the log's flush period: a graceful stop
    # (uvicorn re-raises the signal once it has shut down)
    assert orca.proc.returncode in (0, -signal.SIGTERM)
    lines = [x for x in orca.server_log().splitlines() if short_id(rid) in x]
    assert len(lines) == 1 and " 200 " in lines[0], orca.server_log()
