"""What the three stream codecs share: the decoder shell and the encoder's dispatch.

A decoder is fed raw upstream bytes (chunk boundaries anywhere: `wire.sse.SSEDecoder` frames
them) and returns the internal events those bytes completed. An encoder turns each event into
the bytes of its own format at once; it holds only what the format's closing events must
repeat (a block's text, a tool call's arguments, the usage), never the stream.

A stream that stops without its format's clean end decodes to an `ErrorEvent`, so a broken
upstream never becomes a clean end downstream (SPEC §7).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from orca_cli.translate.model import End, ErrorEvent, Event
from orca_cli.wire.sse import Pair, SSEDecoder

__all__ = ["StreamDecoder", "StreamEncoder", "custom_close", "custom_open", "escape"]

INCOMPLETE = "The upstream stream ended before it was complete."


class StreamDecoder:
    """Base: `feed` frames SSE and hands each (event, data) to `_event`."""

    def __init__(self) -> None:
        self._sse = SSEDecoder()
        self.ended = False  # the format's clean end (or an error) was seen

    def feed(self, chunk: bytes) -> list[Event]:
        return self.feed_pairs(self._sse.feed_pairs(chunk))

    def feed_pairs(self, pairs: list[Pair]) -> list[Event]:
        """The events of SSE `(event, data)` pairs framed elsewhere (`feed` frames its own):
        a relay that also taps the stream frames it once for both."""
        out: list[Event] = []
        for name, data in pairs:
            if self.ended:
                break
            self._event(name, data, out)
        return out

    def close(self) -> list[Event]:
        """Events owed at the end of the upstream body: an error when it stopped early."""
        if self.ended:
            return []
        self.ended = True
        return self._early_end()

    def _early_end(self) -> list[Event]:
        return [ErrorEvent(INCOMPLETE, 502, "api_error")]

    def _event(self, name: str | None, data: str, out: list[Event]) -> None:
        raise NotImplementedError

    @staticmethod
    def _json(data: str) -> dict[str, Any] | None:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


class StreamEncoder:
    """Base: `encode(event)` dispatches on the event's class to `_on_<Class>`."""

    def __init__(self) -> None:
        self.done = False
        self._handlers: dict[type, Callable[[Any], bytes]] = {}
        for cls in Event.__args__:
            self._handlers[cls] = getattr(self, "_on_" + cls.__name__)

    def encode(self, event: Event) -> bytes:
        if self.done:
            return b""
        kind = type(event)
        if kind is End or kind is ErrorEvent:
            self.done = True
        return self._handlers[kind](event)

    def encode_all(self, events: list[Event]) -> bytes:
        return b"".join(self.encode(e) for e in events)


def escape(text: str) -> str:
    """`text` as the inside of a JSON string literal (for streaming a wrapped custom input)."""
    return orjson.dumps(text).decode()[1:-1]


def custom_open() -> str:
    return '{"input":"'


def custom_close() -> str:
    return '"}'
