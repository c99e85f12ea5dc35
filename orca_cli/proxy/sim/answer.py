"""The sim's answer, decided once and rendered in any wire format (`render.py`)."""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.immutable import immutable

__all__ = ["Answer", "pieces", "sse_event"]


@immutable
class Answer:
    id_hex: str
    model: str
    created: int
    text: str
    tool: tuple[str, str, str] | None  # (call id, name, arguments JSON)
    finish: str
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    tool_kind: str = "function"  # "custom": a Responses custom tool, freeform input
    request: dict[str, Any] | None = None  # Responses: the request fields a response echoes


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse_event(name: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"
