"""CPU per request-log line (SPEC §15): what `orca serve` spends per request on its log.

    python bench/bench_request_log.py

Formats a representative trace and writes it the way the sidecar does: `RequestLog.emit` in
one event-loop turn, its queued write and flush in the next, to a real file. The figure is
the CPU (process time) per line minus the same loop turns without the log; target 0.02 ms.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from orca_cli.trace.log import LogFormat, RequestLog

TRACE: dict[str, Any] = {
    "request_id": "req_3f2a9c0e1b7d4a6f8e2c1d0b", "client_request_id": None,
    "ts": time.time(), "session_id": "0f8e6c2a-5b1d-4e7f-9a3c-2d4b6f8a0c1e",
    "router": "coding", "inbound_api": "anthropic", "requested_model": "orca/coding",
    "status": 200, "error": None, "latency_ms": 812.4,
    "tier": {"decision": "strong", "reason": "difficulty"},
    "selected": {"model": "claude-sonnet-4-5", "channel": "anthropic", "key_index": 1},
    "usage": {"prompt_tokens": 41000, "cached_tokens": 38000, "cache_write_tokens": 0,
              "output_tokens": 900},
    "cost_usd": 0.0261, "attempts": [{}],
}
LINES = 20_000


async def _per_line(fmt: LogFormat, out: TextIO) -> float:
    log = RequestLog(out, fmt=fmt, colour=False)
    t0 = time.process_time()
    for _ in range(LINES):
        log.emit(TRACE)
        await asyncio.sleep(0)
    t1 = time.process_time()
    for _ in range(LINES):
        await asyncio.sleep(0)
    t2 = time.process_time()
    return ((t1 - t0) - (t2 - t1)) / LINES * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        formats: tuple[LogFormat, ...] = ("text", "json")
        for fmt in formats:
            with open(f"{tmp}/log", "w") as out:
                best = min(asyncio.run(_per_line(fmt, out)) for _ in range(3))
            print(f"{fmt}: {best:.4f} ms CPU per line (target 0.02)")


if __name__ == "__main__":
    main()
