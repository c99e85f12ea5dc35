"""Recent requests from the stored traces (SPEC §15): `orca requests`, `orca explain last`.

The trace store keeps an index of every trace scored by its time (`state/keys.py`: `{t}:idx`),
so the newest requests are found without scanning keys. Each trace the filters may keep is
then read by id; at most `MAX_SCAN` of the newest are looked at per call, so a filter that
matches nothing costs a bounded walk, not the whole store.

`after` (a trace time) returns only the requests at or after it: `orca requests --follow`
asks for what is new since the newest it printed, never the whole list again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from orca_cli.errors import AdminError
from orca_cli.state.base import Store
from orca_cli.state.keys import TRACE_INDEX_KEY, TRACES

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "MAX_SCAN", "recent_requests", "resolve_short_id",
           "session_start"]

DEFAULT_LIMIT = 20
MIN_SESSION_PREFIX = 8  # the request log shortens session ids; a start this long names one


def session_start(text: str) -> str:
    """A session id as an operator may paste it from the request log, which shortens a long
    one to its start and `…`: the start (`my-conversa…` -> `my-conversa`)."""
    return text.removesuffix("…")
MAX_LIMIT = 1000
MAX_SCAN = 5000
_BATCH = 64  # trace reads in flight at once


def _index(value: Any) -> list[tuple[float, str]]:
    """(ts, request id), newest first, from the index's [member, score] pairs."""
    out: list[tuple[float, str]] = []
    for item in value if isinstance(value, list) else ():
        if isinstance(item, list) and len(item) == 2:
            member, score = item
            out.append((float(score), str(member).partition("\n")[0]))
    out.sort(reverse=True)
    return out


def _keep(trace: Mapping[str, Any], session: str | None, router: str | None) -> bool:
    if session is not None:
        sid = trace.get("session_id")
        # a session may be named by the start of its id, as the request log prints it
        if sid != session and not (len(session) >= MIN_SESSION_PREFIX and isinstance(sid, str)
                                   and sid.startswith(session)):
            return False
    return router is None or trace.get("router") == router


def _one_session(out: list[dict[str, Any]], ids: set[Any],
                 session: str) -> list[dict[str, Any]]:
    """The requests of the session `session` names (`ids`: the sessions it matched): its own
    id's when one has it, else the one session whose id starts with it; a start several
    sessions share is a 400."""
    if len(ids) <= 1:
        return out
    if session in ids:
        return [t for t in out if t.get("session_id") == session]
    shown = ", ".join(sorted(str(i) for i in ids)[:5])
    raise AdminError(f"session id prefix {session!r} matches {len(ids)} sessions: {shown}; "
                     "pass more of the id", status=400)


async def recent_requests(store: Store, *, session: str | None = None,
                          router: str | None = None, since: float | None = None,
                          after: float | None = None,
                          limit: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
    """The stored traces, newest first, at most `limit`, filtered by session and router,
    from `since` (a time) and at or after `after` (a trace's `ts`)."""
    if not 1 <= limit <= MAX_LIMIT:
        raise AdminError(f"limit must be 1 to {MAX_LIMIT}, got {limit}", status=400)
    if session is not None:
        session = session_start(session)
    entry = await store.get(TRACES, TRACE_INDEX_KEY)
    low = max(x for x in (since, after, float("-inf")) if x is not None)
    ids = [rid for ts, rid in _index(entry.value if entry else None) if ts >= low][:MAX_SCAN]
    out: list[dict[str, Any]] = []
    # A session named by the start of its id: the ids it matches over the whole walk, so a
    # start two sessions share is refused even when the first `limit` traces are one's.
    named: set[Any] = set()
    step = _BATCH if session is not None or router is not None else min(_BATCH, limit)
    for start in range(0, len(ids), step):
        chunk = ids[start:start + step]
        traces = await asyncio.gather(*(store.get_trace(rid) for rid in chunk))
        for trace in traces:
            if trace is not None and _keep(trace, session, router):
                named.add(trace.get("session_id"))
                if len(out) < limit:
                    out.append(dict(trace))
                if len(out) >= limit and (session is None or named == {session}):
                    return out  # enough, and no other session could be meant
    return _one_session(out, named, session) if session is not None else out


def _is_short(text: str) -> bool:
    return len(text) == 8 and all(c in "0123456789abcdef" for c in text)


async def resolve_short_id(store: Store, request_id: str) -> str:
    """The full id of the newest trace whose id starts with `req_<8 hex>` (the short id the
    request log and `orca requests` print); any other text is returned unchanged."""
    if not _is_short(request_id):
        return request_id
    entry = await store.get(TRACES, TRACE_INDEX_KEY)
    prefix = "req_" + request_id
    for _, rid in _index(entry.value if entry else None):
        if rid.startswith(prefix):
            return rid
    return request_id
