"""Fallbacks through the real server (SPEC §7, §1.2): retryable failures move to the next
key, channel and fallback model; client errors return at once; the last upstream error
reaches the client unmodified; orca answers its own 503 only when nothing was attemptable;
a provider-qualified `channel:model` never leaves its channel."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import anthropic
import orjson
import pytest
import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.proxy.transport import (
    Timeouts,
    Transport,
    UpstreamConnectError,
    UpstreamRequest,
    UpstreamTimeout,
)
from orca_cli.testing import Sidecar, anthropic_json, eventually, openai_sse, sidecar, sse_events
from tests.e2e.scripted import Reply, ScriptedResponse, ScriptedTransport

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONFIG = """
[[channels]]
name = "a"
type = "openai-compatible"
base_url = "http://upstream-a.invalid/v1"
keys = ["sk-a-0", "sk-a-1"]
models = ["m1"]
weight = 2

[[channels]]
name = "b"
type = "openai-compatible"
base_url = "http://upstream-b.invalid/v1"
keys = ["sk-b-0"]
models = ["m1"]

[[channels]]
name = "c"
type = "openai-compatible"
base_url = "http://upstream-c.invalid/v1"
keys = ["sk-c-0"]
models = ["m2"]

[[channels]]
name = "d"
type = "anthropic"
base_url = "http://upstream-d.invalid"
keys = ["sk-d-0"]
models = ["am"]

[models.m1]
input = 1.0
[models.m2]
input = 2.0

