"""`orca replay` through the real decision code and a real store (SPEC §10)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.config.load import loads
from orca_cli.replay.reference import REFERENCE_TOML
from orca_cli.replay.run import ReplayOptions, replay

CFG = loads(REFERENCE_TOML, source="reference")


@pytest.fixture(scope="module")
def doc() -> dict:
    return replay(CFG, ReplayOptions(sessions=60, adversarial=True, sweep=True))


def test_outcomes_by_archetype_match_the_mechanism(doc: dict) -> None:
    a = doc["archetypes"]
    assert a["failure_loop"]["escalated"] == a["failure_loop"]["sessions"] > 0
    assert a["failure_loop"]["by_trigger"] == {"strikes": a["failure_loop"]["sessions"]}
    assert a["failure_loop"]["first_turn"] == 4
    assert a["hard_start"]["by_trigger"] == {"difficulty": a["hard_start"]["sessions"]}
    assert a["hard_start"]["first_turn"] == 2  # the second hard turn, never the first
    for trivial in ("short_trivial", "long_trivial"):
        assert a[trivial]["escalated"] == 0 and a[trivial]["false_positives"] == 0


def test_policies_order_and_escalation_sits_between(doc: dict) -> None:
    p = doc["policies"]
    assert set(p) == {"cheap_only_affinity", "cheap_only_no_affinity", "frontier_only_affinity",
                      "frontier_only_no_affinity", "escalation"}
    assert p["cheap_only_affinity"]["cost_per_1k"] < p["cheap_only_no_affinity"]["cost_per_1k"]
    assert p["frontier_only_affinity"]["cost_per_1k"] < p["frontier_only_no_affinity"]["cost_per_1k"]
    esc = p["escalation"]
    assert p["cheap_only_affinity"]["cost_per_1k"] < esc["cost_per_1k"] \
        < p["frontier_only_affinity"]["cost_per_1k"]
    assert 0 < esc["strong_share"] < 0.5 and esc["coverage"] > 0.6


def test_latency_prevalence_and_sweep(doc: dict) -> None:
    assert doc["latency"]["mean_hard_turns_served_cheap"] <= 1.5
    costs = [row["escalation"] for row in doc["prevalence"]]
    assert costs == sorted(costs)  # more hard work, more spend
    t2s = [row["t2"] for row in doc["sweep"]]
    assert t2s[0] == 0.35 and t2s[-1] == 0.75
    assert doc["sweep"][-1]["strong_share"] <= doc["sweep"][0]["strong_share"]


def test_adversarial_share_holds_at_the_cap_with_every_denial_audited(doc: dict) -> None:
    adv = doc["adversarial"]
    assert adv["final_share"] <= adv["cap"] + 0.02
    assert adv["denied"] > 0 and adv["audited"] == adv["denied"]
    tail = adv["series"][len(adv["series"]) // 2:]
    assert all(s <= adv["cap"] + 0.03 for s in tail)


def test_cli_json_has_the_spec_keys() -> None:
    result = CliRunner().invoke(app, ["replay", "--sessions", "20", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {"config", "archetypes", "policies", "latency", "prevalence"} <= set(out)
    assert "sweep" not in out and "adversarial" not in out


@pytest.mark.redis
def test_replay_runs_on_redis_and_agrees_with_memory() -> None:
    mem = replay(CFG, ReplayOptions(sessions=20, prevalence=False))
    red = replay(CFG, ReplayOptions(sessions=20, prevalence=False, state="redis"))
    assert red["archetypes"] == mem["archetypes"]
    assert red["policies"] == mem["policies"]


def test_the_oracle_rows_price_perfect_labels_with_and_without_stickiness(doc: dict) -> None:
    o, p = doc["oracle"], doc["policies"]
    assert set(o) == {"per_request", "sticky"}
    assert o["per_request"]["coverage"] == o["sticky"]["coverage"] == 1.0
    assert o["per_request"]["strong_share"] < o["sticky"]["strong_share"]
    assert p["cheap_only_affinity"]["cost_per_1k"] < o["per_request"]["cost_per_1k"] \
        < o["sticky"]["cost_per_1k"] < p["frontier_only_affinity"]["cost_per_1k"]


def test_oracle_costs_follow_each_conversations_cache() -> None:
    from orca_cli.replay.corpus import Session, Turn
    from orca_cli.replay.harness import oracle_costs
    from orca_cli.routing.cost import REPLAY_OUTPUT_TOKENS as OUT
    from orca_cli.routing.cost import cold_turn_cost, warm_turn_cost

    def turn(i: int, hard: bool, tokens: int, prefix: int, conv: str = "main") -> Turn:
        return Turn("s", "latent_hard", i, "user", {}, hard, tokens, prefix, tokens - prefix,
                    conv)

    # easy, hard, a sub-agent's request between them, easy wrap-up
    turns = (turn(1, False, 1000, 0), turn(2, True, 3000, 1000), turn(2, False, 400, 0, "sub"),
             turn(3, False, 3500, 3000))
    o = oracle_costs(CFG, [Session("s", "latent_hard", "openai", turns)], 1)
    cheap, strong = CFG.models["gpt-4.1-mini"], CFG.models["gpt-4.1"]
    first = cold_turn_cost(1000, OUT, cheap) + cold_turn_cost(3000, OUT, strong) \
        + cold_turn_cost(400, OUT, cheap)
    assert o["per_request"]["cost_per_1k"] == round(
        1000 * (first + cold_turn_cost(3500, OUT, cheap)), 4)
    assert o["sticky"]["cost_per_1k"] == round(
        1000 * (first + warm_turn_cost(3000, 500, OUT, strong)), 4)
    assert o["per_request"]["strong_share"] == 0.25 and o["sticky"]["strong_share"] == 0.5
