"""The request guard of SPEC §11, in raw ASGI: who may talk to the sidecar, and how much.

A localhost sidecar is reachable by every web page the developer has open, so each request
passes, before its body is read:

1. **Host** — a loopback name with the bound port, or an entry of `server.allowed_hosts`.
   A DNS-rebinding page reaches 127.0.0.1 under its own name, so its Host gives it away.
2. **Origin** — a browser `Origin` header must be in `server.allowed_origins` (CSRF).
3. **Token** — `/orca/v1/*` needs `Authorization: Bearer <admin token>`; every other path
   but `/healthz` and `/metrics` needs `server.inbound_token` when one is configured, sent
   as `Authorization: Bearer`, `x-api-key` or `X-Orca-Token` (the last when the client's
   `Authorization` carries an upstream key for a pass-through channel).
4. **Content-Type** — a POST must be `application/json`, which forces a browser preflight
   that nothing here ever answers (no `Access-Control-Allow-*` header is ever sent).
5. **Content-Length** — over `server.max_body_mb` is refused with 413 before any read;
   `read_body` enforces the same limit on chunked bodies and a deadline on slow ones.

`X-Forwarded-For` and its kin are never read: every local process is 127.0.0.1. Refusal
messages never repeat a header value, so a token sent to the wrong place is not echoed.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass, field

from orca_cli.config.schema import ServerConfig
from orca_cli.errors import BadRequest, OrcaError, Refusal
from orca_cli.hosts import is_loopback_host
from orca_cli.immutable import immutable
from orca_cli.types import Api, Receive, Scope, Send
from orca_cli.wire.errors import error_body, error_type, limit_refusal

__all__ = [
    "GUARD_HEADERS",
    "BodyTimeout",
    "BodyTooLarge",
    "ClientGone",
    "GuardFacts",
    "GuardPolicy",
    "Refusal",
    "api_for_scope",
    "check",
    "read_body",
    "send_error",
    "verdict",
]


_LOOPBACK_NAMES = (b"127.0.0.1", b"localhost", b"[::1]", b"::1")
_PUBLIC_PATHS = frozenset({"/healthz", "/metrics"})
_ADMIN_PREFIX = "/orca/v1/"
_JSON = b"application/json"
_CLOSE = (b"connection", b"close")


class BodyTooLarge(BadRequest):
    """The body grew past the limit while being read (chunked, or a lying Content-Length)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"request body is larger than server.max_body_mb ({_mib(limit)} MiB)",
                         status=413, kind="request_too_large")


class BodyTimeout(BadRequest):
    """The whole body did not arrive within the deadline (a slow or stalled client)."""

    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        super().__init__(f"request body did not arrive within server.header_timeout_s "
                         f"({deadline_s:g} s)", status=408)


class ClientGone(OrcaError):
    """The client disconnected before its body was read; there is no one to answer."""


@immutable
class GuardPolicy:
    """Everything `check` needs, resolved once from config so a request costs set lookups.

    `port` 0 means the port was not known when the policy was built (`--port 0`): loopback
    names are then matched against the port of the socket the request arrived on.
    """

    hosts: frozenset[bytes]
    bare_hosts: frozenset[bytes]
    origins: frozenset[bytes]
    inbound_digest: bytes | None
    admin_digest: bytes | None
    max_body_bytes: int
    body_deadline_s: float
    port: int
    # SPEC §17: with `inbound_token` set, a `[[inbound_keys]]` token is admitted as well.
    team_digests: tuple[bytes, ...] = ()

    @classmethod
    def from_config(cls, server: ServerConfig, *, port: int, admin_token: str,
                    team_keys: tuple[str, ...] = ()) -> GuardPolicy:
        """`team_keys`: the sha256 (hex) of each `[[inbound_keys]]` token."""
        names = set(_LOOPBACK_NAMES)
        bind = server.host.strip().lower()
        if bind and bind not in ("0.0.0.0", "::", "[::]") and (
            is_loopback_host(bind) or _is_ip_literal(bind)
        ):
            # A client dials the bound address itself; a rebinding page always carries its
            # own hostname, never our literal address.
            names.add(_bracket(bind).encode())
        bare: set[bytes] = set()
        hosts: set[bytes] = set()
        for entry in server.allowed_hosts:
            e = entry.strip().lower()
            if _is_ip_literal(e):
                e = _bracket(e)  # an IPv6 literal arrives bracketed in Host
            if _has_port(e.encode()):
                hosts.add(e.encode())
            else:
                bare.add(e.encode())
        names |= bare
        if port:
            suffix = b":%d" % port
            hosts |= {n + suffix for n in names}
            if port == 80:  # RFC 9110: the default port may be left out of Host
                hosts |= names
        return cls(
            hosts=frozenset(hosts),
            bare_hosts=frozenset(names),
            origins=frozenset(o.strip().rstrip("/").lower().encode() for o in server.allowed_origins),
            inbound_digest=_digest(server.inbound_token.encode()) if server.inbound_token else None,
            admin_digest=_digest(admin_token.encode()) if admin_token else None,
            max_body_bytes=int(server.max_body_mb * 1024 * 1024),
            body_deadline_s=float(server.header_timeout_s),
            port=port,
            team_digests=tuple(bytes.fromhex(h) for h in team_keys),
        )


