"""Memory-only behaviour: residency stays bounded by TTLs (SPEC §12)."""

from __future__ import annotations

import random
from dataclasses import fields, replace
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orca_cli.clock import FakeClock
from orca_cli.config.schema import EscalationConfig
from orca_cli.errors import StoreUnavailable
from orca_cli.routing.intents import (
    BaseConversation,
    ConsumePending,
    Deescalate,
    Escalate,
    Intent,
    OnceBoost,
    RecordTurn,
    SetPending,
)
from orca_cli.routing.tiers import Pending, Strike, TierState
from orca_cli.state import keys as K
from orca_cli.state.base import (
    CommitBatch,
    DelOp,
    ExpireAtLeastOp,
    HIncrManyOp,
    Op,
    ReadRequest,
    SetOp,
    SlotRef,
    SlotWrite,
    WindowIncrOp,
)
from orca_cli.state.codec import decode_doc, doc_version
from orca_cli.state.keyspace import DOC_TEXT, UNDECODED, Entry, entry_text
from orca_cli.state.memory import MEMORY_MARKER_TTL_S, MemoryStore
from orca_cli.state.plan import TierMutate, _finite
from tests.state.test_store_contract import ROUTER, WORKSPACE, bump

MARKER_WINDOW_S = 86_400 + 1  # longer than every TTL written below, markers included


async def test_ten_thousand_expired_sessions_do_not_stay_resident() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock, sweep_interval_s=60)
    for i in range(10_000):
        write = SlotWrite(
            SlotRef.of_session("coding", f"s{i}"),
            (SetOp("pin:base", "m", 30),),
            mutate=bump,
            tier_ttl_s=30,
        )
        await store.commit(CommitBatch(f"r{i}", (write,)))
    assert len(store) == 30_000  # tier, pin and marker per session
    clock.advance(MARKER_WINDOW_S)
    await store.commit(CommitBatch("late", (SlotWrite(SlotRef.of_router("coding")),)))
    assert len(store) == 1  # only the last commit's marker is left


async def test_an_untouched_expired_key_is_dropped_by_the_periodic_sweep() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock, sweep_every=10, sweep_interval_s=1e9)
    await store.commit(
        CommitBatch(
            "r0", (SlotWrite(SlotRef.of_session("coding", "a"), (SetOp("pin:base", "m", 5),)),)
        )
    )
    clock.advance(86_401)  # pin and marker expired
    for i in range(9):
        await store.commit(CommitBatch(f"r{i + 1}", ()))
    assert len(store) == 0


