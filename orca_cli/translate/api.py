"""The entry points the request path calls: requests out, answers and errors back.

translated = translate_request(body, "anthropic", "openai", model="deepseek-chat",
                               target_model_family="deepseek", options=opts)
upstream_body = translated.body            # bytes, deterministic
rt = ResponseTranslator("openai", "anthropic", model_name="claude-sonnet-4-6",
                        upstream_model="deepseek-chat", upstream_family="deepseek",
                        tools=translated.tools, created=int(clock.now()))
for chunk in upstream_chunks: send(rt.feed(chunk))   # a stream, event by event
send(rt.close())                                     # an early end becomes an error event
# (a broken connection: send(rt.fail(message)), the error event continuing the stream)
rt.usage, rt.stop                                    # for the cost model and the trace
# a JSON answer: rt.translate_body(raw_bytes); an error: translate_error(...)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from orca_cli.translate import anthropic, openai_chat, responses
from orca_cli.translate.anthropic_stream import AnthropicStreamDecoder, AnthropicStreamEncoder
from orca_cli.translate.common import (
    OVERFLOW_CODE,
    TranslationError,
    custom_input,
    is_overflow,
    openai_code,
    overflow_message,
    response_id,
    status_for,
)
from orca_cli.translate.model import (
    BlockEnd,
    ErrorEvent,
    Event,
    Reasoning,
    ReasoningDelta,
    Request,
    Response,
    Start,
    Stop,
    TextDelta,
    ToolCall,
    ToolDelta,
    ToolOrigin,
    ToolStart,
    Usage,
    UsageEvent,
)
from orca_cli.translate.openai_chat_stream import ChatStreamDecoder, ChatStreamEncoder
from orca_cli.translate.policy import TranslationOptions, apply_head, apply_messages
from orca_cli.translate.responses_stream import ResponsesStreamDecoder, ResponsesStreamEncoder
from orca_cli.translate.stream_base import StreamDecoder, StreamEncoder
from orca_cli.translate.units import (
    NATIVE_FAMILY,
    Conversation,
    UnitMemo,
    UnitOut,
    conversation,
)
from orca_cli.types import Api
from orca_cli.wire.sse import Pair, SSEDecoder
from orca_cli.wire.usage import Usage as WireUsage

__all__ = [
    "ResponseTranslator",
    "Translated",
    "TranslationError",
    "TranslationOptions",
    "UnitMemo",
    "UnitOut",
    "decode_request",
    "encode_error",
    "encode_request",
    "translate_error",
    "translate_request",
]



@dataclass(slots=True)
class Translated:
    """`tools`: the upstream names of the tools that are something else to the client (a
    custom tool sent as a function tool, a namespace member under its flat name), for the
    `ResponseTranslator` to map the answer's calls back."""

    body: bytes
    report: dict[str, Any]
    tools: Mapping[str, ToolOrigin] = field(default_factory=dict)

    @property
    def untranslatable(self) -> list[str]:
        return list(self.report["untranslatable"])

    @property
    def custom_tools(self) -> frozenset[str]:
        return frozenset(n for n, o in self.tools.items() if o.kind == "custom")


def tool_origins(req: Request) -> dict[str, ToolOrigin]:
    """The upstream name → client origin of every tool of `req` that is renamed or recast."""
    out: dict[str, ToolOrigin] = {}
    for t in req.tools:
        if t.origin is not None:
            out[t.name] = t.origin
        elif t.kind == "custom":
            out[t.name] = ToolOrigin(t.name, "custom")
    return out


def decode_request(body: dict[str, Any], src: Api, *, family: str | None = None) -> Request:
    fam = family or NATIVE_FAMILY[src]
    if src == "anthropic":
        return anthropic.decode_request(body, family=fam)
    if src == "responses":
        return responses.decode_request(body, family=fam)
    return openai_chat.decode_request(body, family=fam)


