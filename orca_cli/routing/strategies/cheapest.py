"""`cheapest`: lowest blended list price first (input + output, $ per 1M tokens; SPEC §2)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.routing.candidates import Candidate
from orca_cli.routing.strategies.base import Ranking, Signals, blended_price, rank_by, usable_models

__all__ = ["cheapest", "order_cheapest"]


def order_cheapest(models: Sequence[str], cfg: Config) -> tuple[tuple[str, ...], dict[str, float]]:
    """Models by blended price ascending; ties keep the given order."""
    return rank_by(models, lambda m: blended_price(m, cfg), descending=False)


def cheapest(
    candidates: Sequence[Candidate],
    cfg: Config,
    router: RouterConfig,
    signals: Signals,
    linucb_state: Mapping[str, Sequence[float]],
    rng: random.Random,
) -> Ranking:
    """Rank by blended price ascending; the score is the blended price."""
    ordered, scores = order_cheapest(usable_models(candidates), cfg)
    return Ranking(ordered, scores, "cheapest: blended input+output $/1M, ascending")
