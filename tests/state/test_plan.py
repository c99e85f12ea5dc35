"""The commit plan: what a request writes, and that a failure writes only its trace."""

from __future__ import annotations

from orca_cli.config.schema import EscalationConfig
from orca_cli.routing.caps import CapsView, ShareView
from orca_cli.routing.escalation import TierDecision, TurnSignals, resolve_tier
from orca_cli.state import keys as K
from orca_cli.state.base import (
    ExpireAtLeastOp,
    ReadRequest,
    SetOp,
    SlotRef,
    Snapshot,
    Store,
    WindowIncrOp,
)
from orca_cli.state.plan import LONG_PIN_S, PlanContext, TurnOutcome, build_commit

ESC = EscalationConfig()
NOW = 3600 * 500 + 12.0


def _ctx(**kw: object) -> PlanContext:
    base = {"request_id": "r1", "router": "coding", "session": "s1", "explicit_session": True,
            "durable_store": True, "esc": ESC, "now": NOW}
    base.update(kw)
    return PlanContext(**base)  # type: ignore[arg-type]


NO_CAPS = CapsView(enabled=False)


def _decide(ask: str | None = None, caps: CapsView = NO_CAPS):  # type: ignore[no-untyped-def]
    return resolve_tier(None, TurnSignals("k", 0.2, True, ask=ask), caps, ESC,  # type: ignore[arg-type]
                        now=NOW, t2=0.55, strong_window_s=300)


OK = TurnOutcome(True, model="deepseek-chat", channel="sim-cheap", key_index=1, key_fp="abcd1234",
                 window_s=300)


def test_failed_request_writes_only_its_trace() -> None:
    batch = build_commit(_ctx(), _decide("strong"), Snapshot(), TurnOutcome(False),
                         trace={"request_id": "r1"})
    assert batch.writes == () and batch.audit == () and batch.trace == {"request_id": "r1"}


def test_denied_escalation_is_audited_even_when_the_request_fails() -> None:
    d = _decide("strong", CapsView(share=ShareView(10, 20)))
    batch = build_commit(_ctx(), d, Snapshot(), TurnOutcome(False))
    assert [a["event"] for a in batch.audit] == ["denied_cap"]
    assert batch.audit[0]["reason"] == "denied:share_cap"
    assert batch.audit[0]["actor"] == "client"  # the client's explicit ask was denied


def test_a_denial_of_the_engines_own_escalation_names_the_engine() -> None:
    """A difficulty- or strike-triggered escalation that a cap denies is the engine's, as the
    `escalated` event of the same trigger is."""
    from dataclasses import replace

    d = _decide("strong", CapsView(share=ShareView(10, 20)))
    for trigger in ("difficulty", "strikes"):
        engine = replace(d, trigger=trigger, evaluations={"A": {"actor": None}})
        batch = build_commit(_ctx(), engine, Snapshot(), OK)
        assert [(a["event"], a["actor"]) for a in batch.audit] == [("denied_cap", "engine")]


def test_a_request_the_client_must_fix_leaves_no_denial_audit() -> None:
    """A 4xx the client must fix (untranslatable, refused by the provider as sent) leaves no
    state at all: the strong ask it was denied is not audited, unlike an upstream failure."""
    d = _decide("strong", CapsView(share=ShareView(10, 20)))
    batch = build_commit(_ctx(), d, Snapshot(), TurnOutcome(False, client_error=True),
                         trace={"request_id": "r1"})
    assert batch.writes == () and batch.audit == () and batch.trace == {"request_id": "r1"}


def test_base_success_pins_model_30_days_for_explicit_sessions_on_redis() -> None:
    batch = build_commit(_ctx(), _decide(), Snapshot(), OK)
    session = batch.writes[0]
    pins = {op.key: op for op in session.ops if isinstance(op, SetOp)}
    assert pins["pin:base"].value == "deepseek-chat" and pins["pin:base"].ttl_s == LONG_PIN_S
    assert pins["chan:base"].ttl_s == 300 and '"key_fp":"abcd1234"' in pins["chan:base"].value
    derived = build_commit(_ctx(explicit_session=False), _decide(), Snapshot(), OK)
    assert {op.key: op.ttl_s for op in derived.writes[0].ops  # type: ignore[union-attr]
            if isinstance(op, SetOp)}["pin:base"] == 300
    assert session.mutate is not None
    doc = session.mutate(None)
    assert doc is not None and doc["turn"] == 1 and doc["tier"] == "base"


