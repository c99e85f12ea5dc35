"""The `sim` channel: a simulated provider behind the Transport protocol (SPEC §2).

In-process, no sockets. It speaks both wire formats, chosen by the URL path
(`/v1/chat/completions`, `/v1/messages`, `/v1/messages/count_tokens`), streaming and not,
with SSE bytes shaped like the real APIs'. Everything it says is labelled simulated: the
`x-orca-sim: 1` header, ids with `sim`, and answer text starting with `[sim]`.

Rules (documented here because `orca demo`, replay and tests build on them):
- Answers are deterministic: derived from a hash of the request body.
- Prompt cache per (key fingerprint, model, exact prefix), with the channel's `cache_ttl_s`
  (default 300 s) measured on the given clock. A prefix is system + tools + messages[0..k];
  cached tokens are the estimated tokens (bytes/4 of each part's JSON) of the longest prefix
  seen before and still live. Every prefix of a request is then recorded. Reads work for both
  formats; Anthropic `cache_creation_input_tokens` reports the uncached rest only when the body
  carries a `cache_control` marker (else 0). The map is bounded (LRU, `_CACHE_MAX` entries).
- Tool calls: when the request defines tools and its last message is a user text message
  containing `[tool]`, the answer is a call of the first tool (OpenAI `tool_calls`, Anthropic
  `tool_use` with `input_json_delta` deltas), its required arguments filled by JSON type.
- `latency_ms` and `faults.stall_s` sleep before the first byte, bounded by the first-byte
  timeout and the deadline (then `UpstreamTimeout`). `faults.status` answers that status on a
  `faults.rate` fraction of attempts: the draw hashes the body with the number of times this
  instance saw that body, so retries of one body draw afresh yet the sequence is reproducible.
  `faults.after_bytes` breaks a stream after that many bytes (`UpstreamStreamError`);
  `faults.finish_reason` ends a 200 answer with that reason (Anthropic maps `length` to
  `max_tokens`; an Anthropic stream with `error` ends with an `event: error` instead).
- Observations for tests: `calls` (every attempt) and `cancelled` (streams closed before end).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from orca_cli.clock import Clock
from orca_cli.config.schema import ChannelConfig
from orca_cli.proxy.transport import (
    ENDPOINTS,
    Headers,
    Timeouts,
    UpstreamRequest,
    UpstreamStreamError,
    UpstreamTimeout,
)
from orca_cli.wire.errors import error_body

__all__ = ["TOOL_MARKER", "SimCall", "SimResponse", "SimTransport"]

TOOL_MARKER = "[tool]"
_CACHE_MAX = 50_000
_WORDS = (
    "the patch keeps the cache warm while the session stays pinned to one model and one key "
    "so each turn reuses the prefix and the answer arrives quickly with a small bill "
    "tests pass after the fix the parser handles every chunk boundary cleanly"
).split()


@dataclass(frozen=True, slots=True)
class SimCall:
    key_fp: str
    model: str
    stream: bool
    api: Literal["openai", "anthropic"]
    path: str
    status: int


class SimTransport:
    """A Transport answering in-process like an OpenAI or Anthropic endpoint."""

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
        path = _path_of(req.url)
        api = ENDPOINTS.get(path)
        key_fp = _key_fp(req.headers)
        if api is None or req.method.upper() != "POST":
            return self._error(
                "openai", 404, f"sim: no such endpoint {path}", key_fp, "", req, path
            )
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
        model: str = body["model"]
        stream = bool(body.get("stream")) and path != "/v1/messages/count_tokens"

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
            tokens = sum(_prefix_tokens(body, api)[1]) if body.get("messages") else 1
            return SimResponse(
                self,
                call,
                200,
                _headers(api, False, digest),
                [orjson.dumps({"input_tokens": max(1, tokens)})],
                0,
            )
        answer = self._answer(body, api, key_fp, model, digest, b"cache_control" in req.body)
        if stream:
            include_usage = api == "anthropic" or bool(
                isinstance(body.get("stream_options"), dict)
                and body["stream_options"].get("include_usage")
            )
            parts = render_stream(api, answer, include_usage)
            return SimResponse(
                self, call, 200, _headers(api, True, digest), parts, faults.after_bytes
            )
        return SimResponse(
            self, call, 200, _headers(api, False, digest), [render_body(api, answer)], 0
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
        api: Literal["openai", "anthropic"],
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
        api: Literal["openai", "anthropic"],
        key_fp: str,
        model: str,
        digest: bytes,
        has_cache_control: bool,
    ) -> Answer:
        digests, sizes = _prefix_tokens(body, api)
        prompt = max(1, sum(sizes))
        cached = self._cache_lookup(key_fp, model, digests, sizes)
        write = 0
        if api == "anthropic" and has_cache_control:
            write = prompt - cached
        seed = int.from_bytes(digest[:8], "big")
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        limit = max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else None
        tool = _tool_call(body, api, digest)
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


# --- request reading -----------------------------------------------------------------------------


def _path_of(url: str) -> str:
    start = url.find("://")
    slash = url.find("/", start + 3 if start >= 0 else 0)
    path = url[slash:] if slash >= 0 else "/"
    q = path.find("?")
    path = path if q < 0 else path[:q]
    if not path.startswith("/v1/"):
        at = path.find("/v1/")  # a base URL with a path prefix (…/api/v1/messages)
        path = path[at:] if at >= 0 else path
    return path.rstrip("/")


def _key_fp(headers: Headers) -> str:
    for name, value in headers:
        low = name.lower()
        if low == "x-api-key":
            return hashlib.sha256(value.encode()).hexdigest()[:8]
        if low == "authorization" and value[:7].lower() == "bearer ":
            return hashlib.sha256(value[7:].encode()).hexdigest()[:8]
    return ""


def _prefix_tokens(body: dict[str, Any], api: str) -> tuple[list[bytes], list[int]]:
    """Digests of system+tools+messages[0..k] for every k, and the token size of each part
    (sizes[0] = system + tools, sizes[k + 1] = messages[k])."""
    base = orjson.dumps([body.get("system") if api == "anthropic" else None, body.get("tools")])
    h = hashlib.blake2b(base, digest_size=16)
    sizes = [len(base) // 4]
    digests: list[bytes] = []
    messages = body.get("messages")
    for msg in messages if isinstance(messages, list) else ():
        raw = orjson.dumps(msg)
        h.update(raw)
        digests.append(h.copy().digest())
        sizes.append(max(1, len(raw) // 4))
    return digests, sizes


def _last_user_text(body: dict[str, Any]) -> str:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return ""
    last = messages[-1]
    if last.get("role") != "user":
        return ""
    content = last.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict) or block.get("type") not in ("text", "input_text"):
            return ""  # a tool result (or an image) is not a user text message
        texts.append(str(block.get("text", "")))
    return "\n".join(texts)


def _tool_call(body: dict[str, Any], api: str, digest: bytes) -> tuple[str, str, str] | None:
    """(call id, tool name, arguments JSON) when the tool rule fires, else None."""
    tools = body.get("tools")
    if not isinstance(tools, list) or not tools or not isinstance(tools[0], dict):
        return None
    if TOOL_MARKER not in _last_user_text(body):
        return None
    first = tools[0]
    spec = first.get("function", first) if api == "openai" else first
    if not isinstance(spec, dict):
        return None
    name = str(spec.get("name", "tool"))
    schema = spec.get("parameters" if api == "openai" else "input_schema") or {}
    args: dict[str, Any] = {}
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    required = schema.get("required", []) if isinstance(schema, dict) else []
    for prop in required if isinstance(required, list) else ():
        ptype = props.get(prop, {}).get("type") if isinstance(props.get(prop), dict) else None
        args[str(prop)] = _FILL.get(ptype, f"sim-{digest.hex()[:8]}")
    prefix = "toolu_sim_" if api == "anthropic" else "call_sim_"
    return prefix + digest.hex()[:16], name, orjson.dumps(args).decode()


_FILL: dict[Any, Any] = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
# Any other type (string included) gets a "sim-<hex>" string.


def _headers(api: str, stream: bool, digest: bytes) -> Headers:
    ctype = "text/event-stream; charset=utf-8" if stream else "application/json"
    rid = ("request-id" if api == "anthropic" else "x-request-id", "req_sim_" + digest.hex()[:20])
    return (("content-type", ctype), rid, ("x-orca-sim", "1"))


# --- answer rendering ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    id_hex: str
    model: str
    created: int
    text: str
    tool: tuple[str, str, str] | None  # (call id, name, arguments JSON)
    finish: str
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int


_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _openai_usage(a: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": a.prompt_tokens,
        "completion_tokens": a.output_tokens,
        "total_tokens": a.prompt_tokens + a.output_tokens,
        "prompt_tokens_details": {"cached_tokens": a.cached_tokens},
    }


def _anthropic_usage(a: Answer, output: int) -> dict[str, Any]:
    return {
        "input_tokens": a.prompt_tokens - a.cached_tokens - a.cache_write_tokens,
        "cache_creation_input_tokens": a.cache_write_tokens,
        "cache_read_input_tokens": a.cached_tokens,
        "output_tokens": output,
    }


def render_body(api: str, a: Answer) -> bytes:
    """A non-streaming answer body in the format's shape."""
    if api == "anthropic":
        content: list[dict[str, Any]] = (
            [
                {
                    "type": "tool_use",
                    "id": a.tool[0],
                    "name": a.tool[1],
                    "input": orjson.loads(a.tool[2]),
                }
            ]
            if a.tool
            else [{"type": "text", "text": a.text}]
        )
        return orjson.dumps(
            {
                "id": "msg_sim_" + a.id_hex,
                "type": "message",
                "role": "assistant",
                "model": a.model,
                "content": content,
                "stop_reason": _ANTHROPIC_STOP.get(a.finish, a.finish),
                "stop_sequence": None,
                "usage": _anthropic_usage(a, a.output_tokens),
            }
        )
    message: dict[str, Any] = {"role": "assistant", "content": a.text or None, "refusal": None}
    if a.tool:
        message["tool_calls"] = [
            {
                "id": a.tool[0],
                "type": "function",
                "function": {"name": a.tool[1], "arguments": a.tool[2]},
            }
        ]
    return orjson.dumps(
        {
            "id": "chatcmpl-sim-" + a.id_hex,
            "object": "chat.completion",
            "created": a.created,
            "model": a.model,
            "system_fingerprint": "orca-sim",
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": a.finish}
            ],
            "usage": _openai_usage(a),
        }
    )


