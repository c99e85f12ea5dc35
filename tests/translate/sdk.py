"""Validation against the official SDKs' own types (pydantic TypeAdapters over them)."""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson
from pydantic import TypeAdapter

from orca_cli.wire.sse import SSEDecoder


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    if name == "anthropic.request":
        from anthropic.types import MessageCreateParams

        return TypeAdapter(MessageCreateParams)
    if name == "openai.request":
        from openai.types.chat import CompletionCreateParams

        return TypeAdapter(CompletionCreateParams)
    if name == "responses.request":
        from openai.types.responses import ResponseCreateParams

        return TypeAdapter(ResponseCreateParams)
    if name == "anthropic.response":
        from anthropic.types import Message

        return TypeAdapter(Message)
    if name == "openai.response":
        from openai.types.chat import ChatCompletion

        return TypeAdapter(ChatCompletion)
    if name == "responses.response":
        from openai.types.responses import Response

        return TypeAdapter(Response)
    if name == "anthropic.event":
        from anthropic.types import RawMessageStreamEvent

        return TypeAdapter(RawMessageStreamEvent)
    if name == "openai.event":
        from openai.types.chat import ChatCompletionChunk

        return TypeAdapter(ChatCompletionChunk)
    from openai.types.responses import ResponseStreamEvent

    return TypeAdapter(ResponseStreamEvent)


def check_request(api: str, body: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(body)
    _adapter(f"{api}.request").validate_python(obj)
    return obj


def check_response(api: str, body: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = orjson.loads(body)
    _adapter(f"{api}.response").validate_python(obj)
    return obj


def check_stream(api: str, raw: bytes) -> list[tuple[str | None, Any]]:
    """Every event validated; returns (event name, parsed data) pairs ([DONE] as a str)."""
    out: list[tuple[str | None, Any]] = []
    for name, data in SSEDecoder().feed_pairs(raw):
        if data == "[DONE]":
            out.append((name, data))
            continue
        obj = orjson.loads(data)
        # An in-stream error is not one of the SDK's event types (checked by the tests).
        is_error = (api == "openai" and "error" in obj) or (
            api == "anthropic" and obj.get("type") == "error"
        )
        if not is_error:
            _adapter(f"{api}.event").validate_python(obj)
        if name is not None:
            assert name == obj["type"], (name, obj["type"])
        out.append((name, obj))
    return out
