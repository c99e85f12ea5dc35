"""What a translated answer says about itself, through the official openai SDK against the
real server: the time it was answered (`created` / `created_at`: the upstream's own where its
format has one, else orca's clock, never 0), and, when its upstream breaks mid-stream, a
Responses `response.failed` that ends the response the stream announced (its id, model and
`created_at`, the next `sequence_number`) rather than one of its own (SPEC §7, §13.2 rule 7).
The native (same-format) Responses stream is held to the same rule, under the name the
client sent (SPEC §14.2).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Self

import pytest
import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, Sidecar
from tests.e2e.translation.kit import oa, trace_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

UPSTREAM_CREATED = 1  # what the fake provider's Chat and Responses answers say

# A Chat Completions sim that breaks every stream after 400 bytes (`faults.after_bytes`: an
# upstream that goes away mid-answer) and a Messages sim (a format with no timestamp).
SIM_CONFIG = """
[[channels]]
name = "sim-drops"
type = "sim"
api = "openai"
keys = ["sim-drops-key"]
models = ["sim-gpt-drops"]
faults = { after_bytes = 400 }

[[channels]]
name = "sim-messages"
type = "sim"
api = "anthropic"
keys = ["sim-messages-key"]
models = ["sim-claude"]
"""


@pytest_asyncio.fixture(loop_scope="module")
async def sims(server: Sidecar) -> AsyncIterator[Sidecar]:
    async with server.use(loads(SIM_CONFIG, source="test")) as st:
        yield st


class Window:
    """The wall-clock seconds a request was in flight (a translated answer's time is in it)."""

    def __enter__(self) -> Self:
        self.start = int(time.time())
        return self

    def __exit__(self, *exc: object) -> None:
        self.end = int(time.time()) + 1

    def __contains__(self, when: object) -> bool:
        return isinstance(when, int | float) and self.start <= when <= self.end


async def _chat_created(st: Sidecar, model: str, *, stream: bool) -> list[int]:
    """The `created` of a Chat Completions answer (of every chunk of a stream)."""
    messages: Any = [{"role": "user", "content": "hi"}]
    if not stream:
        r = await oa(st).chat.completions.create(model=model, messages=messages)
        return [r.created]
    chunks = await oa(st).chat.completions.create(
        model=model, messages=messages, stream=True, stream_options={"include_usage": True})
    return [c.created async for c in chunks]


async def _responses_created(st: Sidecar, model: str, *, stream: bool) -> list[float]:
    """The `created_at` of a Responses answer (of every response object a stream carries)."""
    if not stream:
        r = await oa(st).responses.create(model=model, input="hi")
        return [r.created_at]
    events = await oa(st).responses.create(model=model, input="hi", stream=True)
    return [ev.response.created_at async for ev in events if hasattr(ev, "response")]


async def _responses_events(st: Sidecar, model: str) -> list[Any]:
    events = await oa(st).responses.create(model=model, input="hi", stream=True)
    return [ev async for ev in events]


def assert_fails_the_announced_response(events: list[Any], model: str) -> None:
    """The stream is one response from `response.created` to its `response.failed`: one id,
    model and `created_at`, sequence numbers 0, 1, 2, … with none skipped or repeated."""
    assert events[0].type == "response.created" and events[-1].type == "response.failed"
    assert [ev.sequence_number for ev in events] == list(range(len(events)))
    announced, failed = events[0].response, events[-1].response
    assert announced.id.startswith("resp_") and failed.id == announced.id
    assert failed.model == announced.model == model
    assert failed.created_at == announced.created_at != 0
    assert failed.status == "failed" and failed.error is not None
    assert not any(ev.type == "response.completed" for ev in events)


# --- the time of an answer ----------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("inbound", ["openai", "responses"])
async def test_an_answer_translated_from_messages_carries_the_time_it_was_answered(
        stack: Sidecar, provider: FakeUpstream, inbound: str, stream: bool) -> None:
    """The Messages format has no timestamp to carry over: the answer gets orca's clock."""
    ask = _chat_created if inbound == "openai" else _responses_created
    with Window() as window:
        times = await ask(stack, "claude-t", stream=stream)
    assert times and all(t == times[0] for t in times), times
    assert times[0] in window, (times[0], window.start, window.end)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("inbound", "model"), [("openai", "codex-t"), ("responses", "gpt-t")])
async def test_an_answer_translated_from_a_timestamped_format_keeps_the_upstreams_time(
        stack: Sidecar, provider: FakeUpstream, inbound: str, model: str, stream: bool) -> None:
    ask = _chat_created if inbound == "openai" else _responses_created
    times = await ask(stack, model, stream=stream)
    assert times and set(times) == {UPSTREAM_CREATED}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("inbound", ["openai", "responses"])
async def test_a_sim_messages_answer_served_to_an_openai_client_is_not_from_1970(
        sims: Sidecar, inbound: str, stream: bool) -> None:
    ask = _chat_created if inbound == "openai" else _responses_created
    with Window() as window:
        times = await ask(sims, "sim-claude", stream=stream)
    assert times and all(t in window for t in times), (times, window.start, window.end)


# --- a stream that breaks -----------------------------------------------------------------


async def test_a_sim_chat_stream_that_drops_fails_the_responses_stream_it_began(
        sims: Sidecar) -> None:
    """A Responses client on a Chat Completions sim that drops the stream."""
    events = await _responses_events(sims, "sim-gpt-drops")
    assert_fails_the_announced_response(events, "sim-gpt-drops")
    assert events[0].response.id.startswith("resp_sim")
    trace = await trace_of(sims)
    assert trace["translation"]["to"] == "openai"
    assert trace["attempts"][-1]["error"].startswith("UpstreamStreamError")


@pytest.mark.parametrize("model", ["gpt-t", "claude-t"])
async def test_a_translated_stream_whose_upstream_goes_away_fails_the_response_it_began(
        stack: Sidecar, provider: FakeUpstream, model: str) -> None:
    """Chat Completions and Messages upstreams, the connection aborted after 3 events."""
    prefix = "oa" if model == "gpt-t" else "an"
    provider.on(prefix, Act(text="one two three four", drop_after=3))
    events = await _responses_events(stack, model)
    assert_fails_the_announced_response(events, model)
    trace = await trace_of(stack)
    assert trace["translation"]["from"] == "responses"
    assert trace["attempts"][-1]["error"] is not None, "the failure is still recorded"


@pytest.mark.parametrize("model", ["codex-t", "orca/pair"])
async def test_a_native_responses_stream_that_breaks_fails_the_response_it_began(
        stack: Sidecar, provider: FakeUpstream, model: str) -> None:
    """Same format, relayed as it came: the failure continues the stream the same way, and
    under a router name (`orca/pair`, answered as the name the client sent) it names that."""
    provider.on("rs", Act(text="one two three four", drop_after=4))
    events = await _responses_events(stack, model)
    assert_fails_the_announced_response(events, model)
    trace = await trace_of(stack)
    assert "translation" not in trace and trace["selected"]["channel"] == "rs"
