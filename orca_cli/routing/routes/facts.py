"""What a route reads from a request (SPEC §17): the facts, and a condition field's value.

Field spellings (validated at load by `config/routes.py`): a JSON pointer into the body
(RFC 6901, `/metadata/plan`), `metadata.<name>`, `header:<name>` (headers are lower-cased by
the caller), `session`, `model`, `endpoint`, `key`. A missing value is `MISSING`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from orca_cli.immutable import immutable
from orca_cli.types import Api, Headers

__all__ = ["MISSING", "RequestFacts", "field_reader", "number_of", "text_of"]

MISSING: Any = object()


@immutable
class RequestFacts:
    """One request as a route sees it. `headers` keys are lower-case; `now` is epoch seconds
    (UTC) for budget windows; `request_id` is the split's last resort."""

    endpoint: Api
    model: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Mapping[str, Any] = field(default_factory=dict)
    session_id: str = ""
    key_name: str | None = None
    request_id: str = ""
    now: float = 0.0

    @classmethod
    def of(cls, api: Api, headers: Headers, body: Mapping[str, Any], *, session_id: str = "",
           key_name: str | None = None, request_id: str = "", now: float = 0.0) -> RequestFacts:
        """From the request head's ordered headers (lower-case names; the first of a repeated
        header wins) and the parsed body (its `model` string, else "")."""
        hmap: dict[str, str] = {}
        for name, value in headers:
            hmap.setdefault(name.lower(), value)
        model = body.get("model")
        return cls(api, model if isinstance(model, str) else "", hmap, body, session_id,
                   key_name, request_id, now)


Reader = Callable[[RequestFacts], Any]


def _pointer(tokens: tuple[str, ...]) -> Reader:
    def read(f: RequestFacts) -> Any:
        cur: Any = f.body
        for tok in tokens:
            if type(cur) is dict or isinstance(cur, Mapping):  # dict first: no ABC check
                cur = cur.get(tok, MISSING)
                if cur is MISSING:
                    return MISSING
            elif type(cur) is list and tok.isdigit() and int(tok) < len(cur):
                cur = cur[int(tok)]
            else:
                return MISSING
        return cur
    return read


def field_reader(spec: str) -> Reader:
    """The reader of one condition field, built once at compile time."""
    if spec.startswith("/"):
        toks = tuple(t.replace("~1", "/").replace("~0", "~") for t in spec[1:].split("/"))
        return _pointer(toks)
    if spec.startswith("metadata."):
        return _pointer(("metadata", spec[9:]))
    if spec.startswith("header:"):
        name = spec[7:].lower()
        return lambda f: f.headers.get(name, MISSING)
    special: dict[str, Reader] = {
        "session": lambda f: f.session_id or MISSING,
        "model": lambda f: f.model or MISSING,
        "endpoint": lambda f: f.endpoint,
        "key": lambda f: f.key_name if f.key_name is not None else MISSING,
    }
    return special[spec]


def text_of(value: Any) -> str:
    """The text form `eq` / `in` / `glob` / `regex` compare: strings as they are, booleans
    as `true` / `false`, integral numbers without `.0`, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def number_of(value: Any) -> float | None:
    """A number for `lt` / `gt`: a JSON number or a string that parses as one (headers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
