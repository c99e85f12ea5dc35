"""The sim's answers in the OpenAI Responses API shape (SPEC §13.1), JSON and SSE.

A JSON answer is a Response object: `status` "completed", "incomplete" (with
`incomplete_details.reason: "max_output_tokens"` when the limit cut the text) or "failed" (the
`error` finish fault); `output` holds one item: an assistant `message` with one `output_text`
part, a `function_call` or a `custom_tool_call`; `usage` has `input_tokens` (the whole prompt),
`input_tokens_details.cached_tokens` (the simulated prompt cache; `cache_write_tokens` is 0,
as the Chat Completions sim reports no writes), `output_tokens`.

A stream is the real event sequence, numbered by `sequence_number` from 0:
`response.created`, `response.in_progress`, `response.output_item.added`, then for text
`response.content_part.added`, `response.output_text.delta`…, `response.output_text.done`,
`response.content_part.done`; for a function call `response.function_call_arguments.delta`…
and `.done`; for a custom tool `response.custom_tool_call_input.delta`… and `.done`; then
`response.output_item.done` and one of `response.completed`, `response.incomplete`,
`response.failed`.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.proxy.sim.answer import Answer, pieces, sse_event

__all__ = ["render_response_body", "render_response_stream"]

# Request fields a Response echoes, with the API's defaults.
_ECHO: tuple[tuple[str, Any], ...] = (
    ("instructions", None),
    ("max_output_tokens", None),
    ("parallel_tool_calls", True),
    ("previous_response_id", None),
    ("reasoning", {"effort": None, "summary": None}),
    ("store", True),
    ("temperature", 1.0),
    ("text", {"format": {"type": "text"}}),
    ("tool_choice", "auto"),
    ("tools", []),
    ("top_p", 1.0),
    ("metadata", {}),
)


def _status(a: Answer) -> str:
    if a.finish == "error":
        return "failed"
    return "incomplete" if a.finish == "length" else "completed"


def _usage(a: Answer) -> dict[str, Any]:
    return {
        "input_tokens": a.prompt_tokens,
        "input_tokens_details": {"cached_tokens": a.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": a.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": a.prompt_tokens + a.output_tokens,
    }


def _item(a: Answer, done: bool) -> dict[str, Any]:
    status = "completed" if done else "in_progress"
    if a.tool is None:
        content = [_part(a.text)] if done else []
        return {"id": "msg_sim_" + a.id_hex, "type": "message", "status": status,
                "role": "assistant", "content": content}
    call_id, name, args = a.tool
    if a.tool_kind == "custom":
        return {"id": "ctc_sim_" + a.id_hex, "type": "custom_tool_call", "status": status,
                "call_id": call_id, "name": name, "input": args if done else ""}
    return {"id": "fc_sim_" + a.id_hex, "type": "function_call", "status": status,
            "call_id": call_id, "name": name, "arguments": args if done else ""}


def _part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _response(a: Answer, status: str, output: list[dict[str, Any]] | None) -> dict[str, Any]:
    req = a.request or {}
    final = status != "in_progress"
    out: dict[str, Any] = {
        "id": "resp_sim_" + a.id_hex,
        "object": "response",
        "created_at": a.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "model": a.model,
        "output": output or [],
        "usage": _usage(a) if final else None,
        "user": None,
    }
    for key, default in _ECHO:
        out[key] = req.get(key, default)
    if status == "incomplete":
        out["incomplete_details"] = {"reason": "max_output_tokens"}
    elif status == "failed":
        out["error"] = {"code": "server_error", "message": "sim: simulated error finish"}
        out["output"] = []
    return out


def render_response_body(a: Answer) -> bytes:
    """A non-streaming Response object."""
    return orjson.dumps(_response(a, _status(a), [_item(a, True)]))


def render_response_stream(a: Answer) -> list[bytes]:
    """The SSE byte chunks of a streaming Response, one event per chunk."""
    out: list[bytes] = []

    def emit(kind: str, **fields: Any) -> None:
        out.append(sse_event(kind, {"type": kind, "sequence_number": len(out), **fields}))

    emit("response.created", response=_response(a, "in_progress", None))
    emit("response.in_progress", response=_response(a, "in_progress", None))
    item_id = _item(a, False)["id"]
    emit("response.output_item.added", output_index=0, item=_item(a, False))
    at = {"item_id": item_id, "output_index": 0}
    if a.tool is None:
        emit("response.content_part.added", **at, content_index=0, part=_part(""))
        for piece in pieces(a.text, 16):
            emit("response.output_text.delta", **at, content_index=0, delta=piece, logprobs=[])
        emit("response.output_text.done", **at, content_index=0, text=a.text, logprobs=[])
        emit("response.content_part.done", **at, content_index=0, part=_part(a.text))
    elif a.tool_kind == "custom":
        for piece in pieces(a.tool[2], 8):
            emit("response.custom_tool_call_input.delta", **at, delta=piece)
        emit("response.custom_tool_call_input.done", **at, input=a.tool[2])
    else:
        for piece in pieces(a.tool[2], 8):
            emit("response.function_call_arguments.delta", **at, delta=piece)
        emit("response.function_call_arguments.done", **at, name=a.tool[1],
             arguments=a.tool[2])
    emit("response.output_item.done", output_index=0, item=_item(a, True))
    status = _status(a)
    emit(f"response.{status}", response=_response(a, status, [_item(a, True)]))
    return out
