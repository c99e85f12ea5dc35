"""plan_route with the auto strategy (SPEC §16): the ranking is the attempt order, a pinned
turn keeps its model with the ranking as fallbacks, `fallbacks = false` keeps to one model,
and a pool with nothing eligible is refused, never served outside the policy."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from orca_cli.config.auto import AutoConfig
from orca_cli.config.schema import Config, EscalationConfig, RouterConfig
from orca_cli.routing.features import Scorer
from orca_cli.routing.route import RouteInput, RoutePlan, plan_route
from orca_cli.routing.target import resolve_target
from orca_cli.state.base import Snapshot
from tests.routing.cfg import channel, config, price

SCORER = Scorer()
BODY = {"model": "orca/auto", "messages": [{"role": "user", "content": "Hello there"}]}


def _cfg(**auto: Any) -> Config:
    cfg = config(
        [channel("c1", ["a"]), channel("c2", ["b"]), channel("c3", ["c"])],
        models={"a": price(0.05, 0.2, quality=0.6), "b": price(0.2, 1.0, quality=0.7),
                "c": price(2, 8, quality=0.8)},
        routers=[RouterConfig("auto", strategy="auto", allowed_models=("a", "b", "c"),
                              escalation=EscalationConfig(mode="off"))])
    return dataclasses.replace(cfg, auto=AutoConfig(enabled=True, objective="cost", **auto))


def _plan(cfg: Config, snapshot: Snapshot | None = None) -> RoutePlan:
    inp = RouteInput(target=resolve_target("orca/auto", cfg), api="openai", body=BODY,
                     delta=SCORER.delta(BODY, "openai"), est_tokens=100, session="s1",
                     dedupe_key="d1")
    return plan_route(cfg, inp, snapshot or Snapshot(), now=1_000_000.0, scorer=SCORER, rng=random.Random(1))


def test_the_ranking_is_the_attempt_order() -> None:
    plan = _plan(_cfg())
    assert plan.ranking is not None and plan.ranking.ordered == ("a", "b", "c")
    assert [a.model for a in plan.attempts] == ["a", "b", "c"]
    assert [a.source for a in plan.attempts] == ["ranked", "fallback", "fallback"]
    assert plan.ranking.explain is not None and plan.full is not None


def test_a_pinned_turn_keeps_its_model_and_falls_back_in_rank_order() -> None:
    plan = _plan(_cfg(), Snapshot(pins={"base": "c"}))
    assert [a.model for a in plan.attempts] == ["c", "a", "b"]
    assert plan.full_skipped == "pinned"
    assert plan.ranking is not None and plan.ranking.note.endswith("pinned: fallback order only")


def test_fallbacks_off_keeps_to_the_chosen_model() -> None:
    plan = _plan(_cfg(fallbacks=False))
    assert [a.model for a in plan.attempts] == ["a"]


def test_nothing_eligible_is_refused() -> None:
    plan = _plan(_cfg(models=("nothing/*",)))
    assert plan.refusal is not None and plan.refusal[:2] == (503, "no_candidate")
    assert plan.attempts == ()
