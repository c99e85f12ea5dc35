"""Encodings both backends share (SPEC §6.6, §8, §9)."""

from __future__ import annotations

import enum
from typing import Any

import orjson
import pytest

from orca_cli.state.codec import dumps, dumps_bytes


class _Text(str):
    pass


class _Color(str, enum.Enum):
    RED = "red"


def _with_option(value: Any) -> bytes:
    return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)


@pytest.mark.parametrize("value", [
    {"a": 1, "b": [1.5, None, True, "x"], "c": {"d": {"e": "é"}}},
    {1: "int key", "s": {2.5: "float key"}},
    {None: 1, True: 2},
    {_Text("sub"): 1},
    {_Color.RED: {"x": object.__name__}},
    [{"a": {3: 4}}],
    {"unknown": object},
])
def test_dumps_is_the_non_str_keys_encoding(value: Any) -> None:
    """Text keys take the fast encode, any other key the option's: the bytes are the same."""
    assert dumps_bytes(value) == _with_option(value)
    assert dumps(value) == _with_option(value).decode()


def test_dumps_still_raises_what_cannot_be_encoded() -> None:
    with pytest.raises(orjson.JSONEncodeError):
        dumps({"n": 1 << 70})
