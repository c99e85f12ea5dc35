"""plan_route with the auto strategy (SPEC §16): the ranking is the attempt order, a pinned
turn keeps its model with the ranking as fallbacks, `fallbacks = false` keeps to one model,
and a pool with nothing eligible is refused, never served outside the policy."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from orca_cli.config.auto import AutoConfig
from orca_cli.config.schema import ChannelPrice, Config, EscalationConfig, RouterConfig
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


def _channel_priced_cfg() -> Config:
    """Model `a` is listed at $0.01/$0.01 but channel `dear` bills it at $5/$20 (its own
    `prices`); `cheap` bills it at the list price. `b` is within the economy caps."""
    cfg = config(
        [channel("dear", ["a"], prices={"a": ChannelPrice(5.0, 20.0)}), channel("c2", ["b"])],
        models={"a": price(0.01, 0.01, quality=0.7), "b": price(0.08, 0.4, quality=0.7)},
        routers=[RouterConfig("auto", strategy="auto", allowed_models=("a", "b"),
                              escalation=EscalationConfig(mode="off"))])
    return dataclasses.replace(cfg, auto=AutoConfig(enabled=True, objective="cost",
                                                    spend_profile="economy"))


def test_the_caps_bind_the_price_of_the_channel_that_would_serve() -> None:
    """SPEC §16's caps are hard and §20's channel price is the model's price there: a model
    whose only channel bills it above the economy caps is excluded, whatever `[models]` says."""
    plan = _plan(_channel_priced_cfg())
    assert [a.model for a in plan.attempts] == ["b"]
    assert plan.ranking is not None and plan.ranking.explain is not None
    assert {"model": "a", "reason": "price_cap"} in plan.ranking.explain["excluded"]
    cand = next(c for c in plan.candidates if c.model == "a")
    assert cand.excluded == "price_cap" and ("dear", "price_cap") in cand.filtered


def test_a_channel_above_the_caps_is_left_out_and_a_cheaper_one_serves() -> None:
    base = _channel_priced_cfg()
    cfg = dataclasses.replace(base, channels=(*base.channels, channel("cheap", ["a"])))
    plan = _plan(cfg)
    served = [(a.model, a.channel) for a in plan.attempts]
    assert ("a", "dear") not in served and ("a", "cheap") in served
    # the price factor is the serving channel's: `a` at $0.02 blended ranks first on cost
    assert served[0] == ("a", "cheap")


def test_a_pinned_channel_above_the_caps_is_skipped() -> None:
    base = _channel_priced_cfg()
    cfg = dataclasses.replace(base, channels=(*base.channels, channel("cheap", ["a"])))
    pin = {"channel": "dear", "key_index": 0, "key_fp": cfg.channel("dear").keys[0].fp}
    plan = _plan(cfg, Snapshot(pins={"base": "a"}, channel_pins={"base": pin}))
    first = plan.attempts[0]
    assert (first.model, first.channel) == ("a", "cheap")
