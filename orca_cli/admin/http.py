"""The admin API under `/orca/v1/` (SPEC §1.1a, §1.2), as the `AdminHandler` `OrcaApp` mounts.

The guard has already required `Authorization: Bearer <admin token>` (and JSON for POSTs)
before this runs. JSON in, JSON out; errors are `{"error": {message, type, param, code}}` with
400 (bad parameter or body), 404 (unknown path, router, session or request id), 405 (wrong
method), 409 (a refusal the caps already decide, or an ambiguous session) and 503 (the store
did not answer). Nothing here answers 500.

    GET  /orca/v1/sessions                         ?router=R&session=S
    GET  /orca/v1/sessions/recent                  ?router=R&within_s=300
    GET  /orca/v1/sessions/{router}/{session}
    POST /orca/v1/sessions/{router}/{session}/escalate   {"once": bool, "reason": str, "actor": str}
    POST /orca/v1/sessions/{router}/{session}/reset      {"reason": str, "actor": str}
    GET  /orca/v1/explain/{request_id}
    GET  /orca/v1/requests                         ?session=S&router=R&since=15m&after=TS&limit=20
    GET  /orca/v1/status                           ?session=S&router=R   (orca statusline)
    GET  /orca/v1/pins                             ?session=S&router=R
    GET  /orca/v1/audit                            ?router=R&since=15m
    GET  /orca/v1/stats
    GET  /orca/v1/budgets                          (orca budget)
    POST /orca/v1/budgets/{name}/raise             {"usd": number, "key": str|null, "actor": str}
    GET  /orca/v1/routes                           (orca routes list; admin/routes.py)
    GET  /orca/v1/routes/diff                      ?a=1&b=2
    POST /orca/v1/routes/check|deploy              {"text": str, "source": str, "note": str}
    POST /orca/v1/routes/rollback                  {"version": int|null}

Path segments are percent-decoded one by one from `raw_path`, so a session id holding `/`
travels as `%2F`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, unquote

import orjson

from orca_cli.admin import budgets as B
from orca_cli.admin import routes as R
from orca_cli.admin import service as S
from orca_cli.admin.requests import DEFAULT_LIMIT, recent_requests
from orca_cli.admin.status import session_status
from orca_cli.errors import AdminError, BadRequest, StoreUnavailable
from orca_cli.proxy.guard import ClientGone, read_body
from orca_cli.proxy.runtime import Runtime
from orca_cli.types import Receive, Scope, Send
from orca_cli.wire.errors import error_body

__all__ = ["MAX_ADMIN_BODY", "admin_handler"]

log = logging.getLogger("orca")

MAX_ADMIN_BODY = 64 * 1024
_PREFIX = ("orca", "v1")
_JSON = b"application/json"


async def _send(send: Send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", _JSON), (b"content-length", b"%d" % len(body)),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _error(send: Send, status: int, message: str, code: str | None = None) -> None:
    await _send(send, status, error_body("openai", status, message, code=code))


def _segments(scope: Scope) -> list[str]:
    raw = scope.get("raw_path")
    if isinstance(raw, bytes) and raw:
        parts = raw.decode("latin-1").split("/")
        return [unquote(p, errors="strict") for p in parts if p]
    return [p for p in str(scope.get("path", "")).split("/") if p]


def _query(scope: Scope) -> dict[str, str]:
    qs = scope.get("query_string", b"")
    parsed = parse_qs(qs.decode("latin-1"), keep_blank_values=False)
    return {k: v[-1] for k, v in parsed.items()}


def _float_param(params: Mapping[str, str], name: str) -> float | None:
    raw = params.get(name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise AdminError(f"query parameter {name} must be a number", status=400) from None
    if not value >= 0:
        raise AdminError(f"query parameter {name} must be >= 0", status=400)
    return value


async def _body(rt: Runtime, receive: Receive, limit: int = MAX_ADMIN_BODY) -> dict[str, Any]:
    raw = await read_body(receive, limit=limit,
                          deadline_s=rt.cfg.server.header_timeout_s)
    if not raw.strip():
        return {}
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise AdminError("the request body is not valid JSON", status=400) from None
    if not isinstance(doc, dict):
        raise AdminError("the request body must be a JSON object", status=400)
    return doc


def _text_field(doc: Mapping[str, Any], name: str, default: str) -> str:
    value = doc.get(name, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise AdminError(f"body field {name} must be a string", status=400)
    return value


async def _route(rt: Runtime, method: str, seg: list[str], params: dict[str, str],
                 receive: Receive) -> Any:
    store, cfg = rt.gate.store, rt.cfg
    now = rt.clock.now()
    head = seg[0] if seg else ""
    rest = seg[1:]

    def want(expected: str) -> None:
        if method != expected:
            raise AdminError(f"{method} is not allowed here; use {expected}", status=405)

    if head == "sessions":
        if not rest:
            want("GET")
            return await S.list_sessions(store, cfg, params.get("router"),
                                         session=params.get("session"))
        if rest == ["recent"]:
            want("GET")
            return await S.most_recent_sessions(store, cfg, _float_param(params, "within_s"),
                                                now=now, router=params.get("router"))
        if len(rest) == 2:
            want("GET")
            return await S.show_session(store, cfg, rest[0], rest[1])
        if len(rest) == 3 and rest[2] in ("escalate", "reset"):
            want("POST")
            doc = await _body(rt, receive)
            reason = _text_field(doc, "reason", "")
            actor = _text_field(doc, "actor", "admin-api")
            if rest[2] == "reset":
                return await S.reset(store, cfg, rest[0], rest[1], reason=reason, actor=actor,
                                     now=now)
            once = doc.get("once", False)
            if not isinstance(once, bool):
                raise AdminError("body field once must be true or false", status=400)
            return await S.escalate(store, cfg, rest[0], rest[1], once=once, reason=reason,
                                    actor=actor, now=now)
    elif head == "explain" and len(rest) == 1:
        want("GET")
        return await S.explain(store, rest[0], cfg)
    elif head == "requests" and not rest:
        want("GET")
        limit = _float_param(params, "limit")
        return await recent_requests(
            store, session=params.get("session"), router=params.get("router"),
            since=S.parse_since(params.get("since"), now), after=_float_param(params, "after"),
            limit=int(limit) if limit is not None else DEFAULT_LIMIT)
    elif head == "status" and not rest:
        want("GET")
        return await session_status(store, cfg, params.get("session", ""),
                                    router=params.get("router"), now=now)
    elif head == "pins" and not rest:
        want("GET")
        return await S.pins_dump(store, cfg, session=params.get("session"),
                                 router=params.get("router"))
    elif head == "audit" and not rest:
        want("GET")
        return await S.audit(store, params.get("router"),
                             S.parse_since(params.get("since"), now))
    elif head == "stats" and not rest:
        want("GET")
        return await S.stats(cfg, store, now)
    elif head == "budgets" and not rest:
        want("GET")
        return await B.budget_report(store, cfg, now)
    elif head == "budgets" and len(rest) == 2 and rest[1] == "raise":
        want("POST")
        doc = await _body(rt, receive)
        key = doc.get("key")
        if key is not None and not isinstance(key, str):
            raise AdminError("body field key must be a string or null", status=400)
        return await B.raise_budget(store, cfg, rest[0], doc.get("usd"), key,
                                    actor=_text_field(doc, "actor", "admin-api"), now=now)
    elif head == "routes":
        return await R.routes_endpoint(rt, method, rest, params,
                                       lambda limit: _body(rt, receive, limit))
    raise AdminError(f"no admin endpoint {method} /orca/v1/{'/'.join(seg)}; see "
                     "/orca/v1/sessions, /requests, /explain/<id>, /pins, /audit, /stats, "
                     "/budgets, /routes", status=404)


async def admin_handler(rt: Runtime, scope: Scope, receive: Receive, send: Send) -> None:
    """Serve one `/orca/v1/...` request (the guard already checked the admin token)."""
    method: str = scope["method"]
    try:
        seg = _segments(scope)
    except UnicodeDecodeError:
        await _error(send, 400, "the path is not valid percent-encoded UTF-8")
        return
    if seg[:2] != list(_PREFIX):
        await _error(send, 404, "admin endpoints live under /orca/v1/")
        return
    try:
        result = await _route(rt, method, seg[2:], _query(scope), receive)
    except S.OperatorError as exc:
        await _error(send, exc.status, str(exc), exc.code)
        return
    except R.InvalidRoutes as exc:  # with every problem listed, as `orca routes check` does
        await _send(send, exc.status, exc.body())
        return
    except AdminError as exc:
        await _error(send, exc.status, str(exc))
        return
    except BadRequest as exc:  # body too large or too slow
        await _error(send, exc.status, str(exc))
        return
    except ClientGone:
        return
    except StoreUnavailable as exc:
        log.warning("admin API: state store unavailable (%s)", type(exc).__name__)
        await _error(send, 503, f"the state store did not answer: {exc}")
        return
    await _send(send, 200, orjson.dumps(result, default=str))
