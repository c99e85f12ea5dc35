"""End-to-end harness: a sidecar on a real port built from any config, provider-shaped
answers in both wire formats, and a scripted upstream `Transport`.

The scripted transport stands where a provider would (the upstream edge): it answers from a
script, one reply per attempt, and records every `UpstreamRequest` so a test can see which
channel and key each attempt used. Everything between the client and that edge — uvicorn,
the guard, the handler, routing, fallbacks, the relay, the store — is the real code.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from orca_cli.clock import Clock, SystemClock
from orca_cli.config.schema import Config
from orca_cli.errors import UpstreamError
from orca_cli.proxy.app import OrcaApp
from orca_cli.proxy.guard import GuardPolicy
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.server import serve_in_background, stop_server
from orca_cli.proxy.transport import (
    Headers,
    Timeouts,
    Transport,
    UpstreamRequest,
    UpstreamStreamError,
    header_value,
)
from orca_cli.state.base import Store
from orca_cli.state.memory import MemoryStore

__all__ = [
    "JSON",
    "Reply",
    "ScriptedResponse",
    "ScriptedTransport",
    "Sidecar",
    "Stack",
    "anthropic_json",
    "anthropic_sse",
    "ok_reply",
    "openai_json",
    "openai_sse",
    "serve",
    "sidecar_server",
    "sse_events",
]

JSON = {"content-type": "application/json"}
ADMIN_TOKEN = "admin-secret"


@dataclass
class Stack:
    """A running sidecar: its base URL, its runtime and an HTTP client pointed at it."""

    base: str
    rt: Runtime
    http: httpx.AsyncClient


def _listening_socket() -> socket.socket:
    """A bound loopback socket created with proto IPPROTO_TCP. asyncio sets TCP_NODELAY on
    accepted sockets only when the listener's proto is IPPROTO_TCP; `bind_socket`'s proto 0
    leaves Nagle on, which costs a delayed-ACK round (~40 ms) per keep-alive response on
    the default event loop."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
    except OSError:
        sock.close()
        raise
    return sock


@dataclass
class Sidecar:
    """One uvicorn server on a real port whose runtime each test swaps in with `use`
    (a server start and graceful stop cost about 0.2 s; a runtime costs nothing)."""

    app: OrcaApp
    base: str
    port: int
    http: httpx.AsyncClient

    @asynccontextmanager
    async def use(self, cfg: Config, *, store: Store | None = None,
                  transports: Mapping[str, Transport] | None = None,
                  clock: Clock | None = None) -> AsyncIterator[Stack]:
        """Serve `cfg` (its own store, transports, health and metrics) until the block ends."""
        clock = clock or SystemClock()
        store = store if store is not None else MemoryStore(clock=clock)
        rt = Runtime.build(cfg, store, clock=clock, transports=transports,
                           admin_token=ADMIN_TOKEN)
        before = (self.app.rt, self.app.policy)
        self.app.rt = rt
        self.app.policy = GuardPolicy.from_config(cfg.server, port=self.port,
                                                  admin_token=ADMIN_TOKEN)
        try:
            yield Stack(self.base, rt, self.http)
        finally:
            self.app.rt, self.app.policy = before
            await rt.aclose()


@asynccontextmanager
async def sidecar_server() -> AsyncIterator[Sidecar]:
    """uvicorn + OrcaApp on 127.0.0.1:<free port>, stopped (lifespan shutdown) on exit."""
    cfg = Config()
    clock = SystemClock()
    sock = _listening_socket()
    port = sock.getsockname()[1]
    idle = Runtime.build(cfg, MemoryStore(clock=clock), clock=clock, transports={},
                         admin_token=ADMIN_TOKEN)
    app = OrcaApp(idle, GuardPolicy.from_config(cfg.server, port=port, admin_token=ADMIN_TOKEN))
    server, task = await serve_in_background(app, cfg.server, "127.0.0.1", port, sock=sock)
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=10.0) as http:
            yield Sidecar(app, base, port, http)
    finally:
        await stop_server(server, task)


@asynccontextmanager
async def serve(cfg: Config, *, store: Store | None = None,
                transports: Mapping[str, Transport] | None = None,
                clock: Clock | None = None) -> AsyncIterator[Stack]:
    """A server of its own serving `cfg` (for a test that needs a fresh process view)."""
    async with sidecar_server() as sc, sc.use(cfg, store=store, transports=transports,
                                               clock=clock) as st:
        yield st


# --- provider-shaped answers ------------------------------------------------------------------


def openai_json(text: str = "done", model: str = "m", *, prompt_tokens: int = 12) -> bytes:
    return orjson.dumps({
        "id": "chatcmpl-e2e", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 3,
                  "total_tokens": prompt_tokens + 3}})


