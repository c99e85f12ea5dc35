"""`orca explain`'s tree rendered from stored traces (SPEC §8, §17): rendered, never
recomputed, with the same amounts and words as the rest of the CLI."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from orca_cli.cli.explain import render_trace


def _text(trace: dict[str, Any]) -> str:
    console = Console(width=240, record=True, color_system=None)
    console.print(render_trace(trace))
    return console.export_text()


def _routed(spent: float, limit: float) -> dict[str, Any]:
    return {"request_id": "req_1", "status": 429,
            "route": {"route": "team-a", "version": 3, "key": "k1", "path": ["team-a"],
                      "decision": "deny", "deny": {"status": 429},
                      "budget": {"name": "daily", "verdict": "over", "spent_usd": spent,
                                 "limit_usd": limit, "counter": "day:2026-12-05"}}}


def test_budget_amounts_read_as_the_429_and_orca_budget_write_them() -> None:
    """`format_usd`: cents from $1 up, 4 significant digits below it, never `$0.0000`."""
    text = _text(_routed(0.004022, 0.5))
    assert "spent $0.004022 of $0.50 (day:2026-12-05)" in text, text
    assert "$12.00 of $10.00" in _text(_routed(12, 10))
    assert "spent $0.00003 of $0.0001" in _text(_routed(0.00003, 0.0001))


def test_an_operators_reason_shows_on_the_explicit_ask_it_came_with() -> None:
    """`orca escalate --reason`: the request that resolved the pending ask says why."""
    trace = {"request_id": "req_2", "status": 200,
             "tier": {"decision": "strong", "reason": "explicit", "trigger": "explicit",
                      "evaluations": {"A": {"class": "A", "ask": "strong", "actor": "cli",
                                            "fires": True, "note": "audit: stuck"}}}}
    assert "A explicit: ask strong by cli ('audit: stuck') → fires" in _text(trace)
    trace["tier"]["evaluations"]["A"]["note"] = "[red]x[/]"  # type: ignore[index]
    assert "ask strong by cli ('[red]x[/]') → fires" in _text(trace)  # text, never markup
    del trace["tier"]["evaluations"]["A"]["note"]  # type: ignore[index]
    assert "A explicit: ask strong by cli → fires" in _text(trace)


def test_a_strike_names_the_failures_that_came_back() -> None:
    """The C line says which kinds of failure repeated (`strikes.signature_label`), so an
    operator sees why a session escalated by strikes without any of the tool's output."""
    c = {"class": "C", "request_strike": True, "strikes": 2, "needed": 2, "window_turns": 6,
         "fires": True, "repeated": ["go:declared-not-used", "tool:exit:1"]}
    trace = {"request_id": "req_3", "status": 200,
             "tier": {"decision": "strong", "reason": "strikes", "trigger": "strikes",
                      "evaluations": {"C": c}}}
    assert ("C strikes: 2/2 in the last 6 turns · this turn strikes (again: "
            "go:declared-not-used, tool:exit:1) → fires") in _text(trace)
    del c["repeated"]  # a trace written before the labels
    assert "C strikes: 2/2 in the last 6 turns · this turn strikes → fires" in _text(trace)