def api_for_scope(scope: Scope) -> Api:
    """The inbound API whose error shape a response uses (see `proxy.intake.scan_head`)."""
    from orca_cli.proxy.intake import scan_head_api

    return scan_head_api(scope)


@dataclass(slots=True)
class GuardFacts:
    """The header facts the guard decides on, gathered by the one pass of `scan_head`: the
    headers named in `GUARD_HEADERS`, compared as sent (bytes)."""

    host: bytes | None = None
    hosts_seen: int = 0
    origin: bytes | None = None
    content_type: bytes | None = None
    content_length: bytes | None = None
    bearer: bytes | None = None
    tokens: list[bytes] = field(default_factory=list)


# The headers `GuardFacts` holds: the only ones `scan_head` looks at for the guard.
GUARD_HEADERS = frozenset({b"host", b"origin", b"content-type", b"content-length",
                           b"authorization", b"x-api-key", b"x-orca-token"})


def check(policy: GuardPolicy, scope: Scope) -> Refusal | None:
    """Refuse an http request that fails §11, or None; reads headers only, never the body."""
    from orca_cli.proxy.intake import scan_head

    return scan_head(policy, scope).refusal


def verdict(policy: GuardPolicy, scope: Scope, facts: GuardFacts, api: Api) -> Refusal | None:
    """The guard's decision over the facts `scan_head` gathered (SPEC §11, in order)."""
    path: str = scope.get("path", "")
    host = facts.host
    # A Host as sent that is in `policy.hosts` (all lower-case) is allowed as it is.
    if facts.hosts_seen != 1 or host is None or (
            host not in policy.hosts and not _host_allowed(policy, host.lower(), scope)):
        return _refuse(api, 403, "host_not_allowed", _host_message(policy))
    origin = facts.origin
    if origin is not None and origin.rstrip(b"/").lower() not in policy.origins:
        return _refuse(api, 403, "origin_not_allowed",
                       "requests carrying a browser Origin are refused unless that origin is "
                       "listed in server.allowed_origins (a web page must not drive this "
                       "sidecar)")
    bearer = facts.bearer
    if path.startswith(_ADMIN_PREFIX) or path == _ADMIN_PREFIX[:-1]:
        if policy.admin_digest is None or bearer is None or not _matches(policy.admin_digest, bearer):
            return _refuse(api, 401, "invalid_admin_token",
                           "missing or wrong admin token: the admin API needs Authorization: "
                           "Bearer <token> with the token `orca serve` wrote to "
                           "$XDG_STATE_HOME/orca/admin.token")
    elif policy.inbound_digest is not None and path not in _PUBLIC_PATHS:
        digest = policy.inbound_digest
        if not any(_matches(digest, t) for t in facts.tokens) and not (
                policy.team_digests and _team_member(policy.team_digests, facts.tokens)):
            return _refuse(api, 401, "invalid_api_key",
                           "missing or wrong inbound token: send server.inbound_token as "
                           "Authorization: Bearer <token>, x-api-key: <token> or "
                           "X-Orca-Token: <token>")
    content_type = facts.content_type
    if scope.get("method") == "POST" and content_type != _JSON and (
        content_type is None or content_type.partition(b";")[0].strip().lower() != _JSON
    ):
        return _refuse(api, 415, "unsupported_media_type",
                       "POST bodies must be sent with Content-Type: application/json")
    if facts.content_length is not None:
        try:
            length = int(facts.content_length)
        except ValueError:
            length = -1
        if length < 0:
            return _refuse(api, 400, "invalid_request", "the Content-Length header is not a number")
        if length > policy.max_body_bytes:
            return _refuse(api, 413, "request_too_large",
                           f"request body is larger than server.max_body_mb "
                           f"({_mib(policy.max_body_bytes)} MiB)")
    return None


