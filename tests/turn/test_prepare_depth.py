"""`prepare`'s depth check: a body orjson cannot write back for its nesting is refused (400);
one that fails to write for another reason is not refused for depth."""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.turn.prepare import MAX_JSON_DEPTH, _too_deep


def _nested(levels: int) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "orca/coding", "messages": []}
    node: list[Any] = body["messages"]
    for _ in range(levels - 2):
        inner: list[Any] = []
        node.append(inner)
        node = inner
    return body


def test_a_body_orjson_writes_back_is_not_too_deep() -> None:
    body = _nested(MAX_JSON_DEPTH)
    assert not _too_deep(orjson.dumps(body), body)


def test_a_body_nested_past_what_orjson_writes_is_too_deep() -> None:
    body = _nested(MAX_JSON_DEPTH + 8)
    raw = orjson.dumps(_nested(MAX_JSON_DEPTH))  # any bytes with enough brackets
    raw = raw.replace(b"[]", b"[" * 9 + b"]" * 9)
    assert _too_deep(raw, body)


def test_an_unwritable_shallow_body_is_not_refused_for_depth() -> None:
    body = {"model": "orca/coding", "n": 1 << 70}  # json.loads makes such ints; orjson does not
    raw = b'{"model": "orca/coding", "n": 1180591620717411303424}'
    assert not _too_deep(raw, body)