[routers.r]
strategy = "cheapest"
mode = "price"
allowed_models = ["m1", "m2"]
fallbacks = ["m2"]
[routers.r.escalation]
mode = "off"
"""
MSGS = [{"role": "user", "content": "rename x to count in utils.py"}]
_sessions = itertools.count()


@pytest.fixture
def ups() -> dict[str, ScriptedTransport]:
    return {name: ScriptedTransport() for name in "abcd"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar, ups: dict[str, ScriptedTransport]) -> AsyncIterator[Sidecar]:
    async with server.use(loads(CONFIG, source="test"), transports=ups) as st:
        yield st


async def chat(st: Sidecar, model: str = "orca/r", *, stream: bool = False,
               session: str | None = None) -> tuple[int, dict[str, str], bytes]:
    body = {"model": model, "messages": MSGS, "stream": stream}
    headers = {"content-type": "application/json",
               "x-orca-session": session or f"fb-{next(_sessions)}"}
    r = await st.http.post("/v1/chat/completions", content=orjson.dumps(body), headers=headers)
    return r.status_code, dict(r.headers), r.content


def total_calls(ups: dict[str, ScriptedTransport]) -> int:
    return sum(len(t.requests) for t in ups.values())


FAILURES = {
    "429": Reply(429, b'{"error":{"message":"slow down","type":"rate_limit_error"}}'),
    "500": Reply(500, b'{"error":{"message":"boom","type":"server_error"}}'),
    "502": Reply(502, b"bad gateway"),
    "503": Reply(503, b'{"error":{"message":"overloaded","type":"server_error"}}'),
    "504": Reply(504, b"gateway timeout"),
    "connect": Reply(error=UpstreamConnectError("upstream connect failed: refused")),
    "first_byte_timeout": Reply(error=UpstreamTimeout("first_byte")),
}


@pytest.mark.parametrize("kind", list(FAILURES))
async def test_a_retryable_failure_is_served_by_the_next_key(
        stack: Sidecar, ups: dict[str, ScriptedTransport], kind: str) -> None:
    ups["a"].script = [FAILURES[kind]]
    status, headers, body = await chat(stack)
    assert status == 200 and orjson.loads(body)["choices"][0]["message"]["content"] == "done"
    assert headers["x-orca-channel"] == "a" and headers["x-orca-model"] == "m1"
    first, second = ups["a"].credentials()
    assert first != second, "the retry reused the key that just failed"
    assert total_calls(ups) == 2
    trace = await stack.rt.gate.store.get_trace(headers["x-orca-request-id"])
    assert trace is not None
    assert [a["status"] for a in trace["attempts"]][-1] == 200
    assert len(trace["attempts"]) == 2


async def test_a_failed_channel_falls_to_the_next_channel(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    ups["a"].script = [FAILURES["503"], FAILURES["500"]]
    status, headers, _ = await chat(stack)
    assert status == 200
    assert (headers["x-orca-model"], headers["x-orca-channel"]) == ("m1", "b")
    assert sorted(ups["a"].credentials()) == ["Bearer sk-a-0", "Bearer sk-a-1"]
    assert ups["b"].credentials() == ["Bearer sk-b-0"]
    assert not ups["c"].requests


async def test_then_the_routers_fallback_model(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    ups["a"].script = [FAILURES["503"], FAILURES["503"]]
    ups["b"].script = [FAILURES["502"]]
    status, headers, _ = await chat(stack)
    assert status == 200
    assert (headers["x-orca-model"], headers["x-orca-channel"]) == ("m2", "c")
    assert orjson.loads(ups["c"].requests[0].body)["model"] == "m2"


async def test_a_stream_that_fails_before_its_first_byte_is_retried(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    ups["a"].script = [Reply(chunks=tuple(openai_sse()), break_after=0,
                             headers=(("content-type", "text/event-stream"),))]
    status, headers, body = await chat(stack, stream=True)
    assert status == 200 and headers["x-orca-channel"] == "a"
    events = sse_events(body)
    assert events[-1] == (None, "[DONE]")
    assert not any('"error"' in data for _, data in events)
    assert len(set(ups["a"].credentials())) == 2


async def test_every_attempt_failed_returns_the_last_upstream_error_unmodified(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    ups["a"].script = [FAILURES["503"], FAILURES["503"]]
    ups["b"].script = [FAILURES["500"]]
    last_body = b'{"error":{"message":"Rate limit reached for m2 in org-x","code":"rate_limit"}}'
    ups["c"].script = [Reply(429, last_body, headers=(
        ("content-type", "application/json"), ("retry-after", "3"),
        ("x-ratelimit-remaining-requests", "0"), ("x-request-id", "up-req-7"),
        ("set-cookie", "session=secret"), ("connection", "close")))]
    status, headers, body = await chat(stack)
    assert status == 429
    assert body == last_body
    assert headers["retry-after"] == "3"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert headers["x-request-id"] == "up-req-7"
    assert "set-cookie" not in headers
    assert headers["x-orca-channel"] == "c" and headers["x-orca-model"] == "m2"
    assert total_calls(ups) == 4


async def test_an_anthropic_clients_sdk_sees_the_upstream_error_as_sent(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    upstream = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    ups["d"].script = [Reply(529, orjson.dumps(upstream), headers=(
        ("content-type", "application/json"), ("retry-after", "11"),
        ("x-should-retry", "true")))]
    client = anthropic.AsyncAnthropic(base_url=stack.base, api_key="agent-key", max_retries=0)
    try:
        with pytest.raises(anthropic.APIStatusError) as err:
            await client.messages.create(model="am", max_tokens=16, messages=MSGS)
    finally:
        await client.close()
    assert err.value.status_code == 529
    assert err.value.body == upstream
    assert err.value.response.headers["retry-after"] == "11"
    assert err.value.response.headers["x-should-retry"] == "true"


@pytest.mark.parametrize("code", [400, 403, 404, 413, 422])
async def test_a_client_error_returns_at_once_without_another_attempt(
        stack: Sidecar, ups: dict[str, ScriptedTransport], code: int) -> None:
    sent = b'{"error":{"message":"messages[0].content: bad","type":"invalid_request_error"}}'
    ups["a"].script = [Reply(code, sent)]
    status, headers, body = await chat(stack)
    assert (status, body) == (code, sent)
    assert headers["x-orca-channel"] == "a"
    assert total_calls(ups) == 1, "a client error must not switch key, channel or model"


@pytest.mark.parametrize("code", [401, 402])
async def test_a_key_error_cools_that_key_and_the_next_key_serves(
        stack: Sidecar, ups: dict[str, ScriptedTransport], code: int) -> None:
    ups["a"].script = [Reply(code, b'{"error":{"message":"invalid api key"}}')]
    status, headers, _ = await chat(stack)
    assert status == 200 and headers["x-orca-channel"] == "a"
    bad, good = ups["a"].credentials()
    assert bad != good
    bad_index = int(bad.rsplit("-", 1)[1])
    assert stack.rt.health is not None and not stack.rt.health.healthy("a", bad_index)
    for _ in range(4):  # the cooled key is not tried again while it cools down
        status, headers, _ = await chat(stack)
        assert status == 200
    assert ups["a"].credentials()[2:] == [good] * 4


async def test_nothing_attemptable_is_orcas_own_503_that_says_do_not_retry(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    unauthorized = b'{"error":{"message":"Incorrect API key provided"}}'
    for name in "abc":
        ups[name].then = Reply(401, unauthorized)
    status, headers, body = await chat(stack)
    assert (status, body) == (401, unauthorized), "the last upstream error, unmodified"
    assert total_calls(ups) == 4
    # Every key is now cooling down: nothing can be attempted, orca answers itself.
    status, headers, body = await chat(stack)
    assert status == 503
    assert headers["x-should-retry"] == "false"
    assert headers["x-orca-request-id"].startswith("req_")
    assert "x-orca-channel" not in headers
    err = orjson.loads(body)["error"]
    assert err["message"] and err["type"]
    assert total_calls(ups) == 4, "a cooled key was attempted"


async def test_nothing_attemptable_speaks_the_anthropic_shape_too(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    ups["d"].then = Reply(401, b'{"type":"error","error":{"type":"authentication_error",'
                               b'"message":"invalid x-api-key"}}')
    req = {"model": "am", "max_tokens": 16, "messages": MSGS}
    hdrs = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    first = await stack.http.post("/v1/messages", content=orjson.dumps(req), headers=hdrs)
    assert first.status_code == 401
    second = await stack.http.post("/v1/messages", content=orjson.dumps(req), headers=hdrs)
    assert second.status_code == 503 and second.headers["x-should-retry"] == "false"
    doc = second.json()
    assert doc["type"] == "error" and doc["error"]["message"]
    assert len(ups["d"].requests) == 1


async def test_a_provider_qualified_model_never_crosses_channels(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    ups["a"].then = FAILURES["503"]
    status, headers, body = await chat(stack, "a:m1")
    assert status == 503 and body == FAILURES["503"].body
    assert len(ups["a"].requests) == 2  # both keys of a, nothing else
    assert not ups["b"].requests and not ups["c"].requests
    assert [orjson.loads(r.body)["model"] for r in ups["a"].requests] == ["m1", "m1"]
    status, headers, _ = await chat(stack, "b:m1")
    assert status == 200 and headers["x-orca-channel"] == "b"
    assert len(ups["a"].requests) == 2


async def test_the_anthropic_format_is_served_only_by_an_anthropic_channel(
        stack: Sidecar, ups: dict[str, ScriptedTransport]) -> None:
    ups["d"].then = Reply(body=anthropic_json("hi", "am"))
    r = await stack.http.post("/v1/messages", content=orjson.dumps(
        {"model": "am", "max_tokens": 16, "messages": MSGS}),
        headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.headers["x-orca-channel"] == "d"
    assert ups["d"].credentials() == ["sk-d-0"]
    assert ups["d"].requests[0].url == "http://upstream-d.invalid/v1/messages"


class Outage:
    """Every upstream answers 503, but only when the test opens the gate of that round: the
    first attempts of all requests wait on `first`, every later attempt on `later`."""

    def __init__(self, first_round: int) -> None:
        self.first_round = first_round
        self.first = asyncio.Event()
        self.later = asyncio.Event()
        self.calls = 0

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> ScriptedResponse:
        self.calls += 1
        gate = self.first if self.calls <= self.first_round else self.later
        async with asyncio.timeout(5):
            await gate.wait()
        return ScriptedResponse(FAILURES["503"])

    async def aclose(self) -> None:
        return None


async def test_an_outage_does_not_multiply_traffic(server: Sidecar) -> None:
    """SPEC §7: retries in flight stay within the budget (floor 3 + 20 % of requests)."""
    n = 20
    outage = Outage(first_round=n)
    transports: dict[str, Transport] = {name: outage for name in "abcd"}
    async with server.use(loads(CONFIG, source="test"), transports=transports) as st:
        tasks = [asyncio.ensure_future(chat(st)) for _ in range(n)]
        await eventually(lambda: outage.calls >= n, 5, 0.005, what="every first attempt")
        outage.first.set()
        await eventually(lambda: sum(t.done() for t in tasks) + (outage.calls - n) >= n, 5,
                         0.005, what="each request answered or retried")
        retries_in_flight = outage.calls - n
        # An absence is checked over a window: nothing more arrives while those retries wait.
        await asyncio.sleep(0.05)
        assert outage.calls - n == retries_in_flight
        assert 1 <= retries_in_flight <= 3 + 0.2 * n
        outage.later.set()
        results = await asyncio.gather(*tasks)
    assert all(status == 503 for status, _, _ in results)
    assert all(body == FAILURES["503"].body for _, _, body in results)


SHARED_KEY_CONFIG = """
[[channels]]
name = "x"
type = "openai-compatible"
base_url = "http://upstream-x.invalid/v1"
keys = ["sk-x-0"]
models = ["m1", "m2"]

