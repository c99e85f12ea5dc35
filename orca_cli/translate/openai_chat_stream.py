"""Chat Completions streams: decoder (upstream chunks → events) and encoder (events → chunks).

Decoder: internal block indices are handed out in order of appearance — a reasoning run
(`reasoning_content`), a text run (`content`), each tool call (`tool_calls[].index`) — and a
new block closes the one before. `finish_reason` and the trailing usage chunk (asked for with
`stream_options.include_usage`) are held until `[DONE]`, so the encoders see stop and usage
before the end. A body that ends after a `finish_reason` but without `[DONE]` still ends
cleanly; one that ends before is an error.

Encoder: each chunk is a fixed prefix (id, created, model) + the delta, built once per event.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.translate.common import sse
from orca_cli.translate.model import (
    BlockEnd,
    End,
    ErrorEvent,
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
from orca_cli.translate.openai_chat import STOP_FROM, STOP_TO, usage_from, usage_to
from orca_cli.translate.stream_base import StreamDecoder, StreamEncoder

__all__ = ["ChatStreamDecoder", "ChatStreamEncoder", "stream_error"]


class ChatStreamDecoder(StreamDecoder):
    def __init__(self, family: str = "openai") -> None:
        super().__init__()
        self.family = family
        self._started = False
        self._open: int | None = None
        self._kind = ""
        self._next = 0
        self._tools: dict[int, int] = {}  # the chunk's tool index → internal block index
        self._stop: Stop | None = None
        self._usage: Usage | None = None

    def _new(self, kind: str, out: list[Event]) -> int:
        if self._open is not None:
            out.append(BlockEnd(self._open))
        self._open, self._kind = self._next, kind
        self._next += 1
        return self._open

    def _event(self, name: str | None, data: str, out: list[Event]) -> None:
        if data == "[DONE]":
            self._finish(out)
            return
        obj = self._json(data)
        if obj is None:
            return
        if "error" in obj and not obj.get("choices"):
            self.ended = True
            err = obj.get("error") or {}
            out.append(ErrorEvent(str(err.get("message") or ""), 500, err.get("type")))
            return
        if not self._started:
            self._started = True
            out.append(
                Start(
                    str(obj.get("id") or ""),
                    str(obj.get("model") or ""),
                    created=obj.get("created"),
                )
            )
        if obj.get("usage"):
            self._usage = usage_from(obj["usage"])
        for choice in obj.get("choices") or ():
            if choice.get("index", 0) == 0:
                self._choice(choice, out)

    def _choice(self, choice: dict[str, Any], out: list[Event]) -> None:
        delta = choice.get("delta") or {}
        thinking = delta.get("reasoning_content")
        if thinking:
            index = self._open if self._kind == "reasoning" else self._new("reasoning", out)
            out.append(ReasoningDelta(index, thinking))  # type: ignore[arg-type]
        text = delta.get("content") or delta.get("refusal")
        if text:
            index = self._open if self._kind == "text" else self._new("text", out)
            out.append(TextDelta(index, text))  # type: ignore[arg-type]
        for call in delta.get("tool_calls") or ():
            self._tool(call, out)
        reason = choice.get("finish_reason")
        if reason:
            if self._open is not None:
                out.append(BlockEnd(self._open))
                self._open, self._kind = None, ""
            stop = STOP_FROM.get(reason, "end")
            self._stop = Stop("refusal" if delta.get("refusal") else stop)

    def _tool(self, call: dict[str, Any], out: list[Event]) -> None:
        key = call.get("index", 0)
        fn = call.get("function") or {}
        index = self._tools.get(key)
        if index is None or (call.get("id") and self._open != index):
            index = self._new("tool", out)
            self._tools[key] = index
            out.append(ToolStart(index, str(call.get("id") or ""), str(fn.get("name") or "")))
        args = fn.get("arguments")
        if args:
            out.append(ToolDelta(index, args))

    def _finish(self, out: list[Event]) -> None:
        self.ended = True
        if self._open is not None:
            out.append(BlockEnd(self._open))
            self._open = None
        if self._usage is not None:
            out.append(UsageEvent(self._usage))
        out.append(self._stop or Stop("end"))
        out.append(End())

    def _early_end(self) -> list[Event]:
        if self._stop is None:
            return super()._early_end()
        out: list[Event] = []
        self._finish(out)
        return out


def stream_error(message: str, etype: str | None) -> bytes:
    err = {"message": message, "type": etype or "server_error", "param": None, "code": None}
    return sse(None, orjson.dumps({"error": err}))


_TAIL = b',"logprobs":null,"finish_reason":null}]}\n\n'
_TEXT_TAIL = b"}" + _TAIL


class ChatStreamEncoder(StreamEncoder):
    """Internal events → Chat Completions chunks."""

    def __init__(
        self, model_name: str, id: str, created: int = 0, *, include_usage: bool = True
    ) -> None:
        super().__init__()
        self.include_usage = include_usage
        self.model_name, self.id, self.created = model_name, id, created
        self._prefix = self._content = b""
        self._tools: dict[int, int] = {}
        self._usage: Usage | None = None
        self._stop = Stop("end")
        self._set_prefix()

    def _set_prefix(self) -> None:
        head = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model_name,
        }
        self._prefix = b"data: " + orjson.dumps(head)[:-1] + b',"choices":[{"index":0,"delta":'
        self._content = self._prefix + b'{"content":'  # `_chunk` of a content delta

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        tail = (
            _TAIL
            if finish is None
            else (b',"logprobs":null,"finish_reason":"' + finish.encode() + b'"}]}\n\n')
        )
        return self._prefix + orjson.dumps(delta) + tail

    def _on_Start(self, ev: Start) -> bytes:
        if ev.created and not self.created:
            self.created = ev.created
            self._set_prefix()
        return self._chunk({"role": "assistant", "content": ""})

    def _on_TextDelta(self, ev: TextDelta) -> bytes:
        if not ev.text:
            return b""
        return self._content + orjson.dumps(ev.text) + _TEXT_TAIL

    def _on_ReasoningDelta(self, ev: ReasoningDelta) -> bytes:
        return self._chunk({"reasoning_content": ev.text}) if ev.text else b""

    def _on_ToolStart(self, ev: ToolStart) -> bytes:
        k = self._tools[ev.index] = len(self._tools)
        call = {
            "index": k,
            "id": ev.id,
            "type": "function",
            "function": {"name": ev.name, "arguments": ""},
        }
        return self._chunk({"tool_calls": [call]})

    def _on_ToolDelta(self, ev: ToolDelta) -> bytes:
        k = self._tools.get(ev.index)
        if k is None or not ev.arguments:
            return b""
        return self._chunk({"tool_calls": [{"index": k, "function": {"arguments": ev.arguments}}]})

    def _on_BlockEnd(self, ev: BlockEnd) -> bytes:
        return b""

    def _on_UsageEvent(self, ev: UsageEvent) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_Stop(self, ev: Stop) -> bytes:
        self._stop = ev
        return b""

    def _on_End(self, ev: End) -> bytes:
        out = self._chunk({}, STOP_TO[self._stop.reason])
        if self._usage is not None and self.include_usage:
            head = {
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model_name,
                "choices": [],
                "usage": usage_to(self._usage),
            }
            out += sse(None, orjson.dumps(head))
        return out + b"data: [DONE]\n\n"

    def _on_ErrorEvent(self, ev: ErrorEvent) -> bytes:
        etype = ev.type if ev.type and not ev.type.endswith("_error") else None
        kind = {
            "rate_limit_error": "rate_limit_error",
            "invalid_request_error": "invalid_request_error",
        }.get(ev.type or "", etype or "server_error")
        return stream_error(ev.message, kind)
