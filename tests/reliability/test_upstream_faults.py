"""Upstream faults over real sockets (SPEC §7; RELIABILITY.md S1, S2, S5, S7, S8): the live
`AiohttpTransport` against a scripted loopback provider, through a real sidecar.

Each fault gets SPEC §7's behaviour: before the first byte a retryable failure moves to the
next channel; after it the stream ends with an in-band error and no fake clean end, and is not
retried; the failing key's health is lowered as the fault's class says (429 apart and honouring
Retry-After, local-origin apart from upstream 5xx); and no fault ever strikes the session
(infrastructure failure is never capability failure, SPEC §6.3).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from orca_cli.config.load import loads
from orca_cli.testing import (
    Act,
    FakeUpstream,
    Sidecar,
    closed_port,
    sidecar,
    sse_events,
)
from tests.reliability.configs import Channel, fault_config
from tests.reliability.probes import tier_doc

pytestmark = pytest.mark.asyncio

_sessions = itertools.count()


CHANNELS: tuple[Channel, ...] = (
    ("a", "openai", "sk-test-a0-4c1d9e", "m1"), ("b", "openai", "sk-test-b0-77aa01", "m1"),
    ("c", "openai", "sk-test-c0-0b2f11", "m2"),
    ("x", "anthropic", "sk-ant-test-x0-19ce", "am1"),
    ("y", "anthropic", "sk-ant-test-y0-5e2a", "am1"),
    ("z", "anthropic", "sk-ant-test-z0-d00d", "am2"))
SERVER = {"connect_timeout_s": 1, "first_byte_timeout_s": 0.4, "idle_timeout_s": 0.4,
          "total_timeout_s": 8, "header_timeout_s": 5}


def config_text(up: FakeUpstream, *, a_url: str | None = None, b_url: str | None = None) -> str:
    """Router `r` (OpenAI format): model m1 on channels a then b (price mode orders equal
    channels by name), strong pool m2 on c. Router `ra` (Anthropic): am1 on x then y, strong
    pool am2 on z. Both escalate (`auto`), so every billed turn runs strike evaluation."""
    return fault_config(up, CHANNELS, server=SERVER, strikes=2, urls={"a": a_url, "b": b_url})


@pytest.fixture
async def sc(up: FakeUpstream) -> AsyncIterator[Sidecar]:
    async with sidecar(loads(config_text(up), source="test")) as s:
        yield s


MSG1 = {"role": "user", "content": "rename x to count in utils.py"}
MSG2 = {"role": "user", "content": "now add a docstring to count"}


async def call(sc: Sidecar, api: str, session: str, *, stream: bool = False,
               turn: int = 1) -> tuple[int, dict[str, str], bytes, float]:
    """One request of turn 1 or 2 of `session`; (status, headers, body, seconds)."""
    msgs: list[dict[str, Any]] = [MSG1]
    if turn == 2:
        msgs = [MSG1, {"role": "assistant", "content": "done"}, MSG2]
    if api == "anthropic":
        body: dict[str, Any] = {"model": "orca/ra", "max_tokens": 64, "messages": msgs}
        path = "/v1/messages"
    else:
        body = {"model": "orca/r", "messages": msgs}
        path = "/v1/chat/completions"
    if stream:
        body["stream"] = True
    t0 = time.monotonic()
    r = await sc.http.post(path, content=orjson.dumps(body), headers={
        "content-type": "application/json", "x-orca-session": session})
    return r.status_code, dict(r.headers), r.content, time.monotonic() - t0


def new_session() -> str:
    return f"uf-{next(_sessions)}"


def health_row(sc: Sidecar, channel: str) -> dict[str, Any]:
    assert sc.rt.health is not None
    return next(r for r in sc.rt.health.snapshot() if r["channel"] == channel)


async def trace_of(sc: Sidecar, headers: dict[str, str]) -> dict[str, Any]:
    trace = await sc.store.get_trace(headers["x-orca-request-id"])
    assert trace is not None
    return dict(trace)


async def assert_no_strike(sc: Sidecar, router: str, session: str, *, turns: int,
                           trace: dict[str, Any]) -> None:
    """The session committed exactly `turns` turns and none of them struck."""
    doc = await tier_doc(sc.store, router, session)
    if turns == 0:
        assert doc is None, f"a failed request committed tier state: {doc}"
    else:
        assert doc is not None and doc["turn"] == turns, doc
        assert doc["strikes"] == [] and doc["tier"] == "base", doc
    for intent in trace["intents"]:
        assert not intent.get("request_strike"), intent
        assert not intent.get("response_strikes"), intent


def assert_in_band_error(api: str, body: bytes, *, relayed: int) -> None:
    """The stream carried `relayed` upstream events, then orca's in-band error, and no fake
    clean end (SPEC §7)."""
    events = sse_events(body)
    assert len(events) == relayed + 1, events
    name, data = events[-1]
    if api == "anthropic":
        assert name == "error" and orjson.loads(data)["type"] == "error"
        assert all(n != "message_stop" for n, _ in events)
    else:
        assert "error" in orjson.loads(data)
        assert all(d != "[DONE]" for _, d in events)


# --- before the first byte: the next channel serves -------------------------------------------


async def test_429_with_retry_after_falls_to_the_next_channel_and_cools_the_key(
        sc: Sidecar, up: FakeUpstream) -> None:
    up.on("a", Act(429, (("retry-after", "2"),),
                   b'{"error":{"message":"rate limited","type":"rate_limit_error"}}'))
    sid = new_session()
    status, headers, body, _ = await call(sc, "openai", sid)
    assert status == 200 and headers["x-orca-channel"] == "b"
    assert orjson.loads(body)["choices"][0]["message"]["content"] == "the fix is in place"
    row = health_row(sc, "a")
    assert row["rate_limited"] == 1 and row["failures"] == 0 and row["local_failures"] == 0
    assert row["state"] == "closed" and 1.5 < row["retry_after_s"] <= 2.0
    # While cooled the key is not tried again: the next request goes straight to b.
    status, headers, _, _ = await call(sc, "openai", new_session())
    assert status == 200 and headers["x-orca-channel"] == "b"
    assert len(up.calls("a")) == 1 and len(up.calls("b")) == 2
    trace = await trace_of(sc, headers)
    assert [a["channel"] for a in trace["attempts"]] == ["b"]
    await assert_no_strike(sc, "r", sid, turns=1, trace=trace)


async def test_429_on_every_channel_returns_the_last_one_unmodified_within_the_deadline(
        sc: Sidecar, up: FakeUpstream) -> None:
    limited = b'{"error":{"message":"Rate limit reached for m1","type":"rate_limit_error"}}'
    for ch in "abc":
        up.always[ch] = Act(429, (("retry-after", "30"), ("x-ratelimit-remaining-requests", "0")),
                            limited)
    sid = new_session()
    status, headers, body, took = await call(sc, "openai", sid)
    assert status == 429 and body == limited
    assert headers["retry-after"] == "30" and headers["x-ratelimit-remaining-requests"] == "0"
    assert took < 2.0, "a Retry-After must never be slept past the request's deadline"
    # One attempt per channel, none repeated: a cooled key is not hammered.
    assert sorted(s.prefix for s in up.seen) == sorted({s.prefix for s in up.seen})
    trace = await trace_of(sc, headers)
    assert trace["committed"] is False
    await assert_no_strike(sc, "r", sid, turns=0, trace=trace)


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_5xx_falls_to_the_next_channel_and_lowers_health(
        sc: Sidecar, up: FakeUpstream, status: int) -> None:
    sid = new_session()
    first, headers, _, _ = await call(sc, "openai", sid)  # turn 1 pins channel a
    assert first == 200 and headers["x-orca-channel"] == "a"
    up.on("a", Act(status, body=b'{"error":{"message":"upstream broke","type":"server_error"}}'))
    code, headers, _, _ = await call(sc, "openai", sid, turn=2)
    assert code == 200 and headers["x-orca-channel"] == "b"
    trace = await trace_of(sc, headers)
    assert [(a["channel"], a["status"]) for a in trace["attempts"]] == [("a", status), ("b", 200)]
    row = health_row(sc, "a")
    assert row["failures"] == 1 and row["local_failures"] == 0 and row["rate_limited"] == 0
    await assert_no_strike(sc, "r", sid, turns=2, trace=trace)


async def test_every_channel_5xx_gives_the_last_upstream_error_as_sent(
        sc: Sidecar, up: FakeUpstream) -> None:
    up.always["x"] = Act(500, body=b'{"type":"error","error":{"type":"api_error","message":"x"}}')
    last = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    up.always["y"] = Act(529, (("x-should-retry", "true"), ("set-cookie", "s=1")), last)
    sid = new_session()
    status, headers, body, _ = await call(sc, "anthropic", sid, stream=True)
    assert status == 529 and body == last
    assert headers["x-should-retry"] == "true" and "set-cookie" not in headers
    assert headers["x-orca-channel"] == "y"
    trace = await trace_of(sc, headers)
    await assert_no_strike(sc, "ra", sid, turns=0, trace=trace)


async def test_connect_refused_is_local_origin_and_falls_over(up: FakeUpstream) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/a/v1"
    async with sidecar(loads(config_text(up, a_url=dead), source="test")) as sc:
        sid = new_session()
        status, headers, body, took = await call(sc, "openai", sid, stream=True)
        assert status == 200 and headers["x-orca-channel"] == "b"
        assert sse_events(body)[-1] == (None, "[DONE]")
        trace = await trace_of(sc, headers)
        assert trace["attempts"][0]["error"] == "UpstreamConnectError"
        row = health_row(sc, "a")
        assert row["local_failures"] == 1 and row["failures"] == 0
        assert took < 2.0
        await assert_no_strike(sc, "r", sid, turns=1, trace=trace)


async def test_every_channel_refused_is_orcas_own_502_not_nothing_attemptable(
        up: FakeUpstream) -> None:
    """Attempts were made, but no upstream answered: there is no upstream error to return, and
    it is not the 503 for "nothing could be attempted" either, whose `x-should-retry: false`
    would stop the client retrying a transient outage."""
    dead_a, dead_b = (f"http://127.0.0.1:{closed_port()}/{c}/v1" for c in "ab")
    async with sidecar(loads(config_text(up, a_url=dead_a, b_url=dead_b),
                                   source="test")) as sc:
        sid = new_session()
        status, headers, body, took = await call(sc, "openai", sid, stream=True)
        assert status == 502, (status, body)
        err = orjson.loads(body)["error"]
        assert err["type"] == "server_error" and "could be attempted" not in err["message"]
        assert "127.0.0.1" not in err["message"], "no upstream address in orca's errors"
        assert headers.get("x-should-retry") != "false"
        trace = await trace_of(sc, headers)
        assert [a["error"] for a in trace["attempts"]] == ["UpstreamConnectError"] * 2
        assert took < 2.0
        await assert_no_strike(sc, "r", sid, turns=0, trace=trace)


async def test_every_channel_timing_out_is_orcas_own_504_in_the_inbound_shape(
        sc: Sidecar, up: FakeUpstream) -> None:
    up.always["x"] = up.always["y"] = Act(stall_before_s=3.0)
    sid = new_session()
    status, headers, body, took = await call(sc, "anthropic", sid)
    assert status == 504, (status, body)
    doc = orjson.loads(body)
    assert doc["type"] == "error" and doc["error"]["type"] == "timeout_error"
    assert headers.get("x-should-retry") != "false"
    assert 0.7 <= took < 2.0, "two first-byte timeouts of 0.4 s"
    assert health_row(sc, "x")["local_failures"] == 1
    assert health_row(sc, "y")["local_failures"] == 1


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_stall_before_the_first_byte_times_out_and_falls_over(
        sc: Sidecar, up: FakeUpstream, api: str) -> None:
    first = "a" if api == "openai" else "x"
    up.on(first, Act(stall_before_s=3.0))
    sid = new_session()
    status, headers, _, took = await call(sc, api, sid, stream=True)
    assert status == 200 and headers["x-orca-channel"] == ("b" if api == "openai" else "y")
    assert 0.35 <= took < 1.5, f"first-byte timeout is 0.4 s, took {took:.2f} s"
    trace = await trace_of(sc, headers)
    assert trace["attempts"][0]["error"] == "UpstreamTimeout:first_byte"
    row = health_row(sc, first)
    assert row["local_failures"] == 1 and row["failures"] == 0
    await assert_no_strike(sc, "r" if api == "openai" else "ra", sid, turns=1, trace=trace)


# --- after the first byte: an in-band error, never a retry ------------------------------------


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_stall_mid_stream_ends_with_an_in_band_error_after_the_idle_timeout(
        sc: Sidecar, up: FakeUpstream, api: str) -> None:
    first = "a" if api == "openai" else "x"
    router = "r" if api == "openai" else "ra"
    sid = new_session()
    assert (await call(sc, api, sid))[0] == 200  # turn 1 committed
    up.on(first, Act(stall_after=2, stall_s=3.0))
    status, headers, body, took = await call(sc, api, sid, stream=True, turn=2)
    assert status == 200 and headers["x-orca-channel"] == first
    assert_in_band_error(api, body, relayed=2)
    assert 0.35 <= took < 1.5, f"idle timeout is 0.4 s, took {took:.2f} s"
    assert len(up.seen) == 2, "a stream that already sent bytes must not be retried"
    trace = await trace_of(sc, headers)
    assert trace["attempts"][0]["error"] == "UpstreamTimeout:idle" and not trace["committed"]
    assert health_row(sc, first)["local_failures"] == 1
    await assert_no_strike(sc, router, sid, turns=1, trace=trace)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_connection_dropped_mid_stream_ends_with_an_in_band_error(
        sc: Sidecar, up: FakeUpstream, api: str) -> None:
    first = "a" if api == "openai" else "x"
    router = "r" if api == "openai" else "ra"
    sid = new_session()
    assert (await call(sc, api, sid))[0] == 200
    up.on(first, Act(drop_after=3))
    status, headers, body, _ = await call(sc, api, sid, stream=True, turn=2)
    assert status == 200
    assert_in_band_error(api, body, relayed=3)
    assert len(up.seen) == 2
    trace = await trace_of(sc, headers)
    assert trace["attempts"][0]["error"] == "UpstreamStreamError" and not trace["committed"]
    row = health_row(sc, first)
    assert row["failures"] == 1 and row["local_failures"] == 0
    await assert_no_strike(sc, router, sid, turns=1, trace=trace)


# --- a 2xx that ends in error: an upstream failure, not a turn --------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_200_with_an_error_finish_reason_is_relayed_and_lowers_health_only(
        sc: Sidecar, up: FakeUpstream, stream: bool) -> None:
    sid = new_session()
    assert (await call(sc, "openai", sid))[0] == 200
    up.on("a", Act(finish="error"))
    status, headers, body, _ = await call(sc, "openai", sid, stream=stream, turn=2)
    assert status == 200 and headers["x-orca-channel"] == "a"
    if stream:
        events = sse_events(body)
        assert events[-1] == (None, "[DONE]"), "the upstream's own stream is relayed as sent"
        assert any('"finish_reason":"error"' in d for _, d in events)
    else:
        assert orjson.loads(body)["choices"][0]["finish_reason"] == "error"
    assert len(up.seen) == 2
    row = health_row(sc, "a")
    assert row["failures"] == 1 and row["successes"] == 1
    trace = await trace_of(sc, headers)
    assert not trace["committed"]
    await assert_no_strike(sc, "r", sid, turns=1, trace=trace)


IN_BAND = {
    "anthropic": (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m",'
                  b'"type":"message","role":"assistant","model":"am1","content":[],'
                  b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
                  b'event: error\ndata: {"type":"error","error":'
                  b'{"type":"overloaded_error","message":"Overloaded"}}\n\n'),
    "openai": (b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m1",'
               b'"choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},'
               b'"finish_reason":null}]}\n\n',
               b'data: {"error":{"message":"Overloaded","type":"overloaded_error"}}\n\n'),
}


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_an_upstream_in_band_error_is_relayed_once_and_counted_once(
        sc: Sidecar, up: FakeUpstream, api: str) -> None:
    """A 200 stream that ends with the provider's own error event already ended in the
    stream's error form: orca adds no second error event and lowers health once."""
    first = "a" if api == "openai" else "x"
    router = "r" if api == "openai" else "ra"
    sid = new_session()
    assert (await call(sc, api, sid))[0] == 200
    up.on(first, Act(events=IN_BAND[api]))
    status, _, body, _ = await call(sc, api, sid, stream=True, turn=2)
    assert status == 200
    got = sse_events(body)
    assert len(got) == 2 and body.endswith(IN_BAND[api][1]), got
    assert "Overloaded" in got[-1][1]
    row = health_row(sc, first)
    assert row["failures"] == 1 and row["successes"] == 1
    doc = await tier_doc(sc.store, router, sid)
    assert doc is not None and doc["turn"] == 1 and doc["strikes"] == []
