"""`orca demo`: real sidecar on loopback, sim upstreams, scripted sessions."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from orca_cli.cli import app


def test_demo_shows_the_mechanism_end_to_end() -> None:
    result = CliRunner().invoke(app, ["demo", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    by = {(r["session"], r["turn"]): r for r in rows}
    # Trivial edits stay base on one model and channel, the cache warm from turn 2.
    trivial = [r for r in rows if r["session"] == "demo-trivial-edits"]
    assert all(r["tier"].startswith("base;") for r in trivial)
    assert len({(r["model"], r["channel"]) for r in trivial}) == 1
    assert all(r["cached_tokens"] > 0 for r in trivial[1:])
    # ... and cheap: served by the example config's weak pool, never its mid or strong model.
    from orca_cli.config.load import loads
    from orca_cli.config.template import example_text

    coding = loads(example_text(), source="example").routers["coding"]
    assert trivial[0]["model"] in coding.weak_pool
    # The failure loop escalates by strikes on turn 4 and stays strong on one model.
    assert by[("demo-failure-loop", 3)]["tier"] == "base; reason=default"
    assert by[("demo-failure-loop", 4)]["tier"] == "strong; reason=strikes"
    assert by[("demo-failure-loop", 5)]["tier"] == "strong; reason=strikes"
    assert by[("demo-failure-loop", 5)]["model"] == by[("demo-failure-loop", 4)]["model"]
    # ... across formats (SPEC §13.2): the cheap tier on a Chat Completions channel, the
    # frontier on an Anthropic one, so one of the two tiers goes through translation, as
    # the trace's `translation` block says; Claude Code (Messages) the other way round.
    assert coding.escalation_pool
    assert by[("demo-failure-loop", 4)]["model"] in coding.escalation_pool
    loop = [(r["api"], r["upstream_api"]) for r in rows if r["session"] == "demo-failure-loop"]
    assert loop == [("openai", "openai")] * 3 + [("openai", "anthropic")] * 3
    claude = [r for r in rows if r["session"] == "demo-claude-code-loop"]
    assert [r["tier"] for r in claude[2:4]] == ["base; reason=default", "strong; reason=strikes"]
    assert [(r["api"], r["upstream_api"]) for r in claude] == (
        [("anthropic", "openai")] * 3 + [("anthropic", "anthropic")] * 2)
    assert all(r["cached_tokens"] > 0 for r in claude[1:3] + claude[4:]), claude
    # A one-turn boost serves exactly one turn strong, then the same base model again.
    assert by[("demo-one-turn-boost", 2)]["tier"] == "strong; reason=once"
    assert by[("demo-one-turn-boost", 3)]["tier"].startswith("base;")
    assert by[("demo-one-turn-boost", 3)]["model"] == by[("demo-one-turn-boost", 1)]["model"]
    # Claude Code's housekeeping model name lands on the cheap background router, a side
    # request of its session (SPEC §14.1).
    assert all(r["tier"] == "base; reason=side"
               for r in rows if r["session"] == "demo-housekeeping")
    assert all(r["cost_usd"] > 0 for r in rows)


def test_demo_table_output() -> None:
    result = CliRunner().invoke(app, ["demo"])
    assert result.exit_code == 0, result.output
    assert "strong; reason=strikes" in result.stdout
    assert "openai → anthropic" in result.stdout and "anthropic → openai" in result.stdout
    assert "served" in result.stdout and "cache-hit tokens" in " ".join(result.stdout.split())
