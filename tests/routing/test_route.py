"""plan_route: tier first, then the tier's pin, then the strategy and the attempt order."""

from __future__ import annotations

import random

from orca_cli.config.schema import ChannelConfig, EscalationConfig, RouterConfig
from orca_cli.routing.candidates import key_slots
from orca_cli.routing.features import Scorer
from orca_cli.routing.route import RouteInput, RoutePlan, plan_route
from orca_cli.routing.target import resolve_target
from orca_cli.routing.tiers import TierState
from orca_cli.state.base import ShareCounts, Snapshot
from tests.routing.bodies import HARD_PROSE, goroutine_dump
from tests.routing.cfg import channel, config, price

SCORER = Scorer()
BODY = {"model": "orca/coding", "messages": [{"role": "user", "content": "rename x to count"}]}


def _cfg(**router_kw: object):  # type: ignore[no-untyped-def]
    kw: dict[str, object] = {
        "name": "coding", "strategy": "cheapest",
        "allowed_models": ("cheap-a", "cheap-b", "frontier"), "strong_pool": ("frontier",),
        "fallbacks": ("cheap-b", "frontier")}
    kw.update(router_kw)
    return config(
        [channel("c1", ["cheap-a", "cheap-b"], keys=("k-1", "k-2")),
         channel("c2", ["cheap-a"], keys=("k-3",)),
         channel("f1", ["frontier"], keys=("k-9",))],
        models={"cheap-a": price(0.1, 0.4), "cheap-b": price(0.2, 0.8),
                "frontier": price(3, 15)},
        routers=[RouterConfig(**kw)],  # type: ignore[arg-type]
    )


EMPTY = Snapshot()


def _plan(cfg, snapshot: Snapshot = EMPTY, *, session: str | None = "s1",  # type: ignore[no-untyped-def]
          ask: str | None = None, model: str = "orca/coding", **kw: object) -> RoutePlan:
    body = {**BODY, "model": model}
    inp = RouteInput(target=resolve_target(model, cfg), api="openai", body=body,
                     delta=SCORER.delta(body, "openai"), est_tokens=100, session=session,
                     ask=ask, dedupe_key="d1", **kw)  # type: ignore[arg-type]
    return plan_route(cfg, inp, snapshot, now=1_000_000.0, scorer=SCORER,
                      rng=random.Random(1))


def _fp(cfg, name: str, index: int) -> str:  # type: ignore[no-untyped-def]
    ch = cfg.channel(name)
    return dict(key_slots(ch))[index]


def test_base_request_uses_the_cheapest_base_model_and_falls_back_within_the_tier() -> None:
    plan = _plan(_cfg())
    assert plan.decision.header == "base; reason=default"
    models = [a.model for a in plan.attempts]
    assert models[0] == "cheap-a"
    assert "frontier" not in models  # a base request never falls back onto a strong model
    assert "cheap-b" in models and plan.attempts[-1].source == "fallback"
    assert plan.full is None and plan.full_skipped == "strategy"


def test_explicit_strong_reads_the_strong_pin_not_the_base_pin() -> None:
    cfg = _cfg()
    snap = Snapshot(pins={"base": "cheap-b", "strong": "frontier"},
                    channel_pins={"strong": {"channel": "f1", "key_index": 0,
                                             "key_fp": _fp(cfg, "f1", 0)}})
    plan = _plan(cfg, snap, ask="strong")
    assert plan.tier == "strong" and plan.decision.reason == "explicit"
    assert plan.attempts[0].model == "frontier" and plan.attempts[0].source == "pin"
    assert plan.full_skipped == "pinned"


def test_base_pin_is_followed_and_a_rotated_key_pin_is_dropped() -> None:
    cfg = _cfg()
    snap = Snapshot(pins={"base": "cheap-b"},
                    channel_pins={"base": {"channel": "c1", "key_index": 1, "key_fp": "00000000"}})
    plan = _plan(cfg, snap)
    assert plan.attempts[0].model == "cheap-b"
    chan = next(p for p in plan.pins if p.kind == "channel")
    assert (chan.status, chan.reason) == ("dropped", "key_rotated")
    assert plan.dropped_pins == ("chan:base",)