def test_strong_success_uses_the_window_only_and_extends_the_base_pin() -> None:
    batch = build_commit(_ctx(), _decide("strong"), Snapshot(), OK)
    ops = batch.writes[0].ops
    assert {op.key: op.ttl_s for op in ops if isinstance(op, SetOp)}["pin:strong"] == 300
    assert any(isinstance(op, ExpireAtLeastOp) and op.key == "pin:base" for op in ops)
    assert [a["event"] for a in batch.audit] == ["escalated"]
    router_ops = batch.writes[1].ops
    hour = int(NOW // 3600)
    window = ESC.share_window_h
    assert WindowIncrOp("share", hour, "s", 1, window, window * 3600 + 3600) in router_ops
    workspace = batch.writes[2]
    assert workspace.slot.kind == "workspace" and len(workspace.ops) == 2


def test_sessionless_request_gets_no_session_write() -> None:
    batch = build_commit(_ctx(session=None), None, Snapshot(), OK)
    assert [w.slot.kind for w in batch.writes] == ["router", "workspace"]


async def test_linucb_and_affinity_writes_read_back_under_unsafe_and_long_arm_names(
        store: Store) -> None:
    """The commit writes each free-form key part with the same escaping the read applies: an
    arm with braces or over 128 bytes reads back what the commit wrote."""
    arms = ("vendor/{weird}-model", "m" * 200, "plain")
    ctx = _ctx(session=None, linucb={a: [1.0, 0.0, 2.5] for a in arms},
               affinity=("p" * 300, {"model": "x"}, 60.0))
    await store.commit(build_commit(ctx, None, Snapshot(), OK))
    snap = await store.read(ReadRequest("coding", linucb_arms=arms, affinity_key="p" * 300))
    assert {a: list(v) for a, v in snap.linucb.items()} == {a: [1.0, 0.0, 2.5] for a in arms}
    assert snap.affinity is not None and snap.affinity["model"] == "x"


def _direct(**kw: object) -> PlanContext:
    """A concrete model's request: no router, the model's pin slots (SPEC §1.3)."""
    return _ctx(router=None, direct="deepseek-chat", **kw)


def test_a_concrete_models_session_writes_its_channel_pin_alone() -> None:
    """No tier document, model pin, figures or router counters; the workspace share as ever."""
    batch = build_commit(_direct(), TierDecision("base", "default", evaluated=False),
                         Snapshot(), OK)
    session, workspace = batch.writes
    assert session.slot == SlotRef.of_session(K.direct_router("deepseek-chat"), "s1")
    assert session.mutate is None and [op.key for op in session.ops] == ["chan:base"]
    op = session.ops[0]
    assert isinstance(op, SetOp) and op.ttl_s == 300
    assert '"channel":"sim-cheap","key_index":1,"key_fp":"abcd1234"' in op.value
    assert workspace.slot.kind == "workspace" and len(workspace.ops) == 1
    strong = build_commit(_direct(counts_strong_in_workspace=True),
                          TierDecision("strong", "default", evaluated=False), Snapshot(), OK)
    assert [op.key for op in strong.writes[0].ops] == ["chan:strong"]
    assert len(strong.writes[1].ops) == 2  # counted served strong in the workspace


def test_a_concrete_model_served_by_a_fallback_model_pins_nothing() -> None:
    """A route target's fallback model served (SPEC §17): the pin is the target model's."""
    other = TurnOutcome(True, model="gpt-4o", channel="oa", key_index=0, key_fp="ffff0000")
    batch = build_commit(_direct(), None, Snapshot(), other)
    assert [w.slot.kind for w in batch.writes] == ["workspace"]


async def test_a_concrete_models_pins_read_back_from_its_own_slots(store: Store) -> None:
    """Both backends: the session's channel pin per (model, session), and a sessionless
    prefix's affinity, under a model id that cannot sit in a hash tag as it is."""
    model = "vendor/{odd}:model"
    outcome = TurnOutcome(True, model=model, channel="c", key_index=2, key_fp="12345678")
    await store.commit(build_commit(_ctx(router=None, direct=model), None, Snapshot(), outcome))
    snap = await store.read(ReadRequest(K.direct_router(model), session="s1"))
    assert snap.tier is None and dict(snap.pins) == {}
    assert dict(snap.channel_pins["base"]) == {"channel": "c", "key_index": 2,
                                               "key_fp": "12345678"}
    other = await store.read(ReadRequest(K.direct_router("another"), session="s1"))
    assert dict(other.channel_pins) == {}
    pin = {"channel": "c", "key_index": 1, "key_fp": "87654321", "since": NOW}
    ctx = _ctx(request_id="r2", router=None, session=None, direct=model,
               affinity=("d:prefix", pin, 900.0))
    await store.commit(build_commit(ctx, None, Snapshot(), outcome))
    snap = await store.read(ReadRequest(K.direct_router(model), affinity_key="d:prefix"))
    assert snap.affinity is not None and dict(snap.affinity) == pin


def test_a_batch_with_its_trace_keeps_every_other_field() -> None:
    from dataclasses import fields, replace

    from orca_cli.state.base import CommitBatch, SetOp, SlotRef, SlotWrite

    batch = CommitBatch("req-1", (SlotWrite(SlotRef.of_session("r", "s"), (SetOp("k", "v", 60),)),),
                        ({"event": "escalated"},))
    assert batch.with_trace({"status": 200}) == replace(batch, trace={"status": 200})
    # A field added to CommitBatch must be carried by `with_trace` too.
    assert [f.name for f in fields(CommitBatch)] == ["request_id", "writes", "audit", "trace"]
