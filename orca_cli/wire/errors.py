"""orca's own error bodies, in the inbound API's shape (SPEC §1.2, §7).

Upstream errors are relayed unmodified; these bodies are only for errors orca itself raises
(malformed JSON 400, unknown model 404, body too large 413, cap refusal 429, nothing
attemptable 503) and for the in-stream error that ends a stream that broke after its first
byte. A message must never carry an untrusted header value: callers pass fixed text, and
this module strips control characters and bounds the length as a second line of defence.

The Responses API (SPEC §13.1) shares OpenAI's error body and type names. Its streams end in
error with a `response.failed` event (the response with `status: "failed"` and an `error`
object `{code, message}`), which Codex CLI reads as a failed turn; a stream so ended never
gets a `response.completed` after it.

A refusal by a spend limit (`LIMIT_CODES`: a `[budgets]` budget, a workspace share cap, a
route's 429 `deny`) on the Responses API is typed `usage_limit_reached` and carries its message
in an `x-codex-promo-message` header as well (`limit_refusal`): Codex CLI drops the body of
any other 429 and prints only "exceeded retry limit, last status: 429 Too Many Requests", while
for this type it prints "You've hit your usage limit." followed by that header's text — so the
developer reads which budget is spent and the command that raises it. (Codex 0.171, checked
against a server answering each variant.) Status, `code` and `x-should-retry: false` stay.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.types import Api

__all__ = [
    "ANTHROPIC_ERROR_TYPES",
    "LIMIT_CODES",
    "OPENAI_ERROR_CODES",
    "OPENAI_ERROR_TYPES",
    "error_body",
    "error_type",
    "limit_refusal",
    "response_failed_event",
    "stream_error_event",
]

ANTHROPIC_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
OPENAI_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "insufficient_quota",
    403: "permission_error",
    404: "invalid_request_error",  # as OpenAI answers an unknown model or path (its code says)
    413: "invalid_request_error",
    415: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    502: "server_error",
    503: "server_error",
    504: "server_error",
}
OPENAI_ERROR_CODES: dict[int, str] = {
    400: "invalid_request",
    401: "invalid_api_key",
    403: "permission_denied",
    404: "model_not_found",
    413: "request_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "rate_limit_exceeded",
    500: "server_error",
    502: "bad_gateway",
    503: "service_unavailable",
    504: "timeout",
}

_MAX_MESSAGE = 2000
_CONTROL = {c: None for c in range(32)} | {127: None}

# The refusal codes of spend limits: `[budgets]` at 100 % (`budget_exceeded`) and a frontier
# model asked for by name at 80 % (`budget`), the workspace share cap, a route's `deny` node.
LIMIT_CODES = frozenset({"budget_exceeded", "budget", "workspace_cap", "route_denied"})
USAGE_LIMIT_TYPE = "usage_limit_reached"
_CODEX_MESSAGE = b"x-codex-promo-message"
_MAX_HEADER = 1000


def limit_refusal(api: Api, status: int, code: str | None,
                  message: str) -> tuple[str, tuple[bytes, bytes]] | None:
    """For a spend-limit 429 on the Responses API: the error type Codex CLI shows a limit by
    and the header that carries `message` to it (printable ASCII, bounded); else None."""
    if api != "responses" or status != 429 or code not in LIMIT_CODES:
        return None
    text = "".join(c if " " <= c <= "~" else "?" for c in message[:_MAX_HEADER])
    return USAGE_LIMIT_TYPE, (_CODEX_MESSAGE, text.encode("ascii"))


def error_type(api: Api, status: int) -> str:
    """The format's error type name for `status` (a 4xx/5xx default when not listed)."""
    table = ANTHROPIC_ERROR_TYPES if api == "anthropic" else OPENAI_ERROR_TYPES
    found = table.get(status)
    if found is not None:
        return found
    if status >= 500:
        return "api_error" if api == "anthropic" else "server_error"
    return "invalid_request_error"


def _clean(message: str) -> str:
    text = message.translate(_CONTROL)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def error_body(
    api: Api, status: int, message: str, *, kind: str | None = None, code: str | None = None
) -> bytes:
    """A complete JSON error body: OpenAI `{"error": {message, type, param, code}}` or
    Anthropic `{"type": "error", "error": {type, message}}`. `kind` overrides the type name."""
    etype = kind or error_type(api, status)
    text = _clean(message)
    if api == "anthropic":
        return orjson.dumps({"type": "error", "error": {"type": etype, "message": text}})
    return orjson.dumps(
        {
            "error": {
                "message": text,
                "type": etype,
                "param": None,
                "code": code if code is not None else OPENAI_ERROR_CODES.get(status),
            }
        }
    )


def stream_error_event(
    api: Api,
    message: str,
    kind: str | None = None,
    *,
    response: dict[str, Any] | None = None,
    sequence_number: int | None = None,
) -> bytes:
    """The SSE bytes of an in-stream error (SPEC §7): Anthropic `event: error`, OpenAI
    `data: {"error": …}`, Responses `event: response.failed` (see `response_failed_event`;
    `response` and `sequence_number` feed it and are ignored by the other formats). A stream
    ended with this never gets a fake clean end after it."""
    if api == "responses":
        return response_failed_event(
            message, kind, response=response, sequence_number=sequence_number
        )
    if api == "anthropic":
        payload = error_body("anthropic", 500, message, kind=kind or "api_error")
        return b"event: error\ndata: " + payload + b"\n\n"
    payload = orjson.dumps(
        {
            "error": {
                "message": _clean(message),
                "type": kind or "server_error",
                "param": None,
                "code": None,
            }
        }
    )
    return b"data: " + payload + b"\n\n"


def response_failed_event(
    message: str,
    code: str | None = None,
    *,
    response: dict[str, Any] | None = None,
    sequence_number: int | None = None,
) -> bytes:
    """A Responses stream's `response.failed` event (SPEC §7, §13.1).

    `response` is what the stream already told the client about its response (`id`,
    `created_at`, `model`: `ResponseTap.response_head()` keeps them) so the failure names the
    same response; its `status` becomes "failed", `error` is `{code, message}` with `code`
    "server_error" unless given, and `output` / `usage` are emptied. `sequence_number`
    continues the stream's numbering (the next number; 0 when unknown).
    """
    head = response or {}
    failed: dict[str, Any] = {
        "id": head.get("id") or "resp_orca_failed",
        "object": "response",
        "created_at": head.get("created_at") or 0,
        "status": "failed",
        "error": {"code": code or "server_error", "message": _clean(message)},
        "incomplete_details": None,
        "model": head.get("model") or "",
        "output": [],
        "usage": None,
    }
    event = {
        "type": "response.failed",
        "sequence_number": sequence_number or 0,
        "response": failed,
    }
    return b"event: response.failed\ndata: " + orjson.dumps(event) + b"\n\n"
