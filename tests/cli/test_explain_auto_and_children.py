"""`orca explain` and `orca requests` for the auto router (SPEC §16 Explain, §15): the text
view shows the whole auto decision (content-free), `explain last` means the client's last
request, and the classifier's child requests are marked as such."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from orca_cli.cli.explain import _find, render_trace
from orca_cli.trace.log import format_line, log_fields

AUTO = {
    "algorithm": "auto-1", "workloads": ["code", "reasoning"], "complexity": 0.62,
    "confidence": 0.9, "classifier": "local", "fallback_reason": "timeout",
    "classifier_request_id": "req_00c1a55f1e000000000000aa",
    "objective": "balanced", "spend_profile": "standard", "caps": {"input": 1.0, "output": 5.0},
    "candidates": [
        {"model": "mid", "score": 0.71, "factors": {"quality": 0.8, "price": 0.6,
                                                    "latency": 0.5, "health": 1.0}},
        {"model": "nano", "score": 0.55, "factors": {"quality": 0.4, "price": 0.9,
                                                     "latency": 0.5, "health": 1.0}}],
    "excluded": [{"model": "big", "reason": "price_cap"},
                 {"model": "tiny", "reason": "capability"}],
    "capability_relaxed": True, "fallback_order": ["mid", "nano"],
}


def _text(trace: dict[str, Any]) -> str:
    console = Console(width=240, record=True, color_system=None)
    console.print(render_trace(trace))
    return console.export_text()


def test_the_text_view_shows_the_whole_auto_decision() -> None:
    text = _text({"request_id": "req_1", "status": 200, "router": "auto", "auto": AUTO,
                  "strategy_note": "auto: code complexity=0.62 -> balanced/standard, 2 eligible",
                  "candidates": [{"model": "mid", "channel": "gen", "score": 0.71}]})
    assert "auto: code, reasoning · complexity 0.62 · confidence 0.90" in text, text
    assert "auto: code complexity" not in text  # the note names the first workload only
    assert "classifier: local (fallback: timeout) · child request req_00c1a55f" in text
    assert "mid 0.710 (quality 0.800, price 0.600, latency 0.500, health 1.000)" in text
    assert "big: price_cap" in text and "tiny: capability" in text
    assert "fallback order: mid → nano" in text
    assert "capability relaxed" in text
    assert "objective balanced / standard" in text


PARENT = {"request_id": "req_aaaaaaaa0000000000000000", "ts": 10.0, "status": 200,
          "router": "auto", "session_id": "s"}
CHILD = {"request_id": "req_bbbbbbbb0000000000000000", "ts": 10.1, "status": 200,
         "requested_model": "gen2", "purpose": "auto_routing_classifier",
         "parent_request_id": PARENT["request_id"]}


class _Op:
    def __init__(self, traces: list[dict[str, Any]]) -> None:
        self.traces = traces

    def requests(self, **kw: Any) -> list[dict[str, Any]]:
        return self.traces[: kw.get("limit", 20)]


def test_explain_last_is_the_clients_request_not_the_classifier_child() -> None:
    # newest first: the child finished (and was stored) after its parent started
    assert _find(_Op([CHILD, PARENT]), None, None, None) is PARENT  # type: ignore[arg-type]
    assert _find(_Op([CHILD, PARENT]), "last", None, None) is PARENT  # type: ignore[arg-type]


def test_a_classifier_child_is_marked_in_the_request_list() -> None:
    assert log_fields(CHILD)["purpose"] == "auto_routing_classifier"
    assert log_fields(PARENT)["purpose"] is None
    assert format_line(CHILD).endswith("(classifier for aaaaaaaa)")
    assert "classifier" not in format_line(PARENT)
    assert "child request: auto_routing_classifier for req_aaaaaaaa" in _text(CHILD)
