"""`auto`: the auto router's strategy (SPEC §16).

Classifies the request (the model classifier's answer when the request path supplies one,
else the local classifier), then gates and scores the pool with `[auto]`'s policy
(`routing.auto.score`). The ranking is every eligible model best first — the fallback order
— and `Ranking.explain` carries the whole content-free decision for the trace. A call
without the request (`signals.request` None) classifies as `general` at complexity 0.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import replace

from orca_cli.config.schema import Config, RouterConfig
from orca_cli.routing.auto.classify import Classification, classify_local
from orca_cli.routing.auto.score import rank_auto
from orca_cli.routing.candidates import Candidate
from orca_cli.routing.strategies.base import Ranking, Signals

__all__ = ["auto"]

_UNKNOWN = Classification(("general",), 0.0, 0.0, fallback_reason="no_request")


def auto(
    candidates: Sequence[Candidate],
    cfg: Config,
    router: RouterConfig,
    signals: Signals,
    linucb_state: Mapping[str, Sequence[float]],
    rng: random.Random,
) -> Ranking:
    """Rank the eligible models by the `[auto]` objective's weighted factors, descending."""
    req = getattr(signals, "request", None)
    if req is None:
        cls, measured = _UNKNOWN, {}
    else:
        cls = req.classification
        if cls is None or not cls.workloads:  # none asked, or the model classifier failed
            local = classify_local(req.body, req.delta, req.full)
            cls = (replace(local, fallback_reason=cls.fallback_reason, request_id=cls.request_id)
                   if cls else local)
        measured = req.measured_latency_ms
    decision = rank_auto(candidates, cfg, cfg.auto, cls, measured)
    scores = {s.model: s.score for s in decision.ranked}
    note = (f"auto: {cls.workload} complexity={cls.complexity:.2f} -> "
            f"{cfg.auto.objective}/{cfg.auto.spend_profile}, {len(decision.ranked)} eligible")
    return Ranking(decision.ordered, scores, note, decision.to_json())
