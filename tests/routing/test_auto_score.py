"""SPEC §16: eligibility (patterns, price caps, unknown prices, capability margin) and what each
objective picks on a documented table of candidates."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from orca_cli.config.auto import AutoConfig
from orca_cli.config.schema import Config, ModelConfig
from orca_cli.routing.auto.classify import Classification
from orca_cli.routing.auto.score import WEIGHTS, rank_auto
from orca_cli.routing.candidates import Sourcing, build_candidates
from tests.routing.cfg import channel, config, price

# The table (one channel per model, so latency is per model):
#
# | model | $/1M in/out | quality | expected latency |
# | ----- | ----------- | ------- | ---------------- |
# | cheap | 0.02 / 0.10 | 0.55    | 900 ms           |
# | mid   | 0.25 / 1.00 | 0.72    | 400 ms           |
# | fast  | 2.00 / 8.00 | 0.70    | 100 ms           |
# | best  | 3.00 / 15.0 | 0.95    | 1200 ms          |
#
# balanced -> mid, quality -> best, cost -> cheap, latency -> fast.
TABLE: dict[str, tuple[ModelConfig, float]] = {
    "cheap": (price(0.02, 0.10, quality=0.55), 900),
    "mid": (price(0.25, 1.00, quality=0.72), 400),
    "fast": (price(2.00, 8.00, quality=0.70), 100),
    "best": (price(3.00, 15.0, quality=0.95), 1200),
}
GENERAL = Classification(("general",), 0.0, 0.5)


def _cfg(models: dict[str, ModelConfig] | None = None, unpriced: tuple[str, ...] = (),
         patterns: tuple[str, ...] = (), **auto: Any) -> Config:
    chans = [channel(f"ch-{m}", [m], expected_latency_ms=lat) for m, (_, lat) in TABLE.items()]
    chans += [channel("ch-x", list(unpriced))] if unpriced else []
    cfg = config(chans, models=models or {m: mc for m, (mc, _) in TABLE.items()})
    return dataclasses.replace(cfg, auto=AutoConfig(enabled=True, models=patterns, **auto))


def _rank(cfg: Config, cls: Classification = GENERAL, **kw: Any) -> Any:
    cands = build_candidates(list(cfg.model_ids()), "openai", 100, cfg, Sourcing(**kw))
    return rank_auto(cands, cfg, cfg.auto, cls)


@pytest.mark.parametrize(("objective", "expected"), [
    ("balanced", ("mid", "fast", "cheap", "best")),
    ("quality", ("best", "fast", "mid", "cheap")),
    ("cost", ("cheap", "mid", "fast", "best")),
    ("latency", ("fast", "mid", "cheap", "best")),
])
def test_each_objective_picks_as_documented(objective: str, expected: tuple[str, ...]) -> None:
    d = _rank(_cfg(objective=objective))
    assert d.ordered == expected
    top = d.ranked[0]
    assert top.score == pytest.approx(sum(WEIGHTS[objective][k] * v
                                          for k, v in top.factors.items()))


def test_factors_are_normalised_and_explained() -> None:
    d = _rank(_cfg())
    by = {s.model: s.factors for s in d.ranked}
    assert by["best"]["price"] == 0.0 and by["cheap"]["price"] == pytest.approx(1 - 0.12 / 18)
    assert by["fast"]["latency"] == 1.0 and by["cheap"]["latency"] == pytest.approx(100 / 900)
    assert all(f["health"] == 1.0 for f in by.values())
    doc = d.to_json()
    assert doc["algorithm"] == "auto-v1" and doc["fallback_order"] == list(d.ordered)
    assert doc["objective"] == "balanced" and doc["spend_profile"] == "any"
    assert doc["workloads"] == ["general"] and doc["classifier"] == "local"


@pytest.mark.parametrize(("profile", "allowed"), [
    ("economy", {"cheap"}), ("standard", {"cheap", "mid"}), ("premium", {"cheap", "mid"}),
    ("any", {"cheap", "mid", "fast", "best"}),
])
def test_spend_profiles_are_hard_caps(profile: str, allowed: set[str]) -> None:
    d = _rank(_cfg(spend_profile=profile))
    assert set(d.ordered) == allowed
    assert {m for m, why in d.excluded if why == "price_cap"} == set(TABLE) - allowed


def test_custom_caps_override_the_profile() -> None:
    d = _rank(_cfg(spend_profile="economy", max_input=2.0, max_output=8.0))
    assert set(d.ordered) == {"cheap", "mid", "fast"}
    assert d.caps == (2.0, 8.0)


def test_patterns_match_channel_slash_model_and_model_ids() -> None:
    assert _rank(_cfg(patterns=("ch-mid/*",))).ordered == ("mid",)
    assert set(_rank(_cfg(patterns=("b*", "cheap"))).ordered) == {"best", "cheap"}
    d = _rank(_cfg(patterns=("nothing-*",)))
    assert d.ordered == () and {why for _, why in d.excluded} == {"pattern"}


def test_models_without_a_known_price_are_never_candidates() -> None:
    d = _rank(_cfg(unpriced=("mystery",)))
    assert "mystery" not in d.ordered and ("mystery", "no_price") in d.excluded


def test_capability_margin_excludes_weak_models() -> None:
    hard = Classification(("reasoning",), 0.75, 0.7)  # floor 0.85
    d = _rank(_cfg(), hard)
    assert d.ordered == ("best",) and not d.capability_relaxed
    assert {m for m, why in d.excluded if why == "capability"} == {"cheap", "mid", "fast"}


def test_capability_never_empties_the_pool() -> None:
    d = _rank(_cfg(spend_profile="economy"), Classification(("reasoning",), 0.95, 0.7))
    assert d.ordered == ("cheap",) and d.capability_relaxed


def test_quality_by_workload_changes_the_pick() -> None:
    models = {m: mc for m, (mc, _) in TABLE.items()}
    models["mid"] = dataclasses.replace(models["mid"], quality_by_workload={"code": 0.97})
    cfg = _cfg(models=models, objective="quality")
    assert _rank(cfg, Classification(("code",), 0.2, 0.7)).ordered[0] == "mid"
    assert _rank(cfg, Classification(("summary",), 0.2, 0.7)).ordered[0] == "best"


def test_missing_latency_is_neutral() -> None:
    cfg = _cfg()
    cfg = dataclasses.replace(cfg, channels=tuple(
        dataclasses.replace(c, expected_latency_ms=0) if c.name == "ch-best" else c
        for c in cfg.channels))
    by = {s.model: s.factors["latency"] for s in _rank(cfg).ranked}
    assert by["best"] == 0.5


def test_measured_latency_wins_over_the_expected_one() -> None:
    cfg = _cfg(objective="latency")
    cands = build_candidates(list(cfg.model_ids()), "openai", 100, cfg)
    d = rank_auto(cands, cfg, cfg.auto, GENERAL, {"ch-fast": 5000.0})
    assert d.ordered[0] == "mid"


def test_health_counts_healthy_keys() -> None:
    cfg = config([channel("two", ["m"], keys=("k1", "k2")), channel("one", ["n"])],
                 models={"m": price(1, 1, quality=0.9), "n": price(1, 1, quality=0.9)})
    cfg = dataclasses.replace(cfg, auto=AutoConfig(enabled=True))
    d = _rank(cfg, healthy=lambda ch, k: not (ch == "two" and k == 1))
    assert {s.model: s.factors["health"] for s in d.ranked} == {"m": 0.5, "n": 1.0}
    assert d.ordered == ("n", "m")


def test_candidate_exclusions_are_reported() -> None:
    cfg = _cfg()
    cands = build_candidates(list(cfg.model_ids()), "openai", 100, cfg,
                             Sourcing(healthy=lambda ch, k: ch != "ch-best"))
    d = rank_auto(cands, cfg, cfg.auto, GENERAL)
    assert ("best", "unhealthy") in d.excluded and "best" not in d.ordered


def test_a_request_too_hard_for_every_model_gets_the_strongest_band() -> None:
    d = _rank(_cfg(objective="cost"), Classification(("reasoning",), 0.95, 0.7))
    assert d.capability_relaxed and d.ordered == ("best",)
    assert {m for m, why in d.excluded if why == "capability"} == {"cheap", "mid", "fast"}
