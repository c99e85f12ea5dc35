"""Walking a plan's attempts upstream and relaying the answer (SPEC §3 steps 7-8, §7).

Each attempt is one (model, channel, key). A retryable failure (429, 5xx, connect errors,
connect and first-byte timeouts) moves on to the next attempt — but only while nothing has
been sent to the client: a stream is relayed only once its first body chunk arrived, so a
200 whose body never started is still retryable. 401/402 cool the key and try the next one;
other client errors (400, 403, 404, 413, 422) go back to the client at once, unmodified.
When every attempt failed, the client gets the last upstream error unmodified (status, body
and allow-listed headers); orca's own 503 (`x-should-retry: false`) is only for when nothing
could be attempted. One deadline covers every attempt, and retries come out of a shared
budget, so an outage does not multiply traffic.

A client disconnect cancels the upstream request (the server's `ClientLink`).

An attempt on a channel that does not speak the inbound format goes translated (SPEC §13.2,
`proxy.xlate`): the body in the channel's first format, the answer back event by event, an
error answer in the inbound shape with its `retry-after` and rate-limit headers; the tap reads
the upstream's own format for usage, billing and strikes. A candidate whose format cannot
express the request is skipped (`untranslatable:<feature>`) before any upstream call; when no
attempt could express it the client gets a 400 naming the feature and the channels. A
same-format attempt keeps the raw-bytes path: only `model` swapped, and an output limit above
the model's `max_output_tokens` lowered in place; a body carrying orca's own reasoning tags (a
turn served translated before) has them resolved first (`xlate.same_format`) and is
re-encoded.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from orca_cli.config.redact import scrub_secrets
from orca_cli.config.schema import ChannelConfig, ServerConfig
from orca_cli.errors import UpstreamError
from orca_cli.proxy.answer import (
    Attempting,
    client_headers,
    relay_stream,
    relay_translated,
    send_whole,
    stream_failure,
    translate_json,
)
from orca_cli.proxy.health import classify_status, outcome_of_error, retry_after_seconds
from orca_cli.proxy.relay import ModelNameRewriter
from orca_cli.proxy.runtime import Runtime
from orca_cli.proxy.transport import (
    Headers,
    Timeouts,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamTooLarge,
    anthropic_version_header,
    auth_headers,
    filter_response_headers,
    read_limited,
    upstream_url,
)
from orca_cli.proxy.xlate import (
    MALFORMED,
    Crossing,
    chat_tools_refused,
    compaction_refused,
    cross,
    native_report,
    responses_first,
    same_format,
    translated_error,
    untranslatable_message,
)
from orca_cli.routing.route import Attempt
from orca_cli.translate.native import Resolved
from orca_cli.turn.model import AttemptRecord, Outcome, Turn
from orca_cli.types import Api, ClientLink, Send
from orca_cli.wire.errors import error_body
from orca_cli.wire.usage import ResponseTap

__all__ = ["AttemptRecord", "Inbound", "forward"]
_FORWARDED_CLIENT_HEADERS = ("anthropic-version", "anthropic-beta", "openai-beta", "accept")
_PASS_THROUGH_AUTH = ("authorization", "x-api-key")


@dataclass
class Inbound:
    """The request as forwarding needs it."""

    api: Api
    path: str
    body: dict[str, Any]
    headers: Sequence[tuple[str, str]]  # lower-cased names
    stream: bool
    add_include_usage: bool
    max_tokens: int | None
    orca_headers: Callable[[Attempt | None], list[tuple[bytes, bytes]]]
    healthy: Callable[[str, int], bool]  # the request's stable health view (one probe per key)
    raw: bytes = b""  # the client's body bytes
    model_value: str | None = None  # the client's `model` value as sent
    rename: str | None = None  # the `model` name answers carry (SPEC §14.2); None: as served

    @classmethod
    def of(cls, turn: Turn, server: ServerConfig, orca_headers: Callable[[Attempt | None], list[tuple[bytes, bytes]]],
           healthy: Callable[[str, int], bool]) -> Inbound:
        body, api = turn.body, turn.api
        stream = turn.stream
        opts = body.get("stream_options")
        add_usage = (api == "openai" and stream and not (
            isinstance(opts, dict) and opts.get("include_usage") is True))
        if api == "responses":
            max_tokens = body.get("max_output_tokens")
        else:
            max_tokens = body.get("max_tokens", body.get("max_completion_tokens"))
        # By position, in field order: one per request, and keywords cost a dict.
        return cls(api,  # api
                   turn.path,  # path
                   body,  # body
                   turn.headers,  # headers
                   stream,  # stream
                   add_usage,  # add_include_usage
                   max_tokens if isinstance(max_tokens, int) else None,  # max_tokens
                   orca_headers,  # orca_headers
                   healthy,  # healthy
                   turn.raw,  # raw
                   turn.target.requested,  # model_value
                   _answer_name(turn, server))  # rename


def _answer_name(turn: Turn, server: ServerConfig) -> str | None:
    """`[server] response_model = "requested"` (the default): a router or alias target answers
    under the name the client sent, and so does a route's target (SPEC §17); a concrete model
    the client named is always itself."""
    if turn.target.kind == "model" and (turn.routed is None or turn.routed.target is None):
        return None
    if getattr(server, "response_model", "requested") != "requested":
        return None
    return turn.target.requested


def _upstream_body(inb: Inbound, model: str, cap: int | None = None,
                   resolved: Resolved | None = None) -> bytes:
    """The client's bytes with only the `model` value swapped when that is unambiguous (one
    `"model":` key in the whole body, so it is the top-level one), and an output limit above
    the model's `max_output_tokens` (`cap`) lowered in place the same way; otherwise (when
    `include_usage` must be added, orca's reasoning wrappers were resolved — `resolved` — or
    a patch would be ambiguous) the parsed body re-serialised with orjson."""
    over = _over_cap(inb, cap)
    if resolved is None and not inb.add_include_usage and inb.model_value is not None:
        raw = _swap_model(inb.raw, inb.model_value, model)
        for key, limit in over.items():
            if raw is not None:
                raw = _patch_limit(raw, key, inb.body[key], limit)
        if raw is not None:
            return raw
    body = dict(resolved.body if resolved is not None else inb.body)
    body["model"] = model
    renamed = dict(resolved.params_renamed) if resolved is not None else {}
    body.update((renamed.get(key, key), limit) for key, limit in over.items())
    if inb.add_include_usage:
        opts = body.get("stream_options")
        body["stream_options"] = {**(opts if isinstance(opts, dict) else {}),
                                  "include_usage": True}
    return orjson.dumps(body)


def _swap_model(raw: bytes, value: str, model: str) -> bytes | None:
    """`raw` with its top-level `"model"` value `value` replaced by `model`; None when
    ambiguous. A `"model"` that is the body's first key is the top-level one, whatever
    follows (Claude Code and Codex send it first, and Codex's `spawn_agent` tool has a
    `model` parameter of its own): the rest of the body is not searched, which cost 12.7 µs
    on Claude Code's 89 KB opening request. Elsewhere it must be the only `"model"`."""
    at = raw.find(b'"model"')
    if at < 0:
        return None
    if not (at < 64 and raw[:at].strip() == b"{") and raw.find(b'"model"', at + 7) >= 0:
        return None
    quoted = orjson.dumps(value)  # once for both spellings of the key
    for sep in (b'"model":', b'"model": '):
        needle = sep + quoted
        if raw.startswith(needle, at):
            if model == value:
                return raw
            # One copy of the body: the tail joined through a memoryview, not sliced (a
            # slice and a `+` copy the whole body twice).
            return b"".join((raw[:at], sep, orjson.dumps(model),
                             memoryview(raw)[at + len(needle):]))
    return None


