"""A fake provider on a real loopback port, speaking every wire format orca forwards.

`fake_upstream()` runs an aiohttp.web server on port 0. A channel points at it with
`base_url = fake.url("a")`; requests are scripted per channel prefix (the first path segment):
a status with headers and body, a `Retry-After`, a stall before the headers, an SSE stream
that stalls, drops its connection mid-body or never ends. Without a script a request gets a
clean answer in its own format (Chat Completions, Messages or Responses; JSON or SSE as it
asked). Every request is recorded (`seen`), and so is every handler that ended because the
peer went away (`peer_gone`: the proof that orca cancelled upstream).

With `prompt_cache = True` a clean answer reports usage like a provider with a prompt cache:
the prompt is the request's model, system, tools and conversation (their bytes / 4 tokens,
without `cache_control` markers), and the tokens of its longest common prefix with an earlier
request to the same channel prefix are cache reads — so a conversation whose translation is
byte-stable turn after turn reports cached tokens from its second turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from multidict import CIMultiDict

from orca_cli.testing.sse import json_body, sse_stream
from orca_cli.types import Api

__all__ = ["Act", "FakeUpstream", "Handler", "Script", "Seen", "fake_upstream"]

# The usage a default answer reports (prompt / completion tokens).
PROMPT_TOKENS = 20
COMPLETION_TOKENS = 4


@dataclass(frozen=True)
class Seen:
    """One request the fake received."""

    prefix: str  # the channel's path prefix ("a" for base_url http://127.0.0.1:P/a/v1)
    path: str
    key: str  # the credential it carried (Authorization bearer or x-api-key)
    body: dict[str, Any]  # the JSON body ({} when it was not a JSON object)
    headers: Mapping[str, str] = field(default_factory=dict)  # case-insensitive
    method: str = "POST"
    raw: bytes = b""  # the body as sent
    peer_port: int = 0  # the client's port: which pooled connection carried it

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

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
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
    """The fake's script and record. `handler`, when set, answers every request itself (raw
    aiohttp control for transport-level tests) instead of the script."""

    port: int = 0
    handler: Handler | None = None
    rules: dict[str, list[Script]] = field(default_factory=dict)  # prefix -> queue
    always: dict[str, Script] = field(default_factory=dict)  # prefix -> after the queue
    seen: list[Seen] = field(default_factory=list)
    peer_gone: list[Seen] = field(default_factory=list)  # handlers ended by a disconnect
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    events_written: int = 0
    finished: int = 0  # handlers that returned (not ended by the peer going away)
    prompt_cache: bool = False  # report cache reads for a repeated prefix (module docstring)
    prompts: dict[str, list[bytes]] = field(default_factory=dict)  # prefix -> prompts seen

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def endpoint(self, path: str = "/v1/chat/completions") -> str:
        """A full URL on the fake (for a transport called directly)."""
        return self.base_url + path

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
        peer = request.transport.get_extra_info("peername") if request.transport else None
        seen = Seen(request.path.strip("/").split("/")[0], request.path, key,
                    body if isinstance(body, dict) else {}, CIMultiDict(request.headers),
                    request.method, raw, int(peer[1]) if peer else 0)
        self.seen.append(seen)
        try:
            if self.handler is not None:
                resp = await self.handler(request)
            else:
                resp = await self._answer(request, seen, self._act(seen))
        except (asyncio.CancelledError, ConnectionResetError):
            self.peer_gone.append(seen)
            self.gone.set()
            raise
        self.finished += 1
        return resp

    def _cache_usage(self, seen: Seen) -> tuple[int, int]:
        """(prompt tokens, of which cache reads) of `seen` under `prompt_cache`."""
        prompt = _prompt_bytes(seen.body)
        earlier = self.prompts.setdefault(seen.prefix, [])
        common = max((_common_prefix(prompt, e) for e in earlier), default=0)
        earlier.append(prompt)
        return max(1, len(prompt) // 4), common // 4

    async def _answer(self, request: web.Request, seen: Seen, act: Act) -> web.StreamResponse:
        if act.stall_before_s:
            await asyncio.sleep(act.stall_before_s)  # a fault the script asked for
        usage = self._cache_usage(seen) if self.prompt_cache else None
        if act.body is not None or (act.events is None and not seen.stream):
            body = act.body if act.body is not None else _clean_body(seen, act)
            if usage is not None and act.body is None:
                body = _with_usage(body, seen.api, *usage)
            return web.Response(status=act.status, body=body,
                                headers=act.all_headers("application/json"))
        events = list(act.events) if act.events is not None else _clean_events(seen, act)
        if usage is not None and act.events is None:
            events = [_event_with_usage(ev, seen.api, *usage) for ev in events]
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


def _strip_markers(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_markers(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_markers(v) for v in obj]
    return obj


_PROMPT_KEYS = ("model", "system", "instructions", "tools", "messages", "input")


def _prompt_bytes(body: dict[str, Any]) -> bytes:
    """The prompt a provider caches: model, system, tools and conversation as sent (sampling
    and length parameters, stream options and cache markers are not part of it)."""
    kept = {k: v for k, v in body.items() if k in _PROMPT_KEYS}
    return orjson.dumps(_strip_markers(kept))


def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _patch_usage(obj: Any, api: Api, total: int, cached: int) -> None:
    """Set the prompt side of every usage object in `obj` (an answer or an SSE event)."""
    if not isinstance(obj, dict):
        return
    for holder in (obj, obj.get("message"), obj.get("response")):
        u = holder.get("usage") if isinstance(holder, dict) else None
        if not isinstance(u, dict):
            continue
        if api == "anthropic" and "input_tokens" in u:
            u["input_tokens"], u["cache_read_input_tokens"] = total - cached, cached
        elif api == "responses" and "input_tokens" in u:
            u["input_tokens"], u["input_tokens_details"] = total, {"cached_tokens": cached}
            u["total_tokens"] = total + int(u.get("output_tokens") or 0)
        elif api == "openai" and "prompt_tokens" in u:
            u["prompt_tokens"], u["prompt_tokens_details"] = total, {"cached_tokens": cached}
            u["total_tokens"] = total + int(u.get("completion_tokens") or 0)


def _with_usage(body: bytes, api: Api, total: int, cached: int) -> bytes:
    obj = orjson.loads(body)
    _patch_usage(obj, api, total, cached)
    return orjson.dumps(obj)


def _event_with_usage(ev: bytes, api: Api, total: int, cached: int) -> bytes:
    head, sep, data = ev.partition(b"data: ")
    if not sep or data.startswith(b"[DONE]"):
        return ev
    obj = orjson.loads(data)
    _patch_usage(obj, api, total, cached)
    return head + sep + orjson.dumps(obj) + b"\n\n"


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
