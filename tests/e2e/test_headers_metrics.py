"""The headers orca sets on proxied responses and the `/metrics` counters, through the real
server on the shipped example config (SPEC §1.2, §1.4): `X-Orca-Session-Tier` says
`no_session` for every sessionless request and ignores the tier ask there; every proxied
answer, an upstream error included, carries orca's headers; `/metrics` counts requests."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from orca_cli.config.load import loads
from orca_cli.config.schema import Config, FaultConfig
from orca_cli.config.template import example_text
from orca_cli.testing import Sidecar, sidecar

pytestmark = pytest.mark.asyncio(loop_scope="module")

MSGS = [{"role": "user", "content": "write a title for this chat"}]
NO_SESSION = "base; reason=no_session"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server() -> AsyncIterator[Sidecar]:
    async with sidecar() as sc:
        yield sc


def example() -> Config:
    return loads(example_text(), source="example")


@pytest_asyncio.fixture(loop_scope="module")
async def stack(server: Sidecar) -> AsyncIterator[Sidecar]:
    async with server.use(example()) as st:
        yield st


async def post(st: Sidecar, path: str, body: dict[str, Any], **headers: str) -> Any:
    return await st.http.post(path, content=orjson.dumps(body),
                              headers={"content-type": "application/json", **headers})


@pytest.mark.parametrize("ask", [None, "strong", "once", "base"])
@pytest.mark.parametrize("model", ["orca/background", "background"])
async def test_a_router_that_is_not_session_aware_says_no_session(
        stack: Sidecar, model: str, ask: str | None) -> None:
    headers = {"x-orca-session": "hdr-bg", "x-claude-code-session-id": "cc-1"}
    if ask is not None:
        headers["x-orcarouter-tier"] = ask
    r = await post(stack, "/v1/chat/completions", {"model": model, "messages": MSGS}, **headers)
    assert r.status_code == 200
    assert r.headers["x-orca-session-tier"] == NO_SESSION
    assert r.headers["x-orca-model"] in stack.rt.cfg.routers["background"].allowed_models


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_body_opting_out_of_affinity_says_no_session(stack: Sidecar, api: str) -> None:
    if api == "openai":
        path, body = "/v1/chat/completions", {"model": "orca/coding", "messages": MSGS}
    else:  # claude-sonnet-* is an alias of orca/coding in the example
        path, body = "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 64,
                                      "messages": MSGS,
                                      "metadata": {"user_id": "u_session_abc"}}
    body["routing"] = {"session_affinity": False}
    r = await post(stack, path, body, **{"x-orca-session": "hdr-opt", "x-orcarouter-tier": "strong"})
    assert r.status_code == 200
    assert r.headers["x-orca-session-tier"] == NO_SESSION
    assert r.headers["x-orca-model"] not in stack.rt.cfg.routers["coding"].escalation_pool


async def test_the_same_request_with_a_session_is_not_no_session(stack: Sidecar) -> None:
    r = await post(stack, "/v1/chat/completions", {"model": "orca/coding", "messages": MSGS},
                   **{"x-orca-session": "hdr-with"})
    assert r.headers["x-orca-session-tier"] == "base; reason=default"
    # No session header at all: a derived id still makes the request session-aware.
    r = await post(stack, "/v1/chat/completions", {"model": "orca/coding", "messages": MSGS})
    assert r.headers["x-orca-session-tier"] == "base; reason=default"


# The example's strong models are claude-* ids its aliases send to orca/coding: a concrete
# request for one names its channel (`channel:model`).
@pytest.mark.parametrize(("model", "header"), [
    ("deepseek-chat", "base; reason=default"),
    ("sim-anthropic-frontier:claude-opus-4-8", "strong; reason=default")])
async def test_a_concrete_model_is_labelled_with_its_tier(
        stack: Sidecar, model: str, header: str) -> None:
    r = await post(stack, "/v1/chat/completions", {"model": model, "messages": MSGS})
    assert r.status_code == 200
    assert r.headers["x-orca-session-tier"] == header
    assert r.headers["x-orca-model"] == model.rpartition(":")[2]


async def test_an_upstream_error_relayed_to_the_client_carries_orcas_headers(
        server: Sidecar) -> None:
    cfg = example()
    broken = FaultConfig(status=500, rate=1.0)
    cfg = dataclasses.replace(cfg, channels=tuple(
        dataclasses.replace(c, faults=broken) if c.name == "sim-cheap" else c
        for c in cfg.channels))
    async with server.use(cfg) as st:
        r = await post(st, "/v1/chat/completions", {"model": "orca/background",
                                                    "messages": MSGS})
    assert r.status_code == 500
    assert r.json()["error"]["message"] == "sim: simulated upstream error"
    assert r.headers["x-orca-request-id"].startswith("req_")
    assert r.headers["x-orca-session-tier"] == NO_SESSION
    assert r.headers["x-orca-channel"] == "sim-cheap"
    assert r.headers["x-orca-model"] == "deepseek-chat"


_SAMPLE = re.compile(r'^(\w+)\{(.*)\} (\S+)$')


def samples(text: str, family: str) -> dict[frozenset[tuple[str, str]], float]:
    out: dict[frozenset[tuple[str, str]], float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and m.group(1) == family:
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            out[labels] = float(m.group(3))
    return out


def count(text: str, family: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for k, v in samples(text, family).items() if want <= k)


async def test_metrics_count_every_answered_request(stack: Sidecar) -> None:
    before = (await stack.http.get("/metrics")).text
    for i in range(3):
        await post(stack, "/v1/chat/completions", {"model": "orca/coding", "messages": MSGS},
                   **{"x-orca-session": f"met-{i}"})
    await post(stack, "/v1/messages", {"model": "orca/background", "max_tokens": 16,
                                       "messages": MSGS})
    r = await post(stack, "/v1/chat/completions", {"model": "nope-9", "messages": MSGS})
    assert r.status_code == 404
    r = await stack.http.post("/v1/chat/completions", content=b"{nope",
                              headers={"content-type": "application/json"})
    assert r.status_code == 400
    after = (await stack.http.get("/metrics")).text
    assert after.startswith("# HELP")

    def delta(family: str, **labels: str) -> float:
        return count(after, family, **labels) - count(before, family, **labels)

    assert delta("orca_requests_total") == 6
    assert delta("orca_requests_total", api="openai", router="coding", status="200",
                 tier="base") == 3
    assert delta("orca_requests_total", api="anthropic", router="background",
                 status="200") == 1
    assert delta("orca_requests_total", status="404") == 1
    assert delta("orca_requests_total", status="400") == 1
    assert delta("orca_request_duration_seconds_count", router="coding") == 3
    assert delta("orca_upstream_responses_total", status="200") == 4
    assert delta("orca_prompt_tokens_total", router="coding") > 0
    assert "orca_store_degraded 0" in after.splitlines()