def render_stream(api: str, a: Answer, include_usage: bool) -> list[bytes]:
    """The SSE byte chunks of a streaming answer, one event per chunk."""
    if api == "anthropic":
        return _anthropic_stream(a)
    head = {
        "id": "chatcmpl-sim-" + a.id_hex,
        "object": "chat.completion.chunk",
        "created": a.created,
        "model": a.model,
        "system_fingerprint": "orca-sim",
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        obj: dict[str, Any] = {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if include_usage:
            obj["usage"] = None
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    out = [chunk({"role": "assistant", "content": None if a.tool else ""})]
    if a.tool:
        call_id, name, args = a.tool
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in _pieces(args, 8):
            out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    else:
        for piece in _pieces(a.text, 16):
            out.append(chunk({"content": piece}))
    out.append(chunk({}, a.finish))
    if include_usage:
        out.append(
            b"data: " + orjson.dumps({**head, "choices": [], "usage": _openai_usage(a)}) + b"\n\n"
        )
    out.append(b"data: [DONE]\n\n")
    return out


def _event(name: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def _anthropic_stream(a: Answer) -> list[bytes]:
    message: dict[str, Any] = {
        "id": "msg_sim_" + a.id_hex,
        "type": "message",
        "role": "assistant",
        "model": a.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _anthropic_usage(a, 1),
    }
    out = [_event("message_start", {"type": "message_start", "message": message})]
    if a.tool:
        call_id, name, args = a.tool
        block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(args, 8)]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(a.text, 16)]
    out.append(
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )
    )
    out.append(_event("ping", {"type": "ping"}))
    for d in deltas:
        out.append(
            _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
        )
    out.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if a.finish == "error":
        out.append(
            _event(
                "error",
                {
                    "type": "error",
                    "error": {"type": "overloaded_error", "message": "sim: simulated error finish"},
                },
            )
        )
        return out
    out.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": _ANTHROPIC_STOP.get(a.finish, a.finish),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": a.output_tokens},
            },
        )
    )
    out.append(_event("message_stop", {"type": "message_stop"}))
    return out
