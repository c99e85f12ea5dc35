"""`balanced`: quality against price (SPEC §2).

    score(m) = quality(m) - price(m) / max(price over the usable candidates)

where price is the blended input + output list price ($ per 1M tokens). The price term is in
[0, 1], so a model must be better by the fraction of the dearest price it costs more; when
every candidate is free the score is the quality. Highest score first; ties keep pool order.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.routing.candidates import Candidate, model_config
from orca_cli.routing.strategies.base import (
    Ranking,
    Signals,
    blended_price,
    rank_by,
    usable_models,
)

__all__ = ["balanced", "balanced_score"]


def balanced_score(model: str, dearest: float, cfg: Config) -> float:
    """quality - price / dearest (price term 0 when `dearest` is 0)."""
    price = blended_price(model, cfg) / dearest if dearest > 0 else 0.0
    return model_config(model, cfg).quality - price


def balanced(
    candidates: Sequence[Candidate],
    cfg: Config,
    router: RouterConfig,
    signals: Signals,
    linucb_state: Mapping[str, Sequence[float]],
    rng: random.Random,
) -> Ranking:
    """Rank by quality minus max-normalised blended price, descending."""
    models = usable_models(candidates)
    dearest = max((blended_price(m, cfg) for m in models), default=0.0)
    ordered, scores = rank_by(models, lambda m: balanced_score(m, dearest, cfg), descending=True)
    return Ranking(ordered, scores, "balanced: quality - price/dearest, descending")