def encode_request(
    req: Request,
    dst: Api,
    *,
    model: str,
    family: str,
    options: TranslationOptions,
    conv: Conversation | None = None,
    cache_ttl: str | None = None,
) -> tuple[bytes, int]:
    """`req` as a `dst` body and the cache breakpoints it got (Anthropic only). With `conv`
    (the conversation `req` heads), its messages come already encoded (`conv.pieces`, from
    `units.translate_unit`) with the ids they rewrote; else `req.messages` are encoded."""
    rewritten = conv.rewritten if conv is not None else None
    pieces = conv.pieces if conv is not None else None
    if dst == "anthropic":
        return anthropic.encode_request(
            req,
            model=model,
            max_tokens=options.anthropic_max_tokens,
            rewritten=rewritten,
            cache_ttl=cache_ttl,
            pieces=pieces,
        )
    if dst == "responses":
        body = responses.encode_request(
            req, model=model, reasoning=options.target_reasoning, pieces=pieces
        )
        return body, 0
    body = openai_chat.encode_request(
        req, model=model, family=family, reasoning=options.target_reasoning, pieces=pieces,
        tools_effort=options.chat_tools_effort,
    )
    return body, 0


def translate_request(
    body: dict[str, Any],
    src: Api,
    dst: Api,
    *,
    model: str,
    target_model_family: str,
    options: TranslationOptions,
    memo: UnitMemo | None = None,
) -> Translated:
    """`body` (already parsed, format `src`) as the bytes of a `dst` request for `model`.

    The report's `untranslatable` lists features the target cannot express: a non-empty list
    means this candidate must be excluded (`untranslatable:<feature>`); the body is still
    built so the caller can inspect it. With `memo` the conversation is translated unit by
    unit and a unit translated before is reused (`units`): the bytes are the same."""
    if memo is None:
        req = decode_request(body, src, family=options.inbound_family)
        dropped, found = apply_messages(req.messages, dst, target_model_family, model, options)
        conv = Conversation(req, None, found, [], dropped)
    else:
        conv = conversation(body, src, dst, model=model, target_model_family=target_model_family,
                            options=options, memo=memo)
    req = conv.head
    result = apply_head(req, dst, options, conv.found)
    raw, added = encode_request(req, dst, model=model, family=target_model_family,
                                options=options, conv=conv, cache_ttl=result.cache_ttl)
    report = {
        "from": src,
        "to": dst,
        "cache_breakpoints_added": added,
        "dropped_reasoning": conv.dropped,
        "rewritten_ids": len(set(conv.rewritten)),
        "untranslatable": result.untranslatable,
        "dropped_params": list(dict.fromkeys(req.dropped + _tools_effort_dropped(req, dst,
                                                                                  options))),
        "dropped_tools": list(req.dropped_tools),
    }
    return Translated(raw, report, tool_origins(req) if dst != "responses" else {})


def _tools_effort_dropped(req: Request, dst: Api, options: TranslationOptions) -> list[str]:
    """`reasoning_effort`, when the client's effort did not go as asked because the Chat
    Completions target refuses it beside function tools (`policy.chat_tools_effort`)."""
    asked = req.reasoning_effort or req.thinking_budget
    if (dst == "openai" and options.target_reasoning and req.tools and asked
            and options.chat_tools_effort != "any"):
        return ["reasoning_effort"]
    return []


def encode_error(api: Api, status: int, message: str, etype: str | None = None,
                 code: str | None = None) -> bytes:
    """An error body of `api`; `code` is the OpenAI shape's (Anthropic's has none)."""
    if api == "anthropic":
        return anthropic.encode_error(status, message, etype)
    if api == "responses":
        return responses.encode_error(status, message, etype, code)
    return openai_chat.encode_error(status, message, etype, code)


