"""The request log (SPEC §15): one content-free line per trace, text or JSON lines."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Any

from orca_cli.trace.build import refusal_trace
from orca_cli.trace.log import (
    FLUSH_AFTER_S,
    FLUSH_LINES,
    RequestLog,
    format_json,
    format_line,
    short_id,
)

SECRET_PROMPT = "please refactor the secret module"


def _trace(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "request_id": "req_3f2a9c0e1b7d4a6f8e2c1d0b", "client_request_id": None,
        "ts": 1_700_000_000.0, "session_id": "agent-session-with-a-long-id", "router": "coding",
        "inbound_api": "anthropic", "requested_model": "orca/coding", "status": 200,
        "error": None, "latency_ms": 812.4,
        "tier": {"decision": "strong", "reason": "explicit"},
        "selected": {"model": "claude-sonnet-4-5", "channel": "anthropic", "key_index": 1,
                     "key_fp": "ab12"},
        "usage": {"prompt_tokens": 1000, "cached_tokens": 870, "cache_write_tokens": 0,
                  "output_tokens": 40},
        "cost_usd": 0.001234, "attempts": [{}],
    }
    doc.update(over)
    return doc


def test_a_line_carries_every_field_in_order() -> None:
    line = format_line(_trace())
    expected = [time.strftime("%H:%M:%S", time.localtime(1_700_000_000.0)), "3f2a9c0e",
                "agent-sessi…", "coding", "strong:explicit", "claude-sonnet-4-5@anthropic#1",
                "200", "812ms", "cached  87%", "$0.001234"]
    pos = [line.index(part) for part in expected]
    assert pos == sorted(pos), line
    assert "\n" not in line and "\x1b" not in line


def test_colour_only_when_asked() -> None:
    assert "\x1b[" in format_line(_trace(), colour=True)
    buf = io.StringIO()  # not a terminal: no colour by default
    RequestLog(buf).emit(_trace())
    assert "\x1b" not in buf.getvalue()


def test_a_refusal_shows_orca_error_and_no_content() -> None:
    tr = refusal_trace(request_id="req_00112233445566778899aabb", client_request_id=None,
                       ts=1_700_000_000.0, inbound_api="openai", status=404,
                       error="unknown model or router 'nope'")
    line = format_line(tr)
    assert "00112233" in line and "404" in line and "unknown model or router 'nope'" in line
    doc = json.loads(format_json(tr))
    assert doc["status"] == 404 and doc["tier"] is None and doc["cached_share"] is None


def test_json_line_is_flat_and_content_free() -> None:
    doc = json.loads(format_json(_trace()))
    assert doc["request_id"] == "req_3f2a9c0e1b7d4a6f8e2c1d0b"
    assert doc["session_id"] == "agent-session-with-a-long-id"
    assert (doc["tier"], doc["reason"], doc["model"], doc["channel"], doc["key_index"]) == (
        "strong", "explicit", "claude-sonnet-4-5", "anthropic", 1)
    assert doc["cached_share"] == 0.87 and doc["cost_usd"] == 0.001234
    assert SECRET_PROMPT not in format_json(_trace()) and "key_fp" not in doc


def test_control_characters_in_a_session_id_cannot_forge_lines() -> None:
    line = format_line(_trace(session_id="a\nb\x1b[31m"))
    assert "\n" not in line and "\x1b" not in line


class _Writes(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, s: str) -> int:
        self.writes.append(s)
        return len(s)


def test_sink_writes_the_lines_of_a_flush_period_in_one_write() -> None:
    stream = _Writes()
    log = RequestLog(stream, fmt="json")

    async def main() -> None:
        log.emit(_trace())
        log.emit(_trace(status=502, error="every upstream failed"))
        await asyncio.sleep(0)
        assert stream.writes == []  # not written inside the handler's turn, nor the next
        await asyncio.sleep(FLUSH_AFTER_S * 2)

    asyncio.run(main())
    writes = stream.writes
    assert len(writes) == 1 and writes[0].count("\n") == 2 and log.written == 2
    assert [json.loads(x)["status"] for x in writes[0].splitlines()] == [200, 502]


def test_close_writes_what_is_queued_and_a_full_queue_is_written_at_once() -> None:
    stream = _Writes()
    log = RequestLog(stream, fmt="json")

    async def main() -> None:
        for _ in range(FLUSH_LINES - 1):
            log.emit(_trace())
        assert stream.writes == []
        log.emit(_trace())  # the queue is full: written now, without waiting for the timer
        assert len(stream.writes) == 1 and log.written == FLUSH_LINES
        log.emit(_trace(status=503))
        log.close()  # the sidecar stops: the last line is not left behind
        assert len(stream.writes) == 2 and log.written == FLUSH_LINES + 1
        await asyncio.sleep(FLUSH_AFTER_S * 2)  # the cancelled timer writes nothing more
        assert len(stream.writes) == 2

    asyncio.run(main())


def test_a_broken_stream_never_raises() -> None:
    stream = io.StringIO()
    stream.close()
    log = RequestLog(stream)
    log.emit(_trace())  # no loop: written at once, and the ValueError is swallowed
    assert log.written == 0


def test_short_id() -> None:
    assert short_id("req_3f2a9c0e1b7d4a6f8e2c1d0b") == "3f2a9c0e"
    assert short_id("client-77-long") == "client-7"
    assert short_id(None) == "-"
