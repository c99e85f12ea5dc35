"""A sidecar whose state store is down still serves (SPEC §9): every session base with reason
`degraded`, pins from the in-process table, no escalation, `/healthz` and `/metrics` say so,
the store is not called per request once known down, one log line per transition, and the
sidecar recovers by itself when the store answers again."""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
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
from tests.e2e.harness import Sidecar, Stack, sidecar_server

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
    async with sidecar_server() as sc:
        yield sc


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar, cfg: Config) -> AsyncIterator[Stack]:
    async with server.use(cfg, store=down_store()) as st:
        yield st


async def chat(st: Stack, session: str, **headers: str) -> dict[str, str]:
    r = await st.http.post("/v1/chat/completions", content=orjson.dumps(
        {"model": "orca/coding", "messages": MSGS}), headers={
        "content-type": "application/json", "x-orca-session": session, **headers})
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"]
    return dict(r.headers)


def last_key_fp(st: Stack, channel: str) -> str:
    sim = st.rt.transports[channel]
    assert isinstance(sim, SimTransport)
    return sim.calls[-1].key_fp


async def test_requests_are_served_base_with_reason_degraded(stack: Stack) -> None:
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


async def test_no_escalation_while_degraded(stack: Stack) -> None:
    for ask in ("strong", "once"):
        h = await chat(stack, f"deg-ask-{ask}", **{"x-orcarouter-tier": ask})
        assert h["x-orca-session-tier"] == "base; reason=degraded"
        assert h["x-orca-model"] not in stack.rt.cfg.routers["coding"].escalation_pool


async def test_a_session_keeps_its_model_channel_and_key_from_the_in_process_pins(
        stack: Stack) -> None:
    first = await chat(stack, "deg-pin")
    key = last_key_fp(stack, first["x-orca-channel"])
    assert len(stack.rt.gate.degraded_pins) == 1
    for _ in range(4):
        h = await chat(stack, "deg-pin")
        assert (h["x-orca-model"], h["x-orca-channel"]) == (first["x-orca-model"],
                                                            first["x-orca-channel"])
        assert last_key_fp(stack, h["x-orca-channel"]) == key


async def test_the_store_is_skipped_once_known_down_and_logged_once(
        stack: Stack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="orca")
    for i in range(5):
        await chat(stack, f"deg-skip-{i}")
    assert stack.rt.gate.store.reads == 1, "every request paid the store timeout"
    lines = [r for r in caplog.records if "state store unavailable" in r.getMessage()]
    assert len(lines) == 1


async def test_an_anthropic_stream_is_served_while_degraded(stack: Stack) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": True, "messages": MSGS}
    r = await stack.http.post("/v1/messages", content=orjson.dumps(body), headers={
        "content-type": "application/json", "x-orca-session": "deg-an"})
    assert r.status_code == 200
    assert r.headers["x-orca-session-tier"] == "base; reason=degraded"
    assert b"event: message_stop" in r.content


# --- recovery (needs a redis-server binary; one private server on a free port) -------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_later() -> Iterator[tuple[int, list[subprocess.Popen[bytes]]]]:
    """A port nothing listens on yet, and a list the test appends the server it starts to."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    started: list[subprocess.Popen[bytes]] = []
    try:
        yield _free_port(), started
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
        started.append(subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        async with asyncio.timeout(WAIT_S):
            while (await st.http.get("/healthz")).json()["status"] != "ok":
                await asyncio.sleep(0.05)
        assert len(st.rt.gate.degraded_pins) == 0, "the degraded table outlived the outage"
        h = await chat(st, "rec-1")
        assert h["x-orca-session-tier"] == "base; reason=default"
        trace = await st.rt.gate.store.get_trace(h["x-orca-request-id"])
        assert trace is not None and trace["degraded"] is False and trace["committed"] is True


async def test_healthz_is_degraded_from_startup_when_the_store_is_down() -> None:
    """The gate pings the store at lifespan startup: no request needed to learn it is down."""
    import socket

    import httpx

    from orca_cli.clock import SystemClock
    from orca_cli.config.load import loads
    from orca_cli.config.schema import StateConfig
    from orca_cli.config.template import example_text
    from orca_cli.proxy.app import OrcaApp
    from orca_cli.proxy.guard import GuardPolicy
    from orca_cli.proxy.runtime import Runtime
    from orca_cli.proxy.server import bind_socket, serve_in_background, stop_server
    from orca_cli.state.factory import open_store

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    dead = probe.getsockname()[1]
    probe.close()
    cfg = loads(example_text(), source="example")
    clock = SystemClock()
    store = open_store(StateConfig(backend="redis", redis_url=f"redis://127.0.0.1:{dead}/15",
                                   timeout_ms=100), clock=clock)
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    rt = Runtime.build(cfg, store, clock=clock)
    app = OrcaApp(rt, GuardPolicy.from_config(cfg.server, port=port, admin_token="t"))
    server, task = await serve_in_background(app, cfg.server, "127.0.0.1", port, sock=sock)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            doc = (await http.get("/healthz")).json()
        assert doc["status"] == "degraded" and doc["store"]["healthy"] is False
    finally:
        await stop_server(server, task)
