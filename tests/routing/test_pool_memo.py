"""A pool the config holds (a tuple of configured models) is sourced from a per-config memo:
the candidates are the ones an unmemoised list of the same models gives, and a reloaded
config (a new `Config`) never sees the memo of the one before."""

from __future__ import annotations

import dataclasses
import random

from orca_cli.config.schema import Config
from orca_cli.routing.candidates import Sourcing, build_candidates
from tests.routing.cfg import channel, config, price

MODELS = ("m-a", "m-b", "m-a", "m-c")  # a repeat and a model served nowhere


def _cfg(enabled: bool = True) -> Config:
    return config(
        [channel("one", ["m-a"]), channel("two", ["m-b"], keys=("k-1", "k-2"), enabled=enabled),
         channel("three", ["m-b"], api=("anthropic",))],
        models={"m-a": price(1, 2), "m-b": price(1, 2, context_window=1000)})


def test_a_config_pool_gives_what_the_same_models_unmemoised_give() -> None:
    cfg = _cfg()
    for api in ("openai", "anthropic"):
        for est in (10, 5000):
            memo = [build_candidates(MODELS, api, est, cfg,  # type: ignore[arg-type]
                                     Sourcing(rng=random.Random(7))) for _ in range(2)]
            plain = build_candidates(list(MODELS), api, est, cfg,  # type: ignore[arg-type]
                                     Sourcing(rng=random.Random(7)))
            assert memo[0] == memo[1] == plain
    assert (MODELS, "openai") not in cfg.compiled.pool_memo  # m-c is no configured model


def test_a_pool_of_configured_models_is_memoised_per_config_and_format() -> None:
    cfg = _cfg()
    pool = ("m-a", "m-b")
    build_candidates(pool, "openai", 10, cfg)
    assert (pool, "openai") in cfg.compiled.pool_memo
    assert (pool, "anthropic") not in cfg.compiled.pool_memo


def test_a_reloaded_config_sources_its_pools_afresh() -> None:
    pool = ("m-a", "m-b")
    before = _cfg()
    first = build_candidates(pool, "openai", 10, before)
    assert [x.channels[0].channel for x in first] == ["one", "two"]
    after = dataclasses.replace(before, channels=_cfg(enabled=False).channels)
    second = build_candidates(pool, "openai", 10, after)
    assert [x.channels[0].channel for x in second] == ["one", "three"]  # translated
    assert second[1].filtered == (("two", "channel_disabled"),)
    assert build_candidates(pool, "openai", 10, before) == first  # the old config's own memo
