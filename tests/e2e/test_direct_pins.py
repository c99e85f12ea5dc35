"""A concrete model's channel and key pins through the real server, on memory and on Redis
(SPEC §1.3: "served directly, with key/channel pinning"; §5).

A request naming a configured model (no router) has no tier state, yet its conversation must
stay on one channel and key while the provider's prompt cache is warm: a session's channel
pin, per (model, session); without a session, the cache-aware affinity of its prompt prefix.
The sim channel here has three keys and caches per key, so a key change shows as a cache miss.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson
import tomli_w

from orca_cli.config.load import loads
from orca_cli.config.schema import Config
from orca_cli.proxy.sim import SimTransport
from orca_cli.proxy.transport import Timeouts, UpstreamRequest, UpstreamResponse
from orca_cli.routing.candidates import key_slots
from orca_cli.state import keys as K
from orca_cli.state.base import SlotRef
from tests.e2e.scripted import Reply as Scripted
from tests.e2e.scripted import ScriptedResponse
from tests.e2e.tier_kit import Launch, TierStack

CHANNEL = "sim-direct"
MODEL = "direct-m"
SYSTEM = "You are a careful coding assistant. Keep answers short and exact. " * 12
ASKS = ("rename x to count in utils.py", "now add a docstring to count",
        "and a test for the empty input", "run the tests and fix what fails")


def direct_config() -> Config:
    """One sim channel with three keys serving one concrete model; no router serves it."""
    doc: dict[str, Any] = {
        "channels": [{"name": CHANNEL, "type": "sim", "api": ["openai", "anthropic"],
                      "keys": [f"{CHANNEL}-key-{i}" for i in range(3)], "models": [MODEL],
                      "latency_ms": 0, "cache_ttl_s": 300}],
        "models": {MODEL: {"input": 1.0, "output": 5.0, "context_window": 128000}},
    }
    return loads(tomli_w.dumps(doc), source="direct-test", environ={})


def conversation(turns: int, tag: str = "") -> list[dict[str, Any]]:
    """The messages of one conversation after `turns` user turns (each re-sends the past);
    conversations of other `tag`s share no prompt prefix."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": tag + SYSTEM}]
    for i in range(turns):
        if i:
            msgs.append({"role": "assistant", "content": f"done: step {i}"})
        msgs.append({"role": "user", "content": ASKS[i]})
    return msgs


async def post(st: TierStack, body: Mapping[str, Any],
               **headers: str) -> tuple[dict[str, str], Mapping[str, Any]]:
    st.clock.advance(st.step_s)
    r = await st.http.post("/v1/chat/completions", content=orjson.dumps(body), headers={
        "content-type": "application/json", "authorization": "Bearer agent-key", **headers})
    assert r.status_code == 200, r.text
    await st.sidecar.idle()  # its commit has landed
    return dict(r.headers), await st.trace(r.headers["x-orca-request-id"])


def where(trace: Mapping[str, Any]) -> tuple[str, int]:
    sel = trace["selected"]
    assert sel["model"] == MODEL
    return sel["channel"], sel["key_index"]


async def chan_pin(st: TierStack, session: str) -> Any:
    entry = await st.store.get(SlotRef.of_session(K.direct_router(MODEL), session), "chan:base")
    return None if entry is None else entry.value


async def test_four_turns_of_a_session_stay_on_one_key_and_read_the_cache_from_turn_two(
        launch: Launch) -> None:
    """Four Chat turns of one conversation (`X-Session-Id`) on a
    `channel:model` id and on the bare model id; each conversation keeps its key and every
    turn after the first reads the prompt cache."""
    st = await launch(direct_config())
    for n, model in enumerate((f"{CHANNEL}:{MODEL}", MODEL, MODEL)):
        sid = f"direct-{n}"
        keys, cached, traces = [], [], []
        for turns in range(1, 5):
            h, tr = await post(st, {"model": model, "messages": conversation(turns, sid)},
                               **{"x-session-id": sid})
            assert h["x-orca-session-tier"] == "base; reason=default"
            keys.append(where(tr))
            cached.append(tr["usage"]["cached_tokens"])
            traces.append(tr)
        assert len(set(keys)) == 1, f"the conversation changed keys: {keys}"
        assert cached[0] == 0 and all(c > 0 for c in cached[1:]), cached
        for tr in traces:
            assert tr["session_id"] == sid and tr["session_source"] == "header:x-session-id"
        assert [[(p["kind"], p["status"]) for p in tr["pins"]] for tr in traces] == [
            [("channel", "miss")], *[[("channel", "hit")]] * 3]
        pin = await chan_pin(st, sid)
        channel, key_index = keys[0]
        serving = st.rt.cfg.channel(channel)
        assert serving is not None
        assert pin == {"channel": channel, "key_index": key_index,
                       "key_fp": dict(key_slots(serving))[key_index]}
    # No tier state, model pin or session figures: only the channel pin of each session
    # (beside the commits' idempotency markers).
    entries = await st.store.scan("session", router=K.direct_router(MODEL))
    assert sorted(e.key for e in entries if not e.key.startswith(K.MARKER_PREFIX)) == \
        ["chan:base"] * 3
    entry = await st.store.get(SlotRef.of_session(K.direct_router(MODEL), "direct-0"),
                               "chan:base")
    assert entry is not None and entry.ttl_s is not None and 290 < entry.ttl_s <= 300