[[channels]]
name = "y"
type = "openai-compatible"
base_url = "http://upstream-y.invalid/v1"
keys = ["sk-y-0"]
models = ["m2"]
weight = 0.5

[models.m1]
input = 1.0
[models.m2]
input = 2.0

[routers.r]
strategy = "cheapest"
mode = "price"
allowed_models = ["m1", "m2"]
fallbacks = ["m2"]
[routers.r.escalation]
mode = "off"
"""


@pytest.mark.parametrize("code", [401, 402])
async def test_a_key_that_failed_its_credential_is_not_reused_for_a_fallback_model(
        server: Sidecar, code: int) -> None:
    """The key answered 401/402 for m1; the fallback m2 must not go out with the same key
    (it is cooling down) but to the next channel that serves m2."""
    ups = {"x": ScriptedTransport(then=Reply(code, b'{"error":{"message":"bad key"}}')),
           "y": ScriptedTransport()}
    transports: dict[str, Transport] = dict(ups)
    async with server.use(loads(SHARED_KEY_CONFIG, source="test"), transports=transports) as st:
        status, headers, _ = await chat(st)
    assert status == 200
    assert (headers["x-orca-model"], headers["x-orca-channel"]) == ("m2", "y")
    assert [orjson.loads(r.body)["model"] for r in ups["x"].requests] == ["m1"]


@pytest.mark.parametrize("retry_after", ["30", None])
async def test_a_429_benches_its_key_only_for_its_retry_after(
        stack: Sidecar, ups: dict[str, ScriptedTransport], retry_after: str | None) -> None:
    """SPEC §7: 429 honours Retry-After and does not lower health on its own."""
    headers = (("content-type", "application/json"),)
    if retry_after is not None:
        headers += (("retry-after", retry_after),)
    ups["a"].script = [Reply(429, FAILURES["429"].body, headers=headers)]
    status, _, _ = await chat(stack)
    assert status == 200
    limited, good = ups["a"].credentials()
    for _ in range(14):
        status, _, _ = await chat(stack)
        assert status == 200
    later = ups["a"].credentials()[2:]
    if retry_after is not None:
        assert later == [good] * 14, "a rate-limited key was tried inside its Retry-After"
    else:
        assert limited in later, "a 429 without Retry-After benched its key"


SOLO_CONFIG = """
[[channels]]
name = "a"
type = "openai-compatible"
base_url = "http://upstream-a.invalid/v1"
keys = ["sk-a-0"]
models = ["m1"]

