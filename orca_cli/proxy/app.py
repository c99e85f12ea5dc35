"""The sidecar as a raw ASGI application (SPEC §1.2; raw ASGI measured cheapest, SPEC §12).

Paths: `POST /v1/chat/completions`, `POST /v1/messages`, `POST /v1/responses` (routed,
`proxy.handler`), `GET /` and `HEAD /` (agents probe the base URL),
`POST /v1/messages/count_tokens`, `GET /v1/models` and `GET /v1/models/{id}` (and `HEAD`),
`GET /healthz`, `GET /metrics`, and the
admin API under `/orca/v1/` when one is mounted. A WebSocket upgrade (Codex's Responses
WebSocket mode, which its built-in `openai` provider tries first) is answered 426, on which
Codex goes on over HTTP at once: 0.5 s to its first answer where a 405 or a 404 cost 7 s of
retries (measured against Codex 0.171). Every request passes the guard first
(Host, Origin, content type, tokens, body limit; SPEC §11). Nothing here answers 500: an
unexpected fault becomes orca's own 502 in the inbound error shape, logged without content.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from orca_cli import __version__
from orca_cli.errors import Refusal, UnknownModel
from orca_cli.proxy.guard import ClientGone, GuardPolicy, send_error
from orca_cli.proxy.handler import handle_generate
from orca_cli.proxy.intake import GENERATE_PATHS, IntakeError, read_json, scan_head
from orca_cli.proxy.runtime import Runtime
from orca_cli.routing.features import estimate_tokens
from orca_cli.routing.target import ROUTER_PREFIX, resolve_target
from orca_cli.turn.model import RequestHead
from orca_cli.turn.prepare import model_problem
from orca_cli.types import Receive, Scope, Send
from orca_cli.wire.body_check import body_problem
from orca_cli.wire.transcript import transcript

__all__ = ["AdminHandler", "OrcaApp"]

log = logging.getLogger("orca")

AdminHandler = Callable[[Runtime, Scope, Receive, Send], Awaitable[None]]
_JSON = b"application/json"


async def send_json(send: Send, status: int, doc: Any,
                    headers: tuple[tuple[bytes, bytes], ...] = (), *,
                    head_only: bool = False) -> None:
    body = orjson.dumps(doc)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", _JSON), (b"content-length", b"%d" % len(body)),
                            *headers]})
    await send({"type": "http.response.body", "body": b"" if head_only else body,
                "more_body": False})



# The endpoints served and their methods: a known path asked with another method is 405 with
# `Allow`, not a 404 that lists the very path.
_METHODS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(GENERATE_PATHS, ("POST",)), "/v1/messages/count_tokens": ("POST",),
    "/v1/models": ("GET", "HEAD"), "/healthz": ("GET",), "/metrics": ("GET",), "/": ("GET", "HEAD"),
}


def _websocket(head: RequestHead) -> bool:
    """The request asks to upgrade to WebSocket."""
    return any(name == "upgrade" and value.lower() == "websocket" for name, value in head.headers)


class OrcaApp:
    """`OrcaApp(runtime, policy)` is the ASGI callable uvicorn serves."""

    def __init__(self, runtime: Runtime, policy: GuardPolicy,
                 admin: AdminHandler | None = None) -> None:
        self.rt = runtime
        self.policy = policy
        self.admin = admin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        # An http request is served in this coroutine, not in one of its own (one layer less
        # on every request).
        head = scan_head(self.policy, scope)
        if head.refusal is not None:
            await send_error(send, head.api, head.refusal, close=True)
            return
        path, method = head.path, head.method
        try:
            if head.path in GENERATE_PATHS and method == "POST":
                await handle_generate(self.rt, self.policy, head, receive, send)
            elif path == "/v1/messages/count_tokens" and method == "POST":
                await self._count_tokens(head, receive, send)
            elif path == "/v1/models" and method in ("GET", "HEAD"):
                await self._models(head, send, head_only=method == "HEAD")
            elif path.startswith("/v1/models/") and method in ("GET", "HEAD"):
                await self._model(head, path[len("/v1/models/"):], send,
                                  head_only=method == "HEAD")
            elif path == "/healthz" and method == "GET":
                await self._healthz(send)
            elif path == "/metrics" and method == "GET":
                await self._metrics(send)
            elif path == "/" and method in ("GET", "HEAD"):
                # Agents probe the base URL before their first request (Claude Code: HEAD /).
                await send_json(send, 200, {"name": "orca", "version": __version__,
                                            "status": "ok"}, head_only=method == "HEAD")
            elif path.startswith("/orca/v1/") and self.admin is not None:
                await self.admin(self.rt, scope, receive, send)
            elif _websocket(head):
                await send_error(send, head.api, 426, "orca serves this API over HTTP only, "
                                 "not WebSocket: send it as POST", code="websocket_unsupported")
            elif path in _METHODS:
                allowed = _METHODS[path]
                await send_error(send, head.api, 405, f"{path} takes {' or '.join(allowed)}, "
                                 f"not {method}", code="method_not_allowed",
                                 extra_headers=[(b"allow", ", ".join(allowed).encode())])
            else:
                await send_error(send, head.api, 404, f"no endpoint {method} {path}; the "
                                 "sidecar serves /v1/chat/completions, /v1/messages, "
                                 "/v1/responses, /v1/messages/count_tokens, /v1/models, "
                                 "/healthz, /metrics", code="unknown_endpoint")
        except Exception:
            log.exception("internal fault while serving %s %s", method, path)
            with contextlib.suppress(Exception):  # the response may already have started
                await send_error(send, head.api, Refusal(
                    502, "orca hit an internal fault serving this request; it was logged",
                    kind="api_error"))

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

    async def _healthz(self, send: Send) -> None:
        gate = self.rt.gate
        doc = {"status": "ok" if gate.healthy else "degraded",
               "store": {"backend": gate.store.backend, "healthy": gate.healthy,
                         "degraded_since": gate.since, "state_lost_at": gate.state_lost_at},
               "version": __version__, "uptime_s": round(time.time() - self.rt.started_at, 3),
               "pid": os.getpid()}  # the worker that answered (`orca serve --workers N`)
        await send_json(send, 200, doc)

    async def _metrics(self, send: Send) -> None:
        self.rt.metrics.store_degraded(not self.rt.gate.healthy)
        body = self.rt.metrics.render()
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", b"text/plain; version=0.0.4; charset=utf-8"),
            (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    def _model_ids(self) -> list[str]:
        """What `/v1/models` lists: the routers, the plain aliases, the served models."""
        cfg = self.rt.cfg
        names = [ROUTER_PREFIX + r for r in cfg.routers]
        names += [a for a in cfg.aliases if not any(ch in a for ch in "*?[")]
        names += list(cfg.model_ids())
        return list(dict.fromkeys(names))

    def _model_entry(self, api: str, model_id: str) -> dict[str, Any]:
        created = int(self.rt.started_at)
        if api == "anthropic":
            return {"type": "model", "id": model_id, "display_name": model_id,
                    "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(created))}
        return {"id": model_id, "object": "model", "created": created, "owned_by": "orca"}

    async def _models(self, head: RequestHead, send: Send, *, head_only: bool = False) -> None:
        ids = self._model_ids()
        data = [self._model_entry(head.api, i) for i in ids]
        if head.api == "anthropic":
            doc: dict[str, Any] = {"data": data, "has_more": False,
                                   "first_id": ids[0] if ids else None,
                                   "last_id": ids[-1] if ids else None}
        else:
            doc = {"object": "list", "data": data}
        await send_json(send, 200, doc, head_only=head_only)

    async def _model(self, head: RequestHead, model_id: str, send: Send, *,
                     head_only: bool = False) -> None:
        """`GET /v1/models/{id}` (the SDKs' `models.retrieve`): a name the sidecar serves —
        listed, or caught by an alias pattern — else the 404 a request naming it gets."""
        if model_id not in self._model_ids():
            try:
                resolve_target(model_id, self.rt.cfg)
            except UnknownModel as exc:
                await send_error(send, head.api, 404, str(exc), code="model_not_found")
                return
        await send_json(send, 200, self._model_entry(head.api, model_id), head_only=head_only)

    async def _count_tokens(self, head: RequestHead, receive: Receive, send: Send) -> None:
        """Estimated locally (chars / 4 over what the full scorer reads); the answer says so
        in `x-orca-estimated: true`. Forwarding upstream would spend a request of the
        provider's rate limit on every count an agent asks for."""
        try:
            _, body = await read_json(receive, self.policy, head.client)
        except IntakeError as exc:
            await send_error(send, "anthropic", exc.status, str(exc), close=exc.close)
            return
        except ClientGone:
            return
        problem = count_tokens_problem(body)
        if problem is not None:
            await send_error(send, "anthropic", 400, problem)
            return
        try:
            resolve_target(body["model"], self.rt.cfg)
        except UnknownModel as exc:
            await send_error(send, "anthropic", 404, str(exc), code="model_not_found")
            return
        t = transcript(body, "anthropic")
        await send_json(send, 200, {"input_tokens": estimate_tokens(t.chars)},
                        ((b"x-orca-estimated", b"true"),))


def count_tokens_problem(body: dict[str, Any]) -> str | None:
    """The type checks of a Messages request (SPEC §18: as the generation paths apply them):
    a model name, a message list, and every other field the Messages API types."""
    model = body.get("model")
    if not isinstance(model, str) or not model.strip():
        return model_problem(model)
    return body_problem("anthropic", body)
