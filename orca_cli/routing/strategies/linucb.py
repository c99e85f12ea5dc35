"""`linucb`: a contextual bandit over the delta features (SPEC §6.6).

Each usable candidate is an arm; its state comes from the snapshot (`linucb:<arm>`, the flat
encoding of `orca_cli.routing.linucb`; missing = initial). The pick is the argmax of
θᵀx + alpha·√(xᵀA⁻¹x); the rest follow by the same score, ties in pool order. Updated only at
commit, never here.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.routing import linucb as bandit
from orca_cli.routing.candidates import Candidate
from orca_cli.routing.strategies.base import Ranking, Signals, rank_by, usable_models

__all__ = ["linucb"]


def linucb(
    candidates: Sequence[Candidate],
    cfg: Config,
    router: RouterConfig,
    signals: Signals,
    linucb_state: Mapping[str, Sequence[float]],
    rng: random.Random,
) -> Ranking:
    """Rank arms by upper confidence bound on the normalised delta context, descending."""
    x = bandit.context_vector(signals.delta_features, cfg.difficulty)

    def ucb(model: str) -> float:
        a, b = bandit.decode_arm(linucb_state.get(model))
        return bandit.linucb_score(a, b, x, router.linucb_alpha)[0]

    ordered, scores = rank_by(usable_models(candidates), ucb, descending=True)
    return Ranking(ordered, scores, f"linucb: argmax theta.x + {router.linucb_alpha:g}*width")
