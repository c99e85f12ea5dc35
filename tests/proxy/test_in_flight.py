"""A session's transitions decided and not yet committed (`proxy.in_flight`, SPEC §6.4): what
the next decision of the session counts beside the count it read."""

from __future__ import annotations

from orca_cli.proxy.in_flight import FLOOR_TTL_S, InFlightTransitions
from orca_cli.routing.caps import NO_IN_FLIGHT, SessionInFlight
from orca_cli.routing.escalation import TierDecision
from orca_cli.routing.intents import Escalate, OnceBoost, RecordTurn
from orca_cli.routing.route import RoutePlan
from orca_cli.state.base import CommitResult, SlotRef, SlotResult

KEY = ("coding", "s1")


def _plan(*intents: object, tier: str = "strong") -> RoutePlan:
    return RoutePlan(None, TierDecision(tier=tier, reason="x", intents=intents),  # type: ignore[arg-type]
                     (), ())


def _committed(count: int) -> CommitResult:
    slot = SlotResult(SlotRef.of_session("coding", "s1"), "applied",
                      f'{{"tier":"base","count":{count},"v":3}}')
    return CommitResult((SlotResult(SlotRef.of_router("coding"), "applied"), slot), 1)


def test_the_session_count_adds_onces_and_one_escalation_in_flight() -> None:
    seen = SessionInFlight(onces=2, escalating=True, count_floor=1)
    assert seen.transitions == 3
    assert seen.session_count(0, escalate=False) == 1 + 2 + 1
    assert seen.session_count(0, escalate=True) == 1 + 2  # joins the escalation in flight
    assert seen.session_count(4, escalate=False) == 4 + 2 + 1  # a newer read wins


def test_only_a_new_transition_served_strong_is_reserved() -> None:
    t = InFlightTransitions()
    assert t.reserve(KEY, _plan(RecordTurn("k", 0.1, True, ()))) is None
    assert t.reserve(KEY, _plan(OnceBoost(), tier="base")) is None  # denied: served base
    assert t.reserve(KEY, _plan(Escalate("explicit", 300.0, scope="shadow"))) is None
    assert len(t) == 0
    r = t.reserve(KEY, _plan(OnceBoost()))
    assert r is not None and t.view(KEY, None, 0.0) == SessionInFlight(1, False, 0)
    e = t.reserve(KEY, _plan(Escalate("explicit", 300.0)))
    assert e is not None and t.view(KEY, None, 0.0) == SessionInFlight(1, True, 0)


def test_a_commit_count_covers_reads_older_than_it_until_the_store_shows_it() -> None:
    t = InFlightTransitions()
    r = t.reserve(KEY, _plan(OnceBoost()))
    assert r is not None
    t.release(r, _committed(1), now=10.0)
    # A read answered before that commit landed (count 0) still counts it ...
    assert t.view(KEY, {"count": 0}, 10.1) == SessionInFlight(0, False, 1)
    # ... until a read shows it: the entry goes.
    assert t.view(KEY, {"count": 1}, 10.2) is NO_IN_FLIGHT and len(t) == 0


def test_a_commit_count_stops_counting_after_its_ttl() -> None:
    # A tier document that expires takes its count with it: the floor must not outlive it.
    t = InFlightTransitions()
    r = t.reserve(KEY, _plan(OnceBoost()))
    assert r is not None
    t.release(r, _committed(1), now=10.0)
    assert t.view(KEY, None, 10.0 + FLOOR_TTL_S) is NO_IN_FLIGHT and len(t) == 0


def test_a_transition_that_wrote_nothing_leaves_nothing() -> None:
    t = InFlightTransitions()
    a = t.reserve(KEY, _plan(OnceBoost()))
    b = t.reserve(KEY, _plan(Escalate("difficulty", 300.0)))
    assert a is not None and b is not None
    t.release(a, None, now=1.0)  # failed upstream
    assert t.view(KEY, None, 1.0) == SessionInFlight(0, True, 0)
    t.release(b, None, now=1.0)
    assert len(t) == 0 and t.view(KEY, None, 1.0) is NO_IN_FLIGHT


def test_the_table_is_bounded_oldest_session_first() -> None:
    t = InFlightTransitions(max_sessions=2)
    held = [t.reserve(("coding", f"s{i}"), _plan(OnceBoost())) for i in range(3)]
    assert len(t) == 2 and t.view(("coding", "s0"), None, 0.0) is NO_IN_FLIGHT
    assert held[0] is not None
    t.release(held[0], _committed(1), now=0.0)  # pushed out: its release is a no-op
    assert len(t) == 2


# --- first picks (SPEC §5, §16): concurrent first turns of a new session ----------------------

def _picked(model: str = "mini", channel: str = "c1", key: int = 1) -> RoutePlan:
    from orca_cli.routing.route_types import Attempt

    return RoutePlan(None, TierDecision(tier="base", reason="default", intents=()),
                     (), (Attempt(model, channel, key, "ranked"),))


def test_a_first_pick_is_followed_while_in_flight_and_a_grace_after() -> None:
    from orca_cli.proxy.in_flight import PICK_GRACE_S
    from orca_cli.routing.snapshot import Snapshot

    t = InFlightTransitions()
    fps = {"c1": {1: "fp1"}}
    assert t.follow(KEY, Snapshot(), 0.0) is None  # nothing picked: nothing to follow
    pick = t.pick(KEY, _picked(), Snapshot(), fps)
    assert pick is not None
    seen = t.follow(KEY, Snapshot(), 1.0)
    assert seen is not None and seen.pins == {"base": "mini"}
    assert seen.channel_pins == {"base": {"channel": "c1", "key_index": 1, "key_fp": "fp1"}}
    assert t.follow(("coding", "other"), Snapshot(), 1.0) is None  # another session
    # a snapshot that already has the tier's pin (the store caught up) is left as it is
    assert t.follow(KEY, Snapshot(pins={"base": "nano"}), 1.0) is None
    t.end_pick(pick, now=2.0)
    assert t.follow(KEY, Snapshot(), 2.0 + PICK_GRACE_S - 0.1) is not None
    assert t.follow(KEY, Snapshot(), 2.0 + PICK_GRACE_S) is None


