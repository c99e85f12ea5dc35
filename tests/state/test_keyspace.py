"""The embedded store's sorted set, held to a plain sorted list."""

from __future__ import annotations

import bisect
import random

from orca_cli.state.keyspace import ZSet


def test_the_sorted_set_orders_like_a_sorted_list_under_any_writes() -> None:
    """Appends at the top (the common write), inserts below it, re-scored members, trims of
    the lowest and removals below a score: the set always lists what a sorted list of
    (score, member) would."""
    rng = random.Random(11)
    zs, ref = ZSet(), {}
    top = 0.0
    for _ in range(5000):
        roll = rng.random()
        if roll < 0.55:
            top += rng.choice((0.0, 0.5, 1.0))  # equal scores too: ordered by member
            member, score = f"m{rng.randrange(400)}", top
        elif roll < 0.8:
            member, score = f"m{rng.randrange(400)}", rng.uniform(0, top + 1)
        elif roll < 0.9:
            n = rng.randrange(-1, 4)
            expected = sorted((s, m) for m, s in ref.items())[: max(n, 0)]
            assert zs.pop_lowest(n) == [m for _, m in expected]
            for _, m in expected:
                del ref[m]
            continue
        else:
            below = rng.uniform(0, top)
            expected = sorted((s, m) for m, s in ref.items() if s < below)
            assert zs.remove_below(below) == [m for _, m in expected]
            for _, m in expected:
                del ref[m]
            continue
        zs.add(member, score)
        ref[member] = score
        assert zs.items == sorted((s, m) for m, s in ref.items())
        assert len(zs) == len(ref) and zs.scores == ref
    since = top / 2
    ordered = sorted((s, m) for m, s in ref.items())
    assert zs.range_from(since) == ordered[bisect.bisect_left(ordered, (since, "")):]
