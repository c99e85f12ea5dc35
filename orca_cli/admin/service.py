"""Operator functions over a `Store` (SPEC §1.1, §1.1a, §6, §8): no HTTP, no rendering.

The admin API (`admin/http.py`) and the CLI's direct-store path (Redis, no sidecar running)
both call these, so both print the same documents.

* Read-only calls (`list_sessions`, `show_session`, `most_recent_sessions`, `pins_dump`,
  `audit`, `stats`, `explain`) only scan and get: they never write and never resolve a tier.
* `escalate` and `reset` write a **pending ask** into the session's tier state with one
  commit whose `mutate` applies `SetPending` onto the fresh document (versioned like any
  commit). Nothing is escalated here: the session's next request resolves the ask under the
  caps then in force, exactly like the `X-OrcaRouter-Tier` header (SPEC §6.2). What can
  already be known is said at once: a session orca never saw is a 404, a session that used
  its `max_per_session` escalations is a 409 refusal, a session already strong is no change.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC
from typing import Any

from orca_cli.admin.requests import MIN_SESSION_PREFIX, session_start
from orca_cli.admin.stats import stats
from orca_cli.admin.views import SessionKeys, group_sessions, member_text, pin_rows, session_view
from orca_cli.config.schema import Config, RouterConfig
from orca_cli.errors import AdminError
from orca_cli.routing.caps import in_canary
from orca_cli.routing.intents import SetPending
from orca_cli.routing.tiers import Ask, TierState
from orca_cli.state.apply import apply_intents
from orca_cli.state.base import CommitBatch, SlotRef, SlotWrite, Store
from orca_cli.state.codec import AUDIT_FIELDS
from orca_cli.state.keys import RECENT_KEY, check_name, is_direct_router

__all__ = [
    "MIN_SESSION_PREFIX",
    "RECENT_WINDOW_S",
    "AmbiguousSession",
    "OperatorError",
    "audit",
    "choose_recent",
    "escalate",
    "explain",
    "list_sessions",
    "locate_session",
    "most_recent_sessions",
    "parse_since",
    "pins_dump",
    "reset",
    "show_session",
    "stats",
]

RECENT_WINDOW_S = 300.0  # SPEC §1.1: several sessions active in the last 5 minutes -> ask
_SHOWN_CANDIDATES = 10
MAX_REASON = 200
MAX_ACTOR = 64


class OperatorError(AdminError):
    """A refusal with a machine-readable `code` (`no_such_session`, `session_cap`, ...)."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        self.code = code
        super().__init__(message, status=status)


class AmbiguousSession(OperatorError):
    """No session id was given and several sessions are candidates; `candidates` lists them."""

    def __init__(self, message: str, candidates: Sequence[Mapping[str, Any]]) -> None:
        self.candidates = [dict(c) for c in candidates]
        super().__init__(message, status=409, code="ambiguous_session")


# --- sessions -------------------------------------------------------------------------------


def _router(cfg: Config, name: str) -> RouterConfig:
    r = cfg.routers.get(name)
    if r is None:
        known = ", ".join(sorted(cfg.routers)) or "(none configured)"
        raise OperatorError(f"unknown router {name!r}; routers: {known}", status=404,
                            code="unknown_router")
    return r


def _session_routers(cfg: Config, router: str | None) -> list[str]:
    if router is not None:
        _router(cfg, router)
        return [router]
    return [n for n, r in cfg.routers.items() if r.session_aware]


def _check_session(session: str) -> None:
    if not session or len(session) > 4096:
        raise OperatorError("a session id must be 1 to 4096 characters", status=400,
                            code="bad_session")


