"""Provider-shaped answers in every wire format orca speaks, and an SSE parser.

Chat Completions (`openai_*`), Messages (`anthropic_*`) and the Responses API
(`responses_*`): a whole JSON body, or a list of SSE events (one `bytes` per event) a fake
provider writes one at a time. Token counts are parameters so a test can check usage and cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from orca_cli.types import Api

__all__ = [
    "anthropic_json",
    "anthropic_sse",
    "event",
    "json_body",
    "openai_json",
    "openai_sse",
    "responses_json",
    "responses_sse",
    "sse_events",
    "sse_stream",
]


def event(name: str | None, obj: Any) -> bytes:
    """One SSE event: an optional `event:` line and a JSON `data:` line."""
    head = b"event: " + name.encode() + b"\n" if name else b""
    return head + b"data: " + orjson.dumps(obj) + b"\n\n"


# --- Chat Completions -------------------------------------------------------------------------


def openai_json(text: str = "done", model: str = "m", *, finish: str = "stop",
                prompt_tokens: int = 12, completion_tokens: int = 3,
                id: str = "chatcmpl-test") -> bytes:
    return orjson.dumps({
        "id": id, "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}})


def openai_sse(parts: Sequence[str] = ("hel", "lo"), model: str = "m", *,
               finish: str = "stop", usage: bool = True, prompt_tokens: int = 12,
               completion_tokens: int = 2, id: str = "chatcmpl-test") -> list[bytes]:
    """Role, one chunk per text part, finish, usage (optional), `[DONE]`."""

    def chunk(delta: dict[str, Any], fin: str | None = None) -> bytes:
        return event(None, {"id": id, "object": "chat.completion.chunk", "created": 1,
                            "model": model,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p}) for p in parts]
    out.append(chunk({}, finish))
    if usage:
        out.append(event(None, {
            "id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
            "choices": [], "usage": {"prompt_tokens": prompt_tokens,
                                     "completion_tokens": completion_tokens,
                                     "total_tokens": prompt_tokens + completion_tokens}}))
    out.append(b"data: [DONE]\n\n")
    return out


# --- Messages ---------------------------------------------------------------------------------


def anthropic_json(text: str = "done", model: str = "m", *, stop: str = "end_turn",
                   input_tokens: int = 12, output_tokens: int = 3,
                   id: str = "msg_test") -> bytes:
    return orjson.dumps({
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}] if text else [], "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}})


def anthropic_sse(parts: Sequence[str] = ("hel", "lo"), model: str = "m", *,
                  stop: str = "end_turn", input_tokens: int = 12, output_tokens: int = 2,
                  id: str = "msg_test") -> list[bytes]:
    """message_start, one text block (a delta per part), message_delta, message_stop."""
    out = [event("message_start", {"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
        event("content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}})]
    out += [event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": p}})
            for p in parts]
    out += [event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            event("message_delta", {"type": "message_delta",
                                    "delta": {"stop_reason": stop, "stop_sequence": None},
                                    "usage": {"output_tokens": output_tokens}}),
            event("message_stop", {"type": "message_stop"})]
    return out


# --- Responses API ----------------------------------------------------------------------------


def _response(model: str, id: str, status: str, text: str | None,
              usage: dict[str, Any] | None) -> dict[str, Any]:
    output = [] if text is None else [{
        "type": "message", "id": f"{id}_msg", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    return {"id": id, "object": "response", "created_at": 1, "status": status,
            "model": model, "output": output, "usage": usage}


def _responses_usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens}


def responses_json(text: str = "done", model: str = "m", *, input_tokens: int = 12,
                   output_tokens: int = 3, id: str = "resp_test") -> bytes:
    return orjson.dumps(_response(model, id, "completed", text,
                                  _responses_usage(input_tokens, output_tokens)))


def responses_sse(parts: Sequence[str] = ("hel", "lo"), model: str = "m", *,
                  input_tokens: int = 12, output_tokens: int = 2,
                  id: str = "resp_test") -> list[bytes]:
    """response.created … one output_text.delta per part … response.completed."""
    seq = iter(range(1_000_000))
    item = {"type": "message", "id": f"{id}_msg", "status": "in_progress",
            "role": "assistant", "content": []}

    def ev(name: str, **fields: Any) -> bytes:
        return event(name, {"type": name, "sequence_number": next(seq), **fields})

    text = "".join(parts)
    part = {"type": "output_text", "text": "", "annotations": []}
    out = [ev("response.created", response=_response(model, id, "in_progress", None, None)),
           ev("response.in_progress", response=_response(model, id, "in_progress", None, None)),
           ev("response.output_item.added", output_index=0, item=item),
           ev("response.content_part.added", item_id=item["id"], output_index=0,
              content_index=0, part=part)]
    out += [ev("response.output_text.delta", item_id=item["id"], output_index=0,
               content_index=0, delta=p) for p in parts]
    done_part = {**part, "text": text}
    out += [ev("response.output_text.done", item_id=item["id"], output_index=0,
               content_index=0, text=text),
            ev("response.content_part.done", item_id=item["id"], output_index=0,
               content_index=0, part=done_part),
            ev("response.output_item.done", output_index=0,
               item={**item, "status": "completed", "content": [done_part]}),
            ev("response.completed", response=_response(
                model, id, "completed", text, _responses_usage(input_tokens, output_tokens)))]
    return out


# --- by wire format ---------------------------------------------------------------------------


def json_body(api: Api, text: str, model: str, **tokens: Any) -> bytes:
    """A clean non-streamed answer in `api`'s format."""
    if api == "anthropic":
        return anthropic_json(text, model, **tokens)
    if api == "responses":
        return responses_json(text, model, **tokens)
    return openai_json(text, model, **tokens)


def sse_stream(api: Api, parts: Sequence[str], model: str, **options: Any) -> list[bytes]:
    """A clean streamed answer in `api`'s format."""
    if api == "anthropic":
        return anthropic_sse(parts, model, **options)
    if api == "responses":
        return responses_sse(parts, model, **options)
    return openai_sse(parts, model, **options)


def sse_events(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) of every complete SSE event in `raw`."""
    out: list[tuple[str | None, str]] = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        name: str | None = None
        data: list[str] = []
        for line in block.decode(errors="replace").split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if name is not None or data:
            out.append((name, "\n".join(data)))
    return out
