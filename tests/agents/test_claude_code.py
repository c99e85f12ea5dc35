"""Claude Code (`@anthropic-ai/claude-code`) against `orca serve` (SPEC §14.1, §14.2, §14.6).

`claude -p` then `claude -p --continue`: one session (Claude Code's own
`x-claude-code-session-id`), one model and key, cached tokens from turn 2. Interactive Claude
Code sends a session-title request before its first turn (tests/agents/CAPTURES.md): it is a
side request and must not pin the session.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agents.kit import (
    Orca,
    Terminal,
    agent_binary,
    agent_env,
    assert_one_session,
    run_agent,
)

FIRST = "Explain what the parser module tests check"
SECOND = "Now list the parser edge cases they miss"
DEFAULT_MODEL = "claude-opus-5-5"   # what Claude Code 2.1.332 sends without --model


def _claude_env(orca: Orca, home: Path, request_id: str, *, nonessential: bool) -> dict[str, str]:
    env = agent_env(home, ANTHROPIC_BASE_URL=orca.base, ANTHROPIC_API_KEY="orca-dummy-key",
                    ANTHROPIC_CUSTOM_HEADERS=f"X-Request-Id: {request_id}")
    if not nonessential:
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    return env


def _print_turns(orca: Orca, tmp_path: Path, *, nonessential: bool) -> list[dict[str, Any]]:
    claude = agent_binary("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    tag = "ne" if nonessential else "quiet"
    first = run_agent([claude, "-p", FIRST], _claude_env(orca, home, f"cc-{tag}-1",
                                                          nonessential=nonessential), work)
    assert first.returncode == 0, (first.stderr, orca.server_log())
    assert first.stdout.strip()
    second = run_agent([claude, "-p", "--continue", SECOND],
                       _claude_env(orca, home, f"cc-{tag}-2", nonessential=nonessential), work)
    assert second.returncode == 0, (second.stderr, orca.server_log())
    assert second.stdout.strip()
    return [orca.explain(f"cc-{tag}-1"), orca.explain(f"cc-{tag}-2")]


@pytest.mark.parametrize("nonessential", [True, False], ids=["default", "nonessential-off"])
def test_print_then_continue_is_one_pinned_session(orca: Orca, tmp_path: Path,
                                                   nonessential: bool) -> None:
    traces = _print_turns(orca, tmp_path, nonessential=nonessential)
    session_id = assert_one_session(traces)
    assert {t["session_source"] for t in traces} == {"header:x-claude-code-session-id"}
    assert {t["inbound_api"] for t in traces} == {"anthropic"}
    assert {t["router"] for t in traces} == {"coding"}
    # --continue re-sends the model it started with (CAPTURES.md), so it reaches the same router
    assert {t["requested_model"] for t in traces} == {DEFAULT_MODEL}
    shown = orca.session(session_id)
    assert session_id in json.dumps(shown)
    # Each turn's delta is the typed ask: Claude Code's 20 KB system prompt, the
    # `<system-reminder>` blocks of its first message and its in-message system note are not.
    for t in traces:
        delta = t["difficulty"]["delta"]
        assert t["difficulty"]["user_turn"]
        assert delta["features"]["log_prompt_tokens"]["value"] < 4.0, delta


def _transcript_models(home: Path) -> list[str]:
    """The model names Claude Code recorded from orca's responses (its session transcript)."""
    models = []
    for path in sorted((home / ".claude" / "projects").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            message = entry.get("message")
            if entry.get("type") == "assistant" and isinstance(message, dict):
                models.append(str(message.get("model")))
    return models


def test_response_model_is_the_requested_name(orca: Orca, tmp_path: Path) -> None:
    """§14.2: Claude Code writes the response's model into its transcript and re-reads it on
    --continue; with `response_model = "requested"` it is the name it sent, not the routed one."""
    traces = _print_turns(orca, tmp_path, nonessential=False)
    served = {t["selected"]["model"] for t in traces}
    assert served != {DEFAULT_MODEL}  # the sim serves another model: the name must be mapped back
    models = _transcript_models(tmp_path / "home")
    assert len(models) >= 2, models
    assert set(models) == {DEFAULT_MODEL}, models


def test_a_session_claude_code_compacts_stays_on_its_tier(orca: Orca, tmp_path: Path) -> None:
    """`/compact` after one turn, then a new prompt: Claude Code's next body opens with the
    summary and holds no assistant message (CAPTURES.md). Read as a sub-agent's first
    request, the escalated session was served `base; reason=sub_agent`; it stays strong."""
    claude = agent_binary("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    prompts = ["say hi", "/compact", "ok, now list the parser edge cases"]
    for i, prompt in enumerate(prompts):
        argv = [claude, "-p", prompt] if i == 0 else [claude, "-p", "--continue", prompt]
        run = run_agent(argv, _claude_env(orca, home, f"cc-compact-{i}", nonessential=False),
                        work)
        assert run.returncode == 0, (run.stderr, orca.server_log())
        if i == 0:
            (session,) = {row["session_id"] for row in orca.cli("session", "list")}
            orca.cli("escalate", session)
    log = "".join(p.read_text() for p in (home / ".claude" / "projects").rglob("*.jsonl"))
    assert '"compact_boundary"' in log  # Claude Code did compact
    served = [(t["tier"]["decision"], t["tier"]["reason"]) for t in orca.requests(session)]
    assert served[0] == ("base", "default") and len(served) >= 3, served
    assert set(served[1:]) == {("strong", "explicit")}, served


# ------------------------------------------------------------------ interactive: the title


def _interactive_turn(claude: Path, env: dict[str, str], work: Path, prompt: str,
                      timeout: float = 60.0) -> str:
    """Type one prompt into interactive Claude Code; return its session id once the turn is
    answered (the title request goes out before the turn)."""
    term = Terminal([claude], env, work)
    deadline = time.monotonic() + timeout
    try:
        term.wait_for("❯".encode(), deadline=deadline)
        term.type(prompt.encode())
        term.wait_for(prompt[-12:].encode(), deadline=deadline)
        term.type(b"\r")
        projects = Path(env["HOME"]) / ".claude" / "projects"
        while time.monotonic() < deadline:
            term.pump(0.2)
            transcripts = list(projects.rglob("*.jsonl")) if projects.exists() else []
            for path in transcripts:
                if '"type":"assistant"' in path.read_text().replace(" ", ""):
                    return path.stem
        raise AssertionError(f"no answer from interactive Claude Code: {term.screen[-2000:]!r}")
    finally:
        term.close()


def test_title_request_is_a_side_request_and_pins_nothing(orca: Orca, tmp_path: Path) -> None:
    """§14.1: interactive Claude Code's first request is its session-title request (same
    session id, same model name, no tools, 'You are naming a coding session…'). It is served
    as a side request: reason `side`, and the real first turn finds no pin it wrote."""
    claude = agent_binary("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    key = "orca-dummy-key-0123456789abcdef"
    (home / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark",
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "projects": {str(work): {"hasTrustDialogAccepted": True,
                                 "hasCompletedProjectOnboarding": True}}}))
    env = agent_env(home, ANTHROPIC_BASE_URL=orca.base, ANTHROPIC_API_KEY=key,
                    TERM="xterm-256color")
    session_id = _interactive_turn(claude, env, work, FIRST)
    assert session_id in json.dumps(orca.session(session_id))  # the transcript's id is orca's
    traces = orca.requests(session_id)
    assert len(traces) >= 2, traces
    title, turn = traces[0], traces[1]
    assert title["session_id"] == turn["session_id"] == session_id
    assert title["requested_model"] == turn["requested_model"]
    assert title["tier"]["reason"] == "side", title["tier"]
    model_pin = next(p for p in turn["pins"] if p["kind"] == "model")
    assert model_pin["status"] == "miss", turn["pins"]
    assert turn["tier"]["reason"] != "side"


def _orca_text(orca: Orca, *args: str, stdin: str | None = None) -> str:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "orca_cli", *args], check=False, env=orca.env,
                          input=stdin, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_operator_finds_explains_and_watches_a_claude_code_session(
        orca: Orca, tmp_path: Path) -> None:
    """SPEC §15 with the real agent: no response header is ever shown to the user, yet the
    latest request is found (`orca requests`), explained (`orca explain last`) and the status
    line follows the session (`orca statusline` reading Claude Code's status-line JSON)."""
    claude = agent_binary("claude")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = agent_env(home, ANTHROPIC_BASE_URL=orca.base, ANTHROPIC_API_KEY="orca-dummy-key",
                    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
    first = run_agent([claude, "-p", FIRST], env, work)
    assert first.returncode == 0, (first.stderr, orca.server_log())
    rows = orca.cli("requests", "--limit", "5")
    rows = rows.get("requests", rows) if isinstance(rows, dict) else rows
    newest = rows[0]
    session = newest["session_id"]
    assert newest["requested_model"] == DEFAULT_MODEL and newest["status"] == 200
    last = orca.cli("explain", "last")
    assert last["request_id"] == newest["request_id"] and last["session_id"] == session
    status_in = json.dumps({"session_id": session, "model": {"id": DEFAULT_MODEL}})
    line_1 = _orca_text(orca, "statusline", "--url", orca.base, stdin=status_in)
    assert "base" in line_1 and "$" in line_1, line_1
    second = run_agent([claude, "-p", "--continue", SECOND], env, work)
    assert second.returncode == 0, (second.stderr, orca.server_log())
    again = orca.cli("explain", "last")
    assert again["session_id"] == session and again["request_id"] != last["request_id"]
    line_2 = _orca_text(orca, "statusline", "--url", orca.base, stdin=status_in)
    assert line_2 != line_1, "the status line did not follow the session"
    log = orca.server_log()
    assert newest["request_id"][4:12] in log, "the request log printed no line for it"
