"""What every strategy takes and returns (SPEC §2 `strategy`, §6.1, §6.6).

A strategy ranks the non-excluded candidates of a pool; it never reads or writes the store
(the linucb state arrives in the snapshot and is updated only at commit). Ties keep the
candidates' given order, so a ranking is deterministic for deterministic inputs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.immutable import immutable
from orca_cli.routing.auto.request import AutoRequest
from orca_cli.routing.candidates import Candidate, model_config

__all__ = [
    "Ranking",
    "Signals",
    "Strategy",
    "StrategySignals",
    "blended_price",
    "rank_by",
    "usable_models",
]


@immutable
class Ranking:
    """Models best first, each model's score (meaning per strategy), and a one-line note.
    `explain` is a strategy's structured, content-free detail for the trace (the auto
    router's classification, factors and exclusions); None for the others."""

    ordered: tuple[str, ...]
    scores: dict[str, float]
    note: str
    explain: dict[str, Any] | None = None


class Signals(Protocol):
    """The per-request signals a strategy may read."""

    @property
    def full_score(self) -> float | None:
        """The full-transcript difficulty (SPEC §4); None when not computed (pinned)."""
        ...

    @property
    def banding_score(self) -> float | None:
        """The banding score (`Scorer.banding`: the conversation without the agent's constant
        prefix); None when not computed. `gated_adaptive` bands on it when present."""
        ...

    @property
    def delta_features(self) -> Sequence[float]:
        """The six raw delta features in `linucb.FEATURE_ORDER` (§4 table order)."""
        ...


@immutable
class StrategySignals:
    """A plain `Signals` implementation."""

    full_score: float | None = None
    delta_features: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    banding_score: float | None = None
    # The request as the auto strategy reads it (SPEC §16); None for the other strategies.
    request: AutoRequest | None = None


class Strategy(Protocol):
    """A ranking function: `STRATEGIES[router.strategy](...)`."""

    def __call__(
        self,
        candidates: Sequence[Candidate],
        cfg: Config,
        router: RouterConfig,
        signals: Signals,
        linucb_state: Mapping[str, Sequence[float]],
        rng: random.Random,
    ) -> Ranking: ...


def usable_models(candidates: Sequence[Candidate]) -> list[str]:
    """Non-excluded candidate models, in their given order, without duplicates."""
    return list(dict.fromkeys(c.model for c in candidates if c.excluded is None))


def blended_price(model: str, cfg: Config) -> float:
    """Input + output list price, $ per 1M tokens."""
    m = model_config(model, cfg)
    return m.input + m.output


def rank_by(
    models: Sequence[str], score: Callable[[str], float], *, descending: bool
) -> tuple[tuple[str, ...], dict[str, float]]:
    """Stable sort of `models` by score (ties keep the given order), with the scores."""
    scores = {m: score(m) for m in models}
    ordered = sorted(models, key=lambda m: -scores[m] if descending else scores[m])
    return tuple(ordered), scores
