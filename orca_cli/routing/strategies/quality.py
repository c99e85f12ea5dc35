"""`quality`: highest configured `quality` (0..1) first (SPEC §2)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.routing.candidates import Candidate, model_config
from orca_cli.routing.strategies.base import Ranking, Signals, rank_by, usable_models

__all__ = ["quality"]


def quality(
    candidates: Sequence[Candidate],
    cfg: Config,
    router: RouterConfig,
    signals: Signals,
    linucb_state: Mapping[str, Sequence[float]],
    rng: random.Random,
) -> Ranking:
    """Rank by `quality` descending; ties keep the pool order."""
    ordered, scores = rank_by(
        usable_models(candidates), lambda m: model_config(m, cfg).quality, descending=True
    )
    return Ranking(ordered, scores, "quality: configured quality, descending")
