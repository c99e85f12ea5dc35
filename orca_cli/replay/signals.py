"""Per-turn score series of the replay, read from the signals `harness.prepare` computed once
(never re-scored): what the `--plots` figures draw and `--json` carries.

* `difficulty_by_turn`: the mean delta score at each user-turn index, for the easy sessions
  (short and long trivial) against the hard ones (latent-hard, failure loops, hard from the
  start), and per archetype. It shows why a latent-hard session cannot be told from an easy
  one on its opener, and why a hard paste stands out on the delta.
* `drift`: over the long trivial sessions, the mean delta score against the mean
  full-transcript score by turn. The full score climbs as the history grows; the delta stays
  flat — the reason escalation reads the delta (SPEC §4).

Only user turns count: a tool-result continuation carries its user turn's index but scores
the tool output, not the ask.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from orca_cli.replay.corpus import ARCHETYPES, HARD_ARCHETYPES
from orca_cli.replay.harness import Prepared

__all__ = ["EASY_ARCHETYPES", "difficulty_by_turn", "drift"]

EASY_ARCHETYPES = tuple(a for a in ARCHETYPES if a not in HARD_ARCHETYPES)
DRIFT_ARCHETYPE = "long_trivial"


def _series(sessions: Sequence[Sequence[Prepared]], value: Callable[[Prepared], float]
            ) -> tuple[list[float | None], list[int]]:
    """Mean of `value` per 1-based user-turn index (None where no session reached it)."""
    sums: dict[int, float] = defaultdict(float)
    counts: dict[int, int] = defaultdict(int)
    for session in sessions:
        for p in session:
            if p.turn.kind == "user":
                sums[p.turn.index] += value(p)
                counts[p.turn.index] += 1
    top = max(counts, default=0)
    means = [round(sums[i] / counts[i], 4) if counts[i] else None for i in range(1, top + 1)]
    return means, [counts[i] for i in range(1, top + 1)]


def _delta(p: Prepared) -> float:
    return p.delta.score


def _full(p: Prepared) -> float:
    return p.full.score


def difficulty_by_turn(prepared: Sequence[Sequence[Prepared]], archetypes: Sequence[str]
                       ) -> dict[str, Any]:
    """`{"groups": {"easy"|"hard": {"mean": [...], "n": [...]}}, "archetypes": {name: [...]}}`;
    list position i is user turn i + 1."""
    by_arch: dict[str, list[Sequence[Prepared]]] = defaultdict(list)
    for name, session in zip(archetypes, prepared):
        by_arch[name].append(session)
    groups: dict[str, Any] = {}
    for group, names in (("easy", EASY_ARCHETYPES), ("hard", HARD_ARCHETYPES)):
        mean, n = _series([s for a in names for s in by_arch.get(a, [])], _delta)
        groups[group] = {"archetypes": list(names), "mean": mean, "n": n}
    return {"score": "delta", "groups": groups,
            "archetypes": {a: _series(by_arch[a], _delta)[0] for a in ARCHETYPES
                           if a in by_arch}}


def drift(prepared: Sequence[Sequence[Prepared]], archetypes: Sequence[str]) -> dict[str, Any]:
    """Mean delta and full-transcript score by user turn over the long trivial sessions."""
    sessions = [s for a, s in zip(archetypes, prepared) if a == DRIFT_ARCHETYPE]
    delta, n = _series(sessions, _delta)
    full, _ = _series(sessions, _full)
    return {"archetype": DRIFT_ARCHETYPE, "sessions": len(sessions), "delta": delta,
            "full": full, "n": n}