async def list_sessions(store: Store, cfg: Config, router: str | None = None, *,
                        session: str | None = None) -> list[dict[str, Any]]:
    """Every session with tier state or pins, most recently successful first."""
    if router is not None and not is_direct_router(router):  # a concrete model's slots too
        _router(cfg, router)
    if session is not None:
        _check_session(session)
        found = await _session_keys(store, session, router)
    else:
        found = group_sessions(await store.scan("session", router=router))
    views = [session_view(cfg, r, s, keys) for (r, s), keys in found.items()]
    views.sort(key=lambda v: (-(v["last_success"] or 0.0), v["router"], v["session_id"]))
    return views


async def _session_keys(store: Store, session: str,
                        router: str | None) -> dict[tuple[str, str], SessionKeys]:
    """The stored keys of `session` by (router, session id). An id orca does not hold, of at
    least `MIN_SESSION_PREFIX` characters, is taken as the start of one it does, as `orca
    explain` takes a request id's first 8 hex digits: the request log prints session ids
    shortened. A prefix that several sessions start with is a 400 that lists them."""
    session = session_start(session)
    found = group_sessions(await store.scan("session", router=router, session=session))
    if found or len(session) < MIN_SESSION_PREFIX:
        return found
    everything = group_sessions(await store.scan("session", router=router))
    found = {(r, s): keys for (r, s), keys in everything.items() if s.startswith(session)}
    ids = sorted({s for _, s in found})
    if len(ids) > 1:
        shown = [f"{s} (router {', '.join(sorted(r for r, x in found if x == s))})"
                 for s in ids[:_SHOWN_CANDIDATES]]
        more = f" and {len(ids) - _SHOWN_CANDIDATES} more" if len(ids) > _SHOWN_CANDIDATES else ""
        raise OperatorError(f"session id prefix {session!r} matches {len(ids)} sessions: "
                            f"{', '.join(shown)}{more}; pass more of the id",
                            status=400, code="ambiguous_session")
    return found


async def locate_session(store: Store, cfg: Config, session: str,
                         router: str | None = None) -> tuple[str, str, SessionKeys]:
    """(router, stored session id, its keys); `session` may be a unique prefix of the id
    (`_session_keys`). 404 for a session orca never saw, 400 when the id exists under several
    routers and none was named, or several ids start with the prefix."""
    _check_session(session)
    if router is not None:
        _router(cfg, router)
    found = await _session_keys(store, session, router)
    if not found:
        where = f" in router {router!r}" if router else ""
        raise OperatorError(f"no such session {session!r}{where}: orca has no tier state or "
                            "pin for it (it expired, or no request carried that id); "
                            "`orca session list` shows the sessions orca knows",
                            status=404, code="no_such_session")
    if len(found) > 1:
        names = ", ".join(sorted(r for r, _ in found))
        sid = next(iter(found))[1]
        raise OperatorError(f"session {sid!r} exists in routers {names}; pass --router",
                            status=400, code="ambiguous_router")
    (r, s), keys = next(iter(found.items()))
    return r, s, keys


async def show_session(store: Store, cfg: Config, router: str | None,
                       session: str) -> dict[str, Any]:
    r, s, keys = await locate_session(store, cfg, session, router)
    return session_view(cfg, r, s, keys)


async def most_recent_sessions(store: Store, cfg: Config, within_s: float | None = None, *,
                               now: float, router: str | None = None) -> list[dict[str, Any]]:
    """Sessions by last billed success, newest first, from each session-aware router's
    `recent` sorted set (written at commit); `within_s` keeps only the recently active."""
    rows: list[dict[str, Any]] = []
    for name in _session_routers(cfg, router):
        entry = await store.get(SlotRef.of_router(name), RECENT_KEY)
        members = entry.value if entry is not None and isinstance(entry.value, list) else []
        for item in members:
            if not isinstance(item, list) or len(item) != 2:
                continue
            last = float(item[1])
            age = max(0.0, now - last)
            if within_s is None or age <= within_s:
                rows.append({"router": name, "session_id": member_text(item[0]),
                             "last_active": last, "age_s": round(age, 1)})
    rows.sort(key=lambda row: -row["last_active"])
    return rows