def test_a_pin_outside_the_tier_is_not_followed() -> None:
    plan = _plan(_cfg(), Snapshot(pins={"base": "frontier"}))
    model_pin = next(p for p in plan.pins if p.kind == "model")
    assert model_pin.status == "dropped" and model_pin.reason == "not_in_tier"
    assert plan.attempts[0].model == "cheap-a"


def test_sessionless_is_base_with_no_pins_read() -> None:
    plan = _plan(_cfg(), Snapshot(pins={"base": "cheap-b"}), session=None, ask="strong")
    assert plan.decision.header == "base; reason=no_session"
    assert plan.pins == () and plan.attempts[0].model == "cheap-a"


def test_escalation_off_serves_every_allowed_model_with_reason_off() -> None:
    cfg = _cfg(escalation=EscalationConfig(mode="off"), strategy="quality")
    plan = _plan(cfg, ask="strong")
    assert plan.decision.header == "base; reason=off"
    assert plan.decision.intents == ()


def test_degraded_store_serves_base_without_intents() -> None:
    plan = _plan(_cfg(), ask="strong", degraded=True)
    assert plan.decision.header == "base; reason=degraded" and plan.decision.intents == ()


def test_share_cap_denies_an_explicit_ask() -> None:
    snap = Snapshot(share=ShareCounts(strong=30, total=100))
    plan = _plan(_cfg(), snap, ask="strong")
    assert plan.decision.header == "base; reason=denied:share_cap"
    assert plan.attempts[0].model == "cheap-a"


def test_gated_adaptive_computes_the_full_score_only_without_a_pin() -> None:
    cfg = _cfg(strategy="gated_adaptive", weak_pool=("cheap-a",), mid_pool=("cheap-b",))
    unpinned = _plan(cfg)
    assert unpinned.full is not None and unpinned.ranking is not None
    pinned = _plan(cfg, Snapshot(pins={"base": "cheap-b"}))
    assert pinned.full is None and pinned.full_skipped == "pinned"


def test_provider_qualified_model_never_crosses_channels() -> None:
    plan = _plan(_cfg(), session=None, model="c2:cheap-a")
    assert {a.channel for a in plan.attempts} == {"c2"}


def test_concrete_strong_model_over_the_workspace_cap_is_refused_429() -> None:
    snap = Snapshot(workspace_share=ShareCounts(strong=50, total=100))
    plan = _plan(_cfg(), snap, session=None, model="frontier")
    assert plan.refusal is not None and plan.refusal[0] == 429
    assert plan.decision.reason == "denied:workspace_cap"
    ok = _plan(_cfg(), Snapshot(), session=None, model="frontier")
    assert ok.refusal is None and ok.counts_strong_in_workspace


def _direct_pin(cfg, channel: str, index: int, fp: str | None = None):  # type: ignore[no-untyped-def]
    return {"channel": channel, "key_index": index,
            "key_fp": _fp(cfg, channel, index) if fp is None else fp}


def test_a_concrete_models_session_follows_its_channel_pin_without_tier_or_model_pin() -> None:
    """SPEC §1.3: a concrete model keeps its session on the pinned channel and key; the pin
    is read under the model's own tier (base here), and no model pin is consulted."""
    cfg = _cfg()
    snap = Snapshot(pins={"base": "cheap-b"},  # another request's model pin: not for it
                    channel_pins={"base": _direct_pin(cfg, "c1", 1)})
    plan = _plan(cfg, snap, model="cheap-a")
    assert plan.decision.header == "base; reason=default" and not plan.decision.evaluated
    assert (plan.attempts[0].channel, plan.attempts[0].key_index) == ("c1", 1)
    assert plan.attempts[0].source == "pin" and plan.attempts[0].model == "cheap-a"
    assert [(p.kind, p.status) for p in plan.pins] == [("channel", "hit")]
    assert plan.dropped_pins == ()
    fresh = _plan(cfg, Snapshot(), model="cheap-a")
    assert [(p.kind, p.status, p.reason) for p in fresh.pins] == [("channel", "miss", "no_pin")]


def test_a_concrete_strong_model_reads_its_pin_under_the_strong_tier() -> None:
    cfg = _cfg()
    snap = Snapshot(channel_pins={"strong": _direct_pin(cfg, "f1", 0)})
    plan = _plan(cfg, snap, model="frontier")
    assert plan.counts_strong_in_workspace and plan.tier == "strong"
    assert plan.attempts[0].source == "pin"
    assert [(p.kind, p.tier, p.status) for p in plan.pins] == [("channel", "strong", "hit")]


