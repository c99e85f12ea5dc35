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