def openai_sse(parts: Sequence[str] = ("hel", "lo"), model: str = "m", *,
               usage: bool = True) -> list[bytes]:
    """One SSE event per list item: role, each text part, finish, usage (optional), [DONE]."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return b"data: " + orjson.dumps({
            "id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1,
            "model": model, "choices": [{"index": 0, "delta": delta,
                                         "finish_reason": finish}]}) + b"\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p}) for p in parts]
    out.append(chunk({}, "stop"))
    if usage:
        out.append(b"data: " + orjson.dumps({
            "id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 1,
            "model": model, "choices": [],
            "usage": {"prompt_tokens": 12, "completion_tokens": 2, "total_tokens": 14}})
            + b"\n\n")
    out.append(b"data: [DONE]\n\n")
    return out


def anthropic_json(text: str = "done", model: str = "m") -> bytes:
    return orjson.dumps({
        "id": "msg_e2e", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 3}})


def _event(name: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def anthropic_sse(parts: Sequence[str] = ("hel", "lo"), model: str = "m") -> list[bytes]:
    """message_start, one text block (a delta per part), message_delta, message_stop."""
    out = [_event("message_start", {"type": "message_start", "message": {
        "id": "msg_e2e", "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 1}}}),
        _event("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}})]
    out += [_event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": p}})
            for p in parts]
    out += [_event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _event("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                     "usage": {"output_tokens": 2}}),
            _event("message_stop", {"type": "message_stop"})]
    return out


def sse_events(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) of every complete SSE event in `raw`."""
    out: list[tuple[str | None, str]] = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        name: str | None = None
        data: list[str] = []
        for line in block.decode().split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if name is not None or data:
            out.append((name, "\n".join(data)))
    return out


# --- the scripted upstream --------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One scripted upstream answer. `chunks` is the streamed body (else `body`, whole);
    `break_after` raises a mid-body `UpstreamStreamError` after that many chunks;
    `error` is raised by `send` itself (a connect failure, a first-byte timeout)."""

    status: int = 200
    body: bytes = b""
    chunks: tuple[bytes, ...] = ()
    headers: Headers = (("content-type", "application/json"),)
    break_after: int | None = None
    error: UpstreamError | None = None


def _api_of(req: UpstreamRequest) -> str:
    return "anthropic" if req.url.endswith("/messages") else "openai"


def ok_reply(req: UpstreamRequest, text: str = "done") -> Reply:
    """A clean 2xx in the request's own wire format, streamed when it asked to stream."""
    model = str(orjson.loads(req.body).get("model", "m"))
    if _api_of(req) == "anthropic":
        if req.stream:
            return Reply(chunks=tuple(anthropic_sse((text,), model)),
                         headers=(("content-type", "text/event-stream"),))
        return Reply(body=anthropic_json(text, model))
    if req.stream:
        return Reply(chunks=tuple(openai_sse((text,), model)),
                     headers=(("content-type", "text/event-stream"),))
    return Reply(body=openai_json(text, model))


Step = Reply | Callable[[UpstreamRequest], Reply]


class ScriptedResponse:
    def __init__(self, reply: Reply) -> None:
        self.status = reply.status
        self.headers: Headers = tuple((k.lower(), v) for k, v in reply.headers)
        self._reply = reply
        self.closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        parts = self._reply.chunks or ((self._reply.body,) if self._reply.body else ())
        for i, part in enumerate(parts):
            if self._reply.break_after is not None and i >= self._reply.break_after:
                raise UpstreamStreamError("upstream connection broke mid-body: reset",
                                          retryable=i == 0)
            yield part
        if self._reply.break_after is not None:
            raise UpstreamStreamError("upstream connection broke mid-body: reset")

    async def read(self) -> bytes:
        return self._reply.body or b"".join(self._reply.chunks)

    async def aclose(self) -> None:
        self.closed = True


@dataclass
class ScriptedTransport:
    """Answers attempt N with `script[N]` (a Reply or a function of the request); after
    the script runs out, `then` (default: a clean answer in the request's format)."""

    script: list[Step] = field(default_factory=list)
    then: Step | None = None
    requests: list[UpstreamRequest] = field(default_factory=list)
    responses: list[ScriptedResponse] = field(default_factory=list)

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> ScriptedResponse:
        self.requests.append(req)
        step = self.script.pop(0) if self.script else (self.then or ok_reply)
        reply = step(req) if callable(step) else step
        if reply.error is not None:
            raise reply.error
        resp = ScriptedResponse(reply)
        self.responses.append(resp)
        return resp

    async def aclose(self) -> None:
        return None

    def credentials(self) -> list[str]:
        """The upstream credential each attempt carried, in order."""
        return [header_value(r.headers, "authorization") or header_value(r.headers, "x-api-key")
                or "" for r in self.requests]
