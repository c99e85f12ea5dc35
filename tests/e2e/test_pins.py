"""Pins through the real server (SPEC §5, §3, §9): a session's next turns go to the model,
channel and key that served it, as the store records them; a pin follows the upstream that
served after a failure; sessionless requests get no pin; one store read and one commit per
request."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from orca_cli.clock import SystemClock
from orca_cli.config.load import loads
from orca_cli.config.schema import Config
from orca_cli.proxy.sim import SimTransport
from orca_cli.proxy.transport import Timeouts, Transport, UpstreamRequest, UpstreamResponse
from orca_cli.routing.candidates import key_slots
from orca_cli.state.base import SlotRef
from orca_cli.state.memory import MemoryStore
from orca_cli.testing import Sidecar, sidecar
from tests.e2e.scripted import Reply, ScriptedResponse

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHANNEL = """
[[channels]]
name = "{name}"
type = "sim"
api = "openai"
keys = ["{name}-key-0", "{name}-key-1", "{name}-key-2"]
models = ["m-weak", "m-mid", "m-strong"]
"""
CONFIG = "".join(CHANNEL.format(name=n) for n in ("s1", "s2", "s3")) + """
[models."m-weak"]
input = 0.1
[models."m-mid"]
input = 1.0
[models."m-strong"]
input = 5.0

[routers.r]
strategy = "gated_adaptive"
mode = "balanced"
allowed_models = ["m-weak", "m-mid", "m-strong"]
weak_pool = ["m-weak"]
mid_pool = ["m-mid"]
strong_pool = ["m-strong"]
t1 = 0.2
t2 = 0.5
[routers.r.escalation]
mode = "off"

[routers.bg]
strategy = "cheapest"
session_aware = false
allowed_models = ["m-weak", "m-mid"]
[routers.bg.escalation]
mode = "off"