async def test_a_large_store_is_swept_once_per_eighth_of_its_keys_in_commits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep reads every key: on the request path a store of N keys sweeps every
    max(`sweep_every`, N / 8) commits, so a commit's share of sweeping stays bounded as the
    idempotency markers pile up; what expired is still dropped by the next sweep."""
    clock = FakeClock()
    store = MemoryStore(clock=clock, sweep_every=10, sweep_interval_s=1e9)
    sweeps: list[int] = []
    real = store.sweep

    def counted() -> int:
        sweeps.append(len(store))
        return real()

    monkeypatch.setattr(store, "sweep", counted)
    for i in range(2_000):  # one router slot a commit: its marker stays (24 h)
        await store.commit(CommitBatch(f"r{i}", (SlotWrite(SlotRef.of_router("coding")),)))
    # Each sweep comes at the first commit at which those since the last number both 10 and
    # an eighth of the keys resident (one more a commit here).
    gaps = [b - a for a, b in pairwise(sweeps)]
    assert sweeps[0] == 9 and gaps[:7] == [10] * 7  # a small store: every 10 commits
    assert all(gap == max(10, -(-size // 8)) for gap, size in zip(gaps, sweeps[1:]))
    assert gaps[-1] > 200 and len(sweeps) < 40  # 200 sweeps at every 10 commits
    clock.advance(MARKER_WINDOW_S)
    for i in range(400):
        await store.commit(CommitBatch(f"late{i}", (SlotWrite(SlotRef.of_router("coding")),)))
    assert len(store) <= 400  # the 2,000 expired markers were swept


async def test_a_commit_marker_is_kept_an_hour_and_a_resend_within_it_is_a_duplicate() -> None:
    """A held batch is re-sent at the gate's next probe, a second later: the memory store keeps
    each marker `MEMORY_MARKER_TTL_S` (an hour), not a day, and a busy sidecar's store holds
    an hour of markers rather than a day of them."""
    assert MEMORY_MARKER_TTL_S == 3600
    clock = FakeClock()
    store = MemoryStore(clock=clock, sweep_every=10**9, sweep_interval_s=1e9)
    router = SlotRef.of_router("coding")
    batch = CommitBatch("r0", (SlotWrite(router, (SetOp("note", "x", 10**6),)),))
    assert (await store.commit(batch)).results[0].status == "applied"
    clock.advance(MEMORY_MARKER_TTL_S - 1)
    assert (await store.commit(batch)).results[0].status == "duplicate"
    assert len(store) == 2  # the value and the request's marker
    clock.advance(2)
    assert store.sweep() == 1  # the marker, not the value it guarded
    assert await store.get(router, "note") is not None


async def test_an_idle_store_is_swept_when_a_sweep_is_due() -> None:
    """No commit arrives: the sidecar's housekeeping (`sweep_if_due`) still drops what
    expired, once `sweep_interval_s` passed since the last sweep."""
    clock = FakeClock()
    store = MemoryStore(clock=clock, sweep_every=10**9, sweep_interval_s=60)
    await store.commit(
        CommitBatch(
            "r0", (SlotWrite(SlotRef.of_session("coding", "a"), (SetOp("pin:base", "m", 5),)),)
        )
    )
    assert len(store) == 2  # the pin and the commit marker
    clock.advance(30)
    assert store.sweep_if_due() == 0 and len(store) == 2  # not due yet
    clock.advance(MARKER_WINDOW_S)
    assert store.sweep_if_due() == 2 and len(store) == 0
    assert store.sweep_if_due() == 0  # just swept


async def test_the_kept_share_sums_equal_a_fresh_sum_after_any_writes() -> None:
    """The window sums a read keeps, and commits update in place, always equal what summing
    the `share` hash again gives: counts at random hours and windows, overwrites, deletions,
    TTL changes and expiries, with reads of several windows between them."""
    rng = random.Random(7)
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    windows = [(h, h + span) for h in range(8, 14) for span in (0, 1, 3)]
    for i in range(600):
        ops: list[Op] = []
        for _ in range(rng.randint(1, 3)):
            roll = rng.random()
            if roll < 0.8:
                ops.append(WindowIncrOp(K.SHARE_KEY, rng.randint(6, 16), rng.choice("st"),
                                        rng.choice((1, 0.5)), rng.choice((1, 1, 2, 2, 4, 24)),
                                        rng.choice((5.0, 60.0))))
            elif roll < 0.87:
                ops.append(DelOp(K.SHARE_KEY))
            elif roll < 0.94:
                ops.append(ExpireAtLeastOp(K.SHARE_KEY, 120.0))
            else:
                ops.append(SetOp("other", "x", 60.0))
        await store.commit(CommitBatch(f"r{i}", (SlotWrite(ROUTER, tuple(ops)),
                                                 SlotWrite(WORKSPACE, tuple(ops[:1])))))
        clock.advance(rng.choice((0.0, 0.5, 3.0, 8.0, 70.0)))
        for lo, hi in rng.sample(windows, 3):
            hours = tuple(range(lo, hi + 1))
            kept = await store.read(ReadRequest("coding", share_hours=hours))
            sums, store._share_sums = store._share_sums, {}  # summed again, the kept ones aside
            fresh = await store.read(ReadRequest("coding", share_hours=hours))
            store._share_sums = sums
            assert (kept.share, kept.workspace_share) == (fresh.share, fresh.workspace_share)
    assert len(store._share_fields) <= 16  # the share fields spelled are few, and stay few


def _old_widest(h: dict[str, float], window_h: int) -> int:
    """The share hash's `w` update as `_window_incr` made it before its fast path."""
    held = h.get("w", 0)
    w = max(int(held), window_h)
    if held != w or type(held) is not float:
        h["w"] = float(w)
    return w


@settings(max_examples=300, deadline=None)
@given(held=st.one_of(st.none(), st.integers(0, 30), st.floats(0, 30, allow_nan=False)),
       windows=st.lists(st.integers(1, 30), min_size=1, max_size=6),
       hours=st.lists(st.integers(0, 40), min_size=6, max_size=6))
