"""Gateway modes over real sockets (SPEC §20): per-channel prices, measured latency, provider
preferences, `providers_allow`, and the drained channel as the last failover. A real sidecar
forwards to a fake provider on loopback; which channel served is read from `x-orca-channel`
and from what each channel's prefix on the fake received."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, Sidecar, fake_upstream, sidecar

pytestmark = pytest.mark.asyncio


def _channel(up: FakeUpstream, name: str, models: str, extra: str = "") -> str:
    return (f'[[channels]]\nname = "{name}"\ntype = "openai-compatible"\n'
            f'base_url = "{up.url(name)}"\nkeys = ["sk-test-{name}-0001"]\n'
            f"models = [{models}]\n{extra}\n")


def config_text(up: FakeUpstream) -> str:
    """m1 on `pa` (weight 10, dear) and `pb` (weight 1, cheap by its own `prices`); m2 on
    `pa` only; m3 on `la` (prior 10 ms) and `lb` (prior 200 ms); m4 on `da` and the drained
    `db`. The `[models]` table says m1 is the dearest model: only `pb`'s price makes it
    the cheapest."""
    return (
        "[server]\nfirst_byte_timeout_s = 5\ntotal_timeout_s = 20\n\n"
        + _channel(up, "pa", '"m1", "m2"', "weight = 10")
        + _channel(up, "pb", '"m1"', 'prices = { "m1" = { input = 0.5, output = 1.0 } }')
        + _channel(up, "la", '"m3"', "expected_latency_ms = 10")
        + _channel(up, "lb", '"m3"', "expected_latency_ms = 200")
        + _channel(up, "da", '"m4"')
        + _channel(up, "db", '"m4"', "weight = 0")
        + """
[models.m1]
input = 10.0
output = 20.0
quality = 0.5
[models.m2]
input = 5.0
output = 10.0
quality = 0.9

[routers.q]
strategy = "quality"
session_aware = false
allowed_models = ["m1", "m2"]
[routers.q.escalation]
mode = "off"

[routers.lat]
strategy = "cheapest"
mode = "latency"
session_aware = false
allowed_models = ["m3"]
[routers.lat.escalation]
mode = "off"

