"""What a relayed stream event costs orca itself (SPEC §12, token-paced streams): the work
`proxy.answer.relay_stream` does once per upstream chunk of a same-format stream, in process.

    /work/venv/bin/python bench/bench_relay.py          # a table on stdout
    /work/venv/bin/python bench/bench_relay.py --json   # one JSON document

A token-paced upstream writes each event as its own chunk, so each event is one read and one
pass of the relay: the read bounded by its deadline (`AiohttpResponse._next_chunk` over a
stand-in `readany` that answers at once, the `Watch` armed and disarmed around it), the
response tap (`wire.usage.ResponseTap.feed`), the filter of the usage chunk orca asked for
(`relay.UsageChunkFilter`, when the client did not ask for usage) and the model rename
(`relay.ModelNameRewriter`, `response_model = "requested"`). The events are the Chat
Completions stream `fake_upstream.py` sends (a 225-byte text delta each). Figures are CPU
time per event (median of 7 runs of 100,000 events, `time.process_time_ns`, gc paused).
The socket read and the client write around them are the serving stack's, measured over the
sockets by `bench_proxy.py` (`paced_c1`, `paced_c16`; the floor has them too).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from bench.fake_upstream import openai_events
from orca_cli.clock import SystemClock
from orca_cli.proxy.aiohttp_transport import AiohttpResponse
from orca_cli.proxy.deadlines import Deadlines
from orca_cli.proxy.relay import ModelNameRewriter, UsageChunkFilter
from orca_cli.proxy.transport import Timeouts
from orca_cli.wire.usage import ResponseTap

EVENTS = 100_000
RUNS = 7


def _median_ns(run: Callable[[], None]) -> float:
    times = []
    gc.disable()
    try:
        for _ in range(RUNS):
            t0 = time.process_time_ns()
            run()
            times.append((time.process_time_ns() - t0) / EVENTS)
    finally:
        gc.enable()
    return statistics.median(times)


class _Content:
    """`ClientResponse.content` answering each `readany` at once with the same event."""

    def __init__(self, chunk: bytes) -> None:
        self._chunk = chunk

    async def readany(self) -> bytes:
        return self._chunk


def _response(chunk: bytes) -> AiohttpResponse:
    resp: Any = SimpleNamespace(status=200, raw_headers=(), content=_Content(chunk))
    clock = SystemClock()
    timeouts = Timeouts(connect_s=5, first_byte_s=60, idle_s=60,
                        deadline_monotonic=clock.monotonic() + 3600)
    return AiohttpResponse(resp, timeouts, clock, Deadlines())


def measure() -> dict[str, float]:
    events = openai_events()
    text = events[5]  # a text delta, as most events of a stream are
    tap = ResponseTap("openai", True, None)
    for e in events[:2]:  # the role event and the first text: what a tap has seen mid-stream
        tap.feed(e)
    filt = UsageChunkFilter()
    names = ModelNameRewriter("orca/coding")
    names.feed(events[0])
    out: dict[str, float] = {}

    def loop(step: Callable[[bytes], object]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(EVENTS):
                step(text)
        return run

    out["tap"] = _median_ns(loop(tap.feed))
    out["usage_filter"] = _median_ns(loop(filt.feed))
    out["model_rename"] = _median_ns(loop(names.feed))

    resp = _response(text)

    async def reads() -> None:
        read = resp._next_chunk
        for _ in range(EVENTS):
            await read()

    ev_loop = asyncio.new_event_loop()  # one loop for every run (the watch keeps its loop)
    try:
        out["read_with_deadline"] = _median_ns(lambda: ev_loop.run_until_complete(reads()))
    finally:
        ev_loop.close()
    out["total"] = sum(out.values())
    return {k: round(v / 1000, 3) for k, v in out.items()}  # µs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON document on stdout")
    args = ap.parse_args()
    figures = measure()
    if args.json:
        sys.stdout.write(orjson.dumps({"unit": "µs CPU per event", "events": EVENTS,
                                       "runs": RUNS, "figures": figures}).decode() + "\n")
        return
    print(f"µs CPU per relayed event (median of {RUNS} runs of {EVENTS:,} events)")
    for name, v in figures.items():
        print(f"  {name:<20} {v:7.3f}")


if __name__ == "__main__":
    main()
