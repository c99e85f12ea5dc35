"""A lean HTTP/1.1 load generator for loopback benchmarks (SPEC §12).

The client must cost much less than what it measures, and its own cost must be the same for
every target, so it is an asyncio `Protocol` with the httptools response parser (the C
parser uvicorn uses): one keep-alive connection per worker, requests pre-encoded except for
two short per-request headers, and times taken with `perf_counter_ns` inside the parser
callbacks — the moment bytes arrive, not when a task is next scheduled.

`run_load` is bounded twice: by a request count and by a time limit (the count is then
reported short). A request that never completes ends the run with an error once the time
limit plus a grace period has passed; nothing here can loop forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import httptools

__all__ = ["Endpoint", "LoadResult", "fetch", "percentile", "run_load"]

GRACE_S = 30.0  # past the time limit, in-flight requests get this long before the run fails
_perf_ns = time.perf_counter_ns


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a request goes and what it looks like apart from its per-request headers."""

    host: str
    port: int
    path: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class LoadResult:
    """Per-request times in nanoseconds, in completion order."""

    total_ns: list[int] = field(default_factory=list)
    first_byte_ns: list[int] = field(default_factory=list)
    wall_s: float = 0.0
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    body_bytes: int = 0  # of the last response

    @property
    def count(self) -> int:
        return len(self.total_ns)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]) of unsorted `values`; 0.0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100.0 * len(ordered) + 0.5)))
    return float(ordered[rank - 1])


class _Connection(asyncio.Protocol):
    """One keep-alive client connection; one request in flight at a time."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[int] | None = None
        self.first_ns = 0
        self.status = 0
        self.nbytes = 0
        self.keep_alive = True
        self.capture: list[bytes] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        w = self.waiter
        if w is not None and not w.done():
            w.set_exception(ConnectionError("the server closed the connection mid-response"))

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            w = self.waiter
            if w is not None and not w.done():
                w.set_exception(ConnectionError(f"unparsable response: {exc}"))

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if not self.first_ns:
            self.first_ns = _perf_ns()
        self.nbytes += len(body)
        if self.capture is not None:
            self.capture.append(body)

    def on_message_complete(self) -> None:
        w = self.waiter
        if w is not None and not w.done():
            w.set_result(_perf_ns())

    def send(self, parts: Sequence[bytes]) -> asyncio.Future[int]:
        assert self.transport is not None
        self.first_ns = self.status = self.nbytes = 0
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.writelines(parts)
        return self.waiter


async def _connect(ep: Endpoint) -> _Connection:
    loop = asyncio.get_running_loop()
    _, proto = await loop.create_connection(_Connection, ep.host, ep.port)
    return proto


def _head(ep: Endpoint, body_len: int) -> bytes:
    lines = [f"POST {ep.path} HTTP/1.1", f"Host: {ep.host}:{ep.port}",
             "Content-Type: application/json", f"Content-Length: {body_len}",
             *(f"{k}: {v}" for k, v in ep.headers)]
    return ("\r\n".join(lines) + "\r\n").encode("latin-1")


async def fetch(ep: Endpoint, body: bytes, session: str = "bench-probe",
                timeout_s: float = 60.0) -> tuple[int, bytes]:
    """One request on a fresh connection: (status, body). For checks, not for timing."""
    conn = await _connect(ep)
    conn.capture = []
    try:
        extra = f"X-Orca-Session: {session}\r\nX-Request-Id: probe-{_perf_ns()}\r\n\r\n"
        async with asyncio.timeout(timeout_s):
            await conn.send([_head(ep, len(body)), extra.encode(), body])
        return conn.status, b"".join(conn.capture)
    finally:
        if conn.transport is not None:
            conn.transport.close()


async def run_load(ep: Endpoint, body: bytes, *, requests: int, concurrency: int,
                   max_s: float, session_prefix: str,
                   session_per_request: bool = False) -> LoadResult:
    """`requests` requests from `concurrency` workers, each on its own connection and with
    its own session id (`<session_prefix>-<worker>`), stopping early after `max_s`. With
    `session_per_request`, every request opens a new session instead (`<session_prefix>-r<n>`)."""
    res = LoadResult()
    head = _head(ep, len(body))
    issued = 0
    start = time.perf_counter()
    deadline = start + max_s

    async def worker(w: int) -> None:
        nonlocal issued
        session = f"{session_prefix}-{w}".encode()
        conn = await _connect(ep)
        try:
            while issued < requests and time.perf_counter() < deadline:
                issued += 1
                n = issued
                if conn.transport is None or not conn.keep_alive:
                    conn = await _connect(ep)
                sid = b"%s-r%d" % (session_prefix.encode(), n) if session_per_request else session
                extra = b"X-Orca-Session: %s\r\nX-Request-Id: %s-%d\r\n\r\n" % (
                    sid, session, n)
                t0 = _perf_ns()
                try:
                    t1 = await conn.send((head, extra, body))
                except ConnectionError:
                    res.errors += 1
                    conn = await _connect(ep)
                    continue
                status = conn.status
                res.statuses[status] = res.statuses.get(status, 0) + 1
                if status != 200:
                    res.errors += 1
                    continue
                res.total_ns.append(t1 - t0)
                res.first_byte_ns.append((conn.first_ns or t1) - t0)
                res.body_bytes = conn.nbytes
        finally:
            if conn.transport is not None:
                conn.transport.close()

    async with asyncio.timeout(max_s + GRACE_S):
        tasks = [asyncio.ensure_future(worker(w)) for w in range(concurrency)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            for t in tasks:
                with contextlib.suppress(BaseException):
                    await t
    res.wall_s = time.perf_counter() - start
    return res