# The output limits of each format, in the order a body is patched.
_LIMIT_KEYS: dict[Api, tuple[str, ...]] = {
    "anthropic": ("max_tokens",), "responses": ("max_output_tokens",),
    "openai": ("max_tokens", "max_completion_tokens")}
_LIMIT_VALUE = {key: re.compile(rb'"' + key.encode() + rb'"\s*:\s*(\d+)')
                for keys in _LIMIT_KEYS.values() for key in keys}


def _over_cap(inb: Inbound, cap: int | None) -> dict[str, int]:
    """The output limits the client set above `cap` (the model's `max_output_tokens`), each
    with the value it is lowered to: the translated path lowers them (`translate.policy`),
    and so does the raw one."""
    if cap is None:
        return {}
    return {k: cap for k in _LIMIT_KEYS[inb.api] if type(v := inb.body.get(k)) is int and v > cap}


# The tail a top-level key is looked for in, and the tokens its nesting is read from: a JSON
# string (quotes inside one are escaped) or a bracket.
_TAIL = 4096
_NESTING = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _top_level(raw: bytes, at: int) -> bool:
    """Whether the key at `at` is one of the top-level object's: what follows it closes
    exactly one container (a key nested d deep is followed by d + 1 closings)."""
    depth = 0
    for token in _NESTING.findall(raw, at):
        if token[0] == 0x22:  # a string
            continue
        depth += 1 if token in (b"{", b"[") else -1
        if depth < -1:
            return False
    return depth == -1


