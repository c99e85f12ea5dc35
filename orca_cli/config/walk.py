"""The config walk's vocabulary: the error-collecting context, key paths, value display,
the `DROP` / `BAD` markers and numeric ranges. Shared by the build, interpolation, rules and
cross-reference steps of the loader (`load.py`)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orca_cli.errors import ConfigError
from orca_cli.immutable import immutable

__all__ = [
    "BAD", "DROP", "Ctx", "Range", "bad", "join_key", "show", "toml_type", "unknown_key", "wrong",
]

DROP: Any = object()  # an unset ${VAR} inside a disabled channel: the value is dropped
BAD: Any = object()  # the value was wrong (error recorded): the field keeps its default
BARE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(slots=True)
class Ctx:
    source: str | None
    environ: Mapping[str, str]
    errors: list[ConfigError]
    lenient: bool = False  # inside a disabled channel

    def error(self, key: str, why: str) -> None:
        self.errors.append(ConfigError(self.source, key, why))


def join_key(prefix: str, name: str) -> str:
    part = name if BARE.fullmatch(name) else '"' + name.replace('"', '\\"') + '"'
    return f"{prefix}.{part}" if prefix else part


def bad(ctx: Ctx, path: str, why: str) -> Any:
    ctx.error(path, why)
    return BAD


def wrong(ctx: Ctx, path: str, expected: str, value: Any) -> Any:
    return bad(ctx, path, f"must be {expected}, got {show(value)} ({toml_type(value)})")


def unknown_key(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"unknown key; did you mean `{close[0]}`?"
    return "unknown key; valid keys here: " + ", ".join(known)


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    return str(value)


def toml_type(value: Any) -> str:
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        (bool, "a boolean"), (str, "a string"), (int, "an integer"), (float, "a float"),
        ((list, tuple), "an array"), (dict, "a table"),
    ]
    for kind, label in kinds:
        if isinstance(value, kind):
            return label
    return "a date/time"




@immutable
class Range:
    lo: float
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    def holds(self, v: float) -> bool:
        above = v > self.lo if self.lo_open else v >= self.lo
        if self.hi is None:
            return above
        return above and (v < self.hi if self.hi_open else v <= self.hi)

    def describe(self) -> str:
        lo = show(float(self.lo))
        if self.hi is None:
            return f"must be {'>' if self.lo_open else '>='} {lo}"
        hi = show(float(self.hi))
        return f"must be in {'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"


