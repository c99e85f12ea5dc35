"""Sending an upstream's 2xx answer to the client (SPEC §3 step 8, §13.2): a stream relayed
as it comes (the usage chunk orca added filtered out, the model name rewritten) or translated
event by event, a JSON answer translated whole, and the inbound format's in-stream error when
an upstream ends early. `proxy.forward` decides which; this module only moves bytes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orca_cli.errors import UpstreamError
from orca_cli.proxy.relay import ModelNameRewriter, UsageChunkFilter
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.transport import Headers, filter_response_headers
from orca_cli.routing.route import Attempt
from orca_cli.translate import ResponseTranslator, TranslationError
from orca_cli.types import Send
from orca_cli.wire.errors import error_body, stream_error_event
from orca_cli.wire.sse import SSEDecoder
from orca_cli.wire.usage import ResponseTap

if TYPE_CHECKING:
    from orca_cli.proxy.forward import Inbound
    from orca_cli.proxy.xlate import Crossing
    from orca_cli.turn.model import AttemptRecord, Outcome

__all__ = ["Attempting", "client_headers", "relay_stream", "relay_translated", "send_whole",
           "stream_failure", "translate_json"]


@dataclass(slots=True)
class Attempting:
    """One attempt in flight (one model, channel and key): what `proxy.forward`'s steps and
    the relays share; `t0` is when the attempt started (monotonic seconds)."""

    rt: Runtime
    inb: Inbound
    att: Attempt
    send: Send
    res: Outcome
    crossing: Crossing | None
    rec: AttemptRecord
    t0: float

    def ms(self) -> float:
        return (self.rt.clock.monotonic() - self.t0) * 1000


async def relay_stream(t: Attempting, tap: ResponseTap, first: bytes, chunks: Any) -> None:
    """A stream of the inbound format, chunk by chunk as it arrives."""
    inb, send = t.inb, t.send
    filt = UsageChunkFilter() if inb.add_include_usage else None
    names = ModelNameRewriter(inb.rename) if inb.rename is not None else None
    chunk: bytes | None = first
    while chunk is not None:
        tap.feed(chunk)
        out = filt.feed(chunk) if filt is not None else chunk
        if names is not None and out:
            out = names.feed(out)
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
        try:
            chunk = await chunks.__anext__()
        except StopAsyncIteration:
            chunk = None
    tail = filt.flush() if filt is not None else b""
    if names is not None:
        tail = names.feed(tail) + names.flush()
    if _ended_early(t, tap):
        tail += stream_failure(inb, tap, "upstream stream ended before its final event")
    await send({"type": "http.response.body", "body": tail, "more_body": False})


def _ended_early(t: Attempting, tap: ResponseTap) -> bool:
    """Whether the upstream closed its stream without its clean end, counted against the key
    when it did. One that ended with its own in-band error already said so (the caller
    records it as error_finish): a second error event, and a second health count, would be
    wrong."""
    if tap.completed or tap.error_finish:
        return False
    assert t.rt.health is not None
    t.rt.health.record(t.att.channel, t.att.key_index, "stream_error")
    return True


def stream_failure(inb: Inbound, tap: ResponseTap | None, message: str) -> bytes:
    """The inbound format's in-stream error that ends a stream the client has begun (SPEC §7).

    A stream relayed as it came (its tap reads the inbound format) ends with the tap's own: a
    Responses stream's `response.failed` names the response it announced (id, `created_at`,
    and `model` as the client saw it, renamed or not) and continues its sequence numbers. A
    translated stream (its tap reads the upstream's format) owes nothing more here:
    `relay_translated` already ended it with its translator's event, the only one that
    knows what the client was sent."""
    if tap is None:
        return stream_error_event(inb.api, message)
    if tap.api != inb.api:
        return b""
    event = tap.stream_error_event(message)
    return ModelNameRewriter(inb.rename).body(event) if inb.rename is not None else event


def translate_json(xl: ResponseTranslator, status: int, body: bytes,
                    headers: Headers) -> tuple[int, bytes, Headers]:
    """A 2xx JSON answer in the inbound format. One the codec cannot read goes back as the
    inbound format's error (502, not billed), never as bytes of another format."""
    try:
        return status, xl.translate_body(body), headers
    except (TranslationError, ValueError, KeyError, TypeError, AttributeError) as exc:
        xl.error = f"untranslatable upstream answer: {type(exc).__name__}"
        out = error_body(xl.dst, 502, "the upstream answer could not be translated")
        return 502, out, (("content-type", "application/json"),)


async def relay_translated(t: Attempting, tap: ResponseTap, xl: ResponseTranslator,
                           first: bytes, chunks: Any) -> None:
    """A stream of another format, translated event by event as it arrives (never buffered);
    the tap reads the upstream's own events for usage, billing and strikes.

    However it breaks, the stream's error event comes from `xl`, so it continues what the
    client was sent. An upstream that fails mid-stream (`UpstreamError`) gets that event here
    and the error goes on to `proxy.forward`, which counts it and ends the response
    (`stream_failure` adds nothing to a translated stream)."""
    send = t.send
    frames = SSEDecoder()  # one framing for the tap and the translator
    chunk: bytes | None = first
    while chunk is not None:
        pairs = frames.feed_pairs(chunk)
        tap.feed_pairs(pairs)
        out = xl.feed_pairs(pairs)
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
        try:
            chunk = await chunks.__anext__()
        except StopAsyncIteration:
            chunk = None
        except UpstreamError as exc:
            failed = xl.fail(f"upstream stream failed: {exc}")
            await send({"type": "http.response.body", "body": failed, "more_body": True})
            raise
    tail = xl.close()  # an upstream that ended early: the inbound format's error event
    if _ended_early(t, tap) and xl.error is None:
        tail += xl.fail("upstream stream ended before its final event")
    await send({"type": "http.response.body", "body": tail, "more_body": False})


def client_headers(upstream: Headers, orca: list[tuple[bytes, bytes]], *,
                    translated: bool = False) -> list[tuple[bytes, bytes]]:
    kept = filter_response_headers(upstream)
    if translated:  # the body is of the inbound format: its own content type
        kept = (("content-type", "text/event-stream"),
                *((k, v) for k, v in kept if k != "content-type"))
    out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in kept]
    return out + orca


async def send_whole(send: Send, status: int, headers: Headers, body: bytes,
                      orca: list[tuple[bytes, bytes]]) -> None:
    hs = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers
          if k != "content-length"]
    hs.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": hs + orca})
    await send({"type": "http.response.body", "body": body, "more_body": False})
