"""A fast fake LLM provider on loopback for the proxy benchmark (SPEC §12).

    python bench/fake_upstream.py [--port 0] [--latency-ms 0] [--pace-ms 1] [--cpu 0]

It prints `listening 127.0.0.1:<port>` on stdout once it accepts connections and serves until
SIGTERM or SIGINT. It must cost far less than any proxy it stands behind, so it is a raw
asyncio `Protocol` with the httptools parser (and uvloop when installed): no framework, every
answer built once at start-up, a stream written as pre-encoded chunks.

What it answers, whatever the path's model:

* `POST /v1/chat/completions` (and `/chat/completions`): an OpenAI chat completion, or with
  `"stream": true` in the body a 36-event SSE stream — the role chunk, 32 content chunks, the
  finish chunk, the usage chunk (`choices: []`) and `[DONE]`;
* `POST /v1/messages`: an Anthropic message, or a 36-event stream — `message_start`, `ping`,
  `content_block_start`, 30 text deltas, `content_block_stop`, `message_delta`, `message_stop`;
* `POST /v1/responses`: an OpenAI Responses API `response` object, or a 36-event stream as the
  API sends it — `response.created`, `response.in_progress`, `response.output_item.added`,
  `response.content_part.added`, 28 `response.output_text.delta`, `response.output_text.done`,
  `response.content_part.done`, `response.output_item.done`, `response.completed` (with usage).

Every usage block reports cached prompt tokens (`prompt_tokens_details.cached_tokens`,
`cache_read_input_tokens`, `input_tokens_details.cached_tokens`), as a warm prompt cache would. A stream is written back to back
(one `write` per event in the same loop turn) unless the body names a model containing
`fake-paced`: then its events go out `--pace-ms` apart, like a provider emitting tokens.
`--latency-ms` delays every answer's first byte (default 0: answer at once).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, cast

import httptools
import orjson

__all__ = ["STREAM_EVENTS", "anthropic_events", "main", "openai_events", "responses_events",
           "serve"]

STREAM_EVENTS = 36
PACED_MARKER = b"fake-paced"
_STREAM_MARKERS = (b'"stream":true', b'"stream": true')
_USAGE_OPENAI = {"prompt_tokens": 2600, "completion_tokens": 33, "total_tokens": 2633,
                 "prompt_tokens_details": {"cached_tokens": 2304}}
_USAGE_ANTHROPIC = {"input_tokens": 296, "output_tokens": 33, "cache_read_input_tokens": 2304,
                    "cache_creation_input_tokens": 0}
_USAGE_RESPONSES = {"input_tokens": 2600, "input_tokens_details": {"cached_tokens": 2304},
                    "output_tokens": 33, "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 2633}
_TEXT = "Done: the flag is added and the tests pass."


def openai_json() -> bytes:
    return orjson.dumps({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1760000000,
        "model": "fake-model", "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None, "message": {
            "role": "assistant", "content": _TEXT}}],
        "usage": _USAGE_OPENAI})


def openai_events() -> list[bytes]:
    """36 SSE events as an OpenAI-compatible provider streams them with include_usage."""

    def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
        doc = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1760000000,
               "model": "fake-model", "system_fingerprint": "fp_fake", "choices": choices,
               **extra}
        return b"data: " + orjson.dumps(doc) + b"\n\n"

    def delta(d: dict[str, Any], finish: str | None = None) -> bytes:
        return chunk([{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}])

    out = [delta({"role": "assistant", "content": ""})]
    out += [delta({"content": f"tok{i} "}) for i in range(STREAM_EVENTS - 4)]
    out.append(delta({}, "stop"))
    out.append(chunk([], usage=_USAGE_OPENAI))
    out.append(b"data: [DONE]\n\n")
    assert len(out) == STREAM_EVENTS
    return out


def anthropic_json() -> bytes:
    return orjson.dumps({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
        "content": [{"type": "text", "text": _TEXT}],
        "stop_reason": "end_turn", "stop_sequence": None, "usage": _USAGE_ANTHROPIC})


def anthropic_events() -> list[bytes]:
    """36 SSE events as the Anthropic Messages API streams them (with its `ping`)."""

    def event(name: str, doc: dict[str, Any]) -> bytes:
        return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(doc) + b"\n\n"

    start_usage = {**_USAGE_ANTHROPIC, "output_tokens": 1}
    out = [event("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": start_usage}}),
        event("ping", {"type": "ping"}),
        event("content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}})]
    out += [event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": f"tok{i} "}})
            for i in range(STREAM_EVENTS - 6)]
    out += [event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            event("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                    "usage": {"output_tokens": 33}}),
            event("message_stop", {"type": "message_stop"})]
    assert len(out) == STREAM_EVENTS
    return out


def _response(status: str, text: str | None, usage: dict[str, Any] | None) -> dict[str, Any]:
    """A Responses API `response` object (the fields Codex and the OpenAI SDK read)."""
    output = [] if text is None else [{
        "type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    return {"id": "resp_fake", "object": "response", "created_at": 1760000000,
            "status": status, "model": "fake-model", "output": output,
            "parallel_tool_calls": False, "tool_choice": "auto", "tools": [], "store": False,
            "reasoning": {"effort": "medium", "summary": None}, "usage": usage}


def responses_json() -> bytes:
    return orjson.dumps(_response("completed", _TEXT, _USAGE_RESPONSES))


def responses_events() -> list[bytes]:
    """36 SSE events in the Responses API's order, `response.completed` carrying the usage."""
    seq = iter(range(STREAM_EVENTS))

    def event(name: str, **fields: Any) -> bytes:
        doc = {"type": name, "sequence_number": next(seq), **fields}
        return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(doc) + b"\n\n"

    item = {"type": "message", "id": "msg_fake", "status": "in_progress", "role": "assistant",
            "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    at = {"item_id": "msg_fake", "output_index": 0, "content_index": 0}
    deltas = [f"tok{i} " for i in range(STREAM_EVENTS - 8)]
    text = "".join(deltas)
    out = [event("response.created", response=_response("in_progress", None, None)),
           event("response.in_progress", response=_response("in_progress", None, None)),
           event("response.output_item.added", output_index=0, item=item),
           event("response.content_part.added", **at, part=part)]
    out += [event("response.output_text.delta", **at, delta=d) for d in deltas]
    done = {**part, "text": text}
    out += [event("response.output_text.done", **at, text=text),
            event("response.content_part.done", **at, part=done),
            event("response.output_item.done", output_index=0,
                  item={**item, "status": "completed", "content": [done]}),
            event("response.completed", response=_response("completed", text,
                                                            _USAGE_RESPONSES))]
    assert len(out) == STREAM_EVENTS
    return out


def _whole(body: bytes) -> bytes:
    return (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n" % len(body)) + body


_STREAM_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n")
_NOT_FOUND = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
_LAST_CHUNK = b"0\r\n\r\n"


def _chunked(events: Sequence[bytes]) -> list[bytes]:
    return [b"%x\r\n%s\r\n" % (len(e), e) for e in events]


class _Answers:
    """Every response, encoded once."""

    def __init__(self, latency_s: float, pace_s: float) -> None:
        self.latency_s = latency_s
        self.pace_s = pace_s
        self.json = {"openai": _whole(openai_json()), "anthropic": _whole(anthropic_json()),
                     "responses": _whole(responses_json())}
        self.events = {"openai": _chunked(openai_events()),
                       "anthropic": _chunked(anthropic_events()),
                       "responses": _chunked(responses_events())}


def _api(path: bytes) -> str | None:
    path = path.split(b"?", 1)[0]
    if path.endswith(b"/chat/completions"):
        return "openai"
    if path.endswith(b"/messages"):
        return "anthropic"
    if path.endswith(b"/responses"):
        return "responses"
    return None


class _Connection(asyncio.Protocol):
    """One keep-alive connection; requests are answered in order."""

    def __init__(self, answers: _Answers) -> None:
        self._answers = answers
        self._parser = httptools.HttpRequestParser(self)
        self._transport: asyncio.Transport | None = None
        self._url = b""
        self._body: list[bytes] = []
        self._busy: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is no subclass

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        if self._busy is not None:
            self._busy.cancel()

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            if self._transport is not None:
                self._transport.close()

    # httptools callbacks
    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        url, self._url = self._url, b""
        body = b"".join(self._body)
        self._body.clear()
        api = _api(url)
        transport = self._transport
        if transport is None:
            return
        if api is None:
            transport.write(_NOT_FOUND)
            return
        stream = any(m in body for m in _STREAM_MARKERS)
        paced = stream and PACED_MARKER in body
        a = self._answers
        if a.latency_s > 0 or paced:
            self._busy = asyncio.ensure_future(self._slow(api, stream, paced))
            return
        if stream:
            transport.write(_STREAM_HEAD)
            for chunk in a.events[api]:
                transport.write(chunk)
            transport.write(_LAST_CHUNK)
        else:
            transport.write(a.json[api])

    async def _slow(self, api: str, stream: bool, paced: bool) -> None:
        a = self._answers
        if a.latency_s > 0:
            await asyncio.sleep(a.latency_s)
        t = self._transport
        if t is None:
            return
        if not stream:
            t.write(a.json[api])
            return
        t.write(_STREAM_HEAD)
        for i, chunk in enumerate(a.events[api]):
            if paced and i:
                await asyncio.sleep(a.pace_s)
                t = self._transport
                if t is None:
                    return
            t.write(chunk)
        t.write(_LAST_CHUNK)


async def serve(port: int, latency_ms: float, pace_ms: float) -> None:
    loop = asyncio.get_running_loop()
    answers = _Answers(latency_ms / 1000.0, pace_ms / 1000.0)
    server = await loop.create_server(lambda: _Connection(answers), "127.0.0.1", port,
                                      backlog=1024, reuse_address=True)
    real = server.sockets[0].getsockname()[1]
    print(f"listening 127.0.0.1:{real}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="A fast fake LLM provider on 127.0.0.1.")
    p.add_argument("--port", type=int, default=0, help="TCP port (0: any free one)")
    p.add_argument("--latency-ms", type=float, default=0.0, help="delay before every answer")
    p.add_argument("--pace-ms", type=float, default=1.0,
                   help="gap between events of a paced stream (a model containing fake-paced)")
    p.add_argument("--cpu", type=int, default=None, help="pin this process to one CPU")
    args = p.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(args.port, args.latency_ms, args.pace_ms))
    else:
        uvloop.run(serve(args.port, args.latency_ms, args.pace_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
