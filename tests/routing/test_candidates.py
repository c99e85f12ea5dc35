"""SPEC §1.3, §5: candidate exclusions, channel/key ordering by mode, soft pin checks."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Any

import pytest

from orca_cli.config.schema import Config, TranslationConfig
from orca_cli.routing.candidates import (
    Api,
    Candidate,
    Sourcing,
    build_candidates,
    check_channel_pin,
    check_model_pin,
    order_keys,
)
from tests.routing.cfg import channel, config, price


def _one(
    models: list[str], cfg: Config, *, api: Api = "openai", tokens: int = 1000, **kw: Any
) -> Candidate:
    (c,) = build_candidates(models, api, tokens, cfg, Sourcing(**kw))
    return c


def _names(c: Candidate) -> list[str]:
    return [ch.channel for ch in c.channels]


# --- exclusions -------------------------------------------------------------------------


def test_usable_candidate() -> None:
    c = _one(["m"], config([channel("a", ["m"])]))
    assert (c.excluded, c.reason, _names(c)) == (None, "ok", ["a"])
    assert c.usable


def test_no_channel() -> None:
    c = _one(["m"], config([channel("a", ["other"])]))
    assert (c.excluded, c.channels) == ("no_channel", ())


def test_only_disabled_channels_is_no_channel_with_filter_reason() -> None:
    c = _one(["m"], config([channel("a", ["m"], enabled=False)]))
    assert c.excluded == "no_channel"
    assert c.filtered == (("a", "channel_disabled"),)


def _no_translation(cfg: Config) -> Config:
    return dataclasses.replace(cfg, translation=TranslationConfig(enabled=False))


def test_format_mismatch_when_translation_is_off() -> None:
    cfg = _no_translation(config([channel("ant", ["m"], type="anthropic", api="anthropic")]))
    c = _one(["m"], cfg, api="openai")
    assert c.excluded == "format_mismatch"
    assert "openai" in c.reason
    assert _one(["m"], cfg, api="anthropic").excluded is None


def test_format_filters_one_channel_and_keeps_the_other_when_translation_is_off() -> None:
    cfg = _no_translation(config([channel("ant", ["m"], api="anthropic"), channel("oa", ["m"])]))
    c = _one(["m"], cfg, api="openai")
    assert (c.excluded, _names(c), c.filtered) == (None, ["oa"], (("ant", "format_mismatch"),))


def test_translation_makes_a_channel_of_another_format_a_candidate() -> None:
    cfg = config([channel("ant", ["m"], type="anthropic", api="anthropic")])
    c = _one(["m"], cfg, api="openai")
    assert (c.excluded, _names(c), c.filtered) == (None, ["ant"], ())


def test_translation_orders_native_channels_first_whatever_the_weight() -> None:
    cfg = config([channel("ant", ["m"], api="anthropic", weight=100), channel("oa", ["m"])])
    for seed in range(20):
        c = _one(["m"], cfg, api="openai", rng=random.Random(seed))
        assert _names(c) == ["oa", "ant"]
    assert _names(_one(["m"], cfg, api="anthropic")) == ["ant", "oa"]


def test_channel_pin_of_another_format_is_kept_with_translation() -> None:
    cfg = config([channel("ant", ["m"], api="anthropic")])
    pin = {"channel": "ant", "key_index": 0, "key_fp": cfg.compiled.key_fps["ant"][0]}
    assert check_channel_pin(pin, "m", cfg, api="openai")[2] == "ok"
    assert check_channel_pin(pin, "m", _no_translation(cfg), api="openai")[2] == "format_mismatch"


def test_sim_channel_speaks_both_formats() -> None:
    cfg = config([channel("sim", ["m"], type="sim", keys=())])
    assert _one(["m"], cfg, api="anthropic").excluded is None
    assert _one(["m"], cfg, api="openai").excluded is None


def test_context_window_exclusion() -> None:
    cfg = config(
        [channel("a", ["small", "big"])],
        models={
            "small": price(1, 1, context_window=8000),
            "big": price(1, 1, context_window=200000),
        },
    )
    small, big = build_candidates(["small", "big"], "openai", 9000, cfg)
    assert small.excluded == "context_window" and "8000" in small.reason and "9000" in small.reason
    assert big.excluded is None


def test_context_window_default_comes_from_model_config() -> None:
    cfg = config([channel("a", ["m"])])  # no [models.m]: default 128000
    assert _one(["m"], cfg, tokens=128000).excluded is None
    assert _one(["m"], cfg, tokens=128001).excluded == "context_window"


def test_all_channels_unhealthy_excludes_model() -> None:
    cfg = config([channel("a", ["m"], keys=["k1", "k2"])])
    c = _one(["m"], cfg, healthy=lambda ch, i: False)
    assert (c.excluded, c.filtered) == ("unhealthy", (("a", "unhealthy"),))


def test_unhealthy_channel_filtered_healthy_one_kept() -> None:
    cfg = config([channel("a", ["m"]), channel("b", ["m"])])
    c = _one(["m"], cfg, healthy=lambda ch, i: ch != "a")
    assert (_names(c), c.filtered) == (["b"], (("a", "unhealthy"),))


def test_duplicate_models_are_one_candidate_in_given_order() -> None:
    cfg = config([channel("a", ["x", "y"])])
    assert [c.model for c in build_candidates(["y", "x", "y"], "openai", 1, cfg)] == ["y", "x"]


def test_provider_qualified_restricts_to_that_channel() -> None:
    cfg = config([channel("a", ["m"]), channel("b", ["m"])])
    c = _one(["m"], cfg, channel="b")
    assert _names(c) == ["b"]
    assert _one(["m"], cfg, channel="zzz").excluded == "no_channel"


def test_provider_qualified_to_weight_zero_channel_is_served() -> None:
    cfg = config([channel("a", ["m"]), channel("b", ["m"], weight=0)])
    assert _names(_one(["m"], cfg, channel="b", mode="price")) == ["b"]


# --- channel ordering by mode -----------------------------------------------------------


def test_price_orders_by_weight_then_name_and_drains_weight_zero() -> None:
    cfg = config(
        [
            channel("c", ["m"], weight=1),
            channel("b", ["m"], weight=1),
            channel("a", ["m"], weight=5),
            channel("z", ["m"], weight=0),
        ]
    )
    c = _one(["m"], cfg, mode="price")
    assert _names(c) == ["a", "b", "c"]
    assert ("z", "drained") in c.filtered


def test_latency_orders_by_expected_latency_unknown_last() -> None:
    cfg = config(
        [
            channel("slow", ["m"], expected_latency_ms=900),
            channel("unknown", ["m"]),
            channel("fast", ["m"], expected_latency_ms=120),
            channel("drained", ["m"], weight=0, expected_latency_ms=1),
        ]
    )
    assert _names(_one(["m"], cfg, mode="latency")) == ["fast", "slow", "unknown"]


def test_throughput_orders_by_expected_tps_desc() -> None:
    cfg = config(
        [
            channel("a", ["m"], expected_tps=40),
            channel("b", ["m"], expected_tps=180),
            channel("c", ["m"]),
        ]
    )
    assert _names(_one(["m"], cfg, mode="throughput")) == ["b", "a", "c"]


@pytest.mark.parametrize("mode", ["balanced", "price", "latency", "throughput"])
def test_all_zero_pool_keeps_every_channel(mode: str) -> None:
    cfg = config([channel("a", ["m"], weight=0), channel("b", ["m"], weight=0)])
    c = _one(["m"], cfg, mode=mode, rng=random.Random(1))
    assert sorted(_names(c)) == ["a", "b"] and c.filtered == ()


def test_weight_zero_kept_when_it_is_the_only_healthy_server() -> None:
    cfg = config([channel("a", ["m"], weight=2), channel("z", ["m"], weight=0)])
    c = _one(["m"], cfg, mode="price", healthy=lambda ch, i: ch == "z")
    assert _names(c) == ["z"]


def test_balanced_is_weighted_random_three_to_one() -> None:
    cfg = config([channel("a", ["m"], weight=3), channel("b", ["m"], weight=1)])
    rng = random.Random(20240501)
    first = Counter(_names(_one(["m"], cfg, mode="balanced", rng=rng))[0] for _ in range(4000))
    assert abs(first["a"] / 4000 - 0.75) < 0.03
    # The other channel always follows as the fallback.
    assert sorted(_names(_one(["m"], cfg, mode="balanced", rng=rng))) == ["a", "b"]


def test_balanced_all_zero_pool_is_equal_weights() -> None:
    cfg = config([channel("a", ["m"], weight=0), channel("b", ["m"], weight=0)])
    rng = random.Random(7)
    first = Counter(_names(_one(["m"], cfg, mode="balanced", rng=rng))[0] for _ in range(4000))
    assert abs(first["a"] / 4000 - 0.5) < 0.03


def test_balanced_never_picks_drained_channel() -> None:
    cfg = config([channel("a", ["m"], weight=1), channel("z", ["m"], weight=0)])
    rng = random.Random(3)
    assert all(_names(_one(["m"], cfg, mode="balanced", rng=rng)) == ["a"] for _ in range(200))


def test_balanced_is_reproducible_for_a_seed() -> None:
    cfg = config([channel(n, ["m"], weight=w) for n, w in [("a", 1), ("b", 2), ("c", 3)]])
    runs = [
        [_names(_one(["m"], cfg, mode="balanced", rng=r)) for _ in range(20)]
        for r in (random.Random(9), random.Random(9))
    ]
    assert runs[0] == runs[1]


def test_balanced_without_rng_is_weight_order() -> None:
    cfg = config([channel("a", ["m"], weight=1), channel("b", ["m"], weight=4)])
    assert _names(_one(["m"], cfg, mode="balanced")) == ["b", "a"]


# --- keys -------------------------------------------------------------------------------


def test_order_keys_skips_unhealthy_and_rotates_from_random_start() -> None:
    ch = channel("a", ["m"], keys=["k0", "k1", "k2", "k3"])
    healthy = lambda name, i: i != 2
    assert order_keys(ch, healthy) == (0, 1, 3)
    rng = random.Random(5)
    seen = Counter(order_keys(ch, healthy, rng) for _ in range(3000))
    assert set(seen) == {(0, 1, 3), (1, 3, 0), (3, 0, 1)}
    assert all(abs(n / 3000 - 1 / 3) < 0.04 for n in seen.values())


def test_keyless_channel_has_one_implicit_slot() -> None:
    ch = channel("sim", ["m"], type="sim", keys=())
    assert order_keys(ch) == (0,)
    assert order_keys(ch, lambda n, i: False) == ()


def test_candidate_channel_carries_healthy_keys() -> None:
    cfg = config([channel("a", ["m"], keys=["k0", "k1"])])
    c = _one(["m"], cfg, healthy=lambda n, i: i == 1)
    assert c.channels[0].keys == (1,)


# --- channel pin (SPEC §5) --------------------------------------------------------------


def _pin_cfg(**kw: object) -> Config:
    return config([channel("a", ["m"], keys=["k0", "k1"], **kw), channel("b", ["m"])])


def _pin(cfg: Config, channel_name: str = "a", index: int = 1) -> dict[str, object]:
    ch = cfg.channel(channel_name)
    assert ch is not None
    return {"channel": channel_name, "key_index": index, "key_fp": ch.keys[index].fp}


def test_pin_usable() -> None:
    cfg = _pin_cfg()
    assert check_channel_pin(_pin(cfg), "m", cfg, api="openai") == (True, True, "ok")


def test_no_pin_is_a_noop() -> None:
    assert check_channel_pin(None, "m", _pin_cfg()) == (False, True, "no_pin")


def test_pin_dropped_when_key_rotated() -> None:
    cfg = _pin_cfg()
    pin = _pin(cfg)
    rotated = config([channel("a", ["m"], keys=["k0", "k1-new"]), channel("b", ["m"])])
    assert check_channel_pin(pin, "m", rotated) == (False, False, "key_rotated")


def test_pin_dropped_when_keys_reordered() -> None:
    cfg = _pin_cfg()
    pin = _pin(cfg, index=0)
    reordered = config([channel("a", ["m"], keys=["k1", "k0"]), channel("b", ["m"])])
    assert check_channel_pin(pin, "m", reordered) == (False, False, "key_rotated")


def test_pin_dropped_when_key_index_missing() -> None:
    cfg = _pin_cfg()
    pin = _pin(cfg, index=1)
    shorter = config([channel("a", ["m"], keys=["k0"]), channel("b", ["m"])])
    assert check_channel_pin(pin, "m", shorter) == (False, False, "key_missing")
    assert check_channel_pin(
        {"channel": "a", "key_index": "1", "key_fp": pin["key_fp"]}, "m", cfg
    ) == (False, False, "key_missing")


def test_pin_dropped_when_channel_disabled_or_removed() -> None:
    cfg = _pin_cfg()
    pin = _pin(cfg)
    disabled = _pin_cfg(enabled=False)
    assert check_channel_pin(pin, "m", disabled) == (False, False, "channel_disabled")
    assert check_channel_pin(pin, "m", config([channel("b", ["m"])])) == (
        False,
        False,
        "channel_missing",
    )


def test_pin_dropped_when_channel_no_longer_serves_model() -> None:
    cfg = _pin_cfg()
    assert check_channel_pin(_pin(cfg), "other", cfg) == (False, False, "not_served")


def test_pin_dropped_on_format_mismatch_when_translation_is_off() -> None:
    cfg = _no_translation(_pin_cfg(api="anthropic"))
    assert check_channel_pin(_pin(cfg), "m", cfg, api="openai") == (False, False, "format_mismatch")


def test_pin_to_drained_channel_dropped_when_another_has_weight() -> None:
    cfg = _pin_cfg(weight=0)
    assert check_channel_pin(_pin(cfg), "m", cfg) == (False, False, "channel_drained")


def test_pin_to_drained_channel_kept_in_all_zero_pool() -> None:
    cfg = config([channel("a", ["m"], keys=["k0", "k1"], weight=0), channel("b", ["m"], weight=0)])
    assert check_channel_pin(_pin(cfg), "m", cfg) == (True, True, "ok")


def test_pin_to_drained_channel_kept_when_other_live_channel_cannot_serve() -> None:
    # The only weight > 0 alternative is disabled, so the drained channel still serves.
    cfg = config(
        [channel("a", ["m"], keys=["k0", "k1"], weight=0), channel("b", ["m"], enabled=False)]
    )
    assert check_channel_pin(_pin(cfg), "m", cfg)[0] is True


def test_pin_unhealthy_key_not_usable_but_kept() -> None:
    cfg = _pin_cfg()
    healthy = lambda name, i: not (name == "a" and i == 1)
    assert check_channel_pin(_pin(cfg), "m", cfg, healthy) == (False, True, "unhealthy")


def test_pin_on_keyless_channel() -> None:
    cfg = config([channel("sim", ["m"], type="sim", keys=())])
    assert check_channel_pin(
        {"channel": "sim", "key_index": 0, "key_fp": ""}, "m", cfg, api="anthropic"
    ) == (True, True, "ok")


# --- model pin --------------------------------------------------------------------------


def test_model_pin_checks() -> None:
    cfg = config([channel("a", ["x", "y"])], models={"y": price(1, 1, context_window=10)})
    cands = build_candidates(["x", "y"], "openai", 100, cfg)
    assert check_model_pin("x", cands) == (True, "ok")
    assert check_model_pin("y", cands) == (False, "context_window")
    assert check_model_pin("strong-model", cands) == (False, "not_in_tier")
    assert check_model_pin(None, cands) == (False, "no_pin")


def test_a_model_that_reads_no_images_is_excluded_only_for_a_request_with_one() -> None:
    cfg = config([channel("a", ["blind", "seeing"])],
                 models={"blind": dataclasses.replace(price(1, 1), vision=False), "seeing": price(2, 2)})
    blind, seeing = build_candidates(["blind", "seeing"], "openai", 100, cfg, images=True)
    assert blind.excluded == "vision" and "vision = false" in blind.reason
    assert seeing.excluded is None
    assert [c.excluded for c in build_candidates(["blind", "seeing"], "openai", 100, cfg)] == [
        None, None]
    assert cfg.compiled.blind_models == frozenset({"blind"})