def test_the_share_hashs_widest_window_is_kept_as_before(
        held: float | None, windows: list[int], hours: list[int]) -> None:
    """`_window_incr`'s shortcut for a hash holding its own window as a float leaves the hash
    (its `w` and its pruned buckets) as the general update does, whatever `w` it held."""
    store = MemoryStore(clock=FakeClock())
    key = "orca:{w}:share"
    expected: dict[str, float] = {}
    if held is not None:
        store._data[key] = Entry({"w": held}, None)
        expected["w"] = held
    for window_h, hour in zip(windows, hours):
        op = WindowIncrOp(K.SHARE_KEY, hour, "t", 1, window_h, 60.0)
        store._window_incr(key, op, 0.0)
        field = K.share_field(hour, "t")
        expected[field] = expected.get(field, 0.0) + 1
        w = _old_widest(expected, window_h)
        if len(expected) > 2 * w + 1:
            for f in [f for f in expected
                      if (b := K.parse_share_field(f)) and b[0] <= hour - w]:
                del expected[f]
        got = store._data[key].value
        assert got == expected and list(got) == list(expected)
        assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


async def test_the_kept_tier_version_is_the_stored_texts() -> None:
    """The version a read reports and a commit counts from is `doc_version` of the text the
    tier key holds, whoever wrote it last: a mutate, a plain set, a delete."""
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    session = SlotRef.of_session("coding", "s1")
    read = ReadRequest("coding", "s1")
    writes = [SlotWrite(session, mutate=bump, tier_ttl_s=60),
              SlotWrite(session, (SetOp("tier", '{"v":41,"n":1}', 60),)),
              SlotWrite(session, mutate=bump, tier_ttl_s=60),
              SlotWrite(session, (SetOp("tier", '{"n":1,"v":7}', 60),)),
              SlotWrite(session, mutate=bump, tier_ttl_s=60),
              SlotWrite(session, (DelOp("tier"),)),
              SlotWrite(session, mutate=bump, tier_ttl_s=60)]
    for i, write in enumerate(writes):
        await store.commit(CommitBatch(f"r{i}", (write,)))
        snap = await store.read(read)
        text = store._text(K.session_tag("orca", "coding", "s1") + "tier", clock.now())
        assert snap.tier_version == doc_version(text)
        assert snap.tier_version == [1, 41, 42, 7, 8, 0, 1][i]


def _same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (and dicts in the same key order)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


async def test_a_kept_tier_document_is_what_decoding_its_text_gives() -> None:
    """A `TierMutate`'s document is kept for the next read only when it is plain JSON data,
    and then equals, type for type, what decoding the stored text gives: a new document, a
    recorded turn with strikes and signatures, an escalation, a pending ask and its
    consumption, shadow state. A non-finite float, or a mutate that does not say it is
    plain, leaves the text to be decoded."""
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    esc = EscalationConfig()
    session = SlotRef.of_session("coding", "s1")
    key = K.session_tag("orca", "coding", "s1") + "tier"
    steps: list[tuple[Intent, ...]] = [
        (RecordTurn("d1", True, True, ("sig-a",), request_strike=True),),
        (RecordTurn("d2", True, True, ("sig-b",), response_strikes=("refusal",)),
         Escalate("difficulty", 300.0)),
        (SetPending("base", "ops", "why", "p1"),),
        (RecordTurn("d3", False, False), ConsumePending("p1"), Deescalate()),
        (RecordTurn("d4", True, False, scope="shadow"), Escalate("explicit", 60.0, "x",
                                                                 "shadow")),
        (BaseConversation("fp1"), OnceBoost()),
    ]
    for i, intents in enumerate(steps):
        clock.advance(1.25)
        mutate = TierMutate(intents, clock.now(), esc)
        await store.commit(CommitBatch(f"r{i}", (SlotWrite(session, mutate=mutate,
                                                           tier_ttl_s=60),)))
        e = store._data[key]
        assert mutate.plain and e.doc is not UNDECODED and e.value is DOC_TEXT
        assert (await store.read(ReadRequest("coding", "s1"))).tier is e.doc
        assert e.value is DOC_TEXT  # a read of the document encodes no text
        assert _same(e.doc, decode_doc(entry_text(e))), i
        assert isinstance(e.value, str) and entry_text(e) is e.value  # encoded once, kept

    unfinite = TierMutate((RecordTurn("d5", True, False),), float("inf"), esc)
    await store.commit(CommitBatch("r-inf", (SlotWrite(session, mutate=unfinite,
                                                       tier_ttl_s=60),)))
    assert not unfinite.plain and store._data[key].doc is UNDECODED
    await store.commit(CommitBatch("r-bump", (SlotWrite(session, mutate=bump,
                                                        tier_ttl_s=60),)))
    assert store._data[key].doc is UNDECODED