def choose_recent(rows: Sequence[Mapping[str, Any]],
                  within_s: float = RECENT_WINDOW_S) -> Mapping[str, Any]:
    """The session a command without SESSION_ID acts on (SPEC §1.1): the most recently active
    one; `AmbiguousSession` when several were active within `within_s`."""
    if not rows:
        raise OperatorError("no session has been active yet: send a request through the "
                            "sidecar first, or pass a SESSION_ID", status=404,
                            code="no_such_session")
    recent = [r for r in rows if float(r["age_s"]) <= within_s]
    if len(recent) > 1:
        raise AmbiguousSession(f"{len(recent)} sessions were active in the last "
                               f"{within_s / 60:g} minutes; pass one of them as SESSION_ID",
                               recent)
    return rows[0]


# --- pending asks -----------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    return "".join(ch for ch in text if ch.isprintable())[:limit]


async def escalate(store: Store, cfg: Config, router: str | None, session: str, *,
                   once: bool = False, reason: str = "", actor: str = "operator",
                   now: float) -> dict[str, Any]:
    """Ask for the session's next request to be served strong (`once`: that request only)."""
    return await _ask(store, cfg, router, session, "once" if once else "strong", reason, actor,
                      now)


async def reset(store: Store, cfg: Config, router: str | None, session: str, *,
                reason: str = "", actor: str = "operator", now: float) -> dict[str, Any]:
    """Ask for the session to go back to base at its next request; never refunds the cap."""
    return await _ask(store, cfg, router, session, "base", reason, actor, now)


async def _ask(store: Store, cfg: Config, router: str | None, session: str, ask: Ask,
               reason: str, actor: str, now: float) -> dict[str, Any]:
    rname, sid, keys = await locate_session(store, cfg, session, router)
    rcfg = _router(cfg, rname)
    esc = rcfg.escalation
    if not rcfg.session_aware or esc.mode == "off" or not rcfg.escalation_pool:
        raise OperatorError(f"router {rname!r} keeps no tier state (escalation mode "
                            f"{esc.mode!r}, strong pool {list(rcfg.escalation_pool)}); set "
                            f"routers.{rname}.escalation.mode to auto or shadow",
                            status=409, code="escalation_off")
    if not in_canary(rname, sid, esc.canary):
        raise OperatorError(f"session {sid!r} is outside router {rname!r}'s canary "
                            f"({esc.canary:g}) and is routed as if escalation were off",
                            status=409, code="canary")
    tier_e = keys.get("tier")
    doc = dict(tier_e.value) if tier_e is not None and isinstance(tier_e.value, dict) else None
    st = TierState.from_doc(doc) or TierState()
    base = {"router": rname, "session_id": sid, "ask": ask, "tier": st.tier,
            "escalation_count": st.escalation_count, "max_per_session": esc.max_per_session,
            "replaced": st.pending.ask if st.pending is not None else None}
    if ask != "base" and st.tier == "strong":
        return {**base, "status": "already_strong", "pending_id": None,
                "message": f"session {sid} is already in the strong tier "
                           f"(trigger {st.trigger or 'explicit'}); nothing to do"}
    if ask != "base" and st.escalation_count >= esc.max_per_session:
        raise OperatorError(
            f"session {sid} has used its {st.escalation_count} of max_per_session "
            f"{esc.max_per_session} escalations this episode, so the ask would be denied "
            f"(denied:session_cap); a reset never refunds it, and a new episode starts when "
            f"its tier state expires ({esc.tier_ttl_s} s after its last request)",
            status=409, code="session_cap")
    pid = "ask_" + secrets.token_hex(8)
    intent = SetPending(ask, _clip(actor, MAX_ACTOR) or "operator", _clip(reason, MAX_REASON),
                        pid)
    write = SlotWrite(SlotRef.of_session(rname, sid), (),
                      mutate=functools.partial(apply_intents, intents=(intent,), now=now,
                                               esc=esc),
                      expected_version=int(doc.get("v", 0)) if doc else 0, base_doc=doc,
                      tier_ttl_s=esc.tier_ttl_s)
    await store.commit(CommitBatch(f"adm:{pid}", (write,)))
    return {**base, "status": "pending", "pending_id": pid, "message": _ask_message(ask, sid, st, esc.max_per_session)}


