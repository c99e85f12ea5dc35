"""Hiding the usage chunk orca asked for (SPEC §1.2, issue: OpenAI `include_usage`).

When an OpenAI-format client streams without `stream_options.include_usage`, orca adds it
upstream (usage feeds cost, caps and the cache-aware pins) and must not show the client the
extra final chunk (`"choices": []` with a `usage` object). `UsageChunkFilter` passes events
through as they complete; only a block that carries a non-null `usage` is parsed, and it is
dropped when its `choices` is empty. Bytes after the last complete event wait for the next
chunk (an incomplete SSE event is of no use to a client anyway).
"""

from __future__ import annotations

import orjson

__all__ = ["UsageChunkFilter"]

_SEP = b"\n\n"


class UsageChunkFilter:
    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        data = self._pending + chunk if self._pending else chunk
        if b"\r\n" in data:
            data = data.replace(b"\r\n", b"\n")
        end = data.rfind(_SEP)
        if end < 0:
            self._pending = data
            return b""
        head, self._pending = data[: end + 2], data[end + 2 :]
        if b'"usage"' not in head or not _has_usage_object(head):
            return head
        kept = [b for b in head.split(_SEP) if b and not _is_usage_only(b)]
        return b"".join(k + _SEP for k in kept)

    def flush(self) -> bytes:
        rest, self._pending = self._pending, b""
        return rest


def _has_usage_object(block: bytes) -> bool:
    return block.count(b'"usage"') > block.count(b'"usage":null') + block.count(b'"usage": null')


def _is_usage_only(block: bytes) -> bool:
    if b'"usage"' not in block:
        return False
    for line in block.split(b"\n"):
        if line.startswith(b"data:"):
            try:
                obj = orjson.loads(line[5:].strip())
            except orjson.JSONDecodeError:
                return False
            return (isinstance(obj, dict) and obj.get("choices") == []
                    and isinstance(obj.get("usage"), dict))
    return False