async def test_a_tier_document_held_unencoded_reads_as_its_text_everywhere() -> None:
    """A plain tier document is written without its text (`DOC_TEXT`); every read of the key
    as text sees what the eager encoding wrote: the commit's result, a duplicate's result, a
    slide of its TTL, an operator's read and scan, and the WRONGTYPE check of a hash op."""
    clock = FakeClock()
    store, eager = MemoryStore(clock=clock), MemoryStore(clock=clock)
    esc = EscalationConfig()
    session = SlotRef.of_session("coding", "s1")

    def write(mutate: Any = None, ops: tuple[Op, ...] = ()) -> SlotWrite:
        return SlotWrite(session, ops, mutate, tier_ttl_s=60)

    intents = (RecordTurn("d1", True, True, ("sig-a",)), Escalate("difficulty", 300.0))
    lazy = TierMutate(intents, clock.now(), esc)
    first = await store.commit(CommitBatch("r1", (write(lazy),)))
    await eager.commit(CommitBatch("r1", (write(bump),)))  # not plain: encoded at once
    key = K.session_tag("orca", "coding", "s1") + "tier"
    assert store._data[key].value is DOC_TEXT
    text = entry_text(store._data[key])
    assert text is not None
    store._data[key].value = DOC_TEXT  # unencoded again, for the reads below
    eager._put(key, text, 60, clock.now())
    assert first.results[0].tier == decode_doc(text)
    for s in (store, eager):
        again = await s.commit(CommitBatch("r1", (write(lazy),)))
        assert again.results[0].status == "duplicate" and again.results[0].tier == decode_doc(text)
    store._data[key].value = DOC_TEXT
    clock.advance(10)
    slid = [await s.commit(CommitBatch("r2", (write(),))) for s in (store, eager)]
    assert slid[0].results[0].tier == slid[1].results[0].tier == decode_doc(text)
    assert store._data[key].expires_at == eager._data[key].expires_at == clock.now() + 60
    store._data[key].value = DOC_TEXT
    assert await store.get(session, "tier") == await eager.get(session, "tier")
    store._data[key].value = DOC_TEXT
    assert ([e for e in await store.scan("session") if e.key == "tier"]
            == [e for e in await eager.scan("session") if e.key == "tier"])
    store._data[key].value = DOC_TEXT
    with pytest.raises(StoreUnavailable):
        await store.commit(CommitBatch("r3", (write(ops=(HIncrManyOp("tier", (("a", 1),), 60),)),)))


def test_every_float_of_a_tier_state_is_asked_whether_it_is_finite() -> None:
    """`TierMutate` says its document is plain JSON data only when each float of the tier
    state is finite: an infinity or a NaN in any float field of `TierState`, of a `Strike`,
    of the `Pending` ask, or of the shadow state, makes it not plain."""
    now = 1_786_000_000.0
    strike = Strike(3, now, "refusal")
    pending = Pending("strong", "ops", "why", now, "p1")
    base = TierState(strikes=(strike,), pending=pending, episode_started=now,
                     last_success=now)
    assert _finite(base) and _finite(replace(base, shadow=base))
    for cls, value in ((TierState, base), (Strike, strike), (Pending, pending)):
        floats = [f.name for f in fields(cls) if f.type == "float"]
        assert floats
        for name in floats:
            for bad in (float("inf"), float("-inf"), float("nan")):
                changed: Any = replace(value, **{name: bad})
                st = (changed if cls is TierState else
                      replace(base, strikes=(changed,)) if cls is Strike else
                      replace(base, pending=changed))
                assert not _finite(st), (cls.__name__, name, bad)
                assert not _finite(replace(base, shadow=st)), (cls.__name__, name, bad)
