"""The embedded store's keyspace: its sorted set, held to a plain sorted list, and what
it keeps of a value read."""

from __future__ import annotations

import bisect
import random

from orca_cli.clock import FakeClock
from orca_cli.state.codec import decode_doc, doc_version
from orca_cli.state.keyspace import Keyspace, ZSet, entry_doc, entry_version


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


def test_what_was_read_of_a_key_is_what_its_current_value_gives() -> None:
    """A key's kept document and version follow its value: kept when it is written the same
    text again (a pin refreshed as it was) or its hash in place, dropped for another text or
    another kind of value; at every step they equal what decoding the value gives now."""
    rng = random.Random(5)
    clock = FakeClock()
    ks = Keyspace(clock, sweep_every=10**9, sweep_interval_s=1e9)
    texts = ['{"v":3,"a":1}', '{"v":3,"a":1}', '{"v":4,"a":[1,2]}', '["x"]', "plain", "",
             '{"a":"b"}']
    hashes = [{"h": 1.0}, {"h": 2.0}]
    for _ in range(400):
        roll = rng.random()
        if roll < 0.6:
            ks._put("k", "".join(rng.choice(texts)), rng.choice((None, 30.0)), clock.now())
        elif roll < 0.75:
            ks._put("k", rng.choice(hashes), 30.0, clock.now())
        elif roll < 0.85:
            e = ks._entry("k", clock.now())
            if e is not None and isinstance(e.value, dict):  # counted into in place
                e.value["h"] = e.value.get("h", 0.0) + 1
                ks._put("k", e.value, 30.0, clock.now())
        else:
            clock.advance(rng.choice((1.0, 40.0)))
        e = ks._entry("k", clock.now())
        if e is None:
            continue
        if rng.random() < 0.5:  # read (and keep) the document and version, or not yet
            entry_doc(e), entry_version(e)
        text = e.value if isinstance(e.value, str) else None
        assert entry_doc(e) == decode_doc(text)
        assert entry_version(e) == doc_version(text)
