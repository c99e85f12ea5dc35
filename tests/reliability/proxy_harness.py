"""Shared pieces of the sidecar reliability tests: a real server, a scripted loopback upstream.

`serve_sidecar` runs uvicorn + `OrcaApp` on 127.0.0.1:<free port> with the transports
`Runtime.build` picks (live `AiohttpTransport` for real channels, `SimTransport` for `sim`
ones), so every byte crosses real sockets. `fake_upstream` is a tiny aiohttp.web provider on
port 0 whose behaviour each test scripts per channel prefix (the first path segment of the
channel's `base_url`): a status with headers and body, a stall before the headers, an SSE
stream that stalls, drops its connection or never ends. It records every request it saw, and
which handlers ended because the peer went away (the proof that orca cancelled upstream).
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from aiohttp import web

from orca_cli.clock import SystemClock
from orca_cli.config.schema import Config
from orca_cli.proxy.app import OrcaApp
from orca_cli.proxy.guard import GuardPolicy
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.server import serve_in_background, stop_server
from orca_cli.proxy.transport import Transport
from orca_cli.state.base import ReadRequest, Store
from orca_cli.state.memory import MemoryStore

__all__ = [
    "ADMIN_TOKEN",
    "Act",
    "FakeUpstream",
    "Seen",
    "Sidecar",
    "anthropic_events",
    "closed_port",
    "fake_upstream",
    "fd_count",
    "openai_events",
    "rss_kib",
    "serve_sidecar",
    "sse_events",
    "state_keys",
    "tier_doc",
]

ADMIN_TOKEN = "admin-test-token-7f3a"


# --- the sidecar ------------------------------------------------------------------------------


@dataclass
class Sidecar:
    base: str
    port: int
    rt: Runtime
    store: Store
    http: httpx.AsyncClient


def _listening_socket() -> socket.socket:
    # proto IPPROTO_TCP makes asyncio set TCP_NODELAY on accepted sockets (no Nagle stalls).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@asynccontextmanager
async def serve_sidecar(cfg: Config, *, store: Store | None = None,
                        transports: Mapping[str, Transport] | None = None,
                        timeout_s: float = 15.0) -> AsyncIterator[Sidecar]:
    """A real server for `cfg`; stopped (lifespan shutdown closes transports) on exit."""
    clock = SystemClock()
    store = store if store is not None else MemoryStore(
        clock=clock, trace_max=cfg.server.trace_max, trace_ttl_s=cfg.server.trace_ttl_s)
    sock = _listening_socket()
    port = sock.getsockname()[1]
    rt = Runtime.build(cfg, store, clock=clock, transports=transports, admin_token=ADMIN_TOKEN)
    app = OrcaApp(rt, GuardPolicy.from_config(cfg.server, port=port, admin_token=ADMIN_TOKEN))
    server, task = await serve_in_background(app, cfg.server, "127.0.0.1", port, sock=sock)
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient(base_url=base, timeout=timeout_s) as http:
            yield Sidecar(base, port, rt, store, http)
    finally:
        await stop_server(server, task)


async def tier_doc(store: Store, router: str, session: str) -> dict[str, Any] | None:
    """The session's stored tier document (None when nothing was committed for it)."""
    snap = await store.read(ReadRequest(router=router, session=session))
    return snap.tier


async def state_keys(store: Store) -> dict[str, Any]:
    """Every non-trace key the store holds, with its value: what "no state written" compares."""
    out: dict[str, Any] = {}
    for kind in ("session", "router", "workspace"):
        for e in await store.scan(kind):
            out[f"{e.slot.kind}:{e.slot.router}:{e.slot.session}:{e.key}"] = e.value
    return out


# --- provider-shaped answers ------------------------------------------------------------------


def _sse(name: str | None, obj: Any) -> bytes:
    head = b"event: " + name.encode() + b"\n" if name else b""
    return head + b"data: " + orjson.dumps(obj) + b"\n\n"


def openai_events(text: str, model: str, *, finish: str = "stop",
                  usage: bool = True) -> list[bytes]:
    def chunk(delta: dict[str, Any], fin: str | None = None) -> bytes:
        return _sse(None, {"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 1,
                           "model": model,
                           "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]})

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": w + " "}) for w in text.split()]
    out.append(chunk({}, finish))
    if usage:
        out.append(_sse(None, {"id": "chatcmpl-up", "object": "chat.completion.chunk",
                               "created": 1, "model": model, "choices": [],
                               "usage": {"prompt_tokens": 20, "completion_tokens": 4,
                                         "total_tokens": 24}}))
    out.append(b"data: [DONE]\n\n")
    return out


def openai_body(text: str, model: str, *, finish: str = "stop") -> bytes:
    return orjson.dumps({
        "id": "chatcmpl-up", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                     "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 4, "total_tokens": 24}})


def anthropic_events(text: str, model: str, *, stop: str = "end_turn") -> list[bytes]:
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": "msg_up", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}})]
    out += [_sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": w + " "}})
            for w in text.split()]
    out += [_sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": stop, "stop_sequence": None},
                                   "usage": {"output_tokens": 4}}),
            _sse("message_stop", {"type": "message_stop"})]
    return out


def anthropic_body(text: str, model: str, *, stop: str = "end_turn") -> bytes:
    return orjson.dumps({
        "id": "msg_up", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}] if text else [], "stop_reason": stop,
        "stop_sequence": None, "usage": {"input_tokens": 20, "output_tokens": 4}})