def read_body(receive: Receive, *, limit: int, deadline_s: float,
              buffered: bool = False) -> Awaitable[bytes]:
    """The whole request body, or `BodyTooLarge` / `BodyTimeout` / `ClientGone` (awaited).

    The deadline covers the whole body (the ASGI server has none); the limit is checked per
    chunk, so a chunked body is refused as soon as it passes it, not after it is buffered.
    `buffered`: the server holds the whole body already (`ClientLink.body_complete`), so no
    read can wait on the client and no deadline timer is armed (nor a coroutine around the
    read: the caller awaits the read itself).
    """
    if buffered:
        return _read_chunks(receive, limit)
    return _read_within(receive, limit, deadline_s)


async def _read_within(receive: Receive, limit: int, deadline_s: float) -> bytes:
    try:
        async with asyncio.timeout(deadline_s):
            return await _read_chunks(receive, limit)
    except TimeoutError:
        raise BodyTimeout(deadline_s) from None


async def _read_chunks(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone("the client disconnected before sending its whole body")
        body: bytes = message.get("body", b"")
        if body:
            size += len(body)
            if size > limit:
                raise BodyTooLarge(limit)
            chunks.append(body)
        if not message.get("more_body", False):
            break
    if len(chunks) == 1:
        return chunks[0]
    return b"".join(chunks)


async def send_error(
    send: Send,
    api: Api,
    error: Refusal | int,
    message: str = "",
    *,
    code: str | None = None,
    extra_headers: Iterable[tuple[bytes, bytes]] = (),
    close: bool = False,
) -> None:
    """Answer with orca's own error in the inbound API's shape (SPEC §1.2).

    `error` is a `Refusal` (whose message, kind and code are used) or a status with
    `message` (and `code`; the kind is the API's own for the status). `close` adds `connection: close`: use it when the body was not read, so the
    unread bytes are never parsed as a next request. No CORS header is ever added.
    """
    kind: str | None = None
    if isinstance(error, Refusal):
        status, message = error.status, error.message
        kind, code = error.kind, code or error.code
    else:
        status = error
    limit = limit_refusal(api, status, code, message)
    if limit is not None:
        kind = limit[0]
    body = error_body(api, status, message, kind=kind, code=code)
    headers = [(b"content-type", _JSON), (b"content-length", b"%d" % len(body))]
    headers.extend(extra_headers)
    if limit is not None:
        headers.append(limit[1])
    if close:
        headers.append(_CLOSE)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _refuse(api: Api, status: int, code: str, message: str) -> Refusal:
    return Refusal(status=status, message=message, kind=error_type(api, status), code=code)


def _host_allowed(policy: GuardPolicy, host: bytes, scope: Scope) -> bool:
    if host in policy.hosts:
        return True
    if policy.port:
        return False
    server = scope.get("server")
    if not server or not server[1]:
        return False
    name, sep, port = host.rpartition(b":")
    return bool(sep) and port == b"%d" % server[1] and name in policy.bare_hosts


def _host_message(policy: GuardPolicy) -> str:
    port = str(policy.port) if policy.port else "the bound port"
    return (f"the Host header is not one this sidecar answers to: it accepts 127.0.0.1, "
            f"localhost and [::1] with {port}, and the names in server.allowed_hosts; add the "
            f"name clients use there (this check stops DNS rebinding by web pages)")


def _digest(token: bytes) -> bytes:
    # Comparing fixed-length digests keeps even the token's length out of the timing.
    return hashlib.sha256(token).digest()


def _matches(expected_digest: bytes, candidate: bytes) -> bool:
    return hmac.compare_digest(expected_digest, hashlib.sha256(candidate).digest())


def _team_member(digests: tuple[bytes, ...], tokens: list[bytes]) -> bool:
    for t in tokens:
        got = hashlib.sha256(t).digest()
        if any(hmac.compare_digest(d, got) for d in digests):
            return True
    return False


def _has_port(host: bytes) -> bool:
    if host.startswith(b"["):
        return b"]:" in host
    return host.count(b":") == 1


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _bracket(host: str) -> str:
    h = host.strip("[]")
    return f"[{h}]" if ":" in h else h


def _mib(limit: int) -> str:
    return f"{limit / (1024 * 1024):g}"