def _patch_limit(raw: bytes, key: str, value: int, cap: int) -> bytes | None:
    """`raw` with the top-level `"key": value` lowered to `cap`; None when that key cannot be
    told from the bytes (then it may not be the top-level one) or its value is written
    otherwise. Claude Code sends `max_tokens` among its last keys: the last occurrence in the
    body's last 4 KB is checked to be top-level by its tail's nesting (a few µs), not by
    searching the whole body for a second one (36 µs over an 89 KB opening request, 155 µs
    over a 306 KB one). Elsewhere the key must be there exactly once."""
    name = b'"' + key.encode() + b'"'
    at = raw.rfind(name, max(0, len(raw) - _TAIL))
    if at < 0 or not _top_level(raw, at):
        at = raw.find(name)
        if at < 0 or raw.find(name, at + len(name)) >= 0:
            return None
    found = _LIMIT_VALUE[key].match(raw, at)
    if found is None or int(found.group(1)) != value:
        return None
    # One copy of the body, as `_swap_model` makes it
    view = memoryview(raw)
    return b"".join((view[:found.start(1)], str(cap).encode(), view[found.end(1):]))


def _upstream_headers(inb: Inbound, att: Attempt, ch: ChannelConfig) -> Headers:
    out: list[tuple[str, str]] = [("content-type", "application/json")]
    wanted = dict(inb.headers)
    for name in _FORWARDED_CLIENT_HEADERS:
        if name in wanted:
            out.append((name, wanted[name]))
    if ch.pass_through_auth:
        out.extend((n, wanted[n]) for n in _PASS_THROUGH_AUTH if n in wanted)
    elif ch.keys:
        out.extend(auth_headers(inb.api, ch.keys[att.key_index].reveal()))
    if inb.api == "anthropic":
        out.extend(anthropic_version_header(inb.headers))
    return tuple(out)


async def forward(rt: Runtime, inb: Inbound, attempts: Sequence[Attempt], send: Send,
                  client: ClientLink, res: Outcome, start_monotonic: float) -> Outcome:
    """Try `attempts` in order; relay the first usable answer to the client; fill `res`.

    The attempts run in the request's own task, in this coroutine (not in one of their own:
    one layer less on every request); the client leaving (`client` fires) cancels it, and
    the upstream call with it."""
    me = asyncio.current_task()
    assert me is not None
    left = finished = False

    def on_gone() -> None:
        nonlocal left
        if not finished:
            left = True
            me.cancel()

    if client.lost:  # left before its answer started
        on_gone()
    else:
        client.call = on_gone
    health = rt.health
    assert health is not None
    timeouts = Timeouts.for_request(rt.cfg.server, start_monotonic)
    last: tuple[int, Headers, bytes, Attempt] | None = None
    tried = 0
    # Keys that answered 401/402 here: the request's health view predates that answer, and
    # a fallback model on the same key would resend a credential the upstream just refused.
    refused: set[tuple[str, int]] = set()
    crossings: dict[tuple[str, str], Crossing | None] = {}
    natives: dict[tuple[str, str], Resolved | None] = {}
    try:
        rt.budget.request_started()
        try:
            for att in attempts:
                if rt.clock.monotonic() >= timeouts.deadline_monotonic:
                    break
                if (att.channel, att.key_index) in refused:
                    continue
                ch = rt.cfg.channel(att.channel)  # once per attempt, for all its steps
                assert ch is not None
                crossing = _crossing(rt, inb, att, ch, crossings)
                if crossing is not None and crossing.untranslatable is not None:
                    if (att.channel, att.model) not in res.untranslatable:
                        res.untranslatable[(att.channel, att.model)] = crossing.untranslatable
                        rec = AttemptRecord(att.model, att.channel, att.key_index)
                        rec.error = f"untranslatable:{crossing.untranslatable}"
                        res.attempts.append(rec)
                    if crossing.untranslatable == MALFORMED:
                        break  # not a request of its own format: no other channel serves it
                    continue
                if not inb.healthy(att.channel, att.key_index):
                    continue
                if tried and not rt.budget.try_retry():
                    health.release_probe(att.channel, att.key_index)
                    break
                retry = tried > 0
                tried += 1
                native = _native(rt, inb, att, ch, natives) if crossing is None else None
                try:
                    done = await _attempt(rt, inb, att, ch, send, res, timeouts, crossing,
                                          native)
                finally:
                    if retry:
                        rt.budget.retry_finished()
                if done is True:
                    return res
                if res.own_error is not None:  # an answer too large to relay: not retried
                    break
                if isinstance(done, tuple):
                    last = done
                    kind = classify_status(done[0])
                    if kind == "client_error":
                        break
                    if kind == "key_error":
                        refused.add((att.channel, att.key_index))
        finally:
            rt.budget.request_finished()
        await _answer_failure(inb, send, res, last)
    except asyncio.CancelledError:
        if not left or me.uncancel() > 0:
            raise  # cancelled from outside (server shutdown), not by the client leaving
        res.cancelled = True
    finally:
        finished = True  # a disconnect noticed from now on must not cancel the commit
        if client.call is on_gone:
            client.call = None
    return res


