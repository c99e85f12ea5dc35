"""The upstream transport on httpx (SPEC §0; STYLE §4 rules 13 and 20).

Same protocol as the aiohttp transport, for the CLI, `orca doctor --probe`, and tests with
respx or `httpx.MockTransport`; the live path uses aiohttp (httpx costs about 7 times the CPU, §12).
Every timeout is explicit: httpx's `read` is the idle timeout, `connect` and `pool` are
`connect_s`, and the wait for headers is `asyncio.timeout(min(first_byte_s, time left))`.
Bodies are read raw (`aiter_raw`), never decompressed, with `accept-encoding: identity` asked
of the upstream, exactly as the aiohttp transport does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Literal

import httpx

from orca_cli.clock import Clock, SystemClock
from orca_cli.proxy.transport import (
    Headers,
    Timeouts,
    UpstreamConnectError,
    UpstreamRequest,
    UpstreamStreamError,
    UpstreamTimeout,
)

__all__ = ["HttpxResponse", "HttpxTransport"]


class HttpxTransport:
    """`Transport` over one `httpx.AsyncClient` (built lazily unless one is given)."""

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        limit: int = 256,
        clock: Clock | None = None,
    ) -> None:
        self._client = client
        self._owns_client = client is None
        self._transport = transport
        self._limit = limit
        self._clock: Clock = clock or SystemClock()

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                transport=self._transport,
                limits=httpx.Limits(max_connections=self._limit, max_keepalive_connections=64),
                timeout=httpx.Timeout(10.0),
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> HttpxResponse:
        remaining = timeouts.deadline_monotonic - self._clock.monotonic()
        if remaining <= 0:
            raise UpstreamTimeout("total", retryable=False)
        phase: Literal["first_byte", "total"] = (
            "first_byte" if timeouts.first_byte_s <= remaining else "total"
        )
        client = self._get_client()
        headers = [(k, v) for k, v in req.headers if k.lower() != "accept-encoding"]
        headers.append(("accept-encoding", "identity"))
        timeout = httpx.Timeout(
            connect=timeouts.connect_s,
            read=timeouts.idle_s,
            write=timeouts.idle_s,
            pool=timeouts.connect_s,
        )
        request = client.build_request(
            req.method, req.url, headers=headers, content=req.body, timeout=timeout
        )
        try:
            async with asyncio.timeout(min(timeouts.first_byte_s, remaining)):
                resp = await client.send(request, stream=True)
        except (httpx.ConnectTimeout, httpx.PoolTimeout):
            raise UpstreamTimeout("connect") from None
        except (httpx.ReadTimeout, httpx.WriteTimeout):
            raise UpstreamTimeout("first_byte") from None
        except TimeoutError:
            raise UpstreamTimeout(phase, retryable=phase == "first_byte") from None
        except httpx.UnsupportedProtocol:
            raise UpstreamConnectError("upstream URL is invalid", retryable=False) from None
        except (httpx.TransportError, OSError) as exc:
            raise UpstreamConnectError(
                f"upstream failed before responding: {type(exc).__name__}"
            ) from None
        return HttpxResponse(resp, timeouts, self._clock)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.aclose()


class HttpxResponse:
    __slots__ = (
        "_clock",
        "_closed",
        "_deadline",
        "_idle",
        "_resp",
        "_whole",
        "_yielded",
        "headers",
        "status",
    )

    def __init__(self, resp: httpx.Response, timeouts: Timeouts, clock: Clock) -> None:
        self.status = resp.status_code
        self.headers: Headers = tuple(
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in resp.headers.raw
        )
        self._resp = resp
        self._deadline = timeouts.deadline_monotonic
        self._idle = timeouts.idle_s
        self._clock = clock
        self._closed = False
        self._yielded = False
        self._whole = False  # read(): nothing reaches the caller before the end

    async def chunks(self) -> AsyncIterator[bytes]:
        if self._resp.is_stream_consumed:  # a mock response built from bytes arrives read
            if self._resp.content:
                yield self._resp.content
            return
        it = self._resp.aiter_raw().__aiter__()
        try:
            while True:
                remaining = self._deadline - self._clock.monotonic()
                try:
                    if remaining <= 0:
                        raise TimeoutError
                    if remaining < self._idle:
                        async with asyncio.timeout(remaining):
                            data = await it.__anext__()
                    else:
                        data = await it.__anext__()
                except StopAsyncIteration:
                    return
                except httpx.ReadTimeout:
                    raise UpstreamTimeout("idle", retryable=not self._yielded) from None
                except TimeoutError:
                    raise UpstreamTimeout("total", retryable=False) from None
                except (httpx.TransportError, OSError) as exc:
                    raise UpstreamStreamError(
                        f"upstream connection broke mid-body: {type(exc).__name__}",
                        retryable=not self._yielded,
                    ) from None
                if data:
                    self._yielded = not self._whole
                    yield data
        finally:
            await it.aclose()  # type: ignore[attr-defined]

    async def read(self) -> bytes:
        self._whole = True
        parts = [chunk async for chunk in self.chunks()]
        return b"".join(parts)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._resp.aclose()  # an unfinished body closes (not pools) its connection
