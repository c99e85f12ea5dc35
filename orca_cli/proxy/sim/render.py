"""The sim's answers rendered in each wire format, JSON and SSE, shaped like the real APIs'."""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.proxy.sim.answer import Answer, pieces, sse_event
from orca_cli.proxy.sim.responses import render_response_body, render_response_stream

__all__ = ["render_body", "render_stream"]

_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _openai_usage(a: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": a.prompt_tokens,
        "completion_tokens": a.output_tokens,
        "total_tokens": a.prompt_tokens + a.output_tokens,
        "prompt_tokens_details": {"cached_tokens": a.cached_tokens},
    }


def _anthropic_usage(a: Answer, output: int) -> dict[str, Any]:
    return {
        "input_tokens": a.prompt_tokens - a.cached_tokens - a.cache_write_tokens,
        "cache_creation_input_tokens": a.cache_write_tokens,
        "cache_read_input_tokens": a.cached_tokens,
        "output_tokens": output,
    }


def render_body(api: str, a: Answer) -> bytes:
    """A non-streaming answer body in the format's shape."""
    if api == "responses":
        return render_response_body(a)
    if api == "anthropic":
        content: list[dict[str, Any]] = (
            [
                {
                    "type": "tool_use",
                    "id": a.tool[0],
                    "name": a.tool[1],
                    "input": orjson.loads(a.tool[2]),
                }
            ]
            if a.tool
            else [{"type": "text", "text": a.text}]
        )
        return orjson.dumps(
            {
                "id": "msg_sim_" + a.id_hex,
                "type": "message",
                "role": "assistant",
                "model": a.model,
                "content": content,
                "stop_reason": _ANTHROPIC_STOP.get(a.finish, a.finish),
                "stop_sequence": None,
                "usage": _anthropic_usage(a, a.output_tokens),
            }
        )
    message: dict[str, Any] = {"role": "assistant", "content": a.text or None, "refusal": None}
    if a.tool:
        message["tool_calls"] = [
            {
                "id": a.tool[0],
                "type": "function",
                "function": {"name": a.tool[1], "arguments": a.tool[2]},
            }
        ]
    return orjson.dumps(
        {
            "id": "chatcmpl-sim-" + a.id_hex,
            "object": "chat.completion",
            "created": a.created,
            "model": a.model,
            "system_fingerprint": "orca-sim",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": a.finish}
            ],
            "usage": _openai_usage(a),
        }
    )


def render_stream(api: str, a: Answer, include_usage: bool) -> list[bytes]:
    """The SSE byte chunks of a streaming answer, one event per chunk."""
    if api == "responses":
        return render_response_stream(a)
    if api == "anthropic":
        return _anthropic_stream(a)
    head = {
        "id": "chatcmpl-sim-" + a.id_hex,
        "object": "chat.completion.chunk",
        "created": a.created,
        "model": a.model,
        "system_fingerprint": "orca-sim",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        obj: dict[str, Any] = {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            obj["usage"] = None
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    out = [chunk({"role": "assistant", "content": None if a.tool else ""})]
    if a.tool:
        call_id, name, args = a.tool
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in pieces(args, 8):
            out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    else:
        for piece in pieces(a.text, 16):
            out.append(chunk({"content": piece}))
    out.append(chunk({}, a.finish))
    if include_usage:
        out.append(
            b"data: " + orjson.dumps({**head, "choices": [], "usage": _openai_usage(a)}) + b"\n\n"
        )
    out.append(b"data: [DONE]\n\n")
    return out


def _anthropic_stream(a: Answer) -> list[bytes]:
    message: dict[str, Any] = {
        "id": "msg_sim_" + a.id_hex,
        "type": "message",
        "role": "assistant",
        "model": a.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(a, 1),
    }
    out = [sse_event("message_start", {"type": "message_start", "message": message})]
    if a.tool:
        call_id, name, args = a.tool
        block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(args, 8)]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces(a.text, 16)]
    out.append(
        sse_event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )
    )
    out.append(sse_event("ping", {"type": "ping"}))
    for d in deltas:
        out.append(
            sse_event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
        )
    out.append(sse_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if a.finish == "error":
        out.append(
            sse_event(
                "error",
                {
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "sim: simulated error finish"},
                },
            )
        )
        return out
    out.append(
        sse_event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": _ANTHROPIC_STOP.get(a.finish, a.finish),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": a.output_tokens},
            },
        )
    )
    out.append(sse_event("message_stop", {"type": "message_stop"}))
    return out
