"""SPEC §13.2: among models ranked equal, one served in the inbound format goes first."""

from __future__ import annotations

from orca_cli.routing.candidates import build_candidates
from orca_cli.routing.route import native_first
from orca_cli.routing.strategies import Ranking
from tests.routing.cfg import channel, config

CFG = config([channel("ant", ["claude-a", "claude-b"], api="anthropic"),
              channel("oa", ["gpt-a", "gpt-b"])])


def _order(ordered: tuple[str, ...], scores: dict[str, float], api: str = "openai") -> tuple[str, ...]:
    cands = build_candidates(ordered, api, 1000, CFG)  # type: ignore[arg-type]
    return native_first(Ranking(ordered, scores, "n"), cands, CFG, api).ordered  # type: ignore[arg-type]


def test_a_tie_goes_to_the_inbound_format() -> None:
    assert _order(("claude-a", "gpt-a"), {"claude-a": 1.0, "gpt-a": 1.0}) == ("gpt-a", "claude-a")
    assert _order(("gpt-a", "claude-a"), {"claude-a": 1.0, "gpt-a": 1.0},
                  api="anthropic") == ("claude-a", "gpt-a")


def test_a_better_score_is_never_overridden() -> None:
    assert _order(("claude-a", "gpt-a"), {"claude-a": 2.0, "gpt-a": 1.0}) == ("claude-a", "gpt-a")


def test_only_adjacent_ties_move_and_unscored_models_keep_their_order() -> None:
    scores = {"claude-a": 1.0, "gpt-a": 0.5, "claude-b": 0.5, "gpt-b": 0.1}
    assert _order(("claude-a", "claude-b", "gpt-a", "gpt-b"), scores) == (
        "claude-a", "gpt-a", "claude-b", "gpt-b")
    assert _order(("claude-a", "gpt-a"), {}) == ("claude-a", "gpt-a")
