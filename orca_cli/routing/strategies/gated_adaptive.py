"""`gated_adaptive`: difficulty banding (SPEC §2, §6.1, §19) by the banding score
(`features.Scorer.banding`: the conversation, not the agent's constant system prompt and tool
schemas), or by the full-transcript score when no banding score was computed.

    score <  t1        -> weak band   (router.weak_pool)
    t1 <= score < t2   -> mid band    (router.mid_pool)
    score >= t2        -> strong band (router.strong_pool)

A band holds only the pool's members that are usable candidates (inside the base tier the
strong-pool models are not candidates, so the strong band is usually empty there). An empty
band falls to the next *lower* non-empty band (strong -> mid -> weak); only when every lower
band is empty does it rise to the next higher one. Within a band: cheapest first. The ranking
continues with the other bands in that same fall-through order, then the usable candidates
in no band, each group cheapest first. A full score of None (not computed because a pin was
usable) is treated as the weak band, and the note says so.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.routing.candidates import Candidate
from orca_cli.routing.strategies.base import Ranking, Signals, usable_models
from orca_cli.routing.strategies.cheapest import order_cheapest

__all__ = ["BAND_NAMES", "band_index", "gated_adaptive"]

BAND_NAMES: tuple[str, str, str] = ("weak", "mid", "strong")


def band_index(score: float | None, router: RouterConfig) -> int:
    """0 weak, 1 mid, 2 strong; None counts as weak."""
    if score is None or score < router.t1:
        return 0
    return 1 if score < router.t2 else 2


def _fallthrough(start: int) -> list[int]:
    """The band visiting order: start, then lower bands downwards, then higher upwards."""
    return [start, *range(start - 1, -1, -1), *range(start + 1, len(BAND_NAMES))]


def gated_adaptive(
    candidates: Sequence[Candidate],
    cfg: Config,
    router: RouterConfig,
    signals: Signals,
    linucb_state: Mapping[str, Sequence[float]],
    rng: random.Random,
) -> Ranking:
    """Rank the chosen band cheapest-first, then the fall-through bands, then the rest."""
    models = usable_models(candidates)
    present = set(models)
    pools = (router.weak_pool, router.mid_pool, router.strong_pool)
    bands = [[m for m in dict.fromkeys(pool) if m in present] for pool in pools]

    full = signals.full_score
    score = signals.banding_score if signals.banding_score is not None else full
    target = band_index(score, router)
    visit = _fallthrough(target)
    chosen = next((i for i in visit if bands[i]), None)

    ordered: list[str] = []
    for i in visit:
        for m in order_cheapest(bands[i], cfg)[0]:
            if m not in ordered:
                ordered.append(m)
    ordered.extend(order_cheapest([m for m in models if m not in ordered], cfg)[0])
    _, scores = order_cheapest(models, cfg)

    shown = "not computed (pinned)" if full is None else f"{full:.3f}"
    if signals.banding_score is not None:
        shown = f"{shown} banding={signals.banding_score:.3f}"
    note = (
        f"gated_adaptive: full={shown} -> {BAND_NAMES[target]} band "
        f"(t1={router.t1:g}, t2={router.t2:g})"
    )
    if score is None:
        note += "; treated as weak"
    if chosen is None:
        note += "; every band empty, cheapest over all candidates"
    elif chosen != target:
        note += f"; {BAND_NAMES[target]} empty, fell to {BAND_NAMES[chosen]}"
    return Ranking(tuple(ordered), scores, note)