def sse_events(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) of every complete SSE event in `raw`."""
    out: list[tuple[str | None, str]] = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        name: str | None = None
        data: list[str] = []
        for line in block.decode(errors="replace").split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if name is not None or data:
            out.append((name, "\n".join(data)))
    return out


# --- the scripted upstream --------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    prefix: str  # the channel's path prefix ("a" for base_url http://127.0.0.1:P/a/v1)
    path: str
    key: str  # the credential it carried (Authorization bearer or x-api-key)
    body: dict[str, Any]

    @property
    def api(self) -> str:
        return "anthropic" if self.path.endswith("/messages") else "openai"

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True


@dataclass(frozen=True)
class Act:
    """One scripted answer. With `body` None and `events` None a 2xx is a clean answer in
    the request's own format (streamed when asked), ending with `finish` and saying `text`.

    `stall_before_s` sleeps before the headers; a stream writes its events `gap_s` apart,
    sleeps `stall_s` after `stall_after` events, aborts the connection after `drop_after`
    events, and with `forever` repeats its first text delta until the peer goes away."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    events: tuple[bytes, ...] | None = None
    text: str = "the fix is in place"
    finish: str = ""
    stall_before_s: float = 0.0
    gap_s: float = 0.0
    stall_after: int | None = None
    stall_s: float = 0.0
    drop_after: int | None = None
    forever: bool = False


Script = Act | Callable[[Seen], Act]


@dataclass
class FakeUpstream:
    port: int = 0
    rules: dict[str, list[Script]] = field(default_factory=dict)  # prefix -> queue
    always: dict[str, Script] = field(default_factory=dict)  # prefix -> after the queue
    seen: list[Seen] = field(default_factory=list)
    peer_gone: list[Seen] = field(default_factory=list)  # handlers ended by a disconnect
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    events_written: int = 0

    def url(self, prefix: str, *, versioned: bool = True) -> str:
        return f"http://127.0.0.1:{self.port}/{prefix}" + ("/v1" if versioned else "")

    def on(self, prefix: str, *acts: Script) -> None:
        """Answer the next requests to `prefix` with `acts`, in order."""
        self.rules.setdefault(prefix, []).extend(acts)

    def calls(self, prefix: str) -> list[Seen]:
        return [s for s in self.seen if s.prefix == prefix]

    def _act(self, seen: Seen) -> Act:
        queue = self.rules.get(seen.prefix)
        step: Script = queue.pop(0) if queue else self.always.get(seen.prefix, Act())
        return step(seen) if callable(step) else step

    async def handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        auth = request.headers.get("authorization", "")
        key = auth.partition(" ")[2] if auth else request.headers.get("x-api-key", "")
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = {}
        seen = Seen(request.path.strip("/").split("/")[0], request.path, key,
                    body if isinstance(body, dict) else {})
        self.seen.append(seen)
        act = self._act(seen)
        try:
            return await self._answer(request, seen, act)
        except (asyncio.CancelledError, ConnectionResetError):
            self.peer_gone.append(seen)
            self.gone.set()
            raise

    async def _answer(self, request: web.Request, seen: Seen, act: Act) -> web.StreamResponse:
        if act.stall_before_s:
            await asyncio.sleep(act.stall_before_s)
        model = str(seen.body.get("model", "m"))
        anth = seen.api == "anthropic"
        if act.body is not None or (act.events is None and not seen.stream):
            body = act.body
            if body is None:
                body = (anthropic_body(act.text, model, stop=act.finish or "end_turn") if anth
                        else openai_body(act.text, model, finish=act.finish or "stop"))
            headers = {"content-type": "application/json", **dict(act.headers)}
            return web.Response(status=act.status, body=body, headers=headers)
        events = list(act.events) if act.events is not None else (
            anthropic_events(act.text, model, stop=act.finish or "end_turn") if anth
            else openai_events(act.text, model, finish=act.finish or "stop",
                               usage=bool((seen.body.get("stream_options") or {})
                                          .get("include_usage"))))
        resp = web.StreamResponse(status=act.status, headers={
            "content-type": "text/event-stream", **dict(act.headers)})
        await resp.prepare(request)
        if act.forever:  # a stream that never ends: the first delta again and again
            events = events[:2] + [events[2]] * 100_000
        for i, event in enumerate(events):
            if act.drop_after is not None and i == act.drop_after:
                assert request.transport is not None
                request.transport.abort()
                return resp
            if act.stall_after is not None and i == act.stall_after:
                await asyncio.sleep(act.stall_s)
            await resp.write(event)
            self.events_written += 1
            if act.gap_s:
                await asyncio.sleep(act.gap_s)
        await resp.write_eof()
        return resp


@asynccontextmanager
async def fake_upstream() -> AsyncIterator[FakeUpstream]:
    fake = FakeUpstream()
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    fake.port = runner.addresses[0][1]
    try:
        yield fake
    finally:
        await runner.cleanup()


def closed_port() -> int:
    """A loopback port with nothing listening (connects are refused)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


# --- process observations ---------------------------------------------------------------------


def rss_kib() -> int:
    """This process's resident set size (VmRSS), KiB."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("VmRSS not found in /proc/self/status")


def fd_count() -> int:
    """Open file descriptors of this process."""
    return len(os.listdir("/proc/self/fd"))
