"""`orca serve` stopped by a signal, through a real process: SIGINT and SIGTERM both stop it
gracefully, so the lines of the last requests are written though the log batches its writes
(SPEC §15), its sidecar record is removed and it exits 0."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from orca_cli.proxy.token import sidecars_dir
from orca_cli.trace.log import short_id
from tests.agents.kit import serving


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_serve_gracefully_and_removes_its_record(tmp_path: Path,
                                                                sig: signal.Signals) -> None:
    """The request answered just before the signal has its log line, the record of the
    sidecar is gone and the exit status is 0 (uvicorn's re-raised SIGTERM would make it 143
    and skip the record's removal)."""
    with serving(tmp_path) as orca:
        record = sidecars_dir() / f"{urlsplit(orca.base).port}.json"
        assert json.loads(record.read_text())["pid"] == orca.proc.pid
        r = httpx.post(orca.base + "/v1/chat/completions", timeout=10, json={
            "model": "orca/coding", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200
        rid = r.headers["x-orca-request-id"]
        # well within the log's flush period: the line is still queued
        orca.proc.send_signal(sig)
        code = orca.proc.wait(timeout=20)
    assert code == 0, orca.server_log()
    assert not record.exists(), "the sidecar record outlived orca serve"
    lines = [x for x in orca.server_log().splitlines() if short_id(rid) in x]
    assert len(lines) == 1 and " 200 " in lines[0], orca.server_log()
    assert "Traceback" not in orca.server_log()


def test_sigterm_while_starting_still_removes_the_record(tmp_path: Path) -> None:
    """SIGTERM as soon as the banner is out, while the app is still being built (before
    uvicorn's handler is installed): the process still ends through its clean-up, exit 0."""
    with serving(tmp_path) as orca:
        record = sidecars_dir() / f"{urlsplit(orca.base).port}.json"
        orca.proc.send_signal(signal.SIGTERM)
        code = orca.proc.wait(timeout=20)
    assert code == 0, orca.server_log()
    assert not record.exists(), "the sidecar record outlived orca serve"
    assert "Traceback" not in orca.server_log()


def test_serve_runs_on_uvloop(tmp_path: Path) -> None:
    """`orca serve` serves on uvloop, the loop its uvicorn config names (installed with
    `uvicorn[standard]`); `asyncio.run(server.serve())` used to leave it on the stdlib loop.
    The serving process has uvloop's loop loaded once it has answered."""
    with serving(tmp_path) as orca:
        r = httpx.get(orca.base + "/healthz", timeout=10)
        assert r.status_code == 200
        maps = Path(f"/proc/{orca.proc.pid}/maps").read_text()
    assert "uvloop/loop." in maps, "orca serve did not load uvloop's event loop"
