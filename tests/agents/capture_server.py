"""A loopback capture server: what real agents send, content-free.

Run: ``python tests/agents/capture_server.py --port 8799 --out /tmp/captures.jsonl``.

Every request is logged as one JSON line: method, path, query, headers (credentials
redacted), and the body's *shape* — keys, model, max_tokens, stream, sizes of the system
prompt / instructions, its first few words, message roles, tool names and types. No prompt
text beyond those opening words is written. It answers valid responses so the agent carries
on: Anthropic Messages (JSON and SSE) on ``/v1/messages``, ``count_tokens``, the Responses API
stream on ``/v1/responses``, Chat Completions on ``/v1/chat/completions`` and a model list.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from aiohttp import web

_SECRET_HEADERS = {"authorization", "x-api-key", "proxy-authorization", "cookie"}
_OPENING_WORDS = 8


def _redact(headers: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in headers.items():
        low = name.lower()
        out[low] = f"<redacted {len(value)} chars>" if low in _SECRET_HEADERS else value
    return out


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict):
                parts.append(str(item.get("text", "")))
            else:
                parts.append(str(item))
        return "\n".join(parts)
    return ""


def _opening(text: str) -> str:
    return " ".join(text.split()[:_OPENING_WORDS])


def _tool_shape(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict):
        return {"kind": type(tool).__name__}
    name = tool.get("name") or (tool.get("function") or {}).get("name")
    shape: dict[str, Any] = {"type": tool.get("type"), "name": name, "keys": sorted(tool)}
    if isinstance(tool.get("tools"), list):
        shape["tools"] = [_tool_shape(t) for t in tool["tools"]]
    return shape


def _message_shape(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict):
        return {"kind": type(message).__name__}
    content = message.get("content")
    shape: dict[str, Any] = {"role": message.get("role"), "type": message.get("type")}
    if isinstance(content, list):
        shape["parts"] = [p.get("type") if isinstance(p, dict) else type(p).__name__ for p in content]
        shape["cache_control"] = sum(1 for p in content if isinstance(p, dict) and "cache_control" in p)
    shape["chars"] = len(_text_of(content)) if content is not None else 0
    if message.get("role") in ("system", "developer"):
        shape["opening"] = _opening(_text_of(content))
    return {k: v for k, v in shape.items() if v is not None}


def body_shape(body: Any) -> dict[str, Any]:
    """The content-free description of one request body."""
    if not isinstance(body, dict):
        return {"kind": type(body).__name__}
    shape: dict[str, Any] = {"keys": sorted(body)}
    for key in ("model", "max_tokens", "max_output_tokens", "stream", "store", "include",
                "tool_choice", "parallel_tool_calls", "reasoning", "text", "temperature",
                "thinking", "prompt_cache_key", "service_tier", "context_management",
                "output_config"):
        if key in body:
            shape[key] = body[key]
    for key in ("system", "instructions"):
        if key in body:
            text = _text_of(body[key])
            shape[key] = {
                "type": type(body[key]).__name__,
                "blocks": len(body[key]) if isinstance(body[key], list) else 1,
                "chars": len(text),
                "opening": _opening(text),
            }
            if isinstance(body[key], list):
                shape[key]["block_openings"] = [_opening(_text_of([b]))[:60] for b in body[key]]
                shape[key]["cache_control"] = [b.get("cache_control") for b in body[key]
                                               if isinstance(b, dict)]
    if isinstance(body.get("client_metadata"), dict):
        shape["client_metadata_keys"] = sorted(body["client_metadata"])
    if "metadata" in body and isinstance(body["metadata"], dict):
        shape["metadata"] = {k: (v if k != "user_id" else f"<{len(str(v))} chars>")
                             for k, v in body["metadata"].items()}
    if isinstance(body.get("tools"), list):
        shape["tools"] = [_tool_shape(t) for t in body["tools"]]
    for key in ("messages", "input"):
        if isinstance(body.get(key), list):
            shape[key] = [_message_shape(m) for m in body[key]]
        elif isinstance(body.get(key), str):
            shape[key] = {"type": "str", "chars": len(body[key])}
    return shape


# ------------------------------------------------------------------------------ answers

def _anthropic_json(model: str) -> dict[str, Any]:
    return {
        "id": f"msg_cap{int(time.time() * 1000)}", "type": "message", "role": "assistant",
        "model": model, "content": [{"type": "text", "text": "Hi."}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 2, "cache_read_input_tokens": 0,
                  "cache_creation_input_tokens": 0},
    }


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


async def _anthropic_stream(request: web.Request, model: str) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    msg = _anthropic_json(model)
    start = dict(msg, content=[], stop_reason=None)
    await resp.write(_sse("message_start", {"type": "message_start", "message": start}))
    await resp.write(_sse("content_block_start", {"type": "content_block_start", "index": 0,
                                                  "content_block": {"type": "text", "text": ""}}))
    await resp.write(_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": "Hi."}}))
    await resp.write(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    await resp.write(_sse("message_delta", {"type": "message_delta",
                                            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                            "usage": {"output_tokens": 2}}))
    await resp.write(_sse("message_stop", {"type": "message_stop"}))
    await resp.write_eof()
    return resp


async def _responses_stream(request: web.Request, model: str) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    rid = f"resp_cap{int(time.time() * 1000)}"
    base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
            "status": "in_progress", "output": []}
    item = {"id": "msg_cap1", "type": "message", "role": "assistant", "status": "in_progress",
            "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    done_item = dict(item, status="completed",
                     content=[{"type": "output_text", "text": "Hi.", "annotations": []}])
    usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": 14}
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": base}),
        ("response.in_progress", {"response": base}),
        ("response.output_item.added", {"output_index": 0, "item": item}),
        ("response.content_part.added", {"item_id": "msg_cap1", "output_index": 0,
                                         "content_index": 0, "part": part}),
        ("response.output_text.delta", {"item_id": "msg_cap1", "output_index": 0,
                                        "content_index": 0, "delta": "Hi."}),
        ("response.output_text.done", {"item_id": "msg_cap1", "output_index": 0,
                                       "content_index": 0, "text": "Hi."}),
        ("response.content_part.done", {"item_id": "msg_cap1", "output_index": 0,
                                        "content_index": 0, "part": done_item["content"][0]}),
        ("response.output_item.done", {"output_index": 0, "item": done_item}),
        ("response.completed", {"response": dict(base, status="completed", output=[done_item],
                                                 usage=usage)}),
    ]
    for seq, (name, data) in enumerate(events):
        await resp.write(_sse(name, {"type": name, "sequence_number": seq, **data}))
    await resp.write_eof()
    return resp


def _chat_json(model: str) -> dict[str, Any]:
    return {"id": "chatcmpl-cap", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": "Hi."}}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}}


class Capture:
    def __init__(self, out: str) -> None:
        self.out = out

    def log(self, record: dict[str, Any]) -> None:
        with open(self.out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = {"unparsed_bytes": len(raw)}
        self.log({"t": time.time(), "method": request.method, "path": request.path,
                  "query": dict(request.query), "headers": _redact(request.headers),
                  "body_bytes": len(raw), "body": body_shape(body)})
        model = str((body or {}).get("model", "capture-model")) if isinstance(body, dict) else "m"
        path = request.path
        if request.method in ("GET", "HEAD") and path.endswith("/models"):
            return web.json_response({"object": "list", "data": [
                {"id": "orca/coding", "object": "model", "created": 0, "owned_by": "orca"}]})
        if path.endswith("/messages/count_tokens"):
            return web.json_response({"input_tokens": 12})
        if path.endswith("/messages"):
            if isinstance(body, dict) and body.get("stream"):
                return await _anthropic_stream(request, model)
            return web.json_response(_anthropic_json(model))
        if path.endswith("/responses"):
            return await _responses_stream(request, model)
        if path.endswith("/chat/completions"):
            return web.json_response(_chat_json(model))
        return web.json_response({"ok": True})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", Capture(args.out).handle)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None)


if __name__ == "__main__":
    main()
