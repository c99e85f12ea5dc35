"""Operator service functions over both store backends (memory, and Redis on db 15)."""

from __future__ import annotations

import pytest

from orca_cli.admin import service as S
from orca_cli.config.schema import Config
from orca_cli.state.base import CommitBatch, IncrOp, ReadRequest, SlotRef, SlotWrite, Store
from tests.admin.conftest import ROUTER, drive
from tests.state.conftest import StoreEnv

SESSION_KEYS = {"session_id", "router", "tier", "reason", "escalation_count", "strikes",
                "clean_turns", "difficulty_streak", "pending", "pins", "channel_pins", "ttl_s"}


async def _tier_doc(store: Store, session: str) -> dict | None:  # type: ignore[type-arg]
    snap = await store.read(ReadRequest(router=ROUTER, session=session))
    return snap.tier


async def test_show_session_has_the_spec_keys_and_pins_with_ttls(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1")
    view = await S.show_session(store, cfg, None, "s1")
    assert SESSION_KEYS <= set(view)
    assert view["router"] == ROUTER and view["tier"] == "base" and view["reason"] == "default"
    assert view["pins"]["base"]["model"] == "deepseek-chat"
    assert 0 < view["pins"]["base"]["ttl_s"] <= 30 * 86400
    assert view["pins"]["strong"] is None
    assert view["channel_pins"]["base"] == {"channel": "sim-cheap", "key_index": 0,
                                            "key_fp": "abcd1234",
                                            "ttl_s": view["channel_pins"]["base"]["ttl_s"]}
    assert 0 < view["ttl_s"] <= cfg.routers[ROUTER].escalation.tier_ttl_s
    listed = await S.list_sessions(store, cfg)
    assert [v["session_id"] for v in listed] == ["s1"]


async def test_unknown_session_and_router_are_clear_errors(store: Store, cfg: Config) -> None:
    with pytest.raises(S.OperatorError) as err:
        await S.show_session(store, cfg, None, "never-seen")
    assert err.value.status == 404 and "no such session" in str(err.value)
    with pytest.raises(S.OperatorError) as err:
        await S.show_session(store, cfg, "nope", "s1")
    assert err.value.status == 404 and "coding" in str(err.value)


async def test_escalate_once_writes_a_pending_ask_the_next_turn_resolves(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1")
    before = await _tier_doc(store, "s1")
    res = await S.escalate(store, cfg, None, "s1", once=True, reason="stuck", actor="cli",
                           now=env.clock.now())
    assert res["status"] == "pending" and res["ask"] == "once"
    doc = await _tier_doc(store, "s1")
    assert doc is not None and before is not None
    assert doc["pending"]["ask"] == "once" and doc["pending"]["actor"] == "cli"
    assert doc["pending"]["reason"] == "stuck" and doc["v"] == before["v"] + 1
    view = await S.show_session(store, cfg, ROUTER, "s1")
    assert view["pending"]["ask"] == "once" and view["tier"] == "base"

    await env.advance(1)
    decision = await drive(store, cfg, "s1", now=env.clock.now(), rid="r2")
    assert (decision.tier, decision.reason) == ("strong", "once")
    after = await S.show_session(store, cfg, ROUTER, "s1")
    assert after["pending"] is None and after["escalation_count"] == 1
    assert after["tier"] == "base"  # a once-boost leaves the tier base


async def test_escalate_refuses_when_the_session_cap_is_used(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1", ask="once")
    with pytest.raises(S.OperatorError) as err:
        await S.escalate(store, cfg, ROUTER, "s1", now=env.clock.now())
    assert err.value.status == 409 and err.value.code == "session_cap"
    assert "max_per_session 1" in str(err.value)
    assert (await _tier_doc(store, "s1") or {}).get("pending") is None  # nothing written


async def test_escalate_an_already_strong_session_changes_nothing(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1", ask="strong")
    before = await _tier_doc(store, "s1")
    res = await S.escalate(store, cfg, ROUTER, "s1", now=env.clock.now())
    assert res["status"] == "already_strong" and "already" in res["message"]
    assert await _tier_doc(store, "s1") == before


async def test_reset_goes_back_to_base_at_the_next_turn_and_never_refunds(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1", ask="strong")
    res = await S.reset(store, cfg, None, "s1", actor="cli", now=env.clock.now())
    assert res["status"] == "pending" and res["ask"] == "base"
    assert (await S.show_session(store, cfg, ROUTER, "s1"))["tier"] == "strong"  # not yet
    await env.advance(1)
    decision = await drive(store, cfg, "s1", now=env.clock.now(), rid="r2")
    assert (decision.tier, decision.reason) == ("base", "reset")
    view = await S.show_session(store, cfg, ROUTER, "s1")
    assert view["tier"] == "base" and view["escalation_count"] == 1 and view["pending"] is None
    events = [e["event"] for e in await S.audit(store, ROUTER)]
    assert events == ["escalated", "reset"]
    assert (await S.audit(store, ROUTER))[-1]["actor"] == "cli"


async def test_most_recent_sessions_and_choosing_one(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "old", now=env.clock.now(), rid="r1")
    await env.advance(2)
    await drive(store, cfg, "new", now=env.clock.now(), rid="r2")
    now = env.clock.now()
    rows = await S.most_recent_sessions(store, cfg, now=now)
    assert [r["session_id"] for r in rows] == ["new", "old"]
    with pytest.raises(S.AmbiguousSession) as err:
        S.choose_recent(rows)
    assert [c["session_id"] for c in err.value.candidates] == ["new", "old"]
    assert S.choose_recent(rows, within_s=1)["session_id"] == "new"
    assert await S.most_recent_sessions(store, cfg, 1, now=now) == rows[:1]
    with pytest.raises(S.OperatorError):
        S.choose_recent([])


async def test_read_only_calls_write_nothing(store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1")
    commits = store.commits
    before = await store.scan("all")
    await S.list_sessions(store, cfg)
    await S.show_session(store, cfg, None, "s1")
    await S.most_recent_sessions(store, cfg, now=env.clock.now())
    await S.pins_dump(store, cfg)
    await S.audit(store)
    await S.stats(cfg, store, env.clock.now())
    await S.explain(store, "r1")
    assert store.commits == commits
    after = await store.scan("all")
    assert [(e.key, e.value) for e in after] == [(e.key, e.value) for e in before]


async def test_pins_dump_lists_model_and_channel_pins(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1")
    await drive(store, cfg, "s2", now=env.clock.now(), rid="r2", ask="strong")
    rows = await S.pins_dump(store, cfg)
    got = {(r["session"], r["kind"], r["tier"]): r["value"] for r in rows}
    assert got[("s1", "model", "base")] == "deepseek-chat"
    assert got[("s2", "model", "strong")] == "gpt-4.1"
    assert got[("s1", "channel", "base")]["key_fp"] == "abcd1234"
    assert all(set(r) >= {"kind", "router", "session", "tier", "value", "ttl_s"} for r in rows)
    only = await S.pins_dump(store, cfg, session="s1")
    assert {r["session"] for r in only} == {"s1"}


async def test_a_concrete_models_channel_pin_is_dumped_but_makes_no_session(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    """SPEC §1.3: a concrete model's pins sit under `_direct.<model>`; `pins dump` lists
    them, while the session commands (no router, no tier) see only the router's session."""
    from orca_cli.state import keys as K
    from orca_cli.state.base import SetOp

    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1")
    pin = '{"channel":"sim-cheap","key_index":2,"key_fp":"abcd1234"}'
    await store.commit(CommitBatch("r-direct", (SlotWrite(
        SlotRef.of_session(K.direct_router("gpt-4.1"), "s1"), (SetOp("chan:base", pin, 300),)),)))
    rows = await S.pins_dump(store, cfg)
    direct = [r for r in rows if r["router"] == "_direct.gpt-4.1"]
    assert [(r["session"], r["kind"], r["value"]["key_index"]) for r in direct] == [
        ("s1", "channel", 2)]
    assert await S.pins_dump(store, cfg, router="_direct.gpt-4.1") == direct  # by its slots
    assert [v["router"] for v in await S.list_sessions(store, cfg)] == [ROUTER]
    assert (await S.show_session(store, cfg, None, "s1"))["router"] == ROUTER


async def test_stats_counts_requests_strong_share_escalations_and_cost(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    now = env.clock.now()
    await drive(store, cfg, "s1", now=now, rid="r1", cached=50)
    await drive(store, cfg, "s2", now=now, rid="r2", ask="strong")
    await drive(store, cfg, "s2", now=now, rid="r3")
    doc = await S.stats(cfg, store, now)
    coding = doc["routers"][ROUTER]
    for key in ("requests", "strong_share", "escalations", "denials", "cache_hit_ratio",
                "cost_usd", "shadow_would_escalate"):
        assert key in coding
    assert coding["requests"] == 3 and coding["strong"] == 2
    assert coding["strong_share"] == pytest.approx(2 / 3, abs=1e-6)
    assert coding["escalations"] == 1 and coding["escalations_by_trigger"] == {"explicit": 1}
    assert coding["cache_hit_ratio"] == pytest.approx(50 / 300, abs=1e-6)
    assert coding["cost_usd"] == pytest.approx(0.003)
    assert doc["workspace"]["requests"] == 3
    assert doc["workspace"]["strong_share"] == pytest.approx(2 / 3, abs=1e-6)


async def test_stats_add_the_per_hour_share_keys_not_folded_yet(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    """Per-hour keys of the layout before the share window hash count until a read folds them."""
    now = env.clock.now()
    await drive(store, cfg, "s1", now=now, rid="r1")
    hour = int(now // 3600)
    legacy = (IncrOp(f"share:{hour - 1}:s", 3, 600), IncrOp(f"share:{hour - 1}:t", 4, 600),
              IncrOp(f"share:{hour - 30}:t", 50, 600))  # outside the 24 h window
    await store.commit(CommitBatch("old", (SlotWrite(SlotRef.of_router(ROUTER), legacy),
                                           SlotWrite(SlotRef("workspace"), legacy))))
    doc = await S.stats(cfg, store, now)
    assert doc["routers"][ROUTER]["share"]["strong"] == 3
    assert doc["routers"][ROUTER]["share"]["total"] == 5
    assert (doc["workspace"]["strong"], doc["workspace"]["requests"]) == (3, 5)


async def test_explain_by_orca_or_client_request_id(
        store: Store, env: StoreEnv, cfg: Config) -> None:
    await drive(store, cfg, "s1", now=env.clock.now(), rid="r1")
    assert (await S.explain(store, "r1"))["request_id"] == "r1"
    assert (await S.explain(store, "client-r1"))["request_id"] == "r1"
    with pytest.raises(S.OperatorError) as err:
        await S.explain(store, "missing", cfg)
    assert err.value.status == 404 and "X-Orca-Request-Id" in str(err.value)


def test_parse_since() -> None:
    assert S.parse_since("15m", 1000.0) == 100.0
    assert S.parse_since("90", 1000.0) == 910.0
    assert S.parse_since(None, 1.0) is None
    assert S.parse_since("1970-01-01T00:01:00", 0.0) == 60.0
    with pytest.raises(S.OperatorError):
        S.parse_since("yesterday", 0.0)
