"""Encodings both backends share (SPEC §6.6, §8, §9), so their stored bytes are the same.

* The tier document is JSON with the store-maintained version first: `{"v": N, ...}` (the Lua
  script reads the version with one pattern match; callers may read `doc["v"]` but never set it).
* Audit events carry `{ts, router, session, request_id, event, trigger, reason, actor}`; the
  stored member is the event's sorted-key JSON, so re-sending the same event is a no-op.
* Values read back by the operator side: JSON objects/arrays are decoded, numeric strings
  (counters) become floats, anything else stays a string.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson

from orca_cli.state.base import (
    DelOp,
    ExpireAtLeastOp,
    HIncrManyOp,
    HIncrOp,
    IncrOp,
    Op,
    PushOp,
    SetOp,
    SlotRef,
    TierDoc,
    WindowIncrOp,
    ZAddOp,
)

__all__ = [
    "AUDIT_FIELDS",
    "AUDIT_MAX",
    "AUDIT_MAX_AGE_S",
    "OP_CHECKS",
    "audit_event",
    "audit_member",
    "audit_slot",
    "check_ops",
    "decode_doc",
    "decode_value",
    "doc_version",
    "dumps",
    "encode_doc",
    "ttl_ms",
    "vector_from_hash",
    "vector_from_text",
    "versioned_doc",
]

AUDIT_MAX = 10_000  # events kept per stream (SPEC §6.6)
AUDIT_MAX_AGE_S = 7 * 86400  # ... or 7 days, whichever is shorter
AUDIT_FIELDS = ("ts", "router", "session", "request_id", "event", "trigger", "reason", "actor")

_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_VERSION = re.compile(rb'^\{"v":(\d+)')
_VERSION_TEXT = re.compile(r'^\{"v":([0-9]+)')  # the same on text, with no encode first


def as_dict(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A document as the dict orjson encodes: itself, or the document a lazy one builds
    (`trace.build.Trace.document`). orjson encodes no other Mapping: with `default=str` it
    would write the object's repr."""
    if type(doc) is dict:
        return doc
    build = getattr(doc, "document", None)
    return build() if callable(build) else dict(doc)


def dumps(value: Any) -> str:
    """Compact JSON text; unknown types become their `str` (a trace must never fail a commit)."""
    return dumps_bytes(value).decode()


def dumps_bytes(value: Any) -> bytes:
    """`dumps` as UTF-8 bytes, the form a Redis argument is sent in (no decode, no re-encode)."""
    # OPT_NON_STR_KEYS triples orjson's time on a trace, and only changes what a dict with a
    # key other than an exact `str` encodes to, which without it raises: documents whose keys
    # are all text (every trace and tier document orca builds) take the fast encode.
    try:
        return orjson.dumps(value, default=str)
    except orjson.JSONEncodeError:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS)


def encode_doc(doc: Mapping[str, Any], version: int) -> str:
    """The stored tier document: `v` first, then the caller's fields (any `v` it set is dropped)."""
    return dumps(versioned_doc(doc, version))


def versioned_doc(doc: Mapping[str, Any], version: int) -> dict[str, Any]:
    """What `encode_doc` encodes: `doc` with `v` = `version` first."""
    # A `v` of the caller's keeps its first place and takes `version`.
    body: dict[str, Any] = {"v": version, **doc}
    body["v"] = version
    return body


def decode_doc(text: str | bytes | None) -> TierDoc | None:
    if text is None or text == "" or text == b"":
        return None
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def doc_version(text: str | bytes | None) -> int:
    """The stored version, read the way the Lua script reads it (0 when absent)."""
    if not text:
        return 0
    m = _VERSION_TEXT.match(text) if isinstance(text, str) else _VERSION.match(text)
    if m:
        return int(m.group(1))
    doc = decode_doc(text)
    v = doc.get("v") if doc else None
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def ttl_ms(ttl_s: float) -> int:
    """A TTL in whole milliseconds, at least 1."""
    return max(1, round(ttl_s * 1000))


def check_ops(ops: Sequence[Op]) -> None:
    """Reject what neither backend can store: non-positive TTLs, non-finite numbers, maxlen < 1,
    a window of less than one hour or a bucket kind other than s / t."""
    checks = OP_CHECKS
    for op in ops:
        checks[type(op)](op)


