"""The upstream transport seam (SPEC §0, §7; STYLE §4 rules 13-14).

A `Transport` sends one `UpstreamRequest` and returns an `UpstreamResponse` as soon as the
status line and headers arrived; the body is then read chunk by chunk (`chunks()`, never
buffered) or whole (`read()`). Three implementations share this protocol: aiohttp on the live
path, httpx for the CLI and respx tests, and the in-process `sim` channel.

Timeouts (SPEC §2 `[server]`): `connect_s` bounds the connect, `first_byte_s` the wait for the
response headers, `idle_s` every wait for the next body chunk, and `deadline_monotonic` (on the
transport's clock, `SystemClock().monotonic()` by default) bounds everything. Failures surface
as the `UpstreamError` subclasses below; `retryable` is true only while no body byte has been
handed to the caller and deadline time remains (SPEC §7: retry only before the first byte).

The helpers here are the request/response rules of SPEC §1.2 and §7: auth headers per wire
format, the upstream URL per endpoint, and the response-header allow-list.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator, Iterable
from typing import Literal, Protocol

from orca_cli.config.schema import ChannelConfig, ServerConfig
from orca_cli.errors import UpstreamError
from orca_cli.immutable import immutable
from orca_cli.types import Api

__all__ = [
    "ANTHROPIC_VERSION",
    "API_PATHS",
    "ENDPOINTS",
    "RESPONSE_HEADER_ALLOWLIST",
    "RESPONSE_HEADER_PREFIXES",
    "Headers",
    "TimeoutPhase",
    "Timeouts",
    "Transport",
    "UpstreamConnectError",
    "UpstreamRequest",
    "UpstreamResponse",
    "UpstreamStreamError",
    "UpstreamTimeout",
    "UpstreamTooLarge",
    "anthropic_version_header",
    "auth_headers",
    "filter_response_headers",
    "header_value",
    "models_list_url",
    "read_limited",
    "upstream_url",
]

Headers = tuple[tuple[str, str], ...]
TimeoutPhase = Literal["connect", "first_byte", "idle", "total"]
ANTHROPIC_VERSION = "2023-06-01"

# The forwarded endpoints (SPEC §1.2, §13.1) and the wire format each one speaks.
ENDPOINTS: dict[str, Api] = {
    "/v1/chat/completions": "openai",
    "/v1/messages": "anthropic",
    "/v1/messages/count_tokens": "anthropic",
    "/v1/responses": "responses",
}
# The endpoint a request of each format is sent to (count_tokens is a side endpoint).
API_PATHS: dict[Api, str] = {
    "openai": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "responses": "/v1/responses",
}


@immutable
class UpstreamRequest:
    """One attempt: the forwarded body and the headers to send (auth included)."""

    method: str
    url: str
    headers: Headers
    body: bytes
    channel: str
    key_index: int
    stream: bool


@immutable
class Timeouts:
    connect_s: float
    first_byte_s: float
    idle_s: float
    deadline_monotonic: float

    @classmethod
    def for_request(cls, server: ServerConfig, start_monotonic: float) -> Timeouts:
        """The `[server]` timeouts of a request that started at `start_monotonic`."""
        # By position, in field order: one per request, and keywords cost a dict.
        return cls(
            server.connect_timeout_s,  # connect_s
            server.first_byte_timeout_s,  # first_byte_s
            server.idle_timeout_s,  # idle_s
            start_monotonic + server.total_timeout_s,  # deadline_monotonic
        )


class UpstreamResponse(Protocol):
    status: int
    headers: Headers  # names lower-cased, in the order received

    def chunks(self) -> AsyncIterator[bytes]:
        """Body bytes as they arrive; each wait bounded by `idle_s` and the deadline."""
        ...

    async def read(self) -> bytes:
        """The whole body (non-streaming answers), bounded by idle and deadline."""
        ...

    async def aclose(self) -> None:
        """Release the connection; abort it when the body is unfinished. Idempotent."""
        ...


class Transport(Protocol):
    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> UpstreamResponse:
        """Return once status and headers arrived (bounded by `first_byte_s` and deadline)."""
        ...

    async def aclose(self) -> None: ...


class UpstreamConnectError(UpstreamError):
    """Refused, reset or unresolvable before any response: local-origin and retryable."""

    local_origin = True

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message, retryable=retryable)


class UpstreamTimeout(UpstreamError):
    """A timeout of one phase; retryable only before the first body byte (SPEC §7)."""

    local_origin = True

    def __init__(self, phase: TimeoutPhase, *, retryable: bool | None = None) -> None:
        self.phase: TimeoutPhase = phase
        if retryable is None:
            retryable = phase in ("connect", "first_byte")
        super().__init__(f"upstream {phase.replace('_', '-')} timeout", retryable=retryable)


class UpstreamStreamError(UpstreamError):
    """The connection broke while the body was being read; never retried once bytes flowed."""

    local_origin = False

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message, retryable=retryable)


class UpstreamTooLarge(UpstreamStreamError):
    """A whole (non-stream) answer larger than `[server] max_response_mb` (SPEC §18): not
    relayed, and no further attempt is made — its tokens were produced and billed, and
    another upstream asked the same would likely answer the same."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the upstream answer is larger than [server] max_response_mb "
                         f"({limit / 1_048_576:g} MB); not relayed")