def _ask_message(ask: Ask, sid: str, st: TierState, max_per_session: int) -> str:
    if ask == "strong":
        return (f"session {sid} will be served strong from its next request, if the share "
                "caps then in force allow it")
    if ask == "once":
        return (f"the next request of session {sid} will be served strong once, if the share "
                "caps then in force allow it")
    return (f"session {sid} goes back to the base tier at its next request; escalations used "
            f"stay {st.escalation_count} of {max_per_session} (a reset never refunds them)")


# --- pins, audit, explain -------------------------------------------------------------------


async def pins_dump(store: Store, cfg: Config, *, session: str | None = None,
                    router: str | None = None) -> list[dict[str, Any]]:
    """Every model, channel and affinity pin with its remaining TTL (affinity pins belong to
    sessionless requests, so a `session` filter leaves them out)."""
    if router is not None and not is_direct_router(router):  # a concrete model's slots too
        _router(cfg, router)
    if session is not None:
        _check_session(session)
        found = await _session_keys(store, session, router)
        session = next(iter(found))[1] if found else session
    pins = await store.scan("session", router=router, session=session, key_prefix="")
    affinity = [] if session is not None else await store.scan("router", router=router,
                                                                 key_prefix="aff:")
    rows = pin_rows(pins, affinity)
    order = {"model": 0, "channel": 1, "affinity": 2}
    rows.sort(key=lambda r: (r["router"], r["session"] or "", r["tier"], order[r["kind"]]))
    return rows


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str | None, now: float) -> float | None:
    """`--since`: a duration back from now (`90s`, `15m`, `2h`, `7d`; a bare number is
    seconds) or an ISO-8601 time. None stays None (everything kept)."""
    if text is None or text == "":
        return None
    m = _DURATION.match(text)
    if m:
        return now - float(m.group(1)) * _UNIT_S[m.group(2)]
    from datetime import datetime

    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise OperatorError(f"since must be a duration such as 15m, 2h or 7d, or an ISO time, "
                            f"got {text[:40]!r}", status=400, code="bad_since") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


async def audit(store: Store, router: str | None = None,
                since: float | None = None) -> list[dict[str, Any]]:
    """Audit events oldest first, each with the SPEC §6.6 keys (None when unknown)."""
    if router is not None:
        try:
            check_name(router)
        except ValueError as exc:
            raise OperatorError(str(exc), status=400, code="bad_router") from None
    events = await store.list_audit(router, since)
    out = []
    for e in events:
        row = {k: e.get(k) for k in AUDIT_FIELDS}
        row.update((k, v) for k, v in e.items() if k not in row)
        out.append(row)
    return out


async def explain(store: Store, request_id: str, cfg: Config | None = None) -> dict[str, Any]:
    """The stored trace, by orca's request id or the client's X-Request-Id; never recomputed."""
    if not request_id or len(request_id) > 512:
        raise OperatorError("a request id must be 1 to 512 characters", status=400,
                            code="bad_request_id")
    trace = await store.get_trace(request_id)
    if trace is None:
        from orca_cli.admin.requests import resolve_short_id

        full = await resolve_short_id(store, request_id)
        trace = await store.get_trace(full) if full != request_id else None
    if trace is None:
        kept = ""
        if cfg is not None:
            kept = (f" (traces are kept {cfg.server.trace_ttl_s} s, at most "
                    f"{cfg.server.trace_max})")
        raise OperatorError(f"no trace for request id {request_id!r}{kept}; pass the "
                            "X-Orca-Request-Id orca answered with, or the client's "
                            "X-Request-Id", status=404, code="no_such_request")
    return dict(trace)