async def test_without_a_session_header_the_derived_session_keeps_the_key(
        launch: Launch) -> None:
    """No session header: the session is derived from the conversation's start (SPEC §1.4),
    as a router derives it, so the conversation is pinned all the same."""
    st = await launch(direct_config())
    keys, cached = [], []
    for turns in range(1, 5):
        _, tr = await post(st, {"model": MODEL, "messages": conversation(turns)})
        keys.append(where(tr))
        cached.append(tr["usage"]["cached_tokens"])
    assert len(set(keys)) == 1, keys
    assert all(c > 0 for c in cached[1:]), cached
    assert tr["session_source"] == "derived"
    assert await chan_pin(st, tr["session_id"]) is not None


async def test_a_sessionless_prefix_sticks_to_the_key_that_reported_a_cache_read(
        launch: Launch) -> None:
    """`routing.session_affinity = false`: no session, so no channel pin; the cache-aware
    affinity pins the prompt prefix to the key that reported a cache read (SPEC §5)."""
    st = await launch(direct_config())
    body = {"model": MODEL, "messages": conversation(1), "routing": {"session_affinity": False}}
    slots: list[tuple[str, int]] = []
    cached: list[int] = []
    for _ in range(12):  # 3 keys: a cache read comes by the 4th request
        _, tr = await post(st, body)
        assert tr["session_id"] is None
        slots.append(where(tr))
        cached.append(tr["usage"]["cached_tokens"])
    first_read = next(i for i, c in enumerate(cached) if c > 0)
    assert first_read < 4
    assert set(slots[first_read:]) == {slots[first_read]}, "the prefix left its warm key"
    assert all(c > 0 for c in cached[first_read:])
    _, tr = await post(st, body)
    assert [(p["kind"], p["status"]) for p in tr["pins"]] == [("affinity", "hit")]
    assert await st.store.scan("session", router=K.direct_router(MODEL)) == []
    aff = await st.store.scan("router", router=K.direct_router(MODEL), key_prefix="aff:")
    assert len(aff) == 1 and aff[0].value["key_index"] == slots[-1][1]
    # provider.cache_aware_routing = false: this one request ignores the affinity.
    _, tr = await post(st, {**body, "provider": {"cache_aware_routing": False}})
    assert tr["pins"] == []


class _KeyDown:
    """The sim channel with one key answering 503 (that key's account is overloaded)."""

    def __init__(self, inner: SimTransport, down_fp: str) -> None:
        self.inner, self.down_fp, self.failed = inner, down_fp, 0

    async def send(self, req: UpstreamRequest, timeouts: Timeouts) -> UpstreamResponse:
        auth = dict(req.headers).get("authorization", "")
        if hashlib.sha256(auth.removeprefix("Bearer ").encode()).hexdigest()[:8] == self.down_fp:
            self.failed += 1
            return ScriptedResponse(Scripted(503, b'{"error":{"message":"overloaded"}}'))
        return await self.inner.send(req, timeouts)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_failed_pinned_key_moves_the_pin_to_the_key_that_served(
        launch: Launch) -> None:
    st = await launch(direct_config())
    sid = "direct-move"
    _, tr = await post(st, {"model": MODEL, "messages": conversation(1)},
                       **{"x-session-id": sid})
    _, old_key = where(tr)
    old_fp = tr["selected"]["key_fp"]
    sim = st.sim(CHANNEL)
    down = _KeyDown(sim, old_fp)
    transports = st.rt.transports
    assert isinstance(transports, dict)
    transports[CHANNEL] = down
    try:
        _, tr = await post(st, {"model": MODEL, "messages": conversation(2)},
                           **{"x-session-id": sid})
        _, new_key = where(tr)
        assert new_key != old_key and down.failed == 1
        assert (tr["attempts"][0]["key_index"], tr["attempts"][0]["status"]) == (old_key, 503)
        assert [(p["kind"], p["status"]) for p in tr["pins"]] == [("channel", "hit")]
        pin = await chan_pin(st, sid)
        assert (pin["channel"], pin["key_index"]) == (CHANNEL, new_key)
    finally:
        transports[CHANNEL] = sim
    # The old key is back: the conversation stays where it moved (its cache is warm there).
    _, tr = await post(st, {"model": MODEL, "messages": conversation(3)},
                       **{"x-session-id": sid})
    assert where(tr) == (CHANNEL, new_key)
    assert tr["usage"]["cached_tokens"] > 0
