"""Incremental Server-Sent Events decoding: bytes in, events out (SPEC §3 step 8, §7).

The proxy relays every upstream chunk untouched and also feeds it here, so the decoder is
built for the hot path: line endings are normalised only when a chunk holds a `\\r`, event
boundaries are found with `bytes.find`, and only complete events are decoded. Because an
event ends at an ASCII blank line, a multibyte UTF-8 character split across two chunks is
always whole by the time its event is decoded.

Semantics follow the WHATWG event-stream rules: `\\n`, `\\r\\n` and `\\r` end lines; a blank line
dispatches; `:` lines are comments; `data` lines join with `\\n`; one space after the colon is
dropped; an event without data is not dispatched; an unfinished event at end of stream is
discarded; `id` and `retry` are ignored (orca never reconnects an upstream stream).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Event", "SSEDecoder"]

_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class Event:
    event: str | None
    data: str


class SSEDecoder:
    """Feed raw body chunks; get back the events they completed."""

    __slots__ = ("_buf", "_first", "_skip_lf")

    def __init__(self) -> None:
        self._buf = b""
        self._skip_lf = False  # the previous chunk ended in "\r": a leading "\n" belongs to it
        self._first = True

    def feed(self, chunk: bytes) -> list[Event]:
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if b"\r" in chunk:
            self._skip_lf = chunk[-1:] == b"\r"
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        end = buf.find(b"\n\n")
        if end < 0:
            self._buf = buf
            return []
        events: list[Event] = []
        start = 0
        while end >= 0:
            if end > start:
                ev = self._parse(buf[start:end])
                if ev is not None:
                    events.append(ev)
            start = end + 2
            end = buf.find(b"\n\n", start)
        # A lone "\n" at the start of the remainder ends an empty line: keep it, it is harmless.
        self._buf = buf[start:]
        return events

    @property
    def pending(self) -> bytes:
        """Bytes of an unfinished event (discarded at end of stream)."""
        return self._buf

    def _parse(self, block: bytes) -> Event | None:
        text = block.decode("utf-8", "replace")
        if self._first:
            self._first = False
            if text.startswith(_BOM):
                text = text[1:]
        # Fast path: the overwhelmingly common single `data:` line.
        if text.startswith("data:") and "\n" not in text:
            value = text[5:]
            return Event(None, value[1:] if value[:1] == " " else value)
        event: str | None = None
        data: list[str] | None = None
        for line in text.split("\n"):
            if not line or line[0] == ":":
                continue
            colon = line.find(":")
            if colon < 0:
                name, value = line, ""
            else:
                name, value = line[:colon], line[colon + 1 :]
                if value[:1] == " ":
                    value = value[1:]
            if name == "data":
                if data is None:
                    data = [value]
                else:
                    data.append(value)
            elif name == "event":
                event = value
        if data is None:
            return None
        return Event(event or None, "\n".join(data))
