"""The live-path upstream transport on aiohttp (SPEC §0, §7, §12; STYLE §4 rule 13).

One pooled `ClientSession` per upstream origin, created lazily inside the running loop and
closed by `aclose()` (the app's lifespan owns the transport). No cookie jar, no redirects.

Encoding: bodies are relayed byte for byte, so the transport never decompresses. It asks the
upstream for `accept-encoding: identity` (dropping any accept-encoding it was given), because
the response taps must read SSE and usage in clear text; should an upstream compress anyway,
`content-encoding` is on the response allow-list, so the client still gets bytes it can read.

Timeouts: `connect` and `sock_connect` are aiohttp's, `connect_s`. The wait for the response
headers is bounded by `min(first_byte_s, idle_s, time left)`, and each wait for a body chunk
by `min(idle_s, time left)`, on the transport's `Deadlines` (`proxy.deadlines`), where
`asyncio.timeout` and aiohttp's `sock_read` would arm and cancel a loop timer for every wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Literal

import aiohttp
from yarl import URL

from orca_cli.clock import Clock, SystemClock
from orca_cli.proxy.deadlines import Deadlines
from orca_cli.proxy.transport import (
    Headers,
    Timeouts,
    UpstreamConnectError,
    UpstreamRequest,
    UpstreamStreamError,
    UpstreamTimeout,
)

__all__ = ["AiohttpResponse", "AiohttpTransport"]

_URL_CACHE_MAX = 1024


def _origin(url: str) -> str:
    slash = url.find("/", url.find("://") + 3)
    return url if slash < 0 else url[:slash]


class AiohttpTransport:
    """`Transport` over pooled aiohttp sessions, one per upstream origin."""

    def __init__(
        self,
        *,
        limit: int = 256,
        keepalive_timeout_s: float = 30.0,
        clock: Clock | None = None,
    ) -> None:
        self._limit = limit
        self._keepalive = keepalive_timeout_s
        self._clock: Clock = clock or SystemClock()
        self._sessions: dict[str, aiohttp.ClientSession] = {}
        self._urls: dict[str, URL] = {}
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}
        self._deadlines = Deadlines()

    def _session(self, origin: str) -> aiohttp.ClientSession:
        session = self._sessions.get(origin)
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(
                limit=self._limit,
                limit_per_host=0,
                ttl_dns_cache=300,
                keepalive_timeout=self._keepalive,
            )
            session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                raise_for_status=False,
                trust_env=False,
            )
            self._sessions[origin] = session
        return session

    def _url(self, url: str) -> URL:
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) >= _URL_CACHE_MAX:
                self._urls.clear()
            parsed = self._urls[url] = URL(url)
        return parsed

    def _client_timeout(self, t: Timeouts) -> aiohttp.ClientTimeout:
        found = self._timeouts.get(t.connect_s)
        if found is None:
            if len(self._timeouts) >= 64:
                self._timeouts.clear()
            found = self._timeouts[t.connect_s] = aiohttp.ClientTimeout(
                total=None, connect=t.connect_s, sock_connect=t.connect_s, sock_read=None
            )
        return found

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> AiohttpResponse:
        remaining = timeouts.deadline_monotonic - self._clock.monotonic()
        if remaining <= 0:
            raise UpstreamTimeout("total", retryable=False)
        wait = min(timeouts.first_byte_s, timeouts.idle_s)
        phase: Literal["first_byte", "total"] = "first_byte" if wait <= remaining else "total"
        headers = [(k, v) for k, v in req.headers if k.lower() != "accept-encoding"]
        headers.append(("accept-encoding", "identity"))
        session = self._session(_origin(req.url))
        try:
            async with self._deadlines.after(min(wait, remaining)):
                resp = await session.request(
                    req.method,
                    self._url(req.url),
                    headers=headers,
                    data=req.body,
                    timeout=self._client_timeout(timeouts),
                    allow_redirects=False,
                )
        except aiohttp.ConnectionTimeoutError:
            raise UpstreamTimeout("connect") from None
        except TimeoutError:
            raise UpstreamTimeout(phase, retryable=phase == "first_byte") from None
        except aiohttp.ClientConnectorError as exc:
            raise UpstreamConnectError(
                f"upstream connect failed: {exc.os_error.strerror or exc.os_error}"
            ) from None
        except aiohttp.InvalidURL:
            raise UpstreamConnectError("upstream URL is invalid", retryable=False) from None
        except (aiohttp.ClientError, OSError) as exc:
            raise UpstreamConnectError(
                f"upstream failed before responding: {type(exc).__name__}"
            ) from None
        return AiohttpResponse(resp, timeouts, self._clock, self._deadlines)

    async def aclose(self) -> None:
        sessions, self._sessions = self._sessions, {}
        for session in sessions.values():
            await session.close()


class AiohttpResponse:
    __slots__ = (
        "_clock",
        "_closed",
        "_deadline",
        "_eof",
        "_idle",
        "_resp",
        "_watch",
        "_yielded",
        "headers",
        "status",
    )

    def __init__(self, resp: aiohttp.ClientResponse, timeouts: Timeouts, clock: Clock,
                 deadlines: Deadlines) -> None:
        self.status = resp.status
        self.headers: Headers = tuple(
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in resp.raw_headers
        )
        self._resp = resp
        self._deadline = timeouts.deadline_monotonic
        self._idle = timeouts.idle_s
        self._clock = clock
        self._watch = deadlines.watch()
        self._eof = False
        self._closed = False
        self._yielded = False

    async def _next_chunk(self) -> bytes:
        """One `readany`, bounded by `idle_s` and the time left; errors as the transport's.
        One `Watch` per response bounds every read (this runs once per event of a stream)."""
        remaining = self._deadline - self._clock.monotonic()
        if remaining <= 0:
            raise UpstreamTimeout("total", retryable=False)
        watch = self._watch
        watch.arm(min(remaining, self._idle))
        try:
            data = await self._resp.content.readany()
        except BaseException as exc:
            expired = watch.disarm()
            if (expired and isinstance(exc, asyncio.CancelledError)) or isinstance(
                    exc, TimeoutError):
                if remaining < self._idle:
                    raise UpstreamTimeout("total", retryable=False) from None
                raise UpstreamTimeout("idle", retryable=not self._yielded) from None
            if isinstance(exc, (aiohttp.ClientError, OSError)):
                raise UpstreamStreamError(
                    f"upstream connection broke mid-body: {type(exc).__name__}",
                    retryable=not self._yielded,
                ) from None
            raise
        watch.disarm()
        return data

    async def chunks(self) -> AsyncIterator[bytes]:
        while data := await self._next_chunk():
            self._yielded = True
            yield data
        self._eof = True

    async def read(self) -> bytes:
        parts: list[bytes] = []
        while data := await self._next_chunk():
            parts.append(data)
        self._eof = True
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._eof:
            self._resp.release()  # finished: the connection goes back to the pool
        else:
            self._resp.close()  # unfinished: abort, so the upstream sees the cancel