[[channels]]
name = "d"
type = "anthropic"
base_url = "http://upstream-d.invalid"
keys = ["sk-d-0"]
models = ["am"]
"""


async def test_with_every_key_waiting_out_a_retry_after_the_client_is_told_when_to_retry(
        server: Sidecar) -> None:
    """A 429 whose Retry-After benches the only key: the next request, inside that wait, is
    orca's own 429 in the client's shape with the time left, not a 503 that says never."""
    ups = {"a": ScriptedTransport(), "d": ScriptedTransport()}
    limited = b'{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}'
    ups["a"].script = [Reply(429, limited, headers=(("content-type", "application/json"),
                                                    ("retry-after", "7")))]
    ups["d"].script = [Reply(429, b'{"type":"error","error":{"type":"rate_limit_error",'
                                  b'"message":"slow"}}',
                             headers=(("content-type", "application/json"),
                                      ("retry-after", "20")))]
    transports: dict[str, Transport] = dict(ups)
    async with server.use(loads(SOLO_CONFIG, source="test"), transports=transports) as st:
        first = await chat(st, "m1")
        status, headers, body = await chat(st, "m1")
        client = anthropic.AsyncAnthropic(base_url=st.base, api_key="agent-key", max_retries=0)
        try:
            with pytest.raises(anthropic.APIStatusError):
                await client.messages.create(model="am", max_tokens=16, messages=MSGS)
            with pytest.raises(anthropic.RateLimitError) as err:
                await client.messages.create(model="am", max_tokens=16, messages=MSGS)
        finally:
            await client.close()
    assert first[0] == 429 and first[2] == limited  # the upstream's own, unmodified
    assert status == 429 and headers["retry-after"] in ("6", "7")
    assert "x-should-retry" not in headers
    error = orjson.loads(body)["error"]
    assert error["code"] == "rate_limited" and "retry after" in error["message"]
    assert len(ups["a"].requests) == 1  # nothing sent to the benched key
    assert err.value.response.headers["retry-after"] in ("19", "20")
    assert err.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert len(ups["d"].requests) == 1


async def test_a_key_waiting_out_an_overloads_retry_after_is_an_overload_not_a_rate_limit(
        server: Sidecar) -> None:
    """An Anthropic 529 (overloaded) with Retry-After benches the only key: inside that wait
    the client is told to come back as the overload it was — 503 with Retry-After, Anthropic
    `overloaded_error` — not as a rate limit."""
    ups = {"a": ScriptedTransport(), "d": ScriptedTransport()}
    ups["d"].script = [Reply(529, b'{"type":"error","error":{"type":"overloaded_error",'
                                  b'"message":"Overloaded"}}',
                             headers=(("content-type", "application/json"),
                                      ("retry-after", "20")))]
    transports: dict[str, Transport] = dict(ups)
    async with server.use(loads(SOLO_CONFIG, source="test"), transports=transports) as st:
        client = anthropic.AsyncAnthropic(base_url=st.base, api_key="agent-key", max_retries=0)
        try:
            with pytest.raises(anthropic.APIStatusError):
                await client.messages.create(model="am", max_tokens=16, messages=MSGS)
            with pytest.raises(anthropic.APIStatusError) as err:
                await client.messages.create(model="am", max_tokens=16, messages=MSGS)
        finally:
            await client.close()
    resp = err.value.response
    assert resp.status_code == 503 and resp.headers["retry-after"] in ("19", "20")
    assert "x-should-retry" not in resp.headers
    body = err.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "overloaded_error"
    assert "overloaded" in body["error"]["message"] and "rate-limited" not in body["error"]["message"]
    assert len(ups["d"].requests) == 1  # nothing sent to the benched key
