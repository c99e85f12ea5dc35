"""Rewriting relayed bytes: the usage chunk orca asked for, and the model name (SPEC §1.2, §14.2).

When an OpenAI-format client streams without `stream_options.include_usage`, orca adds it
upstream (usage feeds cost, caps and the cache-aware pins) and must not show the client the
extra final chunk (`"choices": []` with a `usage` object). `UsageChunkFilter` passes events
through as they complete; only a block that carries a non-null `usage` is parsed, and it is
dropped when its `choices` is empty. Bytes after the last complete event wait for the next
chunk (an incomplete SSE event is of no use to a client anyway).
"""

from __future__ import annotations

import re

import orjson

__all__ = ["ModelNameRewriter", "UsageChunkFilter"]

_SEP = b"\n\n"
_CR = 13  # an int: `in` finds a byte value with one memchr


class UsageChunkFilter:
    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> bytes:
        if (not self._pending and chunk.endswith(_SEP) and _CR not in chunk
                and chunk.find(b'"usage"') < 0):
            # The commonest chunk: whole events without usage, passed as is. (`find`, not
            # `in`: a bytes needle makes `in` try it as an int first and clear the TypeError.)
            return chunk
        data = self._pending + chunk if self._pending else chunk
        if b"\r\n" in data:
            data = data.replace(b"\r\n", b"\n")
        if data[-2:] == _SEP:  # the common chunk: whole events, nothing to keep back
            head, self._pending = data, b""
        else:
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


# `"model": "<any JSON string>"` as a key of an object: inside a string value every quote is
# escaped, so an unescaped `"model"` followed by a colon is always a real key.
_MODEL_FIELD = re.compile(rb'"model"(\s*):(\s*)"(?:[^"\\]|\\.)*"')


class ModelNameRewriter:
    """The response's `model` as the client named it (SPEC §14.2, `response_model =
    "requested"`): JSON bodies and every stream event of every format carry the name the
    client sent, not the served one (that is in `X-Orca-Model` and the trace). Agents re-read
    this name into their next request and their system prompt; one that changes with routing
    makes every resumed turn a cache miss.

    Streams are rewritten line by line: bytes after a chunk's last newline wait for the next
    chunk, so a `model` field split across two chunks is still found."""

    __slots__ = ("_field", "_name", "_new", "_pending")

    def __init__(self, requested: str) -> None:
        self._name = orjson.dumps(requested)
        # The last `"model": "<served>"` field rewritten, exactly as sent, and what it became:
        # a stream repeats it in every event, so later events take a plain bytes replace.
        self._field = self._new = b""
        self._pending = b""

    def _repl(self, m: re.Match[bytes]) -> bytes:
        self._field = m.group(0)
        self._new = b'"model"' + m.group(1) + b":" + m.group(2) + self._name
        return self._new

    def body(self, data: bytes) -> bytes:
        at = data.find(b'"model"')
        if at < 0:
            return data
        field = self._field
        # Every `"model"` key is followed by the field seen before (its closing quote included,
        # so no longer name matches it): the same rewrite as the pattern, without the pattern.
        # A stream event has one key: found, checked to be the only one, and replaced.
        if field and data.startswith(field, at) and data.find(b'"model"', at + 7) < 0:
            return data.replace(field, self._new, 1)
        if field and data.count(field) == data.count(b'"model"'):
            return data.replace(field, self._new)
        return _MODEL_FIELD.sub(self._repl, data)

    def feed(self, chunk: bytes) -> bytes:
        if not self._pending and chunk[-1:] == b"\n":  # whole lines: nothing to keep back
            return self.body(chunk)
        data = self._pending + chunk if self._pending else chunk
        end = data.rfind(b"\n")
        if end < 0:
            self._pending = data
            return b""
        head, self._pending = data[: end + 1], data[end + 1:]
        return self.body(head)

    def flush(self) -> bytes:
        rest, self._pending = self._pending, b""
        return self.body(rest)