# One check per op type, each whole (TTL first, then its numbers, then maxlen): a commit
# checks every op, and one call per op costs less than asking each op which fields it has.
def _check_ttl(op: SetOp | ExpireAtLeastOp) -> None:
    if op.ttl_s is not None and not op.ttl_s > 0:
        raise _ttl_error(op)


def _check_amount(op: IncrOp | HIncrOp | WindowIncrOp) -> None:
    if op.ttl_s is not None and not op.ttl_s > 0:
        raise _ttl_error(op)
    if not math.isfinite(op.amount):
        raise _number_error(op, "amount", op.amount)


def _check_window(op: WindowIncrOp) -> None:
    if op.window_h < 1 or op.kind not in ("s", "t"):
        raise ValueError(f"WindowIncrOp({op.key!r}) needs window_h >= 1 and kind 's' or "
                         f"'t', got {op.window_h!r} and {op.kind!r}")
    _check_amount(op)


def _check_fields(op: HIncrManyOp) -> None:
    if op.ttl_s is not None and not op.ttl_s > 0:
        raise _ttl_error(op)
    for name, value in op.fields:
        if not math.isfinite(value):
            raise ValueError(f"HIncrManyOp field {name!r} must be a finite number, "
                             f"got {value!r}")


def _check_capped(op: PushOp | ZAddOp) -> None:
    if op.ttl_s is not None and not op.ttl_s > 0:
        raise _ttl_error(op)
    if isinstance(op, ZAddOp) and not math.isfinite(op.score):
        raise _number_error(op, "score", op.score)
    if op.maxlen is not None and op.maxlen < 1:
        raise ValueError(f"{type(op).__name__}({op.key!r}).maxlen must be >= 1, "
                         f"got {op.maxlen!r}")


def _check_nothing(op: DelOp) -> None:
    return None


def _ttl_error(op: Op) -> ValueError:
    ttl = getattr(op, "ttl_s", None)
    return ValueError(f"{type(op).__name__}({op.key!r}).ttl_s must be > 0, got {ttl!r}")


def _number_error(op: Op, name: str, value: float) -> ValueError:
    return ValueError(f"{type(op).__name__}.{name} must be a finite number, got {value!r}")


# The memory store runs this loop inline (one call fewer a slot).
OP_CHECKS: dict[type, Callable[[Any], None]] = {
    SetOp: _check_ttl, ExpireAtLeastOp: _check_ttl, IncrOp: _check_amount,
    HIncrOp: _check_amount, WindowIncrOp: _check_window, HIncrManyOp: _check_fields,
    PushOp: _check_capped, ZAddOp: _check_capped, DelOp: _check_nothing,
}


def decode_value(text: str) -> Any:
    if text[:1] in ("{", "["):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    if _NUMBER.fullmatch(text):
        return float(text)
    return text


def audit_event(event: Mapping[str, Any], request_id: str, now: float) -> dict[str, Any]:
    """The stored form of an audit event: every required field present (None when unknown)."""
    out: dict[str, Any] = {name: event.get(name) for name in AUDIT_FIELDS}
    out.update((k, v) for k, v in event.items() if k not in out)
    if not isinstance(out["ts"], (int, float)) or isinstance(out["ts"], bool):
        out["ts"] = now
    if not out["request_id"]:
        out["request_id"] = request_id
    if not isinstance(out["router"], str):
        out["router"] = ""
    return out


def audit_member(event: Mapping[str, Any]) -> str:
    return orjson.dumps(event, default=str, option=orjson.OPT_SORT_KEYS).decode()


def audit_slot(router: str) -> SlotRef:
    """The stream an event goes to: its router's, or the workspace's for store-wide events."""
    return SlotRef.of_router(router) if router else SlotRef("workspace")


def vector_from_hash(fields: Mapping[str, Any]) -> list[float]:
    """A vector stored as a hash of `HIncrOp`s with fields "0".."n-1" (missing = 0)."""
    values: dict[int, float] = {}
    for k, v in fields.items():
        try:
            values[int(k)] = float(v)
        except (TypeError, ValueError):
            continue
    if not values:
        return []
    out = [0.0] * (max(values) + 1)
    for i, v in values.items():
        if i >= 0:
            out[i] = v
    return out


def vector_from_text(text: str | None) -> list[float]:
    """A vector stored as a JSON array by a `SetOp`."""
    if not text:
        return []
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []
    if not isinstance(raw, list):
        return []
    return [float(x) for x in raw if isinstance(x, (int, float)) and not isinstance(x, bool)]
