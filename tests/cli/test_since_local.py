"""`--since` with an ISO time: without an offset it is local time, as every time orca prints
is; with an offset or `Z` it is that zone (SPEC §15). One parser serves `requests` and
`audit`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from orca_cli.cli.operator import local_since
from tests.cli.test_operator_cli import Agent, orca, sidecar
from tests.cli.test_requests_cli import wait_for

__all__ = ["sidecar"]


@pytest.fixture
def tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A zone far from UTC, so reading local time as UTC misses by nine hours."""
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _local(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%dT%H:%M:%S")


def test_a_time_without_offset_is_local_for_requests_and_audit(tokyo: None,
                                                               sidecar: Agent) -> None:
    start = time.time() - 2
    rid = sidecar.turn("agent-tz").headers["x-orca-request-id"]
    code, _, err = orca("escalate", "agent-tz", "--once", "--url", sidecar.base)
    assert code == 0, err
    rid2 = sidecar.turn("agent-tz", 2).headers["x-orca-request-id"]  # the ask resolves, audited
    wait_for(lambda: len(json.loads(orca("requests", "--json", "--url", sidecar.base)[1])) == 2)
    code, out, err = orca("requests", "--since", _local(start), "--json", "--url", sidecar.base)
    assert code == 0, err
    assert [r["request_id"] for r in json.loads(out)] == [rid2, rid]
    code, out, err = orca("audit", "--since", _local(start), "--json", "--url", sidecar.base)
    assert code == 0, err
    assert any(e["session"] == "agent-tz" for e in json.loads(out))
    # the same instant written in UTC with `Z`, and a local time after it: nothing newer
    z = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, out, _ = orca("requests", "--since", z, "--json", "--url", sidecar.base)
    assert [r["request_id"] for r in json.loads(out)] == [rid2, rid]
    code, out, _ = orca("requests", "--since", _local(time.time() + 60), "--json",
                        "--url", sidecar.base)
    assert code == 0 and json.loads(out) == []


def test_local_since_leaves_durations_and_zoned_times_alone(tokyo: None) -> None:
    for text in (None, "90", "15m", "2h", "7d", "1.5", "2026-12-05T20:39:50Z",
                 "2026-12-05T20:39:50+02:00", "nonsense"):
        assert local_since(text) == text
    assert local_since("2026-12-05T20:39:50") == "2026-12-05T20:39:50+09:00"
