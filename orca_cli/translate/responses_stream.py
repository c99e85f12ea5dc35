"""Responses API streams: decoder (upstream events → internal) and encoder (internal → events).

Stream-event invariant: a `ToolDelta` always carries function-argument JSON text. The decoder
therefore wraps a `custom_tool_call`'s raw input deltas as `{"input":"…"}` on the fly, and the
encoder unwraps them again for a custom call: it holds that one call's arguments and sends
the raw input as one `response.custom_tool_call_input.delta` when the call ends (the only
place the encoder holds content before sending it).

Encoder: the real event sequence — `response.created`, `response.in_progress`,
`response.output_item.added`, `response.content_part.added`, `response.output_text.delta`,
`…done` events, `response.completed` | `response.incomplete` with the whole response object
(its output items are accumulated as they stream), `response.failed` for a mid-stream error.
Every event carries a `sequence_number`; item ids derive from the response id.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.translate.common import custom_input, sse, tag_reasoning, untag
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
from orca_cli.translate.responses import usage_from, usage_to
from orca_cli.translate.stream_base import StreamDecoder, StreamEncoder, custom_close, escape

__all__ = ["ResponsesStreamDecoder", "ResponsesStreamEncoder"]


class ResponsesStreamDecoder(StreamDecoder):
    def __init__(self, family: str = "openai") -> None:
        super().__init__()
        self.family = family
        self._blocks: dict[tuple[int, int], int] = {}  # (output_index, content_index) → block
        self._custom: set[int] = set()
        self._tools = False
        self._next = 0

    def _block(self, obj: dict[str, Any], content: bool = False) -> int:
        key = (obj.get("output_index", 0), obj.get("content_index", 0) if content else -1)
        index = self._blocks.get(key)
        if index is None:
            index = self._blocks[key] = self._next
            self._next += 1
        return index

    def _event(self, name: str | None, data: str, out: list[Event]) -> None:
        obj = self._json(data)
        if obj is None:
            return
        kind = obj.get("type") or name
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            out.append(TextDelta(self._block(obj, True), obj.get("delta") or ""))
        elif kind in (
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
        ):
            index = self._block(obj)
            delta = obj.get("delta") or ""
            out.append(ToolDelta(index, escape(delta) if index in self._custom else delta))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            out.append(ReasoningDelta(self._block(obj), obj.get("delta") or ""))
        elif kind == "response.output_item.added":
            self._item_added(obj, out)
        elif kind == "response.output_item.done":
            self._item_done(obj, out)
        elif kind == "response.created":
            resp = obj.get("response") or {}
            out.append(
                Start(
                    str(resp.get("id") or ""),
                    str(resp.get("model") or ""),
                    created=resp.get("created_at"),
                )
            )
        elif kind in ("response.completed", "response.incomplete"):
            self._finish(obj.get("response") or {}, out)
        elif kind in ("response.failed", "error"):
            self.ended = True
            err = (obj.get("response") or {}).get("error") or obj
            out.append(
                ErrorEvent(
                    str(err.get("message") or "The response failed."),
                    500,
                    err.get("code") or "server_error",
                )
            )

    def _item_added(self, obj: dict[str, Any], out: list[Event]) -> None:
        item = obj.get("item") or {}
        kind = item.get("type")
        if kind in ("function_call", "custom_tool_call"):
            index = self._block(obj)
            self._tools = True
            custom = kind == "custom_tool_call"
            out.append(
                ToolStart(
                    index,
                    str(item.get("call_id")),
                    str(item.get("name")),
                    "custom" if custom else "function",
                )
            )
            if custom:
                self._custom.add(index)
                out.append(ToolDelta(index, '{"input":"'))
        elif kind == "reasoning":
            out.append(ReasoningDelta(self._block(obj), item_id=item.get("id")))

    def _item_done(self, obj: dict[str, Any], out: list[Event]) -> None:
        item = obj.get("item") or {}
        kind = item.get("type")
        if kind == "message":
            n = obj.get("output_index", 0)
            for (o, c), index in sorted(self._blocks.items()):
                if o == n and c >= 0:
                    out.append(BlockEnd(index))
            return
        index = self._block(obj)
        if kind == "reasoning":
            enc = item.get("encrypted_content")
            tagged = untag(enc)
            out.append(ReasoningDelta(index, encrypted=tagged.encrypted if tagged else enc))
        elif index in self._custom:
            out.append(ToolDelta(index, custom_close()))
        out.append(BlockEnd(index))

    def _finish(self, resp: dict[str, Any], out: list[Event]) -> None:
        self.ended = True
        out.append(UsageEvent(usage_from(resp.get("usage"))))
        if resp.get("status") == "incomplete":
            reason = (resp.get("incomplete_details") or {}).get("reason")
            out.append(Stop("content_filter" if reason == "content_filter" else "max_tokens"))
        else:
            out.append(Stop("tool_use" if self._tools else "end"))
        out.append(End())


_TEXT_HEAD = (b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
              b'"sequence_number":')


class ResponsesStreamEncoder(StreamEncoder):
    """Internal events → Responses API events."""

    def __init__(self, model_name: str, id: str, family: str, model: str, created: int = 0,
                 echo: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.model_name, self.id, self.created = model_name, id, created
        self.echo = echo or {}  # `responses.request_echo`: the request's echoed parameters
        self.family, self.model = family, model
        self._core = id.removeprefix("resp_")
        self._seq = 0
        self._items: list[dict[str, Any]] = []  # finished output items
        self._open: int | None = None
        self._item: dict[str, Any] = {}
        self._acc: list[str] = []
        self._reason: Reasoning | None = None
        self._usage = Usage()
        self._stop = Stop("end")
        self._text = b""  # the open message item's text delta event after its sequence number

    def _ev(self, kind: str, body: dict[str, Any]) -> bytes:
        body = {"type": kind, "sequence_number": self._seq, **body}
        self._seq += 1
        return sse(kind, orjson.dumps(body))

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": self.model_name,
            "output": self._items,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": None,
            **self.echo,
            **extra,
        }

    def _open_item(self, index: int, item: dict[str, Any]) -> bytes:
        out = self._close()
        self._open, self._item, self._acc = index, item, []
        n = len(self._items)
        return out + self._ev("response.output_item.added", {"output_index": n, "item": item})

    def _close(self) -> bytes:
        if self._open is None:
            return b""
        item, n, text = self._item, len(self._items), "".join(self._acc)
        self._open = None
        kind = item["type"]
        out = b""
        loc = {"item_id": item["id"], "output_index": n}
        if kind == "message":
            part = {"type": "output_text", "text": text, "annotations": []}
            out += self._ev(
                "response.output_text.done",
                {**loc, "content_index": 0, "text": text, "logprobs": []},
            )
            out += self._ev("response.content_part.done", {**loc, "content_index": 0, "part": part})
            item = {**item, "status": "completed", "content": [part]}
        elif kind == "function_call":
            out += self._ev("response.function_call_arguments.done", {**loc, "arguments": text})
            item = {**item, "status": "completed", "arguments": text}
        elif kind == "custom_tool_call":
            raw = custom_input(text)
            out += self._ev("response.custom_tool_call_input.delta", {**loc, "delta": raw})
            out += self._ev("response.custom_tool_call_input.done", {**loc, "input": raw})
            item = {**item, "status": "completed", "input": raw}
        else:
            item = self._reasoning_done(item, text)
        self._items.append(item)
        return out + self._ev("response.output_item.done", {"output_index": n, "item": item})

    def _reasoning_done(self, item: dict[str, Any], text: str) -> dict[str, Any]:
        reason = self._reason or Reasoning(self.family, self.model)
        reason.text = text
        self._reason = None
        summary = [{"type": "summary_text", "text": text}] if text else []
        return {**item, "summary": summary, "encrypted_content": tag_reasoning(reason)}

    def _on_Start(self, ev: Start) -> bytes:
        if ev.created and not self.created:
            self.created = ev.created
        resp = self._response("in_progress")
        return self._ev("response.created", {"response": resp}) + self._ev(
            "response.in_progress", {"response": resp}
        )

    def _on_TextDelta(self, ev: TextDelta) -> bytes:
        out = b""
        if self._open != ev.index:
            item_id = f"msg_{self._core}_{len(self._items)}"
            item = {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            out = self._open_item(ev.index, item)
            part = {"type": "output_text", "text": "", "annotations": []}
            out += self._ev(
                "response.content_part.added",
                {
                    "item_id": item_id,
                    "output_index": len(self._items),
                    "content_index": 0,
                    "part": part,
                },
            )
            # `_ev` of an output_text.delta, its constant parts written once per item
            self._text = (b',"item_id":' + orjson.dumps(item_id)
                          + b',"output_index":%d,"content_index":0,"delta":' % len(self._items))
        if ev.text:
            self._acc.append(ev.text)
            out += (_TEXT_HEAD + b"%d" % self._seq + self._text + orjson.dumps(ev.text)
                    + b',"logprobs":[]}\n\n')
            self._seq += 1
        return out

    def _on_ReasoningDelta(self, ev: ReasoningDelta) -> bytes:
        out = b""
        if self._open != ev.index:
            item = {"id": f"rs_{self._core}_{len(self._items)}", "type": "reasoning", "summary": []}
            out = self._open_item(ev.index, item)
            self._reason = Reasoning(self.family, self.model)
        reason = self._reason
        assert reason is not None
        if ev.signature is not None:
            reason.signature = ev.signature
        if ev.encrypted is not None:
            reason.encrypted = ev.encrypted
        if ev.redacted is not None:
            reason.redacted = ev.redacted
        if ev.text:
            self._acc.append(ev.text)
            out += self._ev(
                "response.reasoning_summary_text.delta",
                {
                    "item_id": self._item["id"],
                    "output_index": len(self._items),
                    "summary_index": 0,
                    "delta": ev.text,
                },
            )
        return out

    def _on_ToolStart(self, ev: ToolStart) -> bytes:
        n = len(self._items) + (self._open is not None)
        if ev.kind == "custom":
            item = {
                "id": f"ctc_{self._core}_{n}",
                "type": "custom_tool_call",
                "status": "in_progress",
                "call_id": ev.id,
                "name": ev.name,
                "input": "",
            }
        else:
            item = {
                "id": f"fc_{self._core}_{n}",
                "type": "function_call",
                "status": "in_progress",
                "call_id": ev.id,
                "name": ev.name,
                "arguments": "",
            }
        if ev.namespace is not None:  # a namespace member's call (`responses_tools`)
            item["namespace"] = ev.namespace
        return self._open_item(ev.index, item)

    def _on_ToolDelta(self, ev: ToolDelta) -> bytes:
        if self._open != ev.index or not ev.arguments:
            return b""
        self._acc.append(ev.arguments)
        if self._item["type"] == "custom_tool_call":
            return b""
        return self._ev(
            "response.function_call_arguments.delta",
            {"item_id": self._item["id"], "output_index": len(self._items), "delta": ev.arguments},
        )

    def _on_BlockEnd(self, ev: BlockEnd) -> bytes:
        return self._close() if self._open == ev.index else b""

    def _on_UsageEvent(self, ev: UsageEvent) -> bytes:
        self._usage = ev.usage
        return b""

    def _on_Stop(self, ev: Stop) -> bytes:
        self._stop = ev
        return b""

    def _on_End(self, ev: End) -> bytes:
        out = self._close()
        if self._stop.reason in ("max_tokens", "content_filter"):
            reason = (
                "content_filter" if self._stop.reason == "content_filter" else ("max_output_tokens")
            )
            resp = self._response("incomplete", incomplete_details={"reason": reason})
            resp["usage"] = usage_to(self._usage)
            return out + self._ev("response.incomplete", {"response": resp})
        resp = self._response("completed")
        resp["usage"] = usage_to(self._usage)
        return out + self._ev("response.completed", {"response": resp})

    def _on_ErrorEvent(self, ev: ErrorEvent) -> bytes:
        code = "rate_limit_exceeded" if ev.status == 429 else "server_error"
        resp = self._response("failed", error={"code": code, "message": ev.message})
        return self._close() + self._ev("response.failed", {"response": resp})
