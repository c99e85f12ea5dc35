"""`settle_batch`: a tier change is audited and counted by the one commit that made it."""

from __future__ import annotations

from orca_cli.clock import FakeClock
from orca_cli.config.schema import EscalationConfig
from orca_cli.routing.escalation import TierDecision
from orca_cli.routing.intents import Deescalate, Escalate, RecordTurn
from orca_cli.state.base import ReadRequest, Snapshot
from orca_cli.state.memory import MemoryStore
from orca_cli.state.plan import SETTLE_SUFFIX, PlanContext, TurnOutcome, build_commit, settle_batch

ESC = EscalationConfig()
OK = TurnOutcome(True, model="m", channel="c", key_index=0, key_fp="abcd1234")


def _ctx(rid: str, now: float) -> PlanContext:
    return PlanContext(request_id=rid, router="r", session="s", explicit_session=True,
                       durable_store=False, esc=ESC, now=now)


def _escalate(rid: str) -> TierDecision:
    return TierDecision(tier="strong", reason="explicit", trigger="explicit", intents=(
        RecordTurn(rid, True, False), Escalate("explicit", 300.0, "client")),
        state_tier="strong")


async def test_racing_escalations_settle_one_event_and_one_count() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    stale = Snapshot()  # both resolved on the same base snapshot
    batches = [build_commit(_ctx(rid, clock.now()), _escalate(rid), stale, OK,
                            settle_transitions=True) for rid in ("a", "b")]
    assert all(not b.audit for b in batches)
    settled = []
    for ctx_id, batch in zip(("a", "b"), batches, strict=True):
        result = await store.commit(batch)
        settled.append(settle_batch(_ctx(ctx_id, clock.now()), batch, result))
    first, second = settled
    assert second is None
    assert first is not None and first.request_id == "a" + SETTLE_SUFFIX
    assert [(e["event"], e["request_id"], e["actor"]) for e in first.audit] == [
        ("escalated", "a", "client")]
    await store.commit(first)
    assert [e["event"] for e in await store.list_audit("r")] == ["escalated"]
    snap = await store.read(ReadRequest(router="r", session="s"))
    assert snap.tier is not None and snap.tier["count"] == 1


async def test_a_duplicate_commit_settles_nothing() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    batch = build_commit(_ctx("a", clock.now()), _escalate("a"), Snapshot(), OK,
                         settle_transitions=True)
    assert settle_batch(_ctx("a", clock.now()), batch, await store.commit(batch)) is not None
    assert settle_batch(_ctx("a", clock.now()), batch, await store.commit(batch)) is None
    assert settle_batch(_ctx("a", clock.now()), batch, None) is None


async def test_a_deescalation_settles_its_event() -> None:
    clock = FakeClock()
    store = MemoryStore(clock=clock)
    up = build_commit(_ctx("a", clock.now()), _escalate("a"), Snapshot(), OK)
    await store.commit(up)
    snap = await store.read(ReadRequest(router="r", session="s"))
    down = TierDecision(tier="base", reason="deescalated", intents=(
        RecordTurn("b", True, False), Deescalate()), state_tier="base")
    batch = build_commit(_ctx("b", clock.now()), down, snap, OK, settle_transitions=True)
    settled = settle_batch(_ctx("b", clock.now()), batch, await store.commit(batch))
    assert settled is not None and [e["event"] for e in settled.audit] == ["deescalated"]
    assert settled.writes == ()