[routers.esc]
strategy = "cheapest"
allowed_models = ["m-weak", "m-strong"]
strong_pool = ["m-strong"]
"""
EASY = [{"role": "user", "content": "hi"}]
HARD = ("Prove step by step why this def parse(x): return json.loads(x) raises; derive the "
        "complexity $O(n^2)$ and the integral \\int_0^1 x^2 dx; think carefully, analyze the "
        "trade-offs and explain why. class Foo: def bar(self): import os; return lambda y: y")
TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
_ids = itertools.count()


class Switchable:
    """A sim channel that answers 503 while `failing` (an outage at the upstream edge)."""

    def __init__(self, inner: SimTransport) -> None:
        self.inner = inner
        self.failing = False
        self.failed = 0

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> UpstreamResponse:
        if self.failing:
            self.failed += 1
            return ScriptedResponse(Reply(503, b'{"error":{"message":"overloaded"}}'))
        return await self.inner.send(req, timeouts)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def cfg() -> Config:
    return loads(CONFIG, source="test")


@pytest.fixture
def ups(cfg: Config) -> dict[str, Switchable]:
    clock = SystemClock()
    return {ch.name: Switchable(SimTransport(ch, clock)) for ch in cfg.channels}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar, cfg: Config, ups: dict[str, Switchable]) -> AsyncIterator[Sidecar]:
    transports: dict[str, Transport] = dict(ups)
    async with server.use(cfg, transports=transports) as st:
        yield st


def turn(n: int, hard: bool = False) -> list[dict[str, Any]]:
    """A conversation after `n` exchanges; `hard` makes the whole transcript score high."""
    msgs: list[dict[str, Any]] = list(EASY)
    for i in range(n):
        msgs += [{"role": "assistant", "content": f"answer {i}"},
                 {"role": "user", "content": HARD if hard else f"and then step {i}"}]
    return msgs


async def post(st: Sidecar, body: dict[str, Any], **headers: str) -> tuple[dict[str, str],
                                                                        dict[str, Any]]:
    r = await st.http.post("/v1/chat/completions", content=orjson.dumps(body),
                           headers={"content-type": "application/json", **headers})
    assert r.status_code == 200, r.text
    trace = await st.rt.gate.store.get_trace(r.headers["x-orca-request-id"])
    assert trace is not None
    return dict(r.headers), dict(trace)


def served(headers: dict[str, str], trace: dict[str, Any]) -> tuple[str, str, int]:
    sel = trace["selected"]
    assert (sel["model"], sel["channel"]) == (headers["x-orca-model"], headers["x-orca-channel"])
    return sel["model"], sel["channel"], sel["key_index"]


async def pins(st: Sidecar, router: str, session: str) -> tuple[Any, Any]:
    slot = SlotRef.of_session(router, session)
    model = await st.rt.gate.store.get(slot, "pin:base")
    chan = await st.rt.gate.store.get(slot, "chan:base")
    return (model.value if model else None), (chan.value if chan else None)


async def test_a_sessions_next_turns_go_to_the_same_model_channel_and_key(stack: Sidecar) -> None:
    sid = f"pin-{next(_ids)}"
    h, tr = await post(stack, {"model": "orca/r", "messages": turn(0)}, **{"x-orca-session": sid})
    first = served(h, tr)
    assert first[0] == "m-weak"
    model_pin, chan_pin = await pins(stack, "r", sid)
    assert model_pin == first[0]
    assert (chan_pin["channel"], chan_pin["key_index"]) == first[1:]
    assert chan_pin["key_fp"] == tr["selected"]["key_fp"] and len(chan_pin["key_fp"]) == 8
    for n in range(1, 5):
        # The later turns are hard enough that the strategy alone would pick m-strong.
        h, tr = await post(stack, {"model": "orca/r", "messages": turn(n, hard=True),
                                   "tools": TOOLS}, **{"x-orca-session": sid})
        assert served(h, tr) == first
        assert tr["difficulty"]["full"] is None
        assert tr["difficulty"]["full_skipped"] == "pinned"
        assert [(p["kind"], p["status"]) for p in tr["pins"]] == [("model", "hit"),
                                                                  ("channel", "hit")]
    # Control: without the pin the same hard transcript is served elsewhere.
    h, tr = await post(stack, {"model": "orca/r", "messages": turn(1, hard=True), "tools": TOOLS},
                       **{"x-orca-session": f"pin-fresh-{next(_ids)}"})
    assert served(h, tr)[0] == "m-strong"


async def test_fresh_sessions_spread_over_channels_and_keys(stack: Sidecar) -> None:
    """The other half of the pin test: without a pin the choice really varies."""
    seen = set()
    for _ in range(30):
        h, tr = await post(stack, {"model": "orca/r", "messages": turn(0)},
                           **{"x-orca-session": f"spread-{next(_ids)}"})
        seen.add(served(h, tr)[1:])
    assert len(seen) > 1


async def test_the_pin_ttl_is_the_channels_cache_window(stack: Sidecar) -> None:
    sid = f"ttl-{next(_ids)}"
    await post(stack, {"model": "orca/r", "messages": turn(0)}, **{"x-orca-session": sid})
    slot = SlotRef.of_session("r", sid)
    for key in ("pin:base", "chan:base"):
        entry = await stack.rt.gate.store.get(slot, key)
        assert entry is not None and entry.ttl_s is not None
        assert 290 < entry.ttl_s <= 300  # sim channels: the unmapped 5-minute window


async def test_an_anthropic_one_hour_cache_mark_stretches_the_pin_to_an_hour(stack: Sidecar) -> None:
    """`cache_control: {"ttl": "1h"}` (Anthropic's extended cache) keeps the prefix warm an
    hour: the pins live that long. The same key in an OpenAI-format body is not a cache mark."""
    sid = f"ttl1h-{next(_ids)}"
    mark = {"type": "text", "text": "look", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    r = await stack.http.post("/v1/messages", content=orjson.dumps(
        {"model": "orca/r", "max_tokens": 64, "messages": [{"role": "user", "content": [mark]}]}),
        headers={"content-type": "application/json", "x-orca-session": sid})
    assert r.status_code == 200, r.text
    entry = await stack.rt.gate.store.get(SlotRef.of_session("r", sid), "chan:base")
    assert entry is not None and entry.ttl_s is not None and 3590 < entry.ttl_s <= 3600
    sid = f"ttl1h-openai-{next(_ids)}"
    await post(stack, {"model": "orca/r", "metadata": {"ttl": "1h"}, "messages": EASY},
               **{"x-orca-session": sid})
    entry = await stack.rt.gate.store.get(SlotRef.of_session("r", sid), "chan:base")
    assert entry is not None and entry.ttl_s is not None and 290 < entry.ttl_s <= 300


async def test_after_its_upstream_failed_the_pin_follows_the_upstream_that_served(
        stack: Sidecar, ups: dict[str, Switchable]) -> None:
    sid = f"move-{next(_ids)}"
    h, tr = await post(stack, {"model": "orca/r", "messages": turn(0)}, **{"x-orca-session": sid})
    _, old_channel, _ = served(h, tr)
    ups[old_channel].failing = True
    h, tr = await post(stack, {"model": "orca/r", "messages": turn(1)}, **{"x-orca-session": sid})
    moved = served(h, tr)
    assert moved[1] != old_channel and ups[old_channel].failed >= 1
    assert tr["attempts"][0]["channel"] == old_channel and tr["attempts"][0]["status"] == 503
    _, chan_pin = await pins(stack, "r", sid)
    assert (chan_pin["channel"], chan_pin["key_index"]) == moved[1:]
    ups[old_channel].failing = False  # back up: the session stays where it moved
    h, tr = await post(stack, {"model": "orca/r", "messages": turn(2)}, **{"x-orca-session": sid})
    assert served(h, tr) == moved


async def test_a_router_that_is_not_session_aware_pins_nothing(stack: Sidecar) -> None:
    sid = f"bg-{next(_ids)}"
    for n in range(2):
        h, tr = await post(stack, {"model": "orca/bg", "messages": turn(n)},
                           **{"x-orca-session": sid, "x-orcarouter-tier": "strong"})
        assert h["x-orca-session-tier"] == "base; reason=no_session"
        assert tr["session_id"] is None
    assert await stack.rt.gate.store.scan("session", router="bg") == []


async def test_a_body_that_opts_out_of_affinity_is_sessionless(stack: Sidecar) -> None:
    sid = f"optout-{next(_ids)}"
    body = {"model": "orca/esc", "messages": turn(0), "routing": {"session_affinity": False}}
    h, _ = await post(stack, body, **{"x-orca-session": sid, "x-orcarouter-tier": "strong"})
    assert h["x-orca-session-tier"] == "base; reason=no_session"
    assert h["x-orca-model"] == "m-weak", "a sessionless request ignores X-OrcaRouter-Tier"
    assert await stack.rt.gate.store.scan("session", router="esc", session=sid) == []
    assert await pins(stack, "esc", sid) == (None, None)
    # The same session without the opt-out is session-aware: the ask is honoured and pinned.
    h, _ = await post(stack, {**body, "routing": {}}, **{"x-orca-session": sid,
                                                         "x-orcarouter-tier": "strong"})
    assert h["x-orca-session-tier"] == "strong; reason=explicit"
    assert h["x-orca-model"] == "m-strong"
    assert (await stack.rt.gate.store.get(SlotRef.of_session("esc", sid), "pin:strong")) is not None


@pytest.mark.parametrize("case", ["plain", "stream", "sessionless", "direct_model", "failed"])
async def test_one_store_read_and_one_commit_per_request(
        stack: Sidecar, ups: dict[str, Switchable], case: str) -> None:
    store = stack.rt.gate.store
    body: dict[str, Any] = {"model": "orca/r", "messages": turn(0)}
    if case == "stream":
        body["stream"] = True
    elif case == "sessionless":
        body["model"] = "orca/bg"
    elif case == "direct_model":
        body["model"] = "m-mid"
    elif case == "failed":
        for t in ups.values():
            t.failing = True
    reads, commits = store.reads, store.commits
    r = await stack.http.post("/v1/chat/completions", content=orjson.dumps(body), headers={
        "content-type": "application/json", "x-orca-session": f"count-{next(_ids)}"})
    assert r.status_code == (503 if case == "failed" else 200)
    assert (store.reads - reads, store.commits - commits) == (1, 1)


async def test_a_sessionless_prefix_sticks_to_the_key_that_reported_a_cache_read(
        stack: Sidecar) -> None:
    """Cache-aware affinity (SPEC §5): the sim caches per key, so once a request lands on a
    key that saw the prefix, every later request with that prefix follows it."""
    body = {"model": "orca/bg", "messages": [
        {"role": "system", "content": "You summarise chats into titles. " * 40},
        {"role": "user", "content": "the chat: rename x to count in utils.py"}]}
    slots: list[tuple[str, int]] = []
    cached: list[int] = []
    for _ in range(14):  # 9 (channel, key) slots: a cache read happens by the 10th request
        h, tr = await post(stack, body)
        assert h["x-orca-session-tier"] == "base; reason=no_session"
        slots.append(served(h, tr)[1:])
        cached.append(tr["usage"]["cached_tokens"])
    first_read = next(i for i, c in enumerate(cached) if c > 0)
    assert first_read < 10
    assert set(slots[first_read:]) == {slots[first_read]}, "the prefix left its warm key"
    assert all(c > 0 for c in cached[first_read:])
    # provider.cache_aware_routing = false: this one request ignores the affinity.
    _, tr = await post(stack, {**body, "provider": {"cache_aware_routing": False}})
    assert not any(p["kind"] == "affinity" for p in tr["pins"])
    _, tr = await post(stack, body)
    assert [p["status"] for p in tr["pins"] if p["kind"] == "affinity"] == ["hit"]


def _reconfigured(cfg: Config, channel: str, change: str) -> Config:
    out = []
    for ch in cfg.channels:
        if ch.name == channel:
            if change == "key_rotated":  # every index now holds another key
                ch = dataclasses.replace(ch, keys=ch.keys[1:] + ch.keys[:1])
            elif change == "channel_disabled":
                ch = dataclasses.replace(ch, enabled=False)
            else:  # channel_drained
                ch = dataclasses.replace(ch, weight=0)
        out.append(ch)
    return dataclasses.replace(cfg, channels=tuple(out))


@pytest.mark.parametrize("change", ["key_rotated", "channel_disabled", "channel_drained"])
async def test_a_pin_to_a_rotated_disabled_or_drained_upstream_is_dropped_not_failed(
        server: Sidecar, cfg: Config, change: str) -> None:
    """SPEC §5: pins are soft. A restart with another config keeps the store, so the old
    pin is read, found stale, dropped, and the request is served by normal selection."""
    store = MemoryStore(clock=SystemClock())
    sid = f"stale-{change}"
    async with server.use(cfg, store=store) as st:
        h, tr = await post(st, {"model": "orca/r", "messages": turn(0)}, **{"x-orca-session": sid})
        _, channel, _ = served(h, tr)
    change_cfg = _reconfigured(cfg, channel, change)
    async with server.use(change_cfg, store=store) as st:
        h, tr = await post(st, {"model": "orca/r", "messages": turn(1)}, **{"x-orca-session": sid})
        model, now_channel, now_key = served(h, tr)
        chan = [p for p in tr["pins"] if p["kind"] == "channel"]
        assert [(p["status"], p["reason"]) for p in chan] == [("dropped", change)]
        assert model == "m-weak", "the model pin still held"
        if change != "key_rotated":
            assert now_channel != channel
        _, pin = await pins(st, "r", sid)
        serving = change_cfg.channel(now_channel)
        assert serving is not None
        fp = dict(key_slots(serving))[now_key]
        assert (pin["channel"], pin["key_index"], pin["key_fp"]) == (now_channel, now_key, fp)
