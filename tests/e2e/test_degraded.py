"""A sidecar whose state store is down still serves (SPEC §9): every session base with reason
`degraded`, pins from the in-process table, no escalation, `/healthz` and `/metrics` say so,
the store is not called per request once known down, one log line per transition, and the
sidecar recovers by itself when the store answers again."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import AsyncIterator, Iterator

import orjson
import pytest
import pytest_asyncio

from orca_cli.clock import SystemClock
from orca_cli.config.load import loads
from orca_cli.config.schema import Config, StateConfig
from orca_cli.config.template import example_text
from orca_cli.proxy.sim import SimTransport
from orca_cli.state.base import Store
from orca_cli.state.factory import open_store
from orca_cli.testing import Sidecar, closed_port, eventually, free_port, sidecar
from tests.redis_procs import require_binary

pytestmark = pytest.mark.asyncio(loop_scope="module")

MSGS = [{"role": "user", "content": "rename the variable x to count in utils.py"}]
WAIT_S = 5.0


def down_store(url: str = "redis://127.0.0.1:1/15") -> Store:
    return open_store(StateConfig(backend="redis", redis_url=url, timeout_ms=100),
                      clock=SystemClock())


@pytest.fixture
def cfg() -> Config:
    return loads(example_text(), source="example")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar, cfg: Config) -> AsyncIterator[Sidecar]:
    async with server.use(cfg, store=down_store()) as st:
        yield st


async def chat(st: Sidecar, session: str, **headers: str) -> dict[str, str]:
    r = await st.http.post("/v1/chat/completions", content=orjson.dumps(
        {"model": "orca/coding", "messages": MSGS}), headers={
        "content-type": "application/json", "x-orca-session": session, **headers})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"]
    return dict(r.headers)


def last_key_fp(st: Sidecar, channel: str) -> str:
    sim = st.rt.transports[channel]
    assert isinstance(sim, SimTransport)
    return sim.calls[-1].key_fp


async def test_requests_are_served_base_with_reason_degraded(stack: Sidecar) -> None:
    h = await chat(stack, "deg-1")
    assert h["x-orca-session-tier"] == "base; reason=degraded"
    assert h["x-orca-model"] in stack.rt.cfg.routers["coding"].base_pool
    r = await stack.http.get("/healthz")
    doc = r.json()
    assert r.status_code == 200 and doc["status"] == "degraded"
    assert doc["store"]["backend"] == "redis" and doc["store"]["healthy"] is False
    assert doc["store"]["degraded_since"] is not None
    metrics = (await stack.http.get("/metrics")).text
    assert "orca_store_degraded 1" in metrics.splitlines()


async def test_no_escalation_while_degraded(stack: Sidecar) -> None:
    for ask in ("strong", "once"):
        h = await chat(stack, f"deg-ask-{ask}", **{"x-orcarouter-tier": ask})
        assert h["x-orca-session-tier"] == "base; reason=degraded"
        assert h["x-orca-model"] not in stack.rt.cfg.routers["coding"].escalation_pool


async def test_a_session_keeps_its_model_channel_and_key_from_the_in_process_pins(
        stack: Sidecar) -> None:
    first = await chat(stack, "deg-pin")
    key = last_key_fp(stack, first["x-orca-channel"])
    assert len(stack.rt.gate.degraded_pins) == 1
    for _ in range(4):
        h = await chat(stack, "deg-pin")
        assert (h["x-orca-model"], h["x-orca-channel"]) == (first["x-orca-model"],
                                                            first["x-orca-channel"])
        assert last_key_fp(stack, h["x-orca-channel"]) == key


async def test_a_concrete_models_session_keeps_its_key_from_the_in_process_pins(
        stack: Sidecar) -> None:
    """SPEC §1.3, §9: a concrete model's channel pin too, while the store is down."""
    body = {"model": "sim-anthropic-cheap:claude-haiku-4-5", "messages": MSGS}
    keys = set()
    for _ in range(5):
        r = await stack.http.post("/v1/chat/completions", content=orjson.dumps(body), headers={
            "content-type": "application/json", "x-session-id": "deg-direct"})
        assert r.status_code == 200, r.text
        assert r.headers["x-orca-channel"] == "sim-anthropic-cheap"
        keys.add(last_key_fp(stack, "sim-anthropic-cheap"))
    assert len(keys) == 1


async def test_the_store_is_skipped_once_known_down_and_logged_once(
        stack: Sidecar, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="orca")
    for i in range(5):
        await chat(stack, f"deg-skip-{i}")
    assert stack.rt.gate.store.reads == 1, "every request paid the store timeout"
    lines = [r for r in caplog.records if "state store unavailable" in r.getMessage()]
    assert len(lines) == 1


async def test_an_anthropic_stream_is_served_while_degraded(stack: Sidecar) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": True, "messages": MSGS}
    r = await stack.http.post("/v1/messages", content=orjson.dumps(body), headers={
        "content-type": "application/json", "x-orca-session": "deg-an"})
    assert r.status_code == 200
    assert r.headers["x-orca-session-tier"] == "base; reason=degraded"
    assert b"event: message_stop" in r.content


# --- recovery (needs a redis-server binary; one private server on a free port) -------------


@pytest.fixture
def redis_later() -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    """A port nothing listens on yet, and a list the test appends the server it starts to."""
    require_binary("redis-server")
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield free_port(), started
    finally:
        for proc in started:
            proc.terminate()
            proc.wait(timeout=5)


async def test_the_sidecar_recovers_by_itself_when_the_store_answers_again(
        server: Sidecar, cfg: Config,
        redis_later: tuple[int, list[subprocess.Popen[bytes]]]) -> None:
    port, started = redis_later
    async with server.use(cfg, store=down_store(f"redis://127.0.0.1:{port}/15")) as st:
        h = await chat(st, "rec-1")
        assert h["x-orca-session-tier"] == "base; reason=degraded"
        assert len(st.rt.gate.degraded_pins) == 1
        # Popen returns at once (it does not wait for the child); /healthz is awaited below.
        started.append(subprocess.Popen(  # noqa: ASYNC220 - see the line above
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        async def healthy() -> bool:
            return (await st.healthz())["status"] == "ok"

        await eventually(healthy, WAIT_S, 0.05, what="/healthz says ok")
        assert len(st.rt.gate.degraded_pins) == 0, "the degraded table outlived the outage"
        h = await chat(st, "rec-1")
        assert h["x-orca-session-tier"] == "base; reason=default"
        trace = await st.rt.gate.store.get_trace(h["x-orca-request-id"])
        assert trace is not None and trace["degraded"] is False and trace["committed"] is True


async def test_healthz_is_degraded_from_startup_when_the_store_is_down() -> None:
    """The gate pings the store at lifespan startup: no request needed to learn it is down."""
    cfg = loads(example_text(), source="example")
    store = open_store(StateConfig(backend="redis",
                                   redis_url=f"redis://127.0.0.1:{closed_port()}/15",
                                   timeout_ms=100), clock=SystemClock())
    async with sidecar(cfg, store=store) as sc:
        doc = await sc.healthz()
    assert doc["status"] == "degraded" and doc["store"]["healthy"] is False