def _crossing(rt: Runtime, inb: Inbound, att: Attempt, ch: ChannelConfig,
              seen: dict[tuple[str, str], Crossing | None]) -> Crossing | None:
    """The attempt's translation when its channel does not speak the inbound format (built
    once per channel and model of a request), else None: the raw-bytes fast path. A request
    `xlate.responses_first` sends to the channel's Responses API goes translated there, unless
    it holds what that API cannot express; a Chat Completions request whose tools the model
    takes only there is untranslatable on a channel of Chat Completions only
    (`xlate.chat_tools_refused`), and one that asks for OpenAI's server-side compaction on a
    channel that is not OpenAI's own (`xlate.compaction_refused`)."""
    key = (att.channel, att.model)
    if key not in seen:
        found = None
        if responses_first(rt.cfg, inb, ch, att.model):
            found = cross(rt.translations, inb, ch, att.model, "responses")
            if found.untranslatable is not None:
                found = None
        if found is None and not ch.accepts(inb.api):
            found = cross(rt.translations, inb, ch, att.model)
        elif found is None:
            found = (chat_tools_refused(rt.translations, inb, ch, att.model)
                     or compaction_refused(rt.translations, inb, ch, att.model))
        seen[key] = found
    return seen[key]


def _native(rt: Runtime, inb: Inbound, att: Attempt, ch: ChannelConfig,
            seen: dict[tuple[str, str], Resolved | None]) -> Resolved | None:
    """A same-format attempt's body when it carries orca's reasoning wrappers (`xlate.
    same_format`, worked out once per channel and model of a request), else None."""
    key = (att.channel, att.model)
    if key not in seen:
        seen[key] = same_format(rt.cfg, inb, ch, att.model)
    return seen[key]


