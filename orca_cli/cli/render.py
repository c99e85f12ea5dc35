"""Small rendering helpers the operator commands share (tables of stored data).

Everything shown comes from the store or the admin API, so it is data, never rich markup:
a session id may hold `[`. Durations read as a person would say them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ID_WIDTH", "add_row", "fmt_ts", "fmt_ttl", "safe", "short"]

ID_WIDTH = 20  # a table shows this much of a long id; --json carries the full one


def safe(value: Any) -> str:
    from rich.markup import escape

    return escape(str(value))


def short(value: Any, width: int = ID_WIDTH) -> str:
    """A long id cut to `width` with `…`, so table rows stay one line each."""
    text = "-" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def add_row(table: Any, *cells: Any) -> None:
    table.add_row(*(safe(c) for c in cells))


def fmt_ttl(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    v = float(value)
    if v >= 86400:
        return f"{v / 86400:.1f} d"
    if v >= 3600:
        return f"{v / 3600:.1f} h"
    if v >= 60:
        return f"{v / 60:.0f} min"
    return f"{v:.0f} s"


def fmt_ts(value: Any) -> str:
    """A stored epoch time in local time, to the second."""
    import time

    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(value)))