[routers.onlyb]
strategy = "cheapest"
session_aware = false
allowed_models = ["m1"]
providers_allow = ["PB"]
[routers.onlyb.escalation]
mode = "off"
""")


@pytest.fixture
async def up() -> AsyncIterator[FakeUpstream]:
    async with fake_upstream() as fake:
        yield fake


@pytest.fixture
async def sc(up: FakeUpstream) -> AsyncIterator[Sidecar]:
    async with sidecar(loads(config_text(up), source="test", environ={})) as s:
        yield s


async def ask(sc: Sidecar, model: str, **extra: Any) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "hello"}], **extra}
    return await sc.http.post("/v1/chat/completions", json=body)


async def test_cheap_follows_the_channels_own_price_and_bills_it(
        sc: Sidecar, up: FakeUpstream) -> None:
    for _ in range(6):
        r = await ask(sc, "m1:cheap")
        assert r.status_code == 200 and r.headers["x-orca-channel"] == "pb"
    assert len(up.calls("pb")) == 6 and not up.calls("pa")
    await sc.idle()
    trace = await sc.rt.gate.store.get_trace(r.headers["x-orca-request-id"])
    assert trace is not None
    # 20 prompt + 4 output tokens at pb's price of m1 (0.5 / 1.0 per 1M), not [models] m1's
    assert trace["cost_usd"] == pytest.approx((20 * 0.5 + 4 * 1.0) / 1e6)


async def test_router_cheap_picks_the_cheapest_model_of_the_tier(
        sc: Sidecar, up: FakeUpstream) -> None:
    plain = await ask(sc, "orca/q")
    assert plain.headers["x-orca-model"] == "m2"  # the strategy: the best quality
    cheap = await ask(sc, "orca/q:cheap")
    assert cheap.status_code == 200
    # m1 on pb costs 1.5 per 1M in + out, m2 15: the cheap pick, then its cheapest channel
    assert (cheap.headers["x-orca-model"], cheap.headers["x-orca-channel"]) == ("m1", "pb")
    await sc.idle()
    trace = await sc.rt.gate.store.get_trace(cheap.headers["x-orca-request-id"])
    assert trace is not None and trace["mode"] == "price"
    assert "mode price" in trace["strategy_note"]


async def test_latency_mode_follows_measured_first_byte_not_the_prior(
        sc: Sidecar, up: FakeUpstream) -> None:
    up.always["la"] = Act(stall_before_s=0.35)  # its prior says 10 ms; it takes 350
    served = [(await ask(sc, "orca/lat")).headers["x-orca-channel"] for _ in range(5)]
    assert served[0] == "la"  # unmeasured: the prior ranks it first
    assert served[-3:] == ["lb", "lb", "lb"]  # measured slow: lb's 200 ms prior, then lb's own
    assert sc.rt.measured.figures[("la", "m3")].latency_ms >= 300


async def test_provider_only_and_ignore_narrow(sc: Sidecar, up: FakeUpstream) -> None:
    for _ in range(3):
        r = await ask(sc, "m1:cheap", provider={"only": ["pa"]})
        assert r.status_code == 200 and r.headers["x-orca-channel"] == "pa"
        r = await ask(sc, "m1:cheap", provider={"ignore": ["PB"]})
        assert r.status_code == 200 and r.headers["x-orca-channel"] == "pa"
    assert not up.calls("pb")


async def test_provider_order_then_fallback_and_allow_fallbacks_false(
        sc: Sidecar, up: FakeUpstream) -> None:
    up.on("pb", Act(status=503, body=b'{"error": {"message": "overloaded"}}'))
    r = await ask(sc, "m1", provider={"order": ["pb"]})
    assert r.status_code == 200 and r.headers["x-orca-channel"] == "pa"  # pb, then pa
    up.on("pb", Act(status=503, body=b'{"error": {"message": "overloaded"}}'))
    calls_pa = len(up.calls("pa"))
    r = await ask(sc, "m1", provider={"order": ["pb"], "allow_fallbacks": False})
    assert r.status_code == 503 and len(up.calls("pa")) == calls_pa
    assert len(up.calls("pb")) == 2


async def test_providers_allow_on_a_router_and_only_outside_it_is_a_404(
        sc: Sidecar, up: FakeUpstream) -> None:
    for _ in range(4):
        r = await ask(sc, "orca/onlyb")
        assert r.status_code == 200 and r.headers["x-orca-channel"] == "pb"
    assert not up.calls("pa")
    r = await ask(sc, "orca/onlyb", provider={"only": ["pa"]})  # cannot widen the router
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["code"] == "no_allowed_providers" and "provider.only" in err["message"]
    assert not up.calls("pa")


async def test_bad_provider_object_is_a_400(sc: Sidecar) -> None:
    r = await ask(sc, "m1", provider={"sort": "fastest"})
    assert r.status_code == 400 and "provider.sort" in r.json()["error"]["message"]


async def test_drained_channel_is_the_last_failover(sc: Sidecar, up: FakeUpstream) -> None:
    r = await ask(sc, "m4")
    assert r.status_code == 200 and r.headers["x-orca-channel"] == "da"
    assert not up.calls("db")  # drained: no traffic while da answers
    up.on("da", Act(status=503, body=b'{"error": {"message": "overloaded"}}'))
    r = await ask(sc, "m4")
    assert r.status_code == 200 and r.headers["x-orca-channel"] == "db"
    assert len(up.calls("db")) == 1


async def test_no_allowed_provider_is_a_404_in_the_anthropic_shape_too(sc: Sidecar) -> None:
    body = {"model": "m1", "max_tokens": 16, "provider": {"only": ["nowhere"]},
            "messages": [{"role": "user", "content": "hello"}]}
    r = await sc.http.post("/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
    assert r.status_code == 404
    doc = r.json()
    assert doc["type"] == "error" and doc["error"]["type"] == "not_found_error"
    assert "provider.only" in doc["error"]["message"]