async def _answer_failure(inb: Inbound, send: Send, res: Outcome,
                          last: tuple[int, Headers, bytes, Attempt] | None) -> None:
    """No attempt answered the client: the last upstream error as it was, else orca's own."""
    if last is None and res.untranslatable and all(
            (a.error or "").startswith("untranslatable:") for a in res.attempts):
        # SPEC §13.2 rule 5: no candidate can express the request; nothing was sent upstream.
        features = sorted(set(res.untranslatable.values()))
        channels = sorted({ch for ch, _ in res.untranslatable})
        res.status, res.own_kind = 400, "untranslatable"
        res.own_error = untranslatable_message(inb.api, features, channels)
        body = error_body(inb.api, 400, res.own_error)
        await send_whole(send, 400, (("content-type", "application/json"),), body,
                         inb.orca_headers(None) + [(b"x-should-retry", b"false")])
        return
    if last is not None:
        status, headers, body, att = last
        res.status, res.served = status, None
        await send_whole(send, status, headers, body, inb.orca_headers(att))
        return
    if res.attempts:
        # Attempted, but no upstream answered (refused, reset, timed out): there is no
        # upstream error to return, and "nothing attemptable" with its do-not-retry would be
        # false. A gateway error of orca's own, naming only the failure's class.
        failure = res.attempts[-1].error or "transport_error"
        status = 504 if failure.startswith("UpstreamTimeout") else 502
        res.status = status
        res.own_error = res.own_error or ("no upstream answered: every attempt failed before "
                                          f"responding ({failure})")
        body = error_body(inb.api, status, res.own_error)
        await send_whole(send, status, (("content-type", "application/json"),), body,
                         inb.orca_headers(None))
        return
    res.status = 503
    res.own_error = "no upstream could be attempted (breakers open, retry budget or deadline spent)"
    body = error_body(inb.api, 503, res.own_error + "; retry later")
    await send_whole(send, 503, (("content-type", "application/json"),), body,
                     inb.orca_headers(None) + [(b"x-should-retry", b"false")])


def _request(rt: Runtime, inb: Inbound, att: Attempt, ch: ChannelConfig,
             crossing: Crossing | None, native: Resolved | None = None) -> UpstreamRequest:
    if crossing is None:
        facts = rt.cfg.models.get(att.model)
        cap = facts.max_output_tokens if facts is not None else None
        return UpstreamRequest("POST", upstream_url(ch, inb.api, inb.path),
                               _upstream_headers(inb, att, ch),
                               _upstream_body(inb, ch.upstream_model(att.model), cap, native),
                               att.channel, att.key_index, inb.stream)
    key: str | None = None
    if ch.pass_through_auth:
        wanted = dict(inb.headers)
        given = wanted.get("x-api-key") or wanted.get("authorization", "").partition(" ")[2]
        key = given or None
    elif ch.keys:
        key = ch.keys[att.key_index].reveal()
    return UpstreamRequest("POST", crossing.url(ch), crossing.headers(ch, inb, key),
                           crossing.translated.body, att.channel, att.key_index, inb.stream)


async def _attempt(rt: Runtime, inb: Inbound, att: Attempt, ch: ChannelConfig, send: Send,
                   res: Outcome, timeouts: Timeouts, crossing: Crossing | None = None,
                   native: Resolved | None = None,
                   ) -> bool | tuple[int, Headers, bytes, Attempt] | None:
    """True: answered the client. A tuple: a failed upstream answer to keep as `last`.
    None: a transport failure, nothing to show. With `crossing`, the channel speaks another
    format: the request goes translated, the answer (or error) comes back translated. With
    `native`, a same-format body whose orca reasoning wrappers were resolved goes (its
    drops are the trace's `translation` block if this attempt answers)."""
    assert rt.health is not None
    rec = AttemptRecord(att.model, att.channel, att.key_index)
    res.attempts.append(rec)
    res.translation = native_report(inb.api, native) if native is not None else None
    t = Attempting(rt, inb, att, send, res, crossing, rec, rt.clock.monotonic())
    req = _request(rt, inb, att, ch, crossing, native)
    resp: UpstreamResponse | None = None
    try:
        resp = await rt.transports[att.channel].send(req, timeouts)
        rec.status, rec.first_byte_ms = resp.status, t.ms()
        if classify_status(resp.status) != "success":
            failed = await _failed_answer(t, resp)
            if crossing is not None:
                return (*translated_error(crossing, *failed[:3]), att)
            return failed
        tap = ResponseTap(crossing.dst if crossing else inb.api, inb.stream, inb.max_tokens)
        await (_answer_stream(t, resp, tap) if inb.stream else _answer_whole(t, resp, tap))
        rec.latency_ms = t.ms()
        outcome = "ok" if tap.billed_success else ("error_finish" if tap.error_finish else None)
        if outcome is not None:
            rt.health.record(att.channel, att.key_index, outcome)  # type: ignore[arg-type]
        rt.metrics.upstream(att.channel, resp.status)
        return True
    except StopAsyncIteration:  # a 2xx stream with no body at all
        rec.error = "empty_stream"
        rt.health.record(att.channel, att.key_index, "stream_error")
        res.failed.add((att.channel, att.key_index))
        return None
    except UpstreamError as exc:
        return await _transport_failure(t, exc)
    except asyncio.CancelledError:  # the client left (`forward`): the attempt ran until now
        rec.latency_ms = t.ms()
        raise
    finally:
        if resp is not None:
            try:
                await resp.aclose()
            except Exception:  # noqa: BLE001, S110 - a close that fails loses nothing
                pass


