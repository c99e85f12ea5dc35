"""A coding agent driving a real sidecar over a real store, and what the reliability tests read.

Everything between the HTTP client and the `sim` channels is the production code: uvicorn,
the guard, the handler, routing, the StoreGate and the Redis store. The config is small and
made for these tests: one session-aware router `coding` whose base tier is `deepseek-chat`
(channel `sim-cheap`) and whose strong tier is `gpt-4.1` (channel `sim-frontier`), with the
escalation caps a test asks for.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import orjson

from orca_cli.clock import Clock, SystemClock
from orca_cli.config.load import loads
from orca_cli.config.schema import Config
from orca_cli.proxy.runtime import Runtime
from orca_cli.state.base import CommitBatch, CommitResult, ReadRequest, Snapshot, Store
from orca_cli.state.factory import open_store
from orca_cli.testing import Sidecar, sidecar

__all__ = ["Agent", "RecordingStore", "Reply", "make_config", "serve_agent"]

ROUTER = "coding"
BASE_MODEL = "deepseek-chat"
STRONG_MODEL = "gpt-4.1"


def make_config(*, backend: str = "redis", redis_url: str = "", redis_mode: str = "single",
                sentinels: tuple[str, ...] = (), prefix: str = "orca", timeout_ms: int = 250,
                share_cap: float = 1.0, workspace_cap: float = 1.0, warmup: int = 1,
                max_per_session: int = 1, base_latency_ms: int = 0,
                strong_latency_ms: int = 0) -> Config:
    state = [f'backend = "{backend}"', f'redis_mode = "{redis_mode}"',
             f'key_prefix = "{prefix}"', f"timeout_ms = {timeout_ms}"]
    if redis_url:
        state.append(f'redis_url = "{redis_url}"')
    if sentinels:
        state.append("sentinels = [" + ", ".join(f'"{s}"' for s in sentinels) + "]")
    text = f"""
[server]
max_concurrency = 512

[state]
{chr(10).join(state)}

[workspace]
share_cap = {workspace_cap}

[[channels]]
name = "sim-cheap"
type = "sim"
api = "openai"
keys = ["sim-cheap-key-1"]
models = ["{BASE_MODEL}"]
latency_ms = {base_latency_ms}

[[channels]]
name = "sim-frontier"
type = "sim"
api = "openai"
keys = ["sim-frontier-key-1"]
models = ["{STRONG_MODEL}"]
latency_ms = {strong_latency_ms}

[routers.{ROUTER}]
strategy = "cheapest"
allowed_models = ["{BASE_MODEL}", "{STRONG_MODEL}"]
strong_pool = ["{STRONG_MODEL}"]

[routers.{ROUTER}.escalation]
mode = "auto"
max_per_session = {max_per_session}
share_cap = {share_cap}
warmup_requests = {warmup}
"""
    return loads(text, source="reliability", environ={})


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    tier: str  # the X-Orca-Session-Tier header, e.g. "strong; reason=explicit"
    model: str
    request_id: str
    elapsed_s: float
    body: dict[str, Any]

    @property
    def served_strong(self) -> bool:
        return self.tier.startswith("strong")


class RecordingStore:
    """The real store, with a log of every commit's outcome by request id.

    An entry is `(request_id, outcome)`: the slot statuses joined (`applied`, `duplicate`,
    `applied,duplicate`), `trace` for a batch without slot writes, or the exception's name.
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.log: list[tuple[str, str]] = []
        self.faults: list[str] = []  # every failed read, commit or ping, with its cause
        self.reads_done = 0  # reads that returned a snapshot

    @property
    def backend(self) -> str:
        return self.inner.backend

    def _fault(self, op: str, exc: BaseException) -> None:
        self.faults.append(f"{op}: {exc} ({exc.__cause__!r})")

    async def read(self, req: ReadRequest) -> Snapshot:
        try:
            snap = await self.inner.read(req)
        except Exception as exc:
            self._fault("read", exc)
            raise
        self.reads_done += 1
        return snap

    async def ping(self) -> None:
        try:
            await self.inner.ping()
        except Exception as exc:
            self._fault("ping", exc)
            raise

    async def commit(self, batch: CommitBatch) -> CommitResult:
        try:
            res = await self.inner.commit(batch)
        except Exception as exc:
            self.log.append((batch.request_id, type(exc).__name__))
            self._fault("commit", exc)
            raise
        statuses = ",".join(sorted({r.status for r in res.results})) or "trace"
        self.log.append((batch.request_id, statuses))
        return res

    def outcomes(self, request_id: str) -> list[str]:
        return [o for rid, o in self.log if rid == request_id]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Agent:
    """A coding agent's side of a served sidecar: chat turns of the router `coding`, each
    reply kept, over a store that logs every commit (`RecordingStore`)."""

    def __init__(self, sidecar: Sidecar) -> None:
        self.sidecar = sidecar
        self.http = sidecar.http
        self.base = sidecar.url
        self.replies: list[Reply] = []
        self.turns = 0

    @property
    def rt(self) -> Runtime:
        return self.sidecar.rt

    @property
    def store(self) -> RecordingStore:
        store = self.rt.gate.store
        assert isinstance(store, RecordingStore)
        return store

    def reply_of(self, request_id: str) -> Reply:
        return next(r for r in self.replies if r.request_id == request_id)

    async def chat(self, session: str, text: str = "", *,
                   tier: str | None = None, request_id: str | None = None,
                   stream: bool = False, settle: bool = True) -> Reply:
        """One chat completion of `session`; never raises on an HTTP status.

        The sidecar commits after the last byte, so a client that fires its next turn at once
        could read state from before this turn's commit; an agent never answers that fast.
        `settle` waits (bounded) until this request's handler has returned (its commit sent,
        held or not needed). Each call is a new turn (its own text): an identical body is a
        retry of the same turn by its dedupe key (SPEC §6.3), which applies nothing.
        """
        self.turns += 1
        text = text or f"turn {self.turns}: rename the helper in utils.py"
        headers = {"x-orca-session": session}
        if tier is not None:
            headers["x-orcarouter-tier"] = tier
        if request_id is not None:
            headers["x-request-id"] = request_id
        body = {"model": f"orca/{ROUTER}", "stream": stream,
                "messages": [{"role": "user", "content": text}]}
        started = time.monotonic()
        resp = await self.http.post("/v1/chat/completions", json=body, headers=headers)
        elapsed = time.monotonic() - started
        doc: dict[str, Any] = {}
        if not stream and resp.headers.get("content-type", "").startswith("application/json"):
            doc = orjson.loads(resp.content)
        reply = Reply(resp.status_code, resp.headers.get("x-orca-session-tier", ""),
                      resp.headers.get("x-orca-model", ""),
                      resp.headers.get("x-orca-request-id", ""), elapsed, doc)
        self.replies.append(reply)
        if settle and reply.request_id:
            await self.sidecar.settled(reply.request_id, timeout=10)
        return reply

    async def healthz(self) -> dict[str, Any]:
        return await self.sidecar.healthz()


@asynccontextmanager
async def serve_agent(cfg: Config, *, store: Store | None = None,
                      clock: Clock | None = None) -> AsyncIterator[Agent]:
    """A sidecar on 127.0.0.1:<free port> over `cfg.state` (or `store`), and its agent."""
    clock = clock or SystemClock()
    if store is None:
        store = open_store(cfg.state, clock=clock)
    async with sidecar(cfg, store=RecordingStore(store), clock=clock,  # type: ignore[arg-type]
                       admin_token=None) as sc:
        yield Agent(sc)
