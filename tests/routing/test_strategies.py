"""SPEC §2 `strategy`, §6.1, §6.6: each strategy's order, gated banding, linucb picking."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence

import pytest

from orca_cli.config.schema import Config, RouterConfig, TranslationConfig
from orca_cli.routing import linucb as bandit
from orca_cli.routing.candidates import Candidate, build_candidates
from orca_cli.routing.strategies import STRATEGIES, Ranking, StrategySignals
from tests.routing.cfg import channel, config, price

MODELS = {
    "weak": price(0.27, 1.10, quality=0.55),  # 1.37
    "mid": price(1.00, 5.00, quality=0.70),  # 6.00
    "mid2": price(0.50, 2.00, quality=0.65),  # 2.50
    "strong": price(15.0, 75.0, quality=0.95),  # 90.00
}


def _cfg(models: Mapping[str, object] | None = None) -> Config:
    # Translation off: "only-anthropic" is then excluded for openai requests (format_mismatch).
    cfg = config(
        [channel("a", list(MODELS)), channel("ant", ["only-anthropic"], api="anthropic")],
        models=dict(MODELS),
    )
    return dataclasses.replace(cfg, translation=TranslationConfig(enabled=False))


def _router(**kw: object) -> RouterConfig:
    base: dict[str, object] = {
        "weak_pool": ("weak",), "mid_pool": ("mid", "mid2"), "strong_pool": ("strong",),
        "t1": 0.35, "t2": 0.70,
    }
    base.update(kw)
    return RouterConfig("r", **base)  # type: ignore[arg-type]


def _cands(models: Sequence[str], cfg: Config | None = None) -> tuple[Candidate, ...]:
    return build_candidates(models, "openai", 1000, cfg or _cfg())


def _rank(
    name: str,
    models: Sequence[str],
    *,
    full: float | None = None,
    delta: tuple[float, ...] = (0.0,) * 6,
    state: Mapping[str, Sequence[float]] | None = None,
    router: RouterConfig | None = None,
    cfg: Config | None = None,
) -> Ranking:
    cfg = cfg or _cfg()
    return STRATEGIES[name](
        _cands(models, cfg),
        cfg,
        router or _router(),
        StrategySignals(full, delta),
        state or {},
        random.Random(0),
    )


def test_registry_names_match_config_literals() -> None:
    assert set(STRATEGIES) == {"cheapest", "quality", "balanced", "linucb", "gated_adaptive",
                               "auto"}


def test_cheapest_orders_by_blended_price() -> None:
    r = _rank("cheapest", ["strong", "mid", "weak", "mid2"])
    assert r.ordered == ("weak", "mid2", "mid", "strong")
    assert r.scores["mid"] == pytest.approx(6.0)


def test_quality_orders_by_quality_desc() -> None:
    assert _rank("quality", ["weak", "mid", "strong", "mid2"]).ordered == (
        "strong",
        "mid",
        "mid2",
        "weak",
    )


def test_balanced_quality_minus_normalised_price() -> None:
    r = _rank("balanced", ["weak", "mid", "mid2", "strong"])
    assert r.scores["strong"] == pytest.approx(0.95 - 1.0)
    assert r.scores["weak"] == pytest.approx(0.55 - 1.37 / 90)
    # mid 0.70 - 6/90 = 0.633 > mid2 0.65 - 2.5/90 = 0.622 > weak 0.535 > strong -0.05
    assert r.ordered == ("mid", "mid2", "weak", "strong")


def test_balanced_free_models_rank_by_quality() -> None:
    cfg = config(
        [channel("a", ["x", "y"])],
        models={"x": price(0, 0, quality=0.2), "y": price(0, 0, quality=0.9)},
    )
    assert _rank("balanced", ["x", "y"], cfg=cfg).ordered == ("y", "x")


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_excluded_candidates_are_never_ranked(name: str) -> None:
    # only-anthropic is served only in the anthropic format: excluded for openai requests.
    r = _rank(name, ["only-anthropic", "weak", "mid"], full=0.9)
    assert "only-anthropic" not in r.ordered and set(r.ordered) == {"weak", "mid"}


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_no_usable_candidate_gives_empty_ranking(name: str) -> None:
    assert _rank(name, ["only-anthropic"]).ordered == ()


def test_ties_keep_pool_order() -> None:
    cfg = config([channel("a", ["p", "q"])], models={"p": price(1, 1), "q": price(1, 1)})
    assert _rank("cheapest", ["q", "p"], cfg=cfg).ordered == ("q", "p")
    assert _rank("quality", ["p", "q"], cfg=cfg).ordered == ("p", "q")


# --- gated_adaptive -----------------------------------------------------------------------

ALL = ["weak", "mid", "mid2", "strong"]


@pytest.mark.parametrize(
    ("score", "first"),
    [
        (0.0, "weak"),
        (0.349, "weak"),
        (0.35, "mid2"),
        (0.699, "mid2"),
        (0.70, "strong"),
        (1.0, "strong"),
    ],
)
def test_gated_bands_by_full_score(score: float, first: str) -> None:
    assert _rank("gated_adaptive", ALL, full=score).ordered[0] == first


def test_gated_orders_cheapest_within_band_then_fallthrough() -> None:
    r = _rank("gated_adaptive", ALL, full=0.5)
    assert r.ordered == ("mid2", "mid", "weak", "strong")
    assert "mid band" in r.note


def test_gated_strong_band_empty_in_base_tier_falls_to_mid() -> None:
    # Inside the base tier the strong pool is not a candidate.
    r = _rank("gated_adaptive", ["weak", "mid", "mid2"], full=0.9)
    assert r.ordered[0] == "mid2"
    assert "strong empty, fell to mid" in r.note


def test_gated_falls_two_bands_down() -> None:
    r = _rank("gated_adaptive", ["weak"], full=0.9)
    assert r.ordered == ("weak",) and "fell to weak" in r.note


def test_gated_rises_only_when_every_lower_band_is_empty() -> None:
    r = _rank("gated_adaptive", ["mid", "strong"], full=0.1)
    assert r.ordered == ("mid", "strong") and "weak empty, fell to mid" in r.note
    r = _rank("gated_adaptive", ["strong"], full=0.1)
    assert r.ordered == ("strong",)


def test_gated_mid_empty_prefers_lower_weak_over_higher_strong() -> None:
    assert _rank("gated_adaptive", ["weak", "strong"], full=0.5).ordered == ("weak", "strong")


def test_gated_none_score_is_weak_band_and_noted() -> None:
    r = _rank("gated_adaptive", ALL, full=None)
    assert r.ordered[0] == "weak"
    assert "not computed" in r.note and "treated as weak" in r.note


def test_gated_uses_router_thresholds() -> None:
    router = _router(t1=0.1, t2=0.2)
    assert _rank("gated_adaptive", ALL, full=0.15, router=router).ordered[0] == "mid2"
    assert _rank("gated_adaptive", ALL, full=0.25, router=router).ordered[0] == "strong"


def test_gated_unbanded_candidates_follow_the_bands() -> None:
    cfg = config([channel("a", [*ALL, "extra"])], models={**MODELS, "extra": price(0, 0)})
    r = _rank("gated_adaptive", ["extra", *ALL], full=0.9, cfg=cfg)
    assert r.ordered == ("strong", "mid2", "mid", "weak", "extra")


def test_gated_with_no_pools_is_cheapest_and_says_so() -> None:
    r = _rank("gated_adaptive", ALL, full=0.5, router=RouterConfig("r"))
    assert r.ordered == ("weak", "mid2", "mid", "strong")
    assert "every band empty" in r.note


# --- linucb ---------------------------------------------------------------------------------

HARD = (8.0, 4.0, 0.0, 4.0, 1.0, 3.0)
EASY = (2.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def _trained(
    cfg: Config, rewards: Mapping[str, Mapping[tuple[float, ...], float]], rounds: int = 25
) -> dict[str, list[float]]:
    """Store-shaped state built through the increments path the store uses."""
    state: dict[str, list[float]] = {}
    for _ in range(rounds):
        for arm, by_ctx in rewards.items():
            for ctx, r in by_ctx.items():
                x = bandit.context_vector(ctx, cfg.difficulty)
                state[arm] = bandit.apply_increments(state.get(arm), bandit.linucb_increments(x, r))
    return state


def test_linucb_fresh_arms_tie_in_pool_order() -> None:
    r = _rank("linucb", ["mid", "weak"], delta=HARD)
    assert r.ordered == ("mid", "weak")
    assert r.scores["mid"] == pytest.approx(r.scores["weak"])


def test_linucb_picks_the_arm_rewarded_on_this_context() -> None:
    cfg = _cfg()
    state = _trained(cfg, {"strong": {HARD: 1.0, EASY: 0.2}, "weak": {HARD: 0.1, EASY: 1.0}})
    assert _rank("linucb", ["weak", "strong"], delta=HARD, state=state).ordered[0] == "strong"
    assert _rank("linucb", ["strong", "weak"], delta=EASY, state=state).ordered[0] == "weak"


def test_linucb_explores_an_untried_arm_with_large_alpha() -> None:
    cfg = _cfg()
    state = _trained(cfg, {"weak": {HARD: 0.6}})
    assert (
        _rank(
            "linucb", ["weak", "mid"], delta=HARD, state=state, router=_router(linucb_alpha=0.0)
        ).ordered[0]
        == "weak"
    )
    assert (
        _rank(
            "linucb", ["weak", "mid"], delta=HARD, state=state, router=_router(linucb_alpha=5.0)
        ).ordered[0]
        == "mid"
    )


def test_linucb_score_matches_the_formula() -> None:
    cfg = _cfg()
    state = _trained(cfg, {"weak": {HARD: 0.7}}, rounds=3)
    x = bandit.context_vector(HARD, cfg.difficulty)
    a, b = bandit.decode_arm(state["weak"])
    theta = bandit.mat_vec(bandit.invert(a), b)
    width = bandit.dot(x, bandit.mat_vec(bandit.invert(a), x)) ** 0.5
    r = _rank("linucb", ["weak"], delta=HARD, state=state, router=_router(linucb_alpha=0.3))
    assert r.scores["weak"] == pytest.approx(bandit.dot(theta, x) + 0.3 * width)
