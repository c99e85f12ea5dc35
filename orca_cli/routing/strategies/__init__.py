"""Model-ranking strategies (SPEC §2 `strategy`, §6.1, §6.6).

`STRATEGIES[router.strategy](candidates, cfg, router, signals, linucb_state, rng)` returns a
`Ranking` of the non-excluded candidates, best first. Every strategy is pure and
deterministic for a given rng; none touches the store.
"""

from __future__ import annotations

from orca_cli.routing.strategies.auto import auto
from orca_cli.routing.strategies.balanced import balanced
from orca_cli.routing.strategies.base import (
    Ranking,
    Signals,
    Strategy,
    StrategySignals,
    blended_price,
    usable_models,
)
from orca_cli.routing.strategies.cheapest import cheapest
from orca_cli.routing.strategies.gated_adaptive import gated_adaptive
from orca_cli.routing.strategies.linucb import linucb
from orca_cli.routing.strategies.quality import quality

__all__ = [
    "STRATEGIES",
    "Ranking",
    "Signals",
    "Strategy",
    "StrategySignals",
    "blended_price",
    "usable_models",
]

STRATEGIES: dict[str, Strategy] = {
    "cheapest": cheapest,
    "quality": quality,
    "balanced": balanced,
    "linucb": linucb,
    "gated_adaptive": gated_adaptive,
    "auto": auto,
}
