"""`orca replay --agent-shaped`: the corpus with real agents' prefixes (SPEC §19)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.replay.agents import AGENTS
from orca_cli.replay.corpus import generate
from orca_cli.wire.transcript import transcript


@pytest.fixture(scope="module")
def doc() -> dict:
    result = CliRunner().invoke(app, ["replay", "--agent-shaped", "--sessions", "60", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_sessions_carry_agent_sized_prefixes_in_their_agents_wire_format() -> None:
    apis = set()
    for s in generate(sessions=10, agent_shaped=True):
        apis.add(s.api)
        t = transcript(s.turns[0].body, s.api)
        size, tools = AGENTS["claude-code" if s.api == "anthropic" else "codex"]
        assert len(t.system) == size and len(s.turns[0].body["tools"]) == tools
        assert any(turn.kind == "tool" for turn in s.turns)  # the agent's loop
        title = [t for t in s.turns if "tools" not in t.body]  # the title side request
        assert len(title) == 1 and title[0].index == 0 and not title[0].needs_strong
        if s.api == "responses":  # as Codex 0.171: the prompt is the first developer item
            first = s.turns[0].body
            assert "instructions" not in first and first["input"][0]["role"] == "developer"
            assert first["prompt_cache_key"] == s.id
            assert title[0].session_id == f"{s.id}-title"  # the TUI's own session id
        else:
            assert title[0].session_id == s.id  # Claude Code's, under the session's id
    assert apis == {"anthropic", "responses"}


def test_easy_sessions_band_weak_with_no_false_positive(doc: dict) -> None:
    bands = doc["bands"]["archetypes"]
    for easy in ("short_trivial", "long_trivial"):
        assert bands[easy]["weak"] >= 0.8
        assert doc["archetypes"][easy]["escalated"] == 0
    # hard sessions' main turns band mid (side requests, and the Explore sub-agent's requests
    # the background router serves, are not the session router's base turns)
    assert bands["hard_start"]["mid"] >= 0.7
    assert sum(a["false_positives"] for a in doc["archetypes"].values()) == 0


def test_hard_work_escalates_and_costs_stay_well_below_always_frontier(doc: dict) -> None:
    """Sub-agent requests under the session id do not break a hard session's streak."""
    a, p = doc["archetypes"], doc["policies"]
    for hard in ("latent_hard", "hard_start"):
        assert a[hard]["escalated"] == a[hard]["sessions"]
    assert a["failure_loop"]["by_trigger"] == {"strikes": a["failure_loop"]["sessions"]}
    assert a["failure_loop"]["first_turn"] <= 6
    assert p["escalation"]["coverage"] > 0.67
    assert p["escalation"]["cost_per_1k"] <= 0.5 * p["frontier_only_affinity"]["cost_per_1k"]
