"""Intake: the request head scanned once, the body read and parsed once (SPEC §1.2, §11).

`scan_head` walks the ASGI header list a single time and returns a `RequestHead`: the path,
the inbound API (whose error shape every refusal uses), the guard's verdict (Host, Origin,
tokens, content type and length — `proxy.guard`), the client's request id, the explicit tier
ask and the headers as `str` pairs for the session chain and the forwarder. `read_json` reads
the body under the policy's limit and deadline and parses it once. Generation,
`count_tokens` and the admin API all start here, and every failure is an `IntakeError` that
the caller answers in the inbound shape with `send_error`.
"""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.errors import BadRequest
from orca_cli.proxy.guard import (
    GUARD_HEADERS,
    BodyTimeout,
    BodyTooLarge,
    ClientGone,
    GuardFacts,
    GuardPolicy,
    read_body,
    verdict,
)
from orca_cli.turn.model import RequestHead
from orca_cli.types import CLIENT_EXTENSION, Api, ClientLink, Headers, Receive, Scope

__all__ = ["GENERATE_PATHS", "IntakeError", "RequestHead", "api_of_path", "read_json",
           "scan_head", "scan_head_api"]

# The routed endpoints and the wire format each speaks (SPEC §1.2, §13.1).
GENERATE_PATHS: dict[str, Api] = {
    "/v1/chat/completions": "openai",
    "/v1/messages": "anthropic",
    "/v1/responses": "responses",
}


class IntakeError(BadRequest):
    """A request refused while reading or parsing its body; `close` when bytes were left
    unread (the connection must not parse them as a next request)."""

    def __init__(self, message: str, *, status: int = 400, close: bool = False) -> None:
        super().__init__(message, status=status)
        self.close = close


def _api_of(path: str, anthropic_hint: bool) -> Api:
    generate = GENERATE_PATHS.get(path)
    if generate is not None:
        return generate
    if path.startswith("/v1/messages") or (anthropic_hint and path.startswith("/v1/models")):
        return "anthropic"
    if path.startswith("/v1/responses"):
        return "responses"
    return "openai"


# Each header name's text, lower-cased, by its bytes: a client sends the same few names on
# every request (15-20 for an agent), and a decode and a `lower` cost more than the lookup.
# Bounded in count and length, so that names a client makes up cannot grow it.
_NAMES: dict[bytes, str] = {}
_NAMES_MAX = 512


def scan_head(policy: GuardPolicy, scope: Scope) -> RequestHead:
    """One pass over the headers: the guard's facts and the request's own."""
    path: str = scope.get("path", "")
    headers: Headers = []
    client_rid: str | None = None
    ask: str | None = None
    anthropic_hint = False
    # The guard's facts (`GuardFacts`), in locals until the pass ends.
    host: bytes | None = None
    origin = content_type = content_length = bearer = None
    hosts_seen = 0
    tokens: list[bytes] = []
    for raw_name, raw_value in scope["headers"]:
        if raw_name in GUARD_HEADERS:
            if raw_name == b"host":
                host = raw_value
                hosts_seen += 1
            elif raw_name == b"origin":
                origin = raw_value
            elif raw_name == b"content-type":
                content_type = raw_value
            elif raw_name == b"content-length":
                content_length = raw_value
            elif raw_name == b"authorization":
                scheme, _, cred = raw_value.partition(b" ")
                if scheme.lower() == b"bearer":
                    bearer = cred.strip()
                    tokens.append(bearer)
            else:  # x-api-key, x-orca-token
                tokens.append(raw_value.strip())
        name = _NAMES.get(raw_name)
        if name is None:
            name = raw_name.decode("latin-1").lower()
            if len(_NAMES) < _NAMES_MAX and len(raw_name) <= 64:
                _NAMES[raw_name] = name
        value = raw_value.decode("latin-1")
        headers.append((name, value))
        if name == "x-request-id":
            client_rid = value
        elif name == "x-orcarouter-tier":
            ask = value
        elif name == "anthropic-version" or name == "x-api-key":
            anthropic_hint = True
    api = _api_of(path, anthropic_hint)
    ext = scope.get("extensions")
    link = ext.get(CLIENT_EXTENSION) if ext else None
    # By position, in field order: one each per request, and keywords cost a dict.
    facts = GuardFacts(host,  # host
                       hosts_seen,  # hosts_seen
                       origin,  # origin
                       content_type,  # content_type
                       content_length,  # content_length
                       bearer,  # bearer
                       tokens)  # tokens
    return RequestHead(scope.get("method", ""),  # method
                       path,  # path
                       api,  # api
                       headers,  # headers
                       verdict(policy, scope, facts, api),  # refusal
                       client_rid,  # client_request_id
                       ask,  # tier_ask
                       link["link"] if link else None)  # client


def api_of_path(path: str) -> Api:
    """The inbound API a path names (an Anthropic client's `/v1/models` aside)."""
    return _api_of(path, False)


def scan_head_api(scope: Scope) -> Api:
    """The inbound API of a request, from its path (and an Anthropic client's headers)."""
    hint = any(n in (b"anthropic-version", b"x-api-key") for n, _ in scope.get("headers", ()))
    return _api_of(scope.get("path", ""), hint)


async def read_json(receive: Receive, policy: GuardPolicy, client: ClientLink | None = None
                    ) -> tuple[bytes, dict[str, Any]]:
    """The body's bytes and its parsed JSON object, or `IntakeError` / `ClientGone`. A body
    the server's `client` link says arrived whole is read without a deadline timer."""
    try:
        raw = await read_body(receive, limit=policy.max_body_bytes,
                              deadline_s=policy.body_deadline_s,
                              buffered=client is not None and client.body_complete)
    except BodyTooLarge as exc:
        raise IntakeError(str(exc), status=413, close=True) from None
    except BodyTimeout as exc:
        raise IntakeError(str(exc), status=408, close=True) from None
    except ClientGone:
        raise
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise IntakeError(f"the request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise IntakeError("the request body must be a JSON object")
    return raw, body
