"""Response-side taps: usage, finish, clean end and strike signals (SPEC §3 step 8, §6.3, §7).

`ResponseTap` watches the bytes the proxy relays — `feed()` per stream chunk, `feed_body()`
for a JSON answer — and never alters or holds them. It reports normalised `Usage`, the finish
reason, whether the clean end was seen (`[DONE]` / `message_stop` / a JSON body with a finish
reason), whether the answer ended in error, and the response-side strike signals
(`malformed_tool_json`, `empty_answer`, `refusal`, `truncated`). The Responses API's events
and bodies are read by `usage_responses.py`: its clean end is `response.completed` or
`response.incomplete`; a stream without either never ended cleanly.

Cost: OpenAI streams are many small events, so an event's JSON is parsed only when its text
can hold something the tap still needs (a non-null `finish_reason` or `refusal`, usage token
counts, tool-call arguments, an error, or the first text while none was seen). The substring
tests are prefilters only: a hit is confirmed on the parsed object, so a false hit costs one
parse and a miss is impossible (a JSON key can never appear escaped). A malformed event is
counted in `bad_events` and otherwise ignored: a tap never raises into the relay.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson

from orca_cli.immutable import immutable
from orca_cli.types import Api
from orca_cli.wire.errors import stream_error_event
from orca_cli.wire.sse import Pair, SSEDecoder
from orca_cli.wire.usage_responses import (
    FAST_TIERS,
    next_sequence_number,
    responses_body,
    responses_event,
)

__all__ = ["TRUNCATION_MIN_MAX_TOKENS", "ResponseTap", "Signal", "Usage"]

Signal = Literal["malformed_tool_json", "empty_answer", "refusal", "truncated"]
TRUNCATION_MIN_MAX_TOKENS = 1024  # SPEC §6.3: truncation strikes only on max_tokens >= 1,024
_TRUNCATED = frozenset({"length", "max_tokens", "max_output_tokens"})


@immutable
class Usage:
    """Normalised usage: `prompt_tokens` includes cached reads and cache writes."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    fast: bool = False  # served in fast mode (Anthropic's `usage.speed: "fast"`)


def _int(obj: Any, key: str) -> int:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, int) else 0


def _value_needles(key: str) -> tuple[str, str, str, str, str]:
    return (f'{key}":"', f'{key}": "', f'"{key}":null', f'"{key}": null', f'"{key}"')


_FINISH = _value_needles("finish_reason")
_FINISH_STR, _FINISH_STR_SPACED, _FINISH_NULL, _FINISH_NULL_SPACED, _FINISH_KEY = _FINISH
_REFUSAL = _value_needles("refusal")


def _may_hold_value(text: str, needles: tuple[str, str, str, str, str]) -> bool:
    """Whether the key of `needles` (`_value_needles`) in JSON `text` may be followed by a
    string (not null).

    Compact (`"k":"v"`) and Python-style (`"k": "v"`) spacing are recognised by two scans; any
    other spacing falls back to "present, so parse" — a false hit costs a parse, never a miss.
    The scans are of text: `bytes in bytes` first tries its needle as an int and clears the
    TypeError, which makes it two to three times dearer than decoding and scanning text.
    """
    compact, spaced, null, spaced_null, bare = needles
    if compact in text or spaced in text:
        return True
    if null in text or spaced_null in text:
        return False
    return bare in text