async def read_limited(resp: UpstreamResponse, limit: int) -> bytes:
    """A whole body, refused past `limit` bytes (0: no limit). A declared Content-Length
    within the limit is read at once (the transport stops at that length); one above it is
    refused before a byte is read; without one, the body is read as it arrives and refused as
    soon as it passes the limit. The parts are joined once: one copy of the body."""
    if limit <= 0:
        return await resp.read()
    declared = header_value(resp.headers, "content-length")
    if declared is not None and declared.strip().isdigit():
        if int(declared) > limit:
            raise UpstreamTooLarge(limit)
        return await resp.read()
    parts: list[bytes] = []
    size = 0
    async for chunk in resp.chunks():
        size += len(chunk)
        if size > limit:
            raise UpstreamTooLarge(limit)
        parts.append(chunk)
    return b"".join(parts)


# --- response headers (SPEC §7) -------------------------------------------------------------

# content-encoding passes because bodies are relayed byte for byte (transports never
# decompress): whatever the bytes are, the header describing them must travel with them.
RESPONSE_HEADER_ALLOWLIST: frozenset[str] = frozenset(
    {
        "content-type",
        "content-encoding",
        "x-request-id",
        "request-id",
        "anthropic-request-id",
        "openai-processing-ms",
        "openai-version",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "x-orca-sim",
    }
)
RESPONSE_HEADER_PREFIXES: tuple[str, ...] = ("x-ratelimit-", "anthropic-ratelimit-")


def filter_response_headers(headers: Iterable[tuple[str, str]]) -> Headers:
    """Keep only allow-listed upstream headers, names lower-cased; never framing or cookies."""
    allow = RESPONSE_HEADER_ALLOWLIST
    out: list[tuple[str, str]] = []
    for name, value in headers:
        low = name.lower()
        if (low in allow or low.startswith(RESPONSE_HEADER_PREFIXES)) and _safe_value(value):
            out.append((low, value))
    return tuple(out)


def _safe_value(value: str) -> bool:
    return "\n" not in value and "\r" not in value and "\x00" not in value


def header_value(headers: Iterable[tuple[str, str]], name: str) -> str | None:
    """The first value of header `name` (compared case-insensitively), or None."""
    low = name.lower()
    for k, v in headers:
        if k.lower() == low:
            return v
    return None


# --- request side (SPEC §1.2, §11) ----------------------------------------------------------


def auth_headers(api: Api, key: str) -> Headers:
    """The upstream credential in the format's own header (Bearer for both OpenAI formats)."""
    if api == "anthropic":
        return (("x-api-key", key),)
    return (("authorization", f"Bearer {key}"),)


def anthropic_version_header(client_headers: Iterable[tuple[str, str]]) -> Headers:
    """`anthropic-version` to add when the client sent none (a client's is forwarded as is)."""
    if header_value(client_headers, "anthropic-version") is None:
        return (("anthropic-version", ANTHROPIC_VERSION),)
    return ()


def upstream_url(channel_cfg: ChannelConfig, api: Api, path: str) -> str:
    """The upstream URL of endpoint `path` on a channel (one of `ENDPOINTS`): OpenAI's
    `https://api.openai.com/v1` + `/v1/responses` → `https://api.openai.com/v1/responses`.

    A base URL whose path already names an API version (`…/v1`, Gemini's `…/v1beta/openai`)
    gets the endpoint without its `/v1` prefix.
    """
    return _join(channel_cfg.base_url, api, path)


_VERSION_SEGMENT = re.compile(r"/v\d+[a-z0-9]*(?:/|$)")


@functools.lru_cache(maxsize=512)
def _join(base_url: str, api: str, path: str) -> str:
    want = ENDPOINTS.get(path)
    if want is None:
        raise ValueError(f"unknown upstream endpoint {path!r}; expected one of {list(ENDPOINTS)}")
    if want != api:
        raise ValueError(f"endpoint {path} speaks {want}, not {api}")
    base = base_url.rstrip("/")
    if _names_version(base):
        return base + path[3:]  # drop the endpoint's own "/v1"
    return base + path


def models_list_url(base_url: str) -> str:
    """The provider's model list (`GET /v1/models`, what `orca doctor --probe` reads) under a
    channel's base URL, by `upstream_url`'s rule: Anthropic's `https://api.anthropic.com` →
    `…/v1/models`, Gemini's `…/v1beta/openai` → `…/v1beta/openai/models`."""
    base = base_url.rstrip("/")
    return base + ("/models" if _names_version(base) else "/v1/models")


def _names_version(base: str) -> bool:
    slash = base.find("/", base.find("://") + 3)
    return slash > 0 and _VERSION_SEGMENT.search(base[slash:]) is not None