def test_a_pinned_session_or_a_refused_plan_makes_no_pick() -> None:
    from dataclasses import replace

    from orca_cli.routing.snapshot import Snapshot

    t = InFlightTransitions()
    assert t.pick(KEY, _picked(), Snapshot(pins={"base": "mini"}), {}) is None
    assert t.pick(KEY, replace(_picked(), refusal=(503, "no_candidate", "x")), Snapshot(),
                  {}) is None
    assert t.follow(KEY, Snapshot(), 0.0) is None


def test_the_pick_stands_until_the_last_request_that_made_it_ends() -> None:
    from orca_cli.proxy.in_flight import PICK_GRACE_S
    from orca_cli.routing.snapshot import Snapshot

    t = InFlightTransitions()
    a = t.pick(KEY, _picked(), Snapshot(), {})
    b = t.pick(KEY, _picked("nano"), Snapshot(), {})  # a second pick joins the first
    assert a is not None and b is not None
    t.end_pick(a, now=1.0)
    late = t.follow(KEY, Snapshot(), 1.0 + 10 * PICK_GRACE_S)
    assert late is not None and late.pins == {"base": "mini"}  # b is still in flight
    t.end_pick(b, now=100.0)
    assert t.follow(KEY, Snapshot(), 100.0 + PICK_GRACE_S) is None


def test_a_dropped_pin_is_picked_again_once_and_its_readers_follow_the_new_pick() -> None:
    """A transcript grown past the pinned model's window: the request drops the pin and picks
    again; a concurrent request that still reads the old pin follows that pick rather than
    dropping it and drawing a key of its own. A read of another pin (the store caught up
    with the new one) is left alone, and the session's earlier first pick is no pick to
    join."""
    from dataclasses import replace

    from orca_cli.routing.route_types import PinRead
    from orca_cli.routing.snapshot import Snapshot

    t = InFlightTransitions()
    fps = {"c1": {1: "fp1"}, "c2": {0: "fp0"}}
    first = t.pick(KEY, _picked("nano", "c2", 0), Snapshot(), fps)  # the session's first
    assert first is not None
    t.end_pick(first, now=0.0)  # ended, still in its grace
    old = Snapshot(pins={"base": "nano"},
                   channel_pins={"base": {"channel": "c2", "key_index": 0, "key_fp": "fp0"}})
    dropped = replace(_picked("mini", "c1", 1), pins=(
        PinRead("model", "base", "nano", "dropped", "context_window"),
        PinRead("channel", "base", {"channel": "c2", "key_index": 0}, "dropped", "not_served")))
    again = t.pick(KEY, dropped, old, fps)
    assert again is not None
    seen = t.follow(KEY, old, 1.0)
    assert seen is not None and seen.pins == {"base": "mini"}
    assert seen.channel_pins["base"] == {"channel": "c1", "key_index": 1, "key_fp": "fp1"}
    assert t.pick(KEY, dropped, old, fps) == again  # a second re-pick of that pin joins it
    new = Snapshot(pins={"base": "mini"},
                   channel_pins={"base": {"channel": "c1", "key_index": 1, "key_fp": "fp1"}})
    assert t.follow(KEY, new, 1.0) is None
    assert t.pick(KEY, _picked("mini", "c1", 1), new, fps) is None  # a pin kept: no pick


def test_a_request_served_on_the_replaced_pin_is_told_not_to_write_it_back() -> None:
    """A request that read the old pin before the re-pick, and finished after it, served on
    that pin: its commit must not write it back over the new one (the last commit wins)."""
    from dataclasses import replace

    from orca_cli.routing.route_types import PinRead
    from orca_cli.routing.snapshot import Snapshot

    t = InFlightTransitions()
    old = Snapshot(pins={"base": "nano"},
                   channel_pins={"base": {"channel": "c2", "key_index": 0, "key_fp": "fp0"}})
    assert not t.superseded(KEY, "base", "nano", "c2", 0)  # nothing picked
    dropped = replace(_picked("mini", "c1", 1), pins=(
        PinRead("model", "base", "nano", "dropped", "context_window"),))
    assert t.pick(KEY, dropped, old, {}) is not None
    assert t.superseded(KEY, "base", "nano", "c2", 0)
    assert not t.superseded(KEY, "base", "mini", "c1", 1)  # the new pick's own
    assert not t.superseded(KEY, "strong", "nano", "c2", 0)


def test_a_superseded_pin_is_left_out_of_the_commit_and_the_figures_stay() -> None:
    from orca_cli.state import keys as K
    from orca_cli.state.base import CommitBatch, HIncrManyOp, SetOp, SlotRef, SlotWrite
    from orca_cli.turn.settle import _without_pin_writes

    slot = SlotRef.of_session("coding", "s1")
    ops = (SetOp(K.pin_key("base"), "nano", 300), SetOp(K.chan_key("base"), "{}", 300),
           HIncrManyOp("figures", (("requests", 1),), 600), SetOp(K.pin_key("strong"), "x", 1))
    batch = _without_pin_writes(CommitBatch("r1", (SlotWrite(slot, ops),)), "base")
    assert [op.key for op in batch.writes[0].ops] == ["figures", K.pin_key("strong")]
