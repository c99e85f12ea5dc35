"""`orca replay --http`: the corpus through a real sidecar on loopback agrees with the
in-process replay (SPEC §10)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.config.load import loads
from orca_cli.replay.http import caps_off, parse_tier
from orca_cli.replay.reference import REFERENCE_TOML
from orca_cli.replay.run import ReplayOptions, replay

CFG = loads(REFERENCE_TOML, source="reference")


@pytest.fixture(scope="module")
def doc() -> dict:
    return replay(CFG, ReplayOptions(sessions=12, http=True, prevalence=False))


def test_http_outcomes_equal_the_in_process_outcomes(doc: dict) -> None:
    h = doc["http"]
    assert set(h["archetypes"]) == {"short_trivial", "long_trivial", "latent_hard",
                                    "failure_loop", "hard_start"}
    assert h["archetypes"] == doc["archetypes"]
    assert h["matches_in_process"] is True
    assert h["archetypes"]["failure_loop"]["by_trigger"] == {
        "strikes": h["archetypes"]["failure_loop"]["sessions"]}


def test_http_tier_shares_and_latency_equal_the_in_process_run(doc: dict) -> None:
    h, esc = doc["http"], doc["policies"]["escalation"]
    assert h["escalation"] == {"strong_share": esc["strong_share"], "coverage": esc["coverage"]}
    assert h["latency"] == doc["latency"]
    strong_models = {"gpt-4.1", "claude-opus-4-1"}
    served_strong = sum(n for m, n in h["models"].items() if m in strong_models)
    assert served_strong == round(esc["strong_share"] * doc["config"]["turns"])


def test_http_reports_throughput_and_the_wall_clock(doc: dict) -> None:
    h = doc["http"]
    assert h["requests"] == doc["config"]["turns"] == sum(h["models"].values())
    assert h["elapsed_s"] > 0 and h["requests_per_s"] > 0
    assert "wall time" in h["clock"] and h["share_caps"] == "off"


def test_caps_off_lifts_both_share_caps_and_keeps_the_session_cap() -> None:
    off = caps_off(CFG)
    assert off.workspace.share_cap == 1.0
    assert all(r.escalation.share_cap == 1.0 for r in off.routers.values())
    assert [r.escalation.max_per_session for r in off.routers.values()] == \
        [r.escalation.max_per_session for r in CFG.routers.values()]
    assert CFG.routers["coding"].escalation.share_cap == 0.20  # the original is untouched


@pytest.mark.parametrize(("header", "expected"), [
    ("strong; reason=difficulty", ("strong", "difficulty")),
    ("base; reason=default", ("base", "default")),
    ("base", ("base", "")),
])
def test_parse_tier_reads_the_session_tier_header(header: str, expected: tuple) -> None:
    assert parse_tier(header) == expected


def test_cli_http_prints_the_wall_clock_note_and_agreement() -> None:
    result = CliRunner().invoke(app, ["replay", "--sessions", "6", "--http"])
    assert result.exit_code == 0, result.output
    assert "wall time" in result.stdout
    assert "match the in-process run" in result.stdout
    assert "requests/s" in result.stdout


def test_agent_shaped_sessions_through_a_real_sidecar_agree_with_the_in_process_run() -> None:
    """Title requests, Explore sub-agents on the background router and Codex sub-agents: the
    in-process replay walks the sidecar's own Turn path, so every tier agrees."""
    doc = replay(CFG, ReplayOptions(sessions=8, http=True, prevalence=False,
                                    agent_shaped=True))
    h, esc = doc["http"], doc["policies"]["escalation"]
    assert h["matches_in_process"] is True
    assert h["escalation"] == {"strong_share": esc["strong_share"], "coverage": esc["coverage"]}
    assert h["latency"] == doc["latency"]