class ResponseTap:
    __slots__ = (
        "_decoder",
        "_head",
        "_last",
        "_tool_seen",
        "_tools",
        "_usage",
        "api",
        "bad_events",
        "completed",
        "error_finish",
        "error_kind",
        "error_message",
        "finish_reason",
        "has_text",
        "max_tokens",
        "refusal",
        "stream",
    )

    def __init__(self, api: Api, stream: bool, max_tokens: int | None) -> None:
        self.api = api
        self.stream = stream
        self.max_tokens = max_tokens
        self._decoder = SSEDecoder() if stream else None
        self._usage: dict[str, int] | None = None
        self.finish_reason: str | None = None
        self.completed = False
        self.error_finish = False
        self.error_kind: str | None = None  # an in-stream error event's type or code
        self.error_message: str | None = None
        self.has_text = False
        self.refusal = False
        self._tools: dict[int, list[str]] = {}  # tool call index -> argument fragments
        self._tool_seen = False
        self.bad_events = 0
        self._head: dict[str, Any] = {}  # Responses: id, created_at, model of the response
        self._last: str | None = None  # Responses: the last event's data

    # --- feeding -----------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        """Tap one relayed stream chunk."""
        decoder = self._decoder
        if decoder is None:
            return
        if self.api == "openai" and (data := decoder.lone_data(chunk)) is not None:
            # One event of one `data:` line, as a Chat Completions upstream writes each: no
            # list of pairs to build and walk for it.
            self._openai_event(None, data)
            return
        events = decoder.feed_pairs(chunk)
        if not events:
            return
        # `feed_pairs`' dispatch, inline: this runs once per relayed chunk.
        if self.api == "openai":
            for name, data in events:
                self._openai_event(name, data)
        elif self.api == "responses":
            for name, data in events:
                responses_event(self, name, data)
        else:
            for name, data in events:
                self._anthropic_event(name, data)

    def feed_pairs(self, events: list[Pair]) -> None:
        """Tap SSE `(event, data)` pairs the caller framed (instead of `feed`: a relay that
        translates the stream frames it once for both)."""
        if not events or self._decoder is None:
            return
        if self.api == "responses":
            for name, data in events:
                responses_event(self, name, data)
            return
        on_event = self._openai_event if self.api == "openai" else self._anthropic_event
        for name, data in events:
            on_event(name, data)

    def feed_body(self, body: bytes) -> None:
        """Tap a whole JSON answer."""
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            self.bad_events += 1
            return
        if not isinstance(obj, dict):
            self.bad_events += 1
            return
        if self.api == "openai":
            self._openai_body(obj)
        elif self.api == "responses":
            responses_body(self, obj)
        else:
            self._anthropic_body(obj)

    def _load(self, data: str) -> dict[str, Any] | None:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.bad_events += 1
            return None
        return obj if isinstance(obj, dict) else None

    # --- OpenAI ------------------------------------------------------------------------------

    def _openai_event(self, name: str | None, d: str) -> None:
        if d == "[DONE]":
            self.completed = True
            return
        if not (
            '"tool_calls"' in d
            or 'tokens"' in d
            or '"error"' in d
            or (not self.has_text and '"content"' in d)
            # `_may_hold_value(d, _FINISH)` written out: every event carries a finish_reason,
            # and the call cost more than its scans.
            or _FINISH_STR in d or _FINISH_STR_SPACED in d
            or (_FINISH_NULL not in d and _FINISH_NULL_SPACED not in d and _FINISH_KEY in d)
            or ('"refusal"' in d and _may_hold_value(d, _REFUSAL))
        ):
            return
        obj = self._load(d)
        if obj is None:
            return
        if "error" in obj and obj["error"] is not None:
            self._set_error(obj["error"])
            return
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self._openai_usage(usage, obj.get("service_tier"))
        choices = obj.get("choices")
        if not isinstance(choices, list):
            return
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                content = delta.get("content")
                if isinstance(content, str) and not self.has_text and content.strip():
                    self.has_text = True
                refusal = delta.get("refusal")
                if isinstance(refusal, str) and refusal:
                    self.refusal = True
                calls = delta.get("tool_calls")
                if isinstance(calls, list):
                    for call in calls:
                        self._openai_tool_fragment(call)
            finish = choice.get("finish_reason")
            if isinstance(finish, str):
                self._set_finish(finish)

    def _openai_tool_fragment(self, call: Any) -> None:
        if not isinstance(call, dict):
            return
        self._tool_seen = True
        index = call.get("index", 0)
        parts = self._tools.setdefault(index if isinstance(index, int) else 0, [])
        fn = call.get("function")
        if isinstance(fn, dict):
            args = fn.get("arguments")
            if isinstance(args, str) and args:
                parts.append(args)

    def _openai_usage(self, u: dict[str, Any], tier: object) -> None:
        details = u.get("prompt_tokens_details")
        cached = _int(details, "cached_tokens") or _int(u, "prompt_cache_hit_tokens")
        self._usage = {
            "prompt_tokens": _int(u, "prompt_tokens"),
            "cached_tokens": cached,
            "cache_write_tokens": _int(details, "cache_write_tokens"),
            "output_tokens": _int(u, "completion_tokens"),
            "fast": tier in FAST_TIERS,
        }

    def _openai_body(self, obj: dict[str, Any]) -> None:
        if obj.get("error") is not None and "choices" not in obj:
            self._set_error(obj["error"])
            return
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self._openai_usage(usage, obj.get("service_tier"))
        choices = obj.get("choices")
        if not isinstance(choices, list):
            return
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            message = choice.get("message")
            if isinstance(message, dict):
                content = message.get("content")
                if isinstance(content, str) and content.strip():
                    self.has_text = True
                refusal = message.get("refusal")
                if isinstance(refusal, str) and refusal:
                    self.refusal = True
                calls = message.get("tool_calls")
                if isinstance(calls, list):
                    for i, call in enumerate(calls):
                        if isinstance(call, dict):
                            self._openai_tool_fragment({**call, "index": i})
            finish = choice.get("finish_reason")
            if isinstance(finish, str):
                self._set_finish(finish)
                self.completed = True

    # --- Anthropic ---------------------------------------------------------------------------

    def _anthropic_event(self, name: str | None, d: str) -> None:
        if name == "content_block_delta":
            if '"input_json_delta"' in d or not self.has_text and '"text_delta"' in d:
                obj = self._load(d)
                if obj is not None:
                    self._anthropic_delta(obj)
            return
        if name in ("ping", "content_block_stop"):
            return
        if name == "message_stop":
            self.completed = True
            return
        obj = self._load(d)
        if obj is None:
            return
        kind = name or obj.get("type")
        if kind == "message_start":
            message = obj.get("message")
            if isinstance(message, dict):
                self._anthropic_usage(message.get("usage"))
        elif kind == "content_block_start":
            block = obj.get("content_block")
            if isinstance(block, dict):
                btype = block.get("type")
                if btype in ("tool_use", "server_tool_use"):
                    self._tool_seen = True
                    index = obj.get("index", 0)
                    self._tools.setdefault(index if isinstance(index, int) else 0, [])
                elif (
                    btype == "text" and isinstance(block.get("text"), str) and block["text"].strip()
                ):
                    self.has_text = True
        elif kind == "content_block_delta":
            self._anthropic_delta(obj)
        elif kind == "message_delta":
            self._anthropic_usage(obj.get("usage"))
            delta = obj.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self._set_finish(delta["stop_reason"])
        elif kind == "message_stop":
            self.completed = True
        elif kind == "error":
            self._set_error(obj.get("error"))

    def _anthropic_delta(self, obj: dict[str, Any]) -> None:
        delta = obj.get("delta")
        if not isinstance(delta, dict):
            return
        dtype = delta.get("type")
        if dtype == "input_json_delta":
            index = obj.get("index", 0)
            part = delta.get("partial_json")
            if isinstance(part, str):
                self._tools.setdefault(index if isinstance(index, int) else 0, []).append(part)
        elif dtype == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and text.strip():
                self.has_text = True

    def _anthropic_usage(self, u: Any) -> None:
        if not isinstance(u, dict):
            return
        current = self._usage or {}
        merged = dict(current)
        # message_delta usage is cumulative and may omit the input side: keep what it omits.
        for src, dst in (
            ("input_tokens", "input"),
            ("cache_read_input_tokens", "cached_tokens"),
            ("cache_creation_input_tokens", "cache_write_tokens"),
            ("output_tokens", "output_tokens"),
        ):
            value = u.get(src)
            if isinstance(value, int):
                merged[dst] = value
        if u.get("speed") == "fast":  # fast mode, billed at the model's `fast` multiplier
            merged["fast"] = True
        merged["prompt_tokens"] = (
            merged.get("input", 0)
            + merged.get("cached_tokens", 0)
            + merged.get("cache_write_tokens", 0)
        )
        self._usage = merged

    def _anthropic_body(self, obj: dict[str, Any]) -> None:
        if obj.get("type") == "error":
            self._set_error(obj.get("error"))
            return
        self._anthropic_usage(obj.get("usage"))
        content = obj.get("content")
        if isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                btype = block.get("type")
                if btype == "text" and isinstance(block.get("text"), str) and block["text"].strip():
                    self.has_text = True
                elif btype in ("tool_use", "server_tool_use"):
                    self._tool_seen = True
        stop = obj.get("stop_reason")
        if isinstance(stop, str):
            self._set_finish(stop)
            self.completed = True

    # --- shared ------------------------------------------------------------------------------

    def _set_finish(self, reason: str) -> None:
        self.finish_reason = reason
        if reason == "error":
            self.error_finish = True
        elif reason == "refusal":
            self.refusal = True

    def _set_error(self, err: Any) -> None:
        self.error_finish = True
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            self.error_message = err["message"][:500]
        if isinstance(err, dict):
            kind = err.get("type")  # a Responses `error` event's type is the event's own
            if not kind or kind == "error":
                kind = err.get("code")
            if isinstance(kind, str) and kind:
                self.error_kind = kind[:64]

    # --- results -----------------------------------------------------------------------------

    @property
    def usage(self) -> Usage | None:
        """Usage as reported by the upstream, or None when it reported none."""
        u = self._usage
        if u is None:
            return None
        # By position, in field order: read on every billed request, and keywords cost a dict.
        return Usage(
            u.get("prompt_tokens", 0),  # prompt_tokens
            u.get("cached_tokens", 0),  # cached_tokens
            u.get("cache_write_tokens", 0),  # cache_write_tokens
            u.get("output_tokens", 0),  # output_tokens
            bool(u.get("fast")),  # fast
        )

    def response_head(self) -> dict[str, Any]:
        """Responses: the `id`, `created_at` and `model` the stream announced (for the
        `response.failed` event that ends a broken stream, `wire/errors.py`)."""
        return dict(self._head)

    @property
    def next_sequence_number(self) -> int:
        """Responses: the `sequence_number` an event appended to the stream should carry."""
        return next_sequence_number(self._last)

    def stream_error_event(self, message: str, kind: str | None = None) -> bytes:
        """The in-stream error that ends this tapped stream (`wire.errors.stream_error_event`):
        for the Responses API a `response.failed` naming the response the stream announced,
        numbered after its last event; the same bytes as the module function otherwise."""
        if self.api != "responses":
            return stream_error_event(self.api, message, kind)
        return stream_error_event(
            "responses",
            message,
            kind,
            response=self.response_head(),
            sequence_number=self.next_sequence_number,
        )

    @property
    def has_tool_call(self) -> bool:
        return self._tool_seen

    @property
    def malformed_tool_json(self) -> bool:
        """Some accumulated tool-call arguments do not parse as a JSON object."""
        for parts in self._tools.values():
            if not parts:
                continue  # no arguments streamed: the block's own (empty) input stands
            raw = "".join(parts)
            if not raw.strip():
                continue
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                return True
            if not isinstance(value, dict):
                return True
        return False

    def tool_arguments(self) -> dict[int, str]:
        """The concatenated tool-call argument text per call index (for tests and traces)."""
        return {i: "".join(p) for i, p in self._tools.items()}

    @property
    def empty_answer(self) -> bool:
        return not self.has_text and not self._tool_seen

    @property
    def truncated(self) -> bool:
        return (
            self.finish_reason in _TRUNCATED
            and self.max_tokens is not None
            and self.max_tokens >= TRUNCATION_MIN_MAX_TOKENS
        )

    @property
    def billed_success(self) -> bool:
        """The clean end was seen and the answer did not end in error (SPEC §3 step 9)."""
        return self.completed and not self.error_finish

    def signals(self) -> tuple[Signal, ...]:
        """Response-side strike signals (SPEC §6.3), only for a billed-success answer."""
        if not self.billed_success:
            return ()
        out: list[Signal] = []
        if self.malformed_tool_json:
            out.append("malformed_tool_json")
        if self.empty_answer:
            out.append("empty_answer")
        if self.refusal:
            out.append("refusal")
        if self.truncated:
            out.append("truncated")
        return tuple(out)
