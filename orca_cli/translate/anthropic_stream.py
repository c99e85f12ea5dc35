"""Anthropic Messages streams: decoder (upstream SSE → events) and encoder (events → SSE).

Encoder notes: blocks are numbered in the order they open (Anthropic allows one open block at
a time, so a delta for a new internal block closes the open one). A reasoning block from
another format gets its provenance tag (`common.tag_reasoning`) as a `signature_delta` just
before its `content_block_stop`, which is where Anthropic itself sends the signature.
`message_delta` (stop reason + usage) and `message_stop` go out at the upstream's clean end.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.translate.anthropic import STOP_FROM, STOP_TO, usage_from, usage_to
from orca_cli.translate.common import safe_id, sse, status_for, tag_reasoning, type_for, untag
from orca_cli.translate.model import (
    BlockEnd,
    End,
    ErrorEvent,
    Event,
    Reasoning,
    ReasoningDelta,
    Start,
    Stop,
    TextDelta,
    ToolDelta,
    ToolStart,
    Usage,
    UsageEvent,
)
from orca_cli.translate.stream_base import StreamDecoder, StreamEncoder

__all__ = ["AnthropicStreamDecoder", "AnthropicStreamEncoder", "stream_error"]


class AnthropicStreamDecoder(StreamDecoder):
    def __init__(self, family: str = "anthropic") -> None:
        super().__init__()
        self.family = family
        self._usage = Usage()

    def _event(self, name: str | None, data: str, out: list[Event]) -> None:
        obj = self._json(data)
        if obj is None:
            return
        kind = obj.get("type") or name
        if kind == "content_block_delta":
            delta = obj.get("delta") or {}
            dkind = delta.get("type")
            index = obj.get("index", 0)
            if dkind == "text_delta":
                out.append(TextDelta(index, delta.get("text") or ""))
            elif dkind == "input_json_delta":
                out.append(ToolDelta(index, delta.get("partial_json") or ""))
            elif dkind == "thinking_delta":
                out.append(ReasoningDelta(index, delta.get("thinking") or ""))
            elif dkind == "signature_delta":
                sig = delta.get("signature")
                tagged = untag(sig)
                out.append(ReasoningDelta(index, signature=tagged.signature if tagged else sig))
        elif kind == "content_block_start":
            self._block_start(obj, out)
        elif kind == "content_block_stop":
            out.append(BlockEnd(obj.get("index", 0)))
        elif kind == "message_start":
            msg = obj.get("message") or {}
            self._usage = usage_from(msg.get("usage"))
            out.append(Start(str(msg.get("id") or ""), str(msg.get("model") or ""), self._usage))
        elif kind == "message_delta":
            self._message_delta(obj, out)
        elif kind == "message_stop":
            self.ended = True
            out.append(End())
        elif kind == "error":
            self.ended = True
            err = obj.get("error") or {}
            etype = err.get("type") or "api_error"
            status = status_for("anthropic", "anthropic", 0, etype)
            out.append(ErrorEvent(str(err.get("message") or ""), status, etype))

    def _block_start(self, obj: dict[str, Any], out: list[Event]) -> None:
        index = obj.get("index", 0)
        block = obj.get("content_block") or {}
        kind = block.get("type")
        if kind == "text":
            out.append(TextDelta(index, block.get("text") or ""))
        elif kind == "tool_use":
            out.append(ToolStart(index, str(block.get("id")), str(block.get("name"))))
            if block.get("input"):
                out.append(ToolDelta(index, orjson.dumps(block["input"]).decode()))
        elif kind == "thinking":
            out.append(ReasoningDelta(index, block.get("thinking") or ""))
        elif kind == "redacted_thinking":
            out.append(ReasoningDelta(index, redacted=block.get("data")))

    def _message_delta(self, obj: dict[str, Any], out: list[Event]) -> None:
        delta = obj.get("delta") or {}
        u = obj.get("usage") or {}
        late = usage_from(u)
        usage = self._usage
        usage.output = late.output or usage.output
        if u.get("input_tokens") is not None or u.get("cache_read_input_tokens") is not None:
            usage.input, usage.cached, usage.cache_write = late.input, late.cached, late.cache_write
        out.append(UsageEvent(usage))
        reason = delta.get("stop_reason")
        if reason:
            out.append(Stop(STOP_FROM.get(reason, "end"), delta.get("stop_sequence")))


def stream_error(message: str, etype: str) -> bytes:
    body = {"type": "error", "error": {"type": etype, "message": message}}
    return sse("error", orjson.dumps(body))


class AnthropicStreamEncoder(StreamEncoder):
    """Internal events → Anthropic SSE. `family`/`model` name the upstream (for tags)."""

    def __init__(self, model_name: str, id: str, family: str, model: str) -> None:
        super().__init__()
        self.model_name, self.id = model_name, id
        self.family, self.model = family, model
        self._open: int | None = None  # internal index of the open block
        self._kind = ""
        self._n = -1  # Anthropic index of the open block
        self._reason: Reasoning | None = None
        self._usage = Usage()
        self._stop = Stop("end")
        self._text = b""  # the open text block's delta event up to its text

    def _delta(self, delta: dict[str, Any]) -> bytes:
        body = {"type": "content_block_delta", "index": self._n, "delta": delta}
        return sse("content_block_delta", orjson.dumps(body))

    def _start(self, index: int, kind: str, block: dict[str, Any]) -> bytes:
        out = self._close()
        self._open, self._kind, self._n = index, kind, self._n + 1
        body = {"type": "content_block_start", "index": self._n, "content_block": block}
        return out + sse("content_block_start", orjson.dumps(body))

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        out = b""
        if self._kind == "thinking" and self._reason is not None:
            out = self._delta({"type": "signature_delta", "signature": tag_reasoning(self._reason)})
            self._reason = None
        self._open = None
        body = {"type": "content_block_stop", "index": self._n}
        return out + sse("content_block_stop", orjson.dumps(body))

    def _on_Start(self, ev: Start) -> bytes:
        if ev.usage is not None:
            self._usage = ev.usage
        msg: dict[str, Any] = {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model_name,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage_to(self._usage),
        }
        return sse("message_start", orjson.dumps({"type": "message_start", "message": msg}))

    def _on_TextDelta(self, ev: TextDelta) -> bytes:
        if self._open == ev.index:  # the common event: the open text block's next words
            if not ev.text:
                return b""
            return self._text + orjson.dumps(ev.text) + b"}}\n\n"
        out = self._start(ev.index, "text", {"type": "text", "text": ""})
        # `_delta` of a text_delta, its constant part written once per block
        self._text = (b'event: content_block_delta\ndata: {"type":"content_block_delta",'
                      b'"index":%d,"delta":{"type":"text_delta","text":' % self._n)
        if ev.text:
            out += self._text + orjson.dumps(ev.text) + b"}}\n\n"
        return out

    def _on_ReasoningDelta(self, ev: ReasoningDelta) -> bytes:
        out = b""
        if self._open != ev.index:
            out = self._start(
                ev.index, "thinking", {"type": "thinking", "thinking": "", "signature": ""}
            )
            self._reason = Reasoning(self.family, self.model)
        reason = self._reason
        assert reason is not None
        if ev.text:
            reason.text += ev.text
            out += self._delta({"type": "thinking_delta", "thinking": ev.text})
        if ev.signature is not None:
            reason.signature = ev.signature
        if ev.encrypted is not None:
            reason.encrypted = ev.encrypted
        if ev.redacted is not None:
            reason.redacted = ev.redacted
        return out

    def _on_ToolStart(self, ev: ToolStart) -> bytes:
        block = {"type": "tool_use", "id": safe_id(ev.id)[0], "name": ev.name, "input": {}}
        return self._start(ev.index, "tool", block)

    def _on_ToolDelta(self, ev: ToolDelta) -> bytes:
        if self._open != ev.index or not ev.arguments:
            return b""
        return self._delta({"type": "input_json_delta", "partial_json": ev.arguments})

    def _on_BlockEnd(self, ev: BlockEnd) -> bytes:
        return self._close() if self._open == ev.index else b""

    def _on_UsageEvent(self, ev: UsageEvent) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_Stop(self, ev: Stop) -> bytes:
        self._stop = ev
        return b""

    def _on_End(self, ev: End) -> bytes:
        delta = {
            "stop_reason": STOP_TO[self._stop.reason],
            "stop_sequence": self._stop.stop_sequence,
        }
        body = {"type": "message_delta", "delta": delta, "usage": usage_to(self._usage)}
        return (
            self._close()
            + sse("message_delta", orjson.dumps(body))
            + sse("message_stop", b'{"type":"message_stop"}')
        )

    def _on_ErrorEvent(self, ev: ErrorEvent) -> bytes:
        etype = ev.type if ev.type in _ANTHROPIC_ETYPES else type_for("anthropic", ev.status)
        return stream_error(ev.message, etype)


_ANTHROPIC_ETYPES = frozenset(
    {
        "invalid_request_error",
        "authentication_error",
        "billing_error",
        "permission_error",
        "not_found_error",
        "request_too_large",
        "rate_limit_error",
        "api_error",
        "timeout_error",
        "overloaded_error",
    }
)
