"""The sidecar as a raw ASGI application (SPEC §1.2; raw ASGI measured cheapest, SPEC §12).

Paths: `POST /v1/chat/completions`, `POST /v1/messages` (routed, `proxy.handler`),
`POST /v1/messages/count_tokens`, `GET /v1/models`, `GET /healthz`, `GET /metrics`, and the
admin API under `/orca/v1/` when one is mounted. Every request passes the guard first
(Host, Origin, content type, tokens, body limit; SPEC §11). Nothing here answers 500: an
unexpected fault becomes orca's own 502 in the inbound error shape, logged without content.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from orca_cli import __version__
from orca_cli.proxy.guard import (
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    GuardPolicy,
    api_for_scope,
    check,
    read_body,
    send_error,
)
from orca_cli.proxy.handler import handle_generate
from orca_cli.proxy.runtime import Runtime
from orca_cli.routing.features import estimate_tokens
from orca_cli.routing.target import ROUTER_PREFIX, resolve_target
from orca_cli.errors import UnknownModel
from orca_cli.wire.transcript import transcript

__all__ = ["OrcaApp", "AdminHandler"]

log = logging.getLogger("orca")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
AdminHandler = Callable[[Runtime, Scope, Receive, Send], Awaitable[None]]
_JSON = b"application/json"
_GENERATE = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}


async def send_json(send: Send, status: int, doc: Any,
                    headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = orjson.dumps(doc)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", _JSON), (b"content-length", b"%d" % len(body)),
                            *headers]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class OrcaApp:
    """`OrcaApp(runtime, policy)` is the ASGI callable uvicorn serves."""

    def __init__(self, runtime: Runtime, policy: GuardPolicy,
                 admin: AdminHandler | None = None) -> None:
        self.rt = runtime
        self.policy = policy
        self.admin = admin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            msg = await receive()
            if msg["type"] == "lifespan.startup":
                await self.rt.gate.check()
                self.rt.start()
                await send({"type": "lifespan.startup.complete"})
            elif msg["type"] == "lifespan.shutdown":
                await self.rt.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = check(self.policy, scope)
        api = api_for_scope(scope)
        if refusal is not None:
            await send_error(send, api, refusal, close=True)
            return
        path: str = scope["path"]
        method: str = scope["method"]
        try:
            generate = _GENERATE.get(path)
            if generate is not None and method == "POST":
                await handle_generate(self.rt, scope, receive, send, generate,  # type: ignore[arg-type]
                                      path, self.policy.max_body_bytes,
                                      self.policy.body_deadline_s)
            elif path == "/v1/messages/count_tokens" and method == "POST":
                await self._count_tokens(scope, receive, send)
            elif path == "/v1/models" and method == "GET":
                await self._models(scope, send)
            elif path == "/healthz" and method == "GET":
                await self._healthz(send)
            elif path == "/metrics" and method == "GET":
                await self._metrics(send)
            elif path.startswith("/orca/v1/") and self.admin is not None:
                await self.admin(self.rt, scope, receive, send)
            else:
                await send_error(send, api, 404, f"no endpoint {method} {path}; the sidecar "
                                 "serves /v1/chat/completions, /v1/messages, "
                                 "/v1/messages/count_tokens, /v1/models, /healthz, /metrics")
        except Exception:  # noqa: BLE001 - never a 500 with a stack trace to the client
            log.exception("internal fault while serving %s %s", method, path)
            try:
                await send_error(send, api, 502, "orca hit an internal fault serving this "
                                 "request; it was logged", kind="api_error")
            except Exception:  # noqa: BLE001 - the response had already started
                pass

    async def _healthz(self, send: Send) -> None:
        gate = self.rt.gate
        doc = {"status": "ok" if gate.healthy else "degraded",
               "store": {"backend": gate.store.backend, "healthy": gate.healthy,
                         "degraded_since": gate.since, "state_lost_at": gate.state_lost_at},
               "version": __version__, "uptime_s": round(time.time() - self.rt.started_at, 3)}
        await send_json(send, 200, doc)

    async def _metrics(self, send: Send) -> None:
        self.rt.metrics.store_degraded(not self.rt.gate.healthy)
        body = self.rt.metrics.render()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/plain; version=0.0.4; charset=utf-8"),
            (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _models(self, scope: Scope, send: Send) -> None:
        cfg = self.rt.cfg
        names = [ROUTER_PREFIX + r for r in cfg.routers]
        names += [a for a in cfg.aliases if not any(ch in a for ch in "*?[")]
        names += list(cfg.model_ids())
        ids = list(dict.fromkeys(names))
        hdrs = {k.lower() for k, _ in scope["headers"]}
        created = int(self.rt.started_at)
        if b"anthropic-version" in hdrs or b"x-api-key" in hdrs:
            data = [{"type": "model", "id": i, "display_name": i,
                     "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))}
                    for i in ids]
            doc: dict[str, Any] = {"data": data, "has_more": False,
                                   "first_id": ids[0] if ids else None,
                                   "last_id": ids[-1] if ids else None}
        else:
            doc = {"object": "list", "data": [{"id": i, "object": "model", "created": created,
                                               "owned_by": "orca"} for i in ids]}
        await send_json(send, 200, doc)

    async def _count_tokens(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Estimated locally (chars / 4 over what the full scorer reads); the answer says so
        in `x-orca-estimated: true`. Forwarding upstream would spend a request of the
        provider's rate limit on every count an agent asks for."""
        try:
            raw = await read_body(receive, limit=self.policy.max_body_bytes,
                                  deadline_s=self.policy.body_deadline_s)
        except BodyTooLarge as exc:
            await send_error(send, "anthropic", 413, str(exc), close=True)
            return
        except BodyTimeout as exc:
            await send_error(send, "anthropic", 408, str(exc), close=True)
            return
        except ClientGone:
            return
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            await send_error(send, "anthropic", 400, f"the request body is not valid JSON: {exc}")
            return
        if not isinstance(body, dict):
            await send_error(send, "anthropic", 400, "the request body must be a JSON object")
            return
        model = body.get("model")
        if isinstance(model, str):
            try:
                resolve_target(model, self.rt.cfg)
            except UnknownModel as exc:
                await send_error(send, "anthropic", 404, str(exc))
                return
        t = transcript(body, "anthropic")
        await send_json(send, 200, {"input_tokens": estimate_tokens(t.chars)},
                        ((b"x-orca-estimated", b"true"),))
