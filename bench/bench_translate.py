"""Translation cost (SPEC §13.2): a translated request and a translated stream against the
same-format path.

    /work/venv/bin/python bench/bench_translate.py          # a table on stdout
    /work/venv/bin/python bench/bench_translate.py --json   # one JSON document

Request: a ~10 KB agent request (system prompt, 8 tools, a tool-call history with parallel
calls), already parsed (the proxy parses once for routing). The same-format path forwards the
raw bytes with `model` swapped, timed here as a bytes replace; the translated path is
`translate_request` (decode + policy + encode + serialise); `warm` is the same with the request
path's cache of translated messages (`proxy.unit_cache`) holding every message already, as on
the next turn of a session (only the newest messages are new there).

Stream: a 36-event answer (start, reasoning, 24 text deltas, two tool calls, usage, stop)
in each upstream format, fed one event per chunk. The same-format path relays the bytes and
taps them with the SSE decoder (`wire.sse.SSEDecoder`); the translated path is
`ResponseTranslator.feed`. Figures are CPU time per call (median of 7 runs,
`time.process_time_ns`, gc paused), and the difference per event.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from orca_cli.proxy.unit_cache import UnitCache
from orca_cli.translate import ResponseTranslator, TranslationOptions, translate_request
from orca_cli.translate.anthropic_stream import AnthropicStreamEncoder
from orca_cli.translate.api import decode_request, encode_request
from orca_cli.translate.model import (
    BlockEnd,
    End,
    Event,
    ReasoningDelta,
    Start,
    Stop,
    TextDelta,
    ToolDelta,
    ToolStart,
    Usage,
    UsageEvent,
)
from orca_cli.translate.openai_chat_stream import ChatStreamEncoder
from orca_cli.translate.responses_stream import ResponsesStreamEncoder
from orca_cli.wire.sse import SSEDecoder

APIS = ("anthropic", "openai", "responses")
FAMILY = {"anthropic": "anthropic", "openai": "openai", "responses": "openai"}
OPTS = TranslationOptions()


def _cpu(fn: Callable[[], object], runs: int = 7) -> float:
    """Median CPU ns per call."""
    start = time.process_time_ns()
    fn()
    once = max(time.process_time_ns() - start, 1)
    loops = max(1, min(5000, 30_000_000 // once))
    results = []
    gc.disable()
    try:
        for _ in range(runs):
            t0 = time.process_time_ns()
            for _ in range(loops):
                fn()
            results.append((time.process_time_ns() - t0) / loops)
    finally:
        gc.enable()
    return statistics.median(results)


def _anthropic_body() -> dict[str, object]:
    words = [
        "the",
        "parser",
        "module",
        "reads",
        "tokens",
        "and",
        "builds",
        "a",
        "tree",
        "of",
        "nodes",
        "for",
        "each",
        "file",
    ]
    prose = " ".join(words[i % len(words)] for i in range(500))
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
    }
    tools = [
        {"name": f"tool_{i}", "description": prose[:200], "input_schema": schema} for i in range(8)
    ]
    messages: list[dict[str, object]] = [{"role": "user", "content": "Fix the failing test."}]
    for t in range(3):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading the files."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{t}a",
                        "name": "tool_1",
                        "input": {"path": "a"},
                    },
                    {
                        "type": "tool_use",
                        "id": f"toolu_{t}b",
                        "name": "tool_2",
                        "input": {"path": "b"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{t}a", "content": prose[:600]},
                    {"type": "tool_result", "tool_use_id": f"toolu_{t}b", "content": prose[:600]},
                ],
            }
        )
    messages.append({"role": "user", "content": "Continue."})
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": prose[:3000],
        "messages": messages,
        "tools": tools,
        "stream": True,
    }


def bodies() -> dict[str, dict[str, object]]:
    base = _anthropic_body()
    out = {"anthropic": base}
    for api in ("openai", "responses"):
        req = decode_request(base, "anthropic")
        raw, _ = encode_request(req, api, model="m", family=FAMILY[api], options=OPTS)  # type: ignore[arg-type]
        out[api] = orjson.loads(raw)
    return out


def events() -> list[Event]:
    evs: list[Event] = [
        Start("upstream_1", "up-model", Usage(900, 0, 800, 0)),
        ReasoningDelta(0, "Planning the edit."),
        BlockEnd(0),
    ]
    evs += [TextDelta(1, f"word{i} ") for i in range(24)] + [BlockEnd(1)]
    evs += [
        ToolStart(2, "call_a", "tool_1"),
        ToolDelta(2, '{"path":'),
        ToolDelta(2, '"a"}'),
        BlockEnd(2),
    ]
    evs += [UsageEvent(Usage(900, 120, 800, 0)), Stop("tool_use"), End()]
    return evs


def upstream_stream(api: str) -> list[bytes]:
    enc = {
        "anthropic": lambda: AnthropicStreamEncoder("up", "msg_1", "anthropic", "up"),
        "openai": lambda: ChatStreamEncoder("up", "chatcmpl-1", 1),
        "responses": lambda: ResponsesStreamEncoder("up", "resp_1", "openai", "up", 1),
    }[api]()
    raw = enc.encode_all(events())
    return [c + b"\n\n" for c in raw.split(b"\n\n") if c]


def main() -> None:
    rows: list[dict[str, object]] = []
    req_bodies = bodies()
    for src in APIS:
        body = req_bodies[src]
        raw = orjson.dumps(body)
        same = _cpu(lambda raw=raw: raw.replace(b'"model":"claude-sonnet-4-5"', b'"model":"x"', 1))
        for dst in APIS:
            if dst == src:
                continue
            cost = _cpu(
                lambda body=body, src=src, dst=dst: translate_request(
                    body, src, dst, model="x", target_model_family=FAMILY[dst], options=OPTS
                )
            )
            memo = UnitCache().scope("bench")  # the request path's cache, warm after one call
            warm = _cpu(
                lambda body=body, src=src, dst=dst, memo=memo: translate_request(
                    body, src, dst, model="x", target_model_family=FAMILY[dst], options=OPTS,
                    memo=memo,
                )
            )
            rows.append(
                {
                    "kind": "request",
                    "from": src,
                    "to": dst,
                    "bytes": len(raw),
                    "same_format_us": same / 1e3,
                    "translated_us": cost / 1e3,
                    "extra_ms": (cost - same) / 1e6,
                    "warm_us": warm / 1e3,
                }
            )
    for up in APIS:
        chunks = upstream_stream(up)

        def tap(chunks: list[bytes] = chunks) -> None:
            dec = SSEDecoder()
            for c in chunks:
                dec.feed_pairs(c)

        same = _cpu(tap)
        for inbound in APIS:
            if inbound == up:
                continue

            def run(chunks: list[bytes] = chunks, up: str = up, inbound: str = inbound) -> None:
                rt = ResponseTranslator(
                    up,
                    inbound,
                    "client",
                    upstream_model="up",  # type: ignore[arg-type]
                    upstream_family=FAMILY[up],
                )
                for c in chunks:
                    rt.feed(c)
                rt.close()

            cost = _cpu(run)
            n = len(chunks)
            rows.append(
                {
                    "kind": "stream",
                    "from": up,
                    "to": inbound,
                    "events": n,
                    "same_format_us": same / 1e3,
                    "translated_us": cost / 1e3,
                    "extra_ms_per_event": (cost - same) / n / 1e6,
                }
            )
    if "--json" in sys.argv:
        print(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode())
        return
    for r in rows:
        if r["kind"] == "request":
            print(
                f"request {r['from']:>9} -> {r['to']:<9} {r['bytes']:>6} B  same "
                f"{r['same_format_us']:7.1f} us  translated {r['translated_us']:7.1f} us  "
                f"extra {r['extra_ms']:.3f} ms  warm {r['warm_us']:7.1f} us"
            )
        else:
            print(
                f"stream  {r['from']:>9} -> {r['to']:<9} {r['events']:>3} ev  same "
                f"{r['same_format_us']:7.1f} us  translated {r['translated_us']:7.1f} us  "
                f"extra {r['extra_ms_per_event']:.4f} ms/event"
            )


if __name__ == "__main__":
    main()
