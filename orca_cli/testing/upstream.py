"""A fake provider on a real loopback port, speaking every wire format orca forwards.

`fake_upstream()` runs an aiohttp.web server on port 0. A channel points at it with
`base_url = fake.url("a")`; requests are scripted per channel prefix (the first path segment):
a status with headers and body, a `Retry-After`, a stall before the headers, an SSE stream
that stalls, drops its connection mid-body or never ends. Without a script a request gets a
clean answer in its own format (Chat Completions, Messages or Responses; JSON or SSE as it
asked). Every request is recorded (`seen`), and so is every handler that ended because the
peer went away (`peer_gone`: the proof that orca cancelled upstream).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from orca_cli.testing.sse import json_body, sse_stream
from orca_cli.types import Api

__all__ = ["Act", "FakeUpstream", "Script", "Seen", "fake_upstream"]

# The usage a default answer reports (prompt / completion tokens).
PROMPT_TOKENS = 20
COMPLETION_TOKENS = 4


@dataclass(frozen=True)
class Seen:
    """One request the fake received."""

    prefix: str  # the channel's path prefix ("a" for base_url http://127.0.0.1:P/a/v1)
    path: str
    key: str  # the credential it carried (Authorization bearer or x-api-key)
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def api(self) -> Api:
        if self.path.endswith("/messages"):
            return "anthropic"
        if self.path.endswith("/responses"):
            return "responses"
        return "openai"

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True


@dataclass(frozen=True)
class Act:
    """One scripted answer. With `body` None and `events` None a 2xx is a clean answer in
    the request's own format (streamed when asked), ending with `finish` and saying `text`.

    `retry_after` adds a Retry-After header; `stall_before_s` sleeps before the headers; a
    stream writes its events `gap_s` apart, sleeps `stall_s` after `stall_after` events,
    aborts the connection after `drop_after` events, and with `forever` repeats its first
    text delta until the peer goes away."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    events: tuple[bytes, ...] | None = None
    text: str = "the fix is in place"
    finish: str = ""
    retry_after: float | None = None
    stall_before_s: float = 0.0
    gap_s: float = 0.0
    stall_after: int | None = None
    stall_s: float = 0.0
    drop_after: int | None = None
    forever: bool = False

    def all_headers(self, content_type: str) -> dict[str, str]:
        out = {"content-type": content_type}
        if self.retry_after is not None:
            out["retry-after"] = f"{self.retry_after:g}"
        out.update(dict(self.headers))
        return out


Script = Act | Callable[[Seen], Act]


def _clean_body(seen: Seen, act: Act) -> bytes:
    model = str(seen.body.get("model", "m"))
    if seen.api == "anthropic":
        return json_body("anthropic", act.text, model, stop=act.finish or "end_turn",
                         input_tokens=PROMPT_TOKENS, output_tokens=COMPLETION_TOKENS,
                         id="msg_up")
    if seen.api == "responses":
        return json_body("responses", act.text, model, input_tokens=PROMPT_TOKENS,
                         output_tokens=COMPLETION_TOKENS, id="resp_up")
    return json_body("openai", act.text, model, finish=act.finish or "stop",
                     prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS,
                     id="chatcmpl-up")


def _clean_events(seen: Seen, act: Act) -> list[bytes]:
    model = str(seen.body.get("model", "m"))
    parts = [w + " " for w in act.text.split()]
    if seen.api == "anthropic":
        return sse_stream("anthropic", parts, model, stop=act.finish or "end_turn",
                          input_tokens=PROMPT_TOKENS, output_tokens=COMPLETION_TOKENS,
                          id="msg_up")
    if seen.api == "responses":
        return sse_stream("responses", parts, model, input_tokens=PROMPT_TOKENS,
                          output_tokens=COMPLETION_TOKENS, id="resp_up")
    usage = bool((seen.body.get("stream_options") or {}).get("include_usage"))
    return sse_stream("openai", parts, model, finish=act.finish or "stop", usage=usage,
                      prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS,
                      id="chatcmpl-up")


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
        """The `base_url` of a channel served under `prefix`."""
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
                    body if isinstance(body, dict) else {},
                    {k.lower(): v for k, v in request.headers.items()})
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
            await asyncio.sleep(act.stall_before_s)  # a fault the script asked for
        if act.body is not None or (act.events is None and not seen.stream):
            body = act.body if act.body is not None else _clean_body(seen, act)
            return web.Response(status=act.status, body=body,
                                headers=act.all_headers("application/json"))
        events = list(act.events) if act.events is not None else _clean_events(seen, act)
        resp = web.StreamResponse(status=act.status,
                                  headers=act.all_headers("text/event-stream"))
        await resp.prepare(request)
        if act.forever:  # a stream that never ends: the first delta again and again
            events = events[:2] + [events[2]] * 100_000
        for i, ev in enumerate(events):
            if act.drop_after is not None and i == act.drop_after:
                assert request.transport is not None
                request.transport.abort()
                return resp
            if act.stall_after is not None and i == act.stall_after:
                await asyncio.sleep(act.stall_s)  # a fault the script asked for
            await resp.write(ev)
            self.events_written += 1
            if act.gap_s:
                await asyncio.sleep(act.gap_s)  # pacing the script asked for
        await resp.write_eof()
        return resp


@asynccontextmanager
async def fake_upstream() -> AsyncIterator[FakeUpstream]:
    """A fake provider on 127.0.0.1:<free port>, stopped on exit."""
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
