"""`orca replay --corpus FILE` replays the file as recorded: the flags that shape the built-in
corpus are refused with it (one line, exit 2), and with no session escalated the latency line
says so instead of describing a ratchet that never fired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_operator_cli import orca


def _corpus(tmp_path: Path) -> str:
    """Three short sessions marked as needing strong, too easy for anything to escalate."""
    lines = []
    for s in range(3):
        msgs: list[dict[str, str]] = []
        for t in range(3):
            msgs = [*msgs, {"role": "user", "content": f"session {s} turn {t}: edit file"}]
            lines.append(json.dumps({"session": f"c{s}", "needs_strong": True,
                                     "archetype": "easy",
                                     "body": {"model": "orca/coding", "messages": msgs}}))
            msgs = [*msgs, {"role": "assistant", "content": "ok"}]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("flags", [("--sessions", "3"), ("--agent-loop",), ("--agent-shaped",),
                                   ("--sessions", "5", "--agent-loop")])
def test_corpus_refuses_the_built_in_corpus_flags(tmp_path: Path,
                                                  flags: tuple[str, ...]) -> None:
    code, out, err = orca("replay", "--corpus", _corpus(tmp_path), *flags)
    assert code == 2 and out == ""
    assert err.startswith("orca: --corpus replays the file") and err.count("\n") == 1, err
    assert flags[0] in err


def test_no_escalated_session_is_said_as_such(tmp_path: Path) -> None:
    code, out, err = orca("replay", "--corpus", _corpus(tmp_path))
    assert code == 0, err
    line = next(x for x in out.splitlines() if x.startswith("escalation latency"))
    assert "no session escalated" in line and "before the ratchet fired" not in line
    code, out, _ = orca("replay", "--corpus", _corpus(tmp_path), "--json")
    doc = json.loads(out)
    assert doc["latency"]["sessions"] == 3
    assert sum(a["escalated"] for a in doc["archetypes"].values()) == 0