def translate_error(src: Api, dst: Api, status: int, body: bytes) -> tuple[int, bytes]:
    """An upstream error of `src` as (status, body) of `dst`: message kept, type mapped
    (Anthropic 529 `overloaded_error` ⇄ OpenAI 503), and the code an agent acts on answered
    as the inbound provider answers it (SPEC §14.3): a context overflow is Anthropic's 400
    "prompt is too long: …" ⇄ OpenAI's `context_length_exceeded`, an Anthropic rate limit is
    `rate_limit_exceeded`, and between the two OpenAI shapes the code is kept. Headers
    (`retry-after`, rate limits) are the caller's to copy unchanged."""
    message, etype, code = "", None, None
    try:
        obj = orjson.loads(body)
        err = obj.get("error") if isinstance(obj, dict) else None
        if isinstance(err, dict):
            message, etype = str(err.get("message") or ""), err.get("type")
            code = err.get("code") if isinstance(err.get("code"), str) else None
        elif isinstance(err, str):
            message = err
    except orjson.JSONDecodeError:
        message = body[:2000].decode("utf-8", "replace")
    out_status = status_for(src, dst, status, etype)
    mapped = etype if _same_vocab(src, dst) else None
    overflow = is_overflow(src, status, code, message)
    message = message or f"Upstream error {status}."
    if dst == "anthropic":
        if overflow:
            mapped, message = "invalid_request_error", overflow_message(message)
        return out_status, encode_error(dst, out_status, message, mapped)
    if overflow:
        mapped, code = "invalid_request_error", OVERFLOW_CODE
    elif src == "anthropic":
        code = openai_code(etype, out_status)
    return out_status, encode_error(dst, out_status, message, mapped, code)


def _same_vocab(src: Api, dst: Api) -> bool:
    return (src == "anthropic") == (dst == "anthropic")


# Events `_emit` does nothing with but encode (a stream's deltas are almost all of these).
_PLAIN = frozenset({TextDelta, ToolDelta, ReasoningDelta, BlockEnd})
_DECODERS: dict[str, type[StreamDecoder]] = {
    "anthropic": AnthropicStreamDecoder,
    "openai": ChatStreamDecoder,
    "responses": ResponsesStreamDecoder,
}
_RESPONSE_DECODERS = {
    "anthropic": anthropic.decode_response,
    "openai": openai_chat.decode_response,
    "responses": responses.decode_response,
}