async def _answer_stream(t: Attempting, resp: UpstreamResponse, tap: ResponseTap) -> None:
    """A 2xx stream: relayed (or translated) once its first chunk arrived. Until then nothing
    was sent, so a failure before it (StopAsyncIteration, UpstreamError) is retryable."""
    inb, crossing, res = t.inb, t.crossing, t.res
    chunks = resp.chunks().__aiter__()
    first = await chunks.__anext__()
    t.rec.first_byte_ms = t.ms()
    res.served, res.tap, res.status = t.att, tap, resp.status
    xl = crossing.answer(inb) if crossing is not None else None
    if crossing is not None:
        res.translation = crossing.report()
    await t.send({"type": "http.response.start", "status": resp.status,
                  "headers": client_headers(resp.headers, inb.orca_headers(t.att),
                                            translated=xl is not None)})
    if xl is None:
        await relay_stream(t, tap, first, chunks)
    else:
        await relay_translated(t, tap, xl, first, chunks)


async def _answer_whole(t: Attempting, resp: UpstreamResponse, tap: ResponseTap) -> None:
    """A 2xx JSON answer, read whole (within `max_response_mb`), renamed or translated."""
    inb, crossing = t.inb, t.crossing
    body = await read_limited(resp, t.rt.cfg.server.max_response_bytes)
    tap.feed_body(body)
    headers, status = filter_response_headers(resp.headers), resp.status
    if crossing is not None:
        status, body, headers = translate_json(crossing.answer(inb), status, body, headers)
        t.res.translation = crossing.report()
    elif inb.rename is not None:
        body = ModelNameRewriter(inb.rename).body(body)
    t.res.served, t.res.tap, t.res.status = t.att, tap, status
    await send_whole(t.send, status, headers, body, inb.orca_headers(t.att))


async def _transport_failure(t: Attempting, exc: UpstreamError) -> bool | None:
    """No answer from the upstream (refused, reset, timed out, too large). True when bytes
    had already reached the client: its stream ends with the inbound format's error."""
    rt, att, rec, res = t.rt, t.att, t.rec, t.res
    assert rt.health is not None
    rec.latency_ms = t.ms()
    rec.error = type(exc).__name__ + (f":{exc.phase}" if hasattr(exc, "phase") else "")
    rt.health.record(att.channel, att.key_index, outcome_of_error(exc), status=exc.status)
    rt.metrics.upstream(att.channel, "timeout" if hasattr(exc, "phase") else "error")
    res.failed.add((att.channel, att.key_index))
    if isinstance(exc, UpstreamTooLarge):
        res.own_error = str(exc)  # no further attempt (`_run`)
    if res.served is not None:  # bytes already reached the client: end its stream
        await t.send({"type": "http.response.body", "more_body": False,
                      "body": stream_failure(t.inb, res.tap,
                                             f"upstream stream failed: {exc}")})
        return True
    return None


async def _failed_answer(t: Attempting, resp: UpstreamResponse) -> tuple[int, Headers, bytes, Attempt]:
    """An upstream's error answer: recorded against its key, kept as the request's `last`."""
    rt, att = t.rt, t.att
    assert rt.health is not None
    body = await read_limited(resp, rt.cfg.server.max_response_bytes)
    ch = rt.cfg.channel(att.channel)
    if ch is not None and ch.keys:  # some providers echo the key they were sent
        body = scrub_secrets(body, ch.keys)
    t.rec.latency_ms = t.ms()
    t.rec.error = f"http_{resp.status}"
    wait = retry_after_seconds(resp.headers, rt.clock.now())
    rt.health.record(att.channel, att.key_index, "status", status=resp.status,
                     retry_after_s=wait)
    rt.metrics.upstream(att.channel, resp.status)
    t.res.failed.add((att.channel, att.key_index))
    return resp.status, filter_response_headers(resp.headers), body, att
