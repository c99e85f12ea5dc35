"""Seeing what orca does (SPEC §15) through the real CLI against a running sidecar: the
request log, `orca requests`, `orca explain last`."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from orca_cli.config.schema import StateConfig
from orca_cli.trace.log import RequestLog
from tests.cli.test_operator_cli import ThreadSidecar, _cfg, orca


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
def logged() -> Iterator[tuple[ThreadSidecar, LockedIO]]:
    out = LockedIO()
    with ThreadSidecar(_cfg(), StateConfig(), RequestLog(out, fmt="json")) as sc:
        yield sc, out


def test_request_log_has_one_line_per_request_refusals_included(
        logged: tuple[ThreadSidecar, LockedIO]) -> None:
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