class ResponseTranslator:
    """An upstream answer of format `src` as format `dst`, JSON or stream.

    `model_name` is the name the client sees; `upstream_model` / `upstream_family` are what
    served it (recorded in reasoning provenance tags); `tools` maps the upstream names of the
    client's tools that went upstream as something else back to what they are to the client
    (`Translated.tools`: custom tools, namespace members). `created` is when the answer was
    produced (Unix seconds, the caller's clock: the codecs read none), for the `created` /
    `created_at` of an answer whose upstream format carries no timestamp of its own (the
    Messages API); an upstream's own timestamp wins. `echo`: for a Responses API client, the
    request parameters its `response` objects repeat (`responses.request_echo`)."""

    def __init__(
        self,
        src: Api,
        dst: Api,
        model_name: str,
        *,
        upstream_model: str,
        upstream_family: str,
        tools: Mapping[str, ToolOrigin] | None = None,
        created: int = 0,
        include_usage: bool = True,
        echo: dict[str, Any] | None = None,
    ) -> None:
        self.src, self.dst, self.model_name = src, dst, model_name
        self.echo = echo
        self.include_usage = include_usage  # Chat Completions: the client asked for usage
        self.upstream_model, self.upstream_family = upstream_model, upstream_family
        self.tools: Mapping[str, ToolOrigin] = tools or {}
        self.created = created
        self.usage = Usage()
        self.stop: str | None = None
        self.error: str | None = None
        self._decoder: StreamDecoder | None = None  # made by the first chunk (not for JSON)
        self._frames = SSEDecoder()  # `feed`'s SSE framing
        self._encoder: StreamEncoder | None = None

    def cost_usage(self) -> WireUsage:
        """The usage in the cost model's terms (`wire.usage.Usage`)."""
        u = self.usage
        return WireUsage(u.input, u.cached, u.cache_write, u.output)

    # JSON ------------------------------------------------------------------------------

    def translate_body(self, body: bytes) -> bytes:
        obj = orjson.loads(body)
        if not isinstance(obj, dict):
            raise TranslationError("The upstream answer is not a JSON object.")
        resp: Response = _RESPONSE_DECODERS[self.src](obj, family=self.upstream_family)
        for part in resp.parts:
            if isinstance(part, Reasoning):
                part.model = self.upstream_model
            elif isinstance(part, ToolCall) and (origin := self.tools.get(part.name)):
                part.kind, part.name, part.namespace = origin.kind, origin.name, origin.namespace
                if origin.kind == "custom":
                    part.arguments = custom_input(part.arguments)
        resp.created = resp.created or self.created
        self.usage, self.stop = resp.usage, resp.stop
        rid = response_id(self.dst, resp.id)
        # Picked as `_make_encoder` picks a stream's: only a Responses answer repeats the
        # request's parameters (`echo`).
        if self.dst == "responses":
            return responses.encode_response(resp, model_name=self.model_name, id=rid,
                                             echo=self.echo)
        if self.dst == "anthropic":
            return anthropic.encode_response(resp, model_name=self.model_name, id=rid)
        return openai_chat.encode_response(resp, model_name=self.model_name, id=rid)

    # streams ---------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> bytes:
        """The translated bytes for one upstream chunk (may be empty)."""
        return self.feed_pairs(self._frames.feed_pairs(chunk))

    def feed_pairs(self, pairs: list[Pair]) -> bytes:
        """`feed` for SSE `(event, data)` pairs the caller framed (`wire.sse.SSEDecoder`), as
        the relay does once for this and its response tap."""
        if self._decoder is None:
            self._decoder = _DECODERS[self.src](self.upstream_family)  # type: ignore[call-arg]
        events = self._decoder.feed_pairs(pairs)
        if len(events) == 1 and self._encoder is not None:
            ev = events[0]
            if type(ev) in _PLAIN:  # the common chunk: one delta, nothing to note
                return self._encoder.encode(ev)
        return self._emit(events)

    def close(self) -> bytes:
        """Bytes owed at the end of the upstream body (an error event if it ended early)."""
        if self._decoder is None:
            self._decoder = _DECODERS[self.src](self.upstream_family)  # type: ignore[call-arg]
        return self._emit(self._decoder.close())

    def fail(self, message: str) -> bytes:
        """The error event that ends the stream now, for a failure its bytes do not show (the
        upstream connection broke, a timeout): written by the encoder that wrote the stream,
        so it continues it (a Responses `response.failed` names the response, model and
        `created_at` already sent and takes the next `sequence_number`). Empty when the
        stream already ended; nothing is owed by `close` after it."""
        if self._decoder is not None:
            self._decoder.ended = True
        if self._encoder is not None and self._encoder.done:
            return b""
        return self._emit([ErrorEvent(message, 502, "api_error")])

    def _emit(self, events: list[Event]) -> bytes:
        if not events:
            return b""
        out: list[bytes] = []
        for ev in events:
            if isinstance(ev, Start):
                self._encoder = self._make_encoder(ev)
            elif isinstance(ev, ToolStart) and (origin := self.tools.get(ev.name)):
                ev.kind, ev.name, ev.namespace = origin.kind, origin.name, origin.namespace
            elif isinstance(ev, UsageEvent):
                self.usage = ev.usage
            elif isinstance(ev, Stop):
                self.stop = ev.reason
            elif isinstance(ev, ErrorEvent):
                self.error = ev.message
            if self._encoder is None:
                self._encoder = self._make_encoder(Start("", ""))
                out.append(self._encoder.encode(Start("", "")))
            out.append(self._encoder.encode(ev))
        return b"".join(out)

    def _make_encoder(self, start: Start) -> StreamEncoder:
        rid = response_id(self.dst, start.id or "0")
        created = start.created or self.created
        if self.dst == "anthropic":
            return AnthropicStreamEncoder(
                self.model_name, rid, self.upstream_family, self.upstream_model
            )
        if self.dst == "responses":
            return ResponsesStreamEncoder(
                self.model_name, rid, self.upstream_family, self.upstream_model, created,
                echo=self.echo,
            )
        return ChatStreamEncoder(self.model_name, rid, created, include_usage=self.include_usage)