def test_a_concrete_models_stale_pin_is_dropped_and_an_unhealthy_one_kept() -> None:
    """The soft-pin rules of SPEC §5 hold for a concrete model's pin as for a router's."""
    cfg = _cfg()
    rotated = _plan(cfg, Snapshot(channel_pins={"base": _direct_pin(cfg, "c1", 1, "00000000")}),
                    model="cheap-a")
    assert [(p.status, p.reason) for p in rotated.pins] == [("dropped", "key_rotated")]
    assert rotated.dropped_pins == ("chan:base",)
    assert rotated.attempts[0].source == "ranked"
    snap = Snapshot(channel_pins={"base": _direct_pin(cfg, "c1", 1)})
    inp = RouteInput(target=resolve_target("cheap-a", cfg), api="openai", body=BODY,
                     delta=SCORER.delta(BODY, "openai"), est_tokens=100, session="s1")
    sick = plan_route(cfg, inp, snap, now=1_000_000.0, scorer=SCORER, rng=random.Random(1),
                      healthy=lambda ch, k: (ch, k) != ("c1", 1))
    assert [(p.status, p.reason) for p in sick.pins] == [("miss", "unhealthy")]
    assert sick.dropped_pins == () and ("c1", 1) not in {
        (a.channel, a.key_index) for a in sick.attempts}


def test_a_provider_qualified_model_skips_a_pin_to_another_channel_and_keeps_it() -> None:
    cfg = _cfg()
    snap = Snapshot(channel_pins={"base": _direct_pin(cfg, "c1", 1)})
    plan = _plan(cfg, snap, model="c2:cheap-a")
    assert {a.channel for a in plan.attempts} == {"c2"}
    assert [(p.status, p.reason) for p in plan.pins] == [("skipped", "qualified_channel")]
    assert plan.dropped_pins == ()
    same = _plan(cfg, snap, model="c1:cheap-a")
    assert (same.attempts[0].channel, same.attempts[0].key_index) == ("c1", 1)


def test_a_sessionless_concrete_model_follows_its_prefix_affinity() -> None:
    cfg = _cfg()
    snap = Snapshot(affinity={**_direct_pin(cfg, "c2", 0), "since": 1.0})
    plan = _plan(cfg, snap, session=None, model="cheap-a")
    assert (plan.attempts[0].channel, plan.attempts[0].source) == ("c2", "affinity")
    assert [(p.kind, p.status) for p in plan.pins] == [("affinity", "hit")]
    assert _plan(cfg, Snapshot(), session=None, model="cheap-a").pins == ()


def test_no_usable_candidate_is_a_503_refusal_naming_why() -> None:
    cfg = _cfg()
    cfg = config([ChannelConfig(name="c1", models=("cheap-a",), enabled=False)],
                 routers=[RouterConfig(name="coding", allowed_models=("cheap-a",))])
    plan = _plan(cfg)
    assert plan.refusal is not None and plan.refusal[0] == 503
    assert "cheap-a" in plan.refusal[2]


def test_a_turn_continuing_by_previous_response_id_counts_for_the_difficulty_streak() -> None:
    """Its body holds only the new input (no assistant message), like a side request's first
    ask; it continues the conversation stored upstream, so its hard user turn corroborates."""
    cfg = _cfg()
    body = {"model": "orca/coding", "previous_response_id": "resp_1",
            "input": [{"role": "user", "content": f"{HARD_PROSE}\n\n{goroutine_dump(8)}"}]}
    delta = SCORER.delta(body, "responses")
    assert delta.is_user_turn and delta.score >= cfg.routers["coding"].escalation.t2
    snapshot = Snapshot(tier=TierState(turn=2, streak=1).to_doc())
    for previous in (True, False):
        inp = RouteInput(target=resolve_target("orca/coding", cfg), api="responses", body=body,
                         delta=delta, est_tokens=100, session="s1", dedupe_key="d2",
                         previous_response=previous)
        plan = plan_route(cfg, inp, snapshot, now=1_000_000.0, scorer=SCORER,
                          rng=random.Random(1))
        expected = "strong; reason=difficulty" if previous else "base; reason=default"
        assert plan.decision.header == expected  # without the id: a side request's first ask
