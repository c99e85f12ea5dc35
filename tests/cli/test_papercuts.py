"""What an operator reads: help without type tags or spec references, no Python `None` in
`orca explain`, long ids cut in tables but whole in `--json`, the warm-up in `orca stats`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.config.schema import StateConfig
from orca_cli.config.template import example_text
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


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _commands(sub, [*path, name])


def _flat(text: str) -> str:
    return re.sub(r"[\s│]+", " ", text).strip()


def test_bracketed_help_text_is_printed_not_taken_for_markup() -> None:
    """`[[routes]]` or `[server]` in a help text reaches the reader (rich reads `[x]` as a
    style tag unless it is written `\\[x]`)."""
    out = CliRunner().invoke(app, ["routes", "check", "--help"], env={"COLUMNS": "200"}).output
    assert "A TOML file of [[routes]] tables." in _flat(out)
    for path, cmd in _commands(typer.main.get_command(app), []):
        out = _flat(CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "1000"}).output)
        texts = [p.help for p in cmd.params if getattr(p, "help", None)] + [cmd.help or ""]
        for text in texts:
            for line in re.findall(r"[^\n]*\[[^\n]*", text):
                want = _flat(line.replace("\\[", "[").replace("\b", ""))
                assert want in out, (" ".join(path), want)


@pytest.mark.parametrize("cmd", [["serve", "--port", "99999"], ["serve", "--port", "70000"],
                                 ["serve", "--port", "-1"], ["demo", "--port", "99999"]],
                         ids=" ".join)
def test_a_port_out_of_range_is_a_usage_error_in_one_sentence(cmd: list[str],
                                                               tmp_path: Path) -> None:
    """Not bind()'s OverflowError: one sentence with the valid range, exit 2."""
    config = tmp_path / "orca.toml"
    config.write_text(example_text())  # a config that would serve: only the port is wrong
    result = CliRunner().invoke(app, [*cmd, "--config", str(config)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.stderr == (f"orca: --port must be a TCP port from 1 to 65535 (or 0 for a "
                             f"free one), got {cmd[2]}\n")
