"""Build one schema dataclass from one TOML table by walking `dataclasses.fields` and the
type hints of `schema.py`: a field added there is a known key with a known type here."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

from orca_cli.config.interpolate import expand
from orca_cli.config.rules import POST, RANGES
from orca_cli.config.schema import Secret
from orca_cli.config.walk import BAD, DROP, Ctx, bad, join_key, show, unknown_key, wrong

__all__ = ["build", "convert"]


@functools.cache
def hints_of(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def build(
    cls: type, raw: Mapping[str, Any], path: str, ctx: Ctx, *, base: Any = None,
    implied: Mapping[str, Any] | None = None,
) -> Any:
    """One dataclass instance from one TOML table; unknown keys and bad values are recorded
    and the field keeps its default (or `base`'s value), so the walk reports everything."""
    implied = dict(implied or {})
    # A `derived` field is no TOML key: the table's rule (or the class) fills it.
    fields = [f for f in dataclasses.fields(cls) if not f.metadata.get("derived")]
    known = [f.name for f in fields if f.name not in implied]
    if "enabled" in known and raw.get("enabled") is False:
        ctx = dataclasses.replace(ctx, lenient=True)
    for key in raw:
        if key not in known:
            ctx.error(join_key(path, key), unknown_key(key, known))
    kwargs: dict[str, Any] = dict(implied)
    hints = hints_of(cls)
    for f in fields:
        if f.name in kwargs:
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        if f.name in raw:
            tp = f.metadata.get("toml_type", hints[f.name])  # what TOML may write there
            value = convert(tp, raw[f.name], join_key(path, f.name), ctx, default)
            if value is not DROP and value is not BAD:
                kwargs[f.name] = value
                continue
        if base is not None:
            kwargs[f.name] = getattr(base, f.name)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            if f.name not in raw:
                ctx.error(join_key(path, f.name), "is required")
            kwargs[f.name] = placeholder(hints[f.name])
    obj = cls(**kwargs)
    for name, rng in RANGES.get(cls, {}).items():
        value = getattr(obj, name)
        if name in raw and value is not None and not rng.holds(value):
            ctx.error(join_key(path, name), f"{rng.describe()}, got {show(value)}")
    post = POST.get(cls)
    return post(obj, raw, path, ctx) if post else obj


def convert(tp: Any, value: Any, path: str, ctx: Ctx, default: Any = None) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        return convert(_arm(args, value), value, path, ctx, default)
    if tp is str or tp is Secret:
        s = expand(value, path, ctx)
        if tp is Secret and isinstance(s, str):
            if s == "" and isinstance(value, str) and "${" in value:
                return DROP  # "${KEY_2:-}": an optional key that is not set
            if s == "" and not ctx.lenient:
                return bad(ctx, path, "must not be empty")
            return Secret(s) if s else DROP
        return s
    if tp is bool:
        return value if isinstance(value, bool) else wrong(ctx, path, "true or false", value)
    if tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return value if ok else wrong(ctx, path, "an integer", value)
    if tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if ok else wrong(ctx, path, "a number", value)
    if origin is Literal:
        s = expand(value, path, ctx)
        if s is DROP or s is BAD:
            return s
        if s not in args:
            allowed = ", ".join(f'"{a}"' for a in args)
            return bad(ctx, path, f"must be one of {allowed}, got {show(s)}")
        return s
    if origin is tuple:
        item_tp = args[0]
        if not isinstance(value, list):
            want = "an array of tables" if dataclasses.is_dataclass(item_tp) else "an array"
            return wrong(ctx, path, want, value)
        items = (convert(item_tp, v, f"{path}[{i}]", ctx) for i, v in enumerate(value))
        return tuple(v for v in items if v is not DROP and v is not BAD)
    if origin is dict:
        if not isinstance(value, dict):
            return wrong(ctx, path, "a table", value)
        out = {}
        for key, item in value.items():
            v = convert_entry(args[1], key, item, join_key(path, key), ctx)
            if v is not DROP and v is not BAD:
                out[key] = v
        return out
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            return wrong(ctx, path, "a table", value)
        return build(tp, value, path, ctx, base=default)
    raise TypeError(f"config schema type {tp!r} at {path} has no loader")  # a schema bug


def _arm(args: tuple[Any, ...], value: Any) -> Any:
    """The arm of a union a TOML value is read as: `X | None` is X (TOML has no null; an
    absent key keeps None), and `X | tuple[X, ...]` takes one value or an array of them."""
    arms = [a for a in args if a is not type(None)]
    if len(arms) == 1:
        return arms[0]
    lists = [a for a in arms if typing.get_origin(a) is tuple]
    singles = [a for a in arms if typing.get_origin(a) is not tuple]
    if len(lists) == 1 and len(singles) == 1:
        return lists[0] if isinstance(value, list) else singles[0]
    raise TypeError(f"config schema union {args!r} has no loader")  # a schema bug


def convert_entry(tp: Any, key: str, value: Any, path: str, ctx: Ctx) -> Any:
    """A value of a `dict[str, X]` table; a dataclass with a required `name` takes the key."""
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            return wrong(ctx, path, "a table", value)
        names = {f.name for f in dataclasses.fields(tp) if f.default is dataclasses.MISSING}
        return build(tp, value, path, ctx, implied={"name": key} if "name" in names else None)
    return convert(tp, value, path, ctx)


def placeholder(tp: Any) -> Any:
    return {str: "", int: 0, float: 0.0, bool: False}.get(tp, "")


