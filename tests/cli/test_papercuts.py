"""What an operator reads: help without type tags or spec references, no Python `None` in
`orca explain`, long ids cut in tables but whole in `--json`, the warm-up in `orca stats`."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.config.schema import StateConfig
from tests.cli.test_operator_cli import Agent, _cfg, orca, serving

COMMANDS = [["serve"], ["demo"], ["init"], ["score"], ["explain"], ["requests"],
            ["session", "list"], ["session", "show"], ["escalate"], ["reset"], ["pins", "dump"],
            ["audit"], ["stats"], ["statusline"], ["replay"], ["doctor"], ["config", "check"],
            ["config", "show"]]


@pytest.fixture
def sidecar() -> Iterator[Agent]:
    with serving(_cfg(), StateConfig()) as sc:
        yield sc


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_help_has_no_type_tags_and_cites_no_spec(cmd: list[str]) -> None:
    result = CliRunner().invoke(app, [*cmd, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for bad in ("<bool>", "<str>", "<int>", "<float>", "SPEC", "§"):
        assert bad not in result.output, (bad, result.output)


def test_config_section_names_survive_in_help() -> None:
    out = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    assert "[server].port" in out and "--url" not in out
    out = CliRunner().invoke(app, ["stats", "--help"], env={"COLUMNS": "200"}).output
    assert "[server] host and port" in out


def test_explain_of_a_refusal_prints_no_none(sidecar: Agent) -> None:
    r = httpx.post(sidecar.base + "/v1/chat/completions", json={"model": "nope"}, timeout=10)
    assert r.status_code == 404
    code, out, err = orca("explain", "last", "--url", sidecar.base)
    assert code == 0, err
    assert "None" not in out and "tier: none (refused before routing)" in out
    assert "caps: not evaluated" in out
    sidecar.turn("after-refusal")
    code, out, _ = orca("explain", "last", "--url", sidecar.base)
    assert code == 0 and "None" not in out


def test_long_session_ids_are_cut_in_tables_and_whole_in_json(sidecar: Agent) -> None:
    long_id = "claude-code-session-0f8e6c2a-5b1d-4e7f-9a3c-2d4b6f8a0c1e"
    sidecar.turn(long_id)
    code, out, _ = orca("session", "list", "--url", sidecar.base)
    assert code == 0 and long_id not in out and long_id[:19] + "…" in out
    assert len([ln for ln in out.splitlines() if "claude-code" in ln]) == 1
    code, out, _ = orca("session", "list", "--json", "--url", sidecar.base)
    assert json.loads(out)[0]["session_id"] == long_id
    code, out, _ = orca("pins", "dump", "--url", sidecar.base)
    assert code == 0 and long_id not in out


def test_stats_says_when_the_warm_up_allows_a_share_above_the_cap(
        sidecar: Agent) -> None:
    sidecar.turn("w1", 1, **{"x-orcarouter-tier": "strong"})
    sidecar.turn("w2")
    code, out, _ = orca("stats", "--url", sidecar.base)
    assert code == 0 and "50.0 %" in out and "warm-up 2/20" in out
    assert "until then the strong share may exceed it" in out.replace("\n", " ").replace(
        "  ", " ") or "may exceed" in out
