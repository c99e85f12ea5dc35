"""`orca replay --corpus FILE`: the user's own sessions, one request a JSON line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orca_cli.cli import app
from orca_cli.replay.corpus_file import CorpusError, parse_corpus
from tests.routing.bodies import tool_call, tool_results, user
from tests.routing.test_banding import agent_body, easy_session
from tests.routing.test_strike_producers import fixture, next_attempt

# One failure loop per language SPEC §19 names, each on a real tool's output (the strike
# producers' fixtures, written from what the tools print): (archetype, fixture, command).
LOOPS = (
    ("cc_go_loop", "go_build_go120.txt", "go build ./..."),
    ("cc_ts_loop", "tsc.txt", "npx tsc --noEmit"),
    ("cc_rust_loop", "rustc.txt", "cargo build"),
    ("cc_py_loop", "python_traceback.txt", "python -m orders.sync"),
    ("cc_jest_loop", "jest.txt", "npx jest"),
)


def _loop(api: Any, name: str, command: str) -> list[dict[str, Any]]:
    """A Claude-Code-sized session looping on the same failure of one tool."""
    msgs: list[dict[str, Any]] = [user(api, "Make the build pass.")]
    out = [msgs]
    failure = fixture(name)
    for i in range(5):
        failure = next_attempt(failure, {})
        msgs = [*msgs, tool_call(api, f"c{i}", command),
                *tool_results(api, f"c{i}", failure, "Still failing, fix it.")]
        out.append(msgs)
    return out


def _write(tmp_path: Path) -> Path:
    lines = []
    for s in range(4):
        for messages in easy_session("anthropic"):
            lines.append({"session": f"easy-{s}", "archetype": "cc_easy",
                          "body": agent_body("anthropic", 20, 17, messages)})
    for archetype, name, command in LOOPS:
        for messages in _loop("anthropic", name, command):
            lines.append({"session": archetype, "archetype": archetype, "needs_strong": True,
                          "body": agent_body("anthropic", 20, 17, messages)})
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_a_corpus_file_replays_with_its_archetypes_and_band_shares(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["replay", "--corpus", str(_write(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["config"]["sessions"] == 4 + len(LOOPS)
    assert doc["config"]["corpus"].endswith("corpus.jsonl")
    assert doc["prevalence"] == []
    a = doc["archetypes"]
    assert a["cc_easy"] == {"sessions": 4, "escalated": 0, "by_trigger": {},
                            "first_turn": None, "false_positives": 0}
    for archetype, _, _ in LOOPS:  # Go, TypeScript, Rust, Python, jest: strikes within 6 turns
        assert a[archetype]["by_trigger"] == {"strikes": 1}, (archetype, a[archetype])
        assert a[archetype]["first_turn"] <= 6, (archetype, a[archetype])
    assert doc["bands"]["archetypes"]["cc_easy"]["weak"] == 1.0


@pytest.mark.parametrize(("text", "needle"), [
    (b"{not json\n", "line 1 is not valid JSON"),
    (b'{"session": "s"}\n', "line 1 needs"),
    (b"\n\n", "holds no turns"),
    (b'{"session": "s", "api": "grpc", "body": {}}\n', "\"api\" must be"),
])
def test_a_bad_corpus_file_names_the_line(text: bytes, needle: str) -> None:
    with pytest.raises(CorpusError, match=needle):
        parse_corpus(text.splitlines(keepends=True), where="c.jsonl")


def test_the_cli_reports_a_bad_corpus_in_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[]\n")
    result = CliRunner().invoke(app, ["replay", "--corpus", str(bad)])
    assert result.exit_code == 1 and "line 1 needs" in result.output
