"""SPEC §20, the pure core: channel prices, ordering by measured figures with priors, the
request's provider preferences, the router's provider lists, the mode's model pick and the
attempt list (drained last, `allow_fallbacks: false`)."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.config import parse
from orca_cli.config.schema import ChannelPrice, RouterConfig
from orca_cli.routing.attempts import build_attempts, provider_refusal, rank_by_mode
from orca_cli.routing.candidates import Sourcing, build_candidates, order_channels
from orca_cli.routing.cost import request_cost
from orca_cli.routing.modes import (
    ChannelPolicy,
    Measure,
    ProviderPrefs,
    channel_price,
    model_pick_mode,
    ordering_mode,
    policy_for,
    read_prefs,
)
from orca_cli.routing.target import resolve_target
from orca_cli.wire.usage import Usage
from tests.config.helpers import errors_of, minimal_doc
from tests.routing.cfg import channel, config, price


def _cfg() -> Any:
    return config([
        channel("a", ["m", "n"], weight=3, expected_latency_ms=50, expected_tps=40),
        channel("b", ["m"], prices={"m": ChannelPrice(input=0.5, output=1.0)},
                expected_latency_ms=300, type="openrouter"),
        channel("c", ["m"], weight=0),
    ], models={"m": price(10, 20), "n": price(2, 4)})


def _names(chs: Any) -> list[str]:
    return [c.name if hasattr(c, "name") else c.channel for c in chs]


def test_channel_price_overrides_only_what_it_sets() -> None:
    cfg = _cfg()
    p = channel_price("m", "b", cfg)
    assert (p.input, p.output, p.cache_read) == (0.5, 1.0, 0.1)  # cache_read: the model's
    assert channel_price("m", "a", cfg).input == 10
    usage = Usage(prompt_tokens=1000, output_tokens=100)
    assert request_cost(usage, "openai", channel_price("m", "b", cfg)) == pytest.approx(
        (1000 * 0.5 + 100 * 1.0) / 1e6)


def test_price_mode_orders_channels_by_effective_price() -> None:
    cfg = _cfg()
    ordered, drained = order_channels(cfg.channels, "price", model="m", cfg=cfg)
    assert (_names(ordered), _names(drained)) == (["b", "a"], ["c"])


def test_latency_mode_prefers_the_measure_over_the_prior() -> None:
    cfg = _cfg()
    ordered, _ = order_channels(cfg.channels, "latency", model="m", cfg=cfg)
    assert _names(ordered) == ["a", "b"]  # priors: 50 < 300
    slow_a = {("a", "m"): Measure(latency_ms=900.0)}
    ordered, _ = order_channels(cfg.channels, "latency", model="m", cfg=cfg, measured=slow_a)
    assert _names(ordered) == ["b", "a"]
    # a measure of another model does not count for this one
    other = {("a", "n"): Measure(latency_ms=900.0)}
    ordered, _ = order_channels(cfg.channels, "latency", model="m", cfg=cfg, measured=other)
    assert _names(ordered) == ["a", "b"]


def test_throughput_mode_unknown_channels_come_last_by_weight() -> None:
    cfg = _cfg()
    ordered, _ = order_channels(cfg.channels, "throughput", model="m", cfg=cfg)
    assert _names(ordered) == ["a", "b"]  # a has a 40 tps prior, b none
    fast_b = {("b", "m"): Measure(tps=120.0)}
    ordered, _ = order_channels(cfg.channels, "throughput", model="m", cfg=cfg, measured=fast_b)
    assert _names(ordered) == ["b", "a"]


@pytest.mark.parametrize(("body", "why"), [
    ({"provider": []}, "provider must be an object"),
    ({"provider": {"only": "a"}}, "provider.only must be an array"),
    ({"provider": {"allow_fallbacks": "no"}}, "allow_fallbacks must be true or false"),
    ({"provider": {"sort": "fastest"}}, "provider.sort must be one of"),
    ({"routing": {"mode": "turbo"}}, "routing.mode must be one of"),
])
def test_malformed_preferences_say_what_is_wrong(body: dict[str, Any], why: str) -> None:
    got = read_prefs(body)
    assert isinstance(got, str) and why in got


def test_preferences_are_read_and_unknown_keys_ignored() -> None:
    assert read_prefs({"model": "m"}) is None
    assert read_prefs({"routing": {"session_affinity": False}}) is None
    got = read_prefs({"provider": {"order": ["B"], "only": ["a", "b"], "ignore": ["c"],
                                   "allow_fallbacks": False, "sort": {"by": "latency"},
                                   "data_collection": "deny"},
                      "routing": {"mode": "price"}})
    assert got == ProviderPrefs(("B",), ("a", "b"), ("c",), False, "latency", "price")


def test_mode_precedence_suffix_then_sort_then_routing_mode_then_config() -> None:
    cfg = _cfg()
    plain, cheap = resolve_target("m", cfg), resolve_target("m:fast", cfg)
    prefs = ProviderPrefs(sort="throughput", mode="price")
    assert ordering_mode(cheap, prefs, "balanced") == "latency"
    assert ordering_mode(plain, prefs, "balanced") == "throughput"
    assert ordering_mode(plain, ProviderPrefs(mode="price"), "latency") == "price"
    assert ordering_mode(plain, None, "latency") == "latency"
    # only a suffix or routing.mode picks a router's model; provider.sort orders channels
    assert model_pick_mode(plain, ProviderPrefs(sort="price")) is None
    assert model_pick_mode(plain, ProviderPrefs(mode="price")) == "price"
    assert model_pick_mode(cheap, None) == "latency"
    assert model_pick_mode(plain, ProviderPrefs(mode="balanced")) is None


def test_policy_narrows_by_name_or_type_and_never_widens() -> None:
    cfg = _cfg()
    router = RouterConfig("r", providers_allow=("a", "OpenRouter"))
    policy = policy_for(router, ProviderPrefs(only=("B", "c")), {})
    assert policy is not None
    (cand,) = build_candidates(["m"], "openai", 10, cfg, Sourcing(mode="price", policy=policy))
    # c: outside the router's list (a request cannot widen it); a: not in the request's
    assert _names(cand.channels) == ["b"]
    assert dict(cand.filtered) == {"a": "provider_request", "c": "provider_policy"}
    ignore = policy_for(None, ProviderPrefs(ignore=("openrouter",)), {})
    (cand,) = build_candidates(["m"], "openai", 10, cfg, Sourcing(mode="price", policy=ignore))
    assert _names(cand.channels) == ["a"]


def test_nothing_left_is_excluded_provider_and_refused_404_for_a_request() -> None:
    cfg = _cfg()
    policy = policy_for(None, ProviderPrefs(only=("zzz",)), {})
    cands = build_candidates(["m"], "openai", 10, cfg, Sourcing(policy=policy))
    assert cands[0].excluded == "provider"
    refusal = provider_refusal(cands)
    assert refusal is not None and refusal[:2] == (404, "no_allowed_providers")
    by_router = policy_for(RouterConfig("r", providers_ignore=("a", "b", "c")), None, {})
    cands = build_candidates(["m"], "openai", 10, cfg, Sourcing(policy=by_router))
    assert cands[0].excluded == "provider" and provider_refusal(cands) is None  # the config's


def test_provider_order_goes_first_then_the_mode_order() -> None:
    cfg = _cfg()
    policy = ChannelPolicy(order=("a",))
    (cand,) = build_candidates(["m"], "openai", 10, cfg, Sourcing(mode="price", policy=policy))
    assert _names(cand.channels) == ["a", "b"]
    assert policy_for(None, None, {}) is None  # nothing to apply: the short path


def test_drained_channels_are_tried_last_and_allow_fallbacks_false_keeps_one() -> None:
    cfg = config([channel("a", ["m"], keys=("k1", "k2")), channel("d", ["m"], weight=0),
                  channel("f", ["n"])], models={"m": price(1, 1), "n": price(1, 1)})
    cands = build_candidates(["m", "n"], "openai", 10, cfg)
    assert _names(cands[0].drained) == ["d"] and ("d", "drained") in cands[0].filtered
    attempts = build_attempts("m", cands, None, ["n"], True, None)
    assert [(a.model, a.channel) for a in attempts] == [
        ("m", "a"), ("m", "a"), ("n", "f"), ("m", "d")]
    one = build_attempts("m", cands, None, ["n"], True, ProviderPrefs(allow_fallbacks=False))
    assert [(a.channel, a.key_index) for a in one] == [("a", 0), ("a", 1)]  # its keys only


def test_rank_by_mode_picks_the_cheapest_model_by_its_channel_price() -> None:
    cfg = _cfg()
    cands = build_candidates(["n", "m"], "openai", 10, cfg, Sourcing(mode="price"))
    ranking = rank_by_mode(cands, "price", cfg, {})
    # m's table price is 30, n's 6; on channel b, m costs 1.5
    assert ranking.ordered == ("m", "n") and ranking.scores["m"] == pytest.approx(1.5)
    assert rank_by_mode(cands, "price", cfg, {}, among=["n"]).ordered == ("n",)
    lat = rank_by_mode(build_candidates(["n", "m"], "openai", 10, cfg, Sourcing(mode="latency")),
                       "latency", cfg, {("a", "n"): Measure(latency_ms=5.0)})
    assert lat.ordered == ("n", "m")


def test_config_rules_for_prices_and_provider_lists() -> None:
    doc = minimal_doc()
    doc["channels"][0]["prices"] = {"nope": {"input": 1.0}, "cheap": {"output": -1.0}}
    doc["routers"]["coding"]["providers_allow"] = ["SIM"]
    doc["routers"]["coding"]["providers_ignore"] = ["sim-b"]
    errors = errors_of(doc)
    assert any('prices."nope"' in e or "prices.nope" in e for e in errors)
    assert any("prices.cheap.output" in e for e in errors)
    assert any("providers_ignore[0]" in e and "names no channel" in e for e in errors)
    assert not any("providers_allow" in e for e in errors)  # a type, any case
    ok = minimal_doc()
    ok["channels"][0]["prices"] = {"cheap": {"input": 0.2}}
    cfg = parse(ok, source="orca.toml", environ={})
    assert channel_price("cheap", "sim-a", cfg).input == 0.2
