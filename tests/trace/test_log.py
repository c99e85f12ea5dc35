"""The request log (SPEC §15): one content-free line per trace, text or JSON lines."""

from __future__ import annotations

import asyncio
import io
import json
import time
from typing import Any

from orca_cli.trace.build import refusal_trace
from orca_cli.trace.log import RequestLog, format_json, format_line, short_id

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


def test_sink_writes_after_the_turn_of_the_loop_in_one_write() -> None:
    writes: list[str] = []

    class Stream(io.StringIO):
        def write(self, s: str) -> int:
            writes.append(s)
            return len(s)

    log = RequestLog(Stream(), fmt="json")

    async def main() -> None:
        log.emit(_trace())
        log.emit(_trace(status=502, error="every upstream failed"))
        assert writes == []  # not written inside the handler's turn
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert len(writes) == 1 and writes[0].count("\n") == 2 and log.written == 2
    assert [json.loads(x)["status"] for x in writes[0].splitlines()] == [200, 502]


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
