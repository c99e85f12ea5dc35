"""The sim channel's Transport: one simulated provider answering in process (`__init__`)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from typing import Any, Literal

import orjson

from orca_cli.clock import Clock
from orca_cli.config.schema import ChannelConfig
from orca_cli.immutable import immutable
from orca_cli.proxy.sim import request as rq
from orca_cli.proxy.sim.answer import Answer
from orca_cli.proxy.sim.render import render_body, render_stream
from orca_cli.proxy.transport import (
    ENDPOINTS,
    Headers,
    Timeouts,
    UpstreamRequest,
    UpstreamStreamError,
    UpstreamTimeout,
)
from orca_cli.types import Api
from orca_cli.wire.errors import error_body

__all__ = ["SimCall", "SimFormatError", "SimResponse", "SimTransport"]

_CACHE_MAX = 50_000
_WORDS = ["the", "patch", "keeps", "the", "cache", "warm", "while", "the", "session", "stays", "pinned", "to", "one", "model", "and", "one", "key", "so", "each", "turn", "reuses", "the", "prefix", "and", "the", "answer", "arrives", "quickly", "with", "a", "small", "bill", "tests", "pass", "after", "the", "fix", "the", "parser", "handles", "every", "chunk", "boundary", "cleanly"]


class SimFormatError(RuntimeError):
    """A request reached a sim channel in a format its `api` does not list. orca translates
    such a request before sending it, so this is a bug in orca, never an upstream answer:
    it is raised (the sidecar logs it and answers 502), not simulated as an HTTP error a
    fallback could hide."""


@immutable
class SimCall:
    key_fp: str
    model: str
    stream: bool
    api: Api
    path: str
    status: int


class SimTransport:
    """A Transport answering in-process like an OpenAI, Anthropic or Responses endpoint."""

    def __init__(self, channel_cfg: ChannelConfig, clock: Clock) -> None:
        self.channel = channel_cfg
        self.clock = clock
        self.calls: list[SimCall] = []
        self.cancelled: list[SimCall] = []
        self._cache: dict[tuple[str, str, bytes], float] = {}
        self._seen_bodies: dict[bytes, int] = {}

    async def aclose(self) -> None:
        self._cache.clear()

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> SimResponse:
        path = rq.path_of(req.url)
        api = ENDPOINTS.get(path)
        key_fp = rq.key_fp(req.headers)
        if api is None or req.method.upper() != "POST":
            return self._error(
                "openai", 404, f"sim: no such endpoint {path}", key_fp, "", req, path
            )
        if api not in self.channel.apis:
            raise SimFormatError(
                f"sim channel {self.channel.name!r} speaks {list(self.channel.apis)} but was "
                f"sent a {api} request ({path}); it should have been translated")
        try:
            body = orjson.loads(req.body)
        except orjson.JSONDecodeError:
            return self._error(
                api, 400, "sim: the request body is not valid JSON", key_fp, "", req, path
            )
        if not isinstance(body, dict) or not isinstance(body.get("model"), str):
            return self._error(
                api, 400, "sim: the request needs a string `model`", key_fp, "", req, path
            )
        problem = _message_problem(body, api)
        if problem is not None:
            return self._error(api, 400, f"sim: {problem}", key_fp, "", req, path)
        model: str = body["model"]
        stream = body.get("stream") is True and path != "/v1/messages/count_tokens"

        await self._wait_first_byte(timeouts)
        digest = hashlib.blake2b(req.body, digest_size=16).digest()
        faults = self.channel.faults
        if faults.status and faults.rate > 0 and self._fault_draw(digest) < faults.rate:
            return self._error(
                api, faults.status, "sim: simulated upstream error", key_fp, model, req, path
            )
        call = SimCall(key_fp, model, stream, api, path, 200)
        self.calls.append(call)
        if path == "/v1/messages/count_tokens":
            tokens = sum(rq.prefix_tokens(body, api)[1]) if body.get("messages") else 1
            return SimResponse(
                self,
                call,
                200,
                rq.response_headers(api, False, digest),
                [orjson.dumps({"input_tokens": max(1, tokens)})],
                0,
            )
        answer = self._answer(body, api, key_fp, model, digest, b"cache_control" in req.body)
        if stream:
            include_usage = api != "openai" or bool(
                isinstance(body.get("stream_options"), dict)
                and body["stream_options"].get("include_usage")
            )
            parts = render_stream(api, answer, include_usage)
            return SimResponse(
                self, call, 200, rq.response_headers(api, True, digest), parts, faults.after_bytes
            )
        return SimResponse(
            self, call, 200, rq.response_headers(api, False, digest), [render_body(api, answer)], 0
        )

    # --- pieces --------------------------------------------------------------------------------

    async def _wait_first_byte(self, timeouts: Timeouts) -> None:
        delay = self.channel.latency_ms / 1000 + self.channel.faults.stall_s
        remaining = timeouts.deadline_monotonic - self.clock.monotonic()
        if remaining <= 0:
            raise UpstreamTimeout("total", retryable=False)
        bound = min(timeouts.first_byte_s, remaining)
        if delay > bound:
            await asyncio.sleep(bound)
            phase: Literal["first_byte", "total"] = (
                "first_byte" if timeouts.first_byte_s <= remaining else "total"
            )
            raise UpstreamTimeout(phase, retryable=phase == "first_byte")
        if delay > 0:
            await asyncio.sleep(delay)

    def _fault_draw(self, digest: bytes) -> float:
        n = self._seen_bodies.get(digest, 0)
        if len(self._seen_bodies) >= _CACHE_MAX:
            self._seen_bodies.clear()
        self._seen_bodies[digest] = n + 1
        h = hashlib.blake2b(digest + n.to_bytes(8, "big"), digest_size=8).digest()
        return int.from_bytes(h, "big") / 2**64

    def _error(
        self,
        api: Api,
        status: int,
        message: str,
        key_fp: str,
        model: str,
        req: UpstreamRequest,
        path: str,
    ) -> SimResponse:
        self.calls.append(SimCall(key_fp, model, req.stream, api, path, status))
        headers: list[tuple[str, str]] = [
            ("content-type", "application/json"),
            ("x-orca-sim", "1"),
            ("x-should-retry", "true" if status == 429 or status >= 500 else "false"),
        ]
        if status == 429:
            headers.append(("retry-after", "1"))
        call = self.calls[-1]
        return SimResponse(
            self, call, status, tuple(headers), [error_body(api, status, message)], 0
        )

    def _answer(
        self,
        body: dict[str, Any],
        api: Api,
        key_fp: str,
        model: str,
        digest: bytes,
        has_cache_control: bool,
    ) -> Answer:
        digests, sizes = rq.prefix_tokens(body, api, has_cache_control)
        prompt = max(1, sum(sizes))
        cached = self._cache_lookup(key_fp, model, digests, sizes)
        write = 0
        if api == "anthropic" and has_cache_control:
            write = prompt - cached
        seed = int.from_bytes(digest[:8], "big")
        if api == "responses":
            max_tokens = body.get("max_output_tokens")
        else:
            max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        limit = max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else None
        called = rq.tool_call(body, api, digest)
        tool, tool_kind = called if called is not None else (None, "function")
        finish = "tool_calls" if tool else "stop"
        text = ""
        if tool is None:
            n_words = 12 + seed % 40
            if limit is not None and limit < n_words:
                n_words, finish = limit, "length"
            words = [_WORDS[(seed // (i + 1) + i * 7) % len(_WORDS)] for i in range(n_words)]
            text = "[sim] " + " ".join(words)
        forced = self.channel.faults.finish_reason
        if forced:
            finish = forced
        output = max(1, (len(text) + 3) // 4) if tool is None else max(1, len(tool[2]) // 4 + 8)
        return Answer(
            id_hex=digest.hex()[:24],
            model=model,
            created=int(self.clock.now()),
            text=text,
            tool=tool,
            finish=finish,
            prompt_tokens=prompt,
            cached_tokens=cached,
            cache_write_tokens=write,
            output_tokens=output,
            tool_kind=tool_kind,
            request=body if api == "responses" else None,
        )

    def _cache_lookup(self, key_fp: str, model: str, digests: list[bytes], sizes: list[int]) -> int:
        now = self.clock.now()
        cache = self._cache
        cached = 0
        # sizes[0] is system + tools; digests[k] covers it plus messages[0..k].
        for k in range(len(digests) - 1, -1, -1):
            expires = cache.get((key_fp, model, digests[k]))
            if expires is not None and expires > now:
                cached = sum(sizes[: k + 2])
                break
        expiry = now + self.channel.cache_ttl_s
        for d in digests:
            entry = (key_fp, model, d)
            cache.pop(entry, None)
            cache[entry] = expiry
        if len(cache) > _CACHE_MAX:
            for entry in [e for e, exp in cache.items() if exp <= now]:
                del cache[entry]
            while len(cache) > _CACHE_MAX:
                del cache[next(iter(cache))]
        return cached


class SimResponse:
    """A simulated response; `chunks()` yields one SSE event (or the body) at a time."""

    def __init__(
        self,
        owner: SimTransport,
        call: SimCall,
        status: int,
        headers: Headers,
        parts: list[bytes],
        after_bytes: int,
    ) -> None:
        self.status = status
        self.headers = headers
        self._owner = owner
        self._call = call
        self._parts = parts
        self._after = after_bytes
        self._done = False
        self._closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        sent = 0
        for part in self._parts:
            if self._closed:
                return
            if self._after and sent + len(part) > self._after:
                cut = self._after - sent
                self._done = True
                if cut > 0:
                    yield part[:cut]
                raise UpstreamStreamError("sim: connection dropped mid-stream (after_bytes fault)")
            sent += len(part)
            yield part
        self._done = True

    async def read(self) -> bytes:
        self._done = True
        return b"".join(self._parts)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self._done and self._call.stream:
            self._owner.cancelled.append(self._call)


_ROLES: dict[str, frozenset[str]] = {
    "openai": frozenset({"system", "developer", "user", "assistant", "tool", "function"}),
    # Claude Code sends a `system` message inside `messages` (tests/agents/CAPTURES.md), and
    # Anthropic's API takes it.
    "anthropic": frozenset({"user", "assistant", "system"}),
}


def _message_problem(body: dict[str, Any], api: Api) -> str | None:
    """What a provider refuses inside the messages, as a real one answers 400 for it: a
    message that is no object, a role its format has not, content of the wrong type (orca
    checks only the top-level fields before sending)."""
    roles = _ROLES.get(api)
    messages = body.get("messages")
    if roles is None or not isinstance(messages, list):
        return None
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return f"messages[{i}] must be an object"
        if m.get("role") not in roles:
            return f"messages[{i}].role must be one of {', '.join(sorted(roles))}"
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            return f"messages[{i}].content must be a string or an array"
    return None
