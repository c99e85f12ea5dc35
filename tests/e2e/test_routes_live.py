"""Dynamic routes on live requests (SPEC §17): conditions, splits, budget nodes, deny, inbound
keys, traces — over real sockets, on the memory store and a real Redis."""

from __future__ import annotations

import asyncio
import io
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
from rich.console import Console

from orca_cli.cli.explain import render_trace
from orca_cli.clock import FakeClock
from orca_cli.config.routes import hash_token
from orca_cli.config.schema import Config, StateConfig
from orca_cli.routing.routes.budget import counter_key
from orca_cli.state import keys as K
from orca_cli.state.base import CommitBatch, SetOp, SlotWrite, Store
from orca_cli.state.factory import open_store
from orca_cli.state.memory import MemoryStore
from orca_cli.state.route_versions import rollback
from tests.e2e.tier_kit import (
    REDIS_URL,
    Launch,
    Reply,
    TierStack,
    _sim_channel,
    ok,
    tier_config,
    tier_stack,
)
from tests.state.conftest import delete_prefix, require_redis

pytestmark = pytest.mark.usefixtures("backend")

HELLO = {"model": "orca/coding", "messages": [{"role": "user", "content": "hi there"}]}


def _node(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def _routes(*routes: dict[str, Any], **extra: Any) -> Any:
    return tier_config(extra={"routes": list(routes), **extra})


CONDITIONS = {
    "name": "conditions", "start": "team",
    "nodes": {
        "team": _node("condition", field="header:x-team", op="eq", value="infra",
                      on_true="frontier", on_false="plan"),
        "plan": _node("condition", field="metadata.x", op="in", value=["pro", "max"],
                      on_true="mid", on_false="router"),
        "frontier": _node("target", target="frontier"),
        "mid": _node("target", target="base-mid"),
        "router": _node("target", target="orca/coding"),
    },
}


async def test_conditions_on_a_header_and_on_metadata_pick_the_target(launch: Launch) -> None:
    stack = await launch(_routes(CONDITIONS))
    by_header = ok(await _chat(stack, HELLO, {"x-team": "infra"}))
    assert by_header.model == "frontier"
    by_meta = ok(await _chat(stack, {**HELLO, "metadata": {"x": "max"}}))
    assert by_meta.model == "base-mid"
    neither = ok(await _chat(stack, {**HELLO, "metadata": {"x": "free"}}))
    assert neither.model == "base-weak"  # the router's own choice for a short opener
    # The client's model name is what it gets back; the trace says which path was taken.
    assert by_header.body["model"] == "orca/coding"
    trace = await stack.trace(by_meta)
    assert trace["route"] == {"route": "conditions", "version": 0, "decision": "target",
                              "path": ["team", "plan", "mid"], "bucket": None, "key": None,
                              "target": "base-mid"}
    shown = _explained(trace)
    assert "route: conditions (config routes; no inbound key) · path team → plan → mid · " \
        "target base-mid" in shown


def _explained(trace: Any) -> str:
    """What `orca explain` prints for a trace."""
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render_trace(trace))
    return out.getvalue()


DENY = {
    "name": "gate", "start": "known",
    "nodes": {
        "known": _node("condition", field="key", op="exists", on_true="pass", on_false="no"),
        "pass": _node("target", target="orca/coding"),
        "no": _node("deny", status=401, message="present a team key"),
    },
}
KEYS = [{"name": "infra", "token": "infra-team-token"}, {"name": "ci", "token": "ci-token"}]


async def test_a_deny_node_answers_in_the_inbound_shape_and_a_team_key_passes(
        launch: Launch) -> None:
    stack = await launch(_routes(DENY, inbound_keys=KEYS))
    denied = await _chat(stack, HELLO, {"authorization": "Bearer not-a-team-token"})
    assert denied.status == 401
    assert denied.body["error"]["message"] == "present a team key"
    assert denied.body["error"]["code"] == "route_denied"
    trace = await stack.trace(denied)
    assert trace["route"]["path"] == ["known", "no"] and trace["route"]["key"] is None
    anthropic = await stack.http.post(
        "/v1/messages", json={"model": "orca/coding", "max_tokens": 10,
                              "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-api-key": "wrong", "anthropic-version": "2023-06-01"})
    assert anthropic.status_code == 401
    assert anthropic.json()["type"] == "error"
    assert anthropic.json()["error"]["message"] == "present a team key"
    passed = ok(await _chat(stack, HELLO, {"authorization": "Bearer ci-token"}))
    trace = await stack.trace(passed)
    assert trace["route"]["key"] == "ci" and trace["route"]["path"] == ["known", "pass"]
    assert "ci-token" not in str(trace) and hash_token("ci-token") not in str(trace)


SPLIT = {
    "name": "ab", "start": "ab",
    "nodes": {
        "ab": _node("split", branches=[{"percent": 50, "next": "new"},
                                       {"percent": 50, "next": "old"}]),
        "new": _node("target", target="base-mid"),
        "old": _node("target", target="base-weak"),
    },
}


async def test_a_50_50_split_keeps_each_session_on_one_branch(launch: Launch) -> None:
    stack = await launch(_routes(SPLIT))
    stack.step_s = 0
    per_session: dict[str, set[str | None]] = {}
    for i in range(60):
        for _turn in range(3):
            reply = ok(await _chat(stack, HELLO, {"x-orca-session": f"sess-{i}"}))
            per_session.setdefault(f"sess-{i}", set()).add(reply.model)
    assert all(len(models) == 1 for models in per_session.values())
    shares = Counter(next(iter(m)) for m in per_session.values())
    assert 18 <= shares["base-mid"] <= 42 and shares["base-mid"] + shares["base-weak"] == 60
    reply = ok(await _chat(stack, HELLO, {"x-orca-session": "sess-0"}))
    trace = await stack.trace(reply)
    assert trace["route"]["bucket"] in ("ab=0", "ab=1")
    assert f"split bucket: {trace['route']['bucket']}" in _explained(trace)


BUDGET_NODE = {
    "name": "ci", "keys": ["ci"], "start": "spend",
    "nodes": {
        "spend": _node("budget", scope="key", window="day", requests=3, within="ok",
                       exceeded="cheap"),
        "ok": _node("target", target="base-mid"),
        "cheap": _node("target", target="base-weak"),
    },
}


async def test_a_budget_node_switches_branch_once_its_key_spent_its_requests(
        launch: Launch) -> None:
    stack = await launch(_routes(BUDGET_NODE, inbound_keys=KEYS))
    ci = {"authorization": "Bearer ci-token"}
    models = [ok(await _chat(stack, HELLO, ci)).model for _ in range(5)]
    assert models == ["base-mid"] * 3 + ["base-weak"] * 2
    infra = ok(await _chat(stack, HELLO, {"authorization": "Bearer infra-team-token"}))
    assert "route" in await stack.trace(infra)
    assert (await stack.trace(infra))["route"]["route"] is None  # no route matched


async def _chat(stack: TierStack, body: dict[str, Any],
                headers: dict[str, str] | None = None) -> Reply:
    if stack.step_s:
        stack.clock.advance(stack.step_s)
    resp = await stack.http.post("/v1/chat/completions", json=body,
                                 headers={"authorization": "Bearer agent-key", **(headers or {})})
    await stack.sidecar.idle()
    return Reply(resp.status_code, resp.headers, resp.json())


async def test_a_routes_file_deployed_on_one_sidecar_is_live_on_another_within_2_s(
        backend: str) -> None:
    """Two sidecars on one Redis store: a deploy and a rollback made through the first are
    applied by the second without a restart (memory: the one process's own versions)."""
    cfg = tier_config()
    async with _stacks(backend, cfg, 2 if backend == "redis" else 1) as stacks:
        first, second = stacks[0], stacks[-1]
        assert ok(await _chat(second, HELLO)).model == "base-weak"
        versions = first.store.route_versions()  # type: ignore[attr-defined]
        v1 = await versions.deploy(DEPLOYED.format(model="base-mid"), now=0.0)
        await _until(second, "base-mid")
        trace = await second.trace(ok(await _chat(second, HELLO)))
        assert trace["route"]["version"] == v1.version and trace["route"]["route"] == "pin"
        await versions.deploy(DEPLOYED.format(model="frontier"), now=0.0)
        await _until(second, "frontier")
        await rollback(versions)
        await _until(second, "base-mid")


DEPLOYED = """
[[routes]]
name = "pin"
[routes.nodes.only]
type = "target"
target = "{model}"
"""


async def _until(stack: TierStack, model: str, within_s: float = 2.0) -> None:
    deadline = time.monotonic() + within_s
    while True:
        got = ok(await _chat(stack, HELLO)).model
        if got == model:
            return
        assert time.monotonic() < deadline, f"still {got}, not {model}, after {within_s} s"
        await asyncio.sleep(0.05)


@asynccontextmanager
async def _stacks(backend: str, cfg: Config, n: int) -> AsyncIterator[list[TierStack]]:
    """`n` sidecars sharing one store: a Redis key prefix, or (memory) one process's store."""
    prefix = f"orca-routes-{uuid.uuid4().hex[:10]}"
    if backend == "redis":
        require_redis()
    async with AsyncExitStack() as stack:
        out = []
        for _ in range(n):
            clock = FakeClock()
            store: Store = (MemoryStore(clock=clock) if backend == "memory" else open_store(
                StateConfig(backend="redis", redis_url=REDIS_URL, key_prefix=prefix,
                            timeout_ms=2000), clock=clock))
            stack.push_async_callback(store.close)
            out.append(await stack.enter_async_context(tier_stack(cfg, store, clock)))
        try:
            yield out
        finally:
            if backend == "redis":
                delete_prefix(REDIS_URL, prefix)


async def _raise_limit(stack: TierStack, name: str, usd: float) -> None:
    """What `orca budget raise` stores (a limit in the `{budgets}` slot), through the store."""
    await stack.store.commit(CommitBatch(f"raise-{name}-{usd}", (SlotWrite(
        K.BUDGETS, (SetOp(K.budget_limit_key(name), repr(usd), 3600),)),)))


async def test_a_session_budget_denies_strong_at_80_percent_and_refuses_at_100(
        launch: Launch) -> None:
    stack = await launch(tier_config(extra={"budgets": {"session_usd": 100.0}}))
    session = {"x-orca-session": "budgeted"}
    first = ok(await _chat(stack, HELLO, session))
    cost = (await stack.trace(first))["cost_usd"]
    assert cost > 0
    await _raise_limit(stack, "session_usd:-", cost / 0.9)  # spent: 90 % of the limit
    asked = ok(await _chat(stack, HELLO, {**session, "x-orcarouter-tier": "strong"}))
    assert (asked.tier, asked.reason) == ("base", "denied:budget")
    audit = await stack.audit("denied_cap")
    assert [(e["reason"], e["request_id"]) for e in audit] == [
        ("denied:budget", asked.request_id)]
    trace = await stack.trace(asked)
    assert trace["route"]["budget"]["verdict"] == "deny_strong"
    assert "budget session_usd: deny_strong · spent $" in _explained(trace)
    refused = await _chat(stack, HELLO, session)
    assert refused.status == 429 and refused.headers["x-should-retry"] == "false"
    message = refused.body["error"]["message"]
    assert 'budget session_usd for session "budgeted" is spent' in message
    assert "`orca budget raise session_usd <usd>`" in message
    assert refused.body["error"]["code"] == "budget_exceeded"
    assert (await stack.trace(refused))["route"]["budget"]["verdict"] == "refuse"
    other = ok(await _chat(stack, HELLO, {"x-orca-session": "another"}))
    assert other.tier == "base"


async def test_a_key_day_budget_refuses_in_the_anthropic_shape_naming_the_key(
        launch: Launch) -> None:
    stack = await launch(tier_config(extra={"budgets": {"day_usd": 100.0},
                                            "inbound_keys": KEYS}))
    ci = {"authorization": "Bearer ci-token"}
    first = ok(await _chat(stack, HELLO, ci))
    await _raise_limit(stack, "day_usd:ci", (await stack.trace(first))["cost_usd"])
    body = {"model": "orca/coding", "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}]}
    resp = await stack.http.post("/v1/messages", json=body,
                                 headers={"x-api-key": "ci-token",
                                          "anthropic-version": "2023-06-01"})
    assert resp.status_code == 429 and resp.headers["x-should-retry"] == "false"
    error = resp.json()["error"]
    assert resp.json()["type"] == "error" and error["type"] == "rate_limit_error"
    assert 'budget day_usd for inbound key "ci" is spent' in error["message"]
    assert "`orca budget raise day_usd <usd> --key ci`" in error["message"]
    ok(await _chat(stack, HELLO, {"authorization": "Bearer infra-team-token"}))


async def test_64_concurrent_requests_near_a_budget_count_every_cost_once(
        launch: Launch) -> None:
    """Overshoot at most the requests in flight; the counter is the sum of what was billed."""
    stack = await launch(tier_config(extra={"budgets": {"day_usd": 100.0},
                                            "inbound_keys": KEYS}))
    stack.step_s = 0
    ci = {"authorization": "Bearer ci-token"}
    first = ok(await _chat(stack, HELLO, ci))
    cost = (await stack.trace(first))["cost_usd"]
    await _raise_limit(stack, "day_usd:ci", cost * 10.5)

    async def one(i: int) -> Any:
        body = {**HELLO, "messages": [{"role": "user", "content": f"hello number {i}"}]}
        resp = await stack.http.post("/v1/chat/completions", json=body, headers=ci)
        return resp

    replies = await asyncio.gather(*(one(i) for i in range(64)))
    await stack.sidecar.idle()
    served = [r for r in replies if r.status_code == 200]
    refused = [r for r in replies if r.status_code == 429]
    assert len(served) + len(refused) == 64 and len(served) >= 10
    billed = cost + sum([(await stack.trace(r.headers["x-orca-request-id"]))["cost_usd"]
                         for r in served])
    counter = counter_key("key", "ci", "day", stack.clock.now())
    got = (await stack.store.read_counters((counter,)))[counter]  # type: ignore[attr-defined]
    assert got.requests == len(served) + 1
    assert abs(got.usd - billed) < 1e-9
    after = await _chat(stack, HELLO, ci)
    assert after.status == 429


async def test_with_an_inbound_token_a_team_key_is_admitted_too(launch: Launch) -> None:
    stack = await launch(tier_config(extra={"server": {"inbound_token": "the-shared-token"},
                                            "inbound_keys": KEYS}))
    team = ok(await _chat(stack, HELLO, {"authorization": "Bearer ci-token"}))
    assert (await stack.trace(team))["route"]["key"] == "ci"
    shared = ok(await _chat(stack, HELLO, {"authorization": "Bearer the-shared-token"}))
    assert (await stack.trace(shared))["route"]["key"] is None
    wrong = await _chat(stack, HELLO, {"authorization": "Bearer neither"})
    assert wrong.status == 401 and wrong.body["error"]["code"] == "invalid_api_key"


def _target_route(**target: Any) -> dict[str, Any]:
    return {"name": "t", "nodes": {"only": _node("target", **target)}}


async def test_a_target_s_fallbacks_and_channel_policy_apply(launch: Launch) -> None:
    both = [_sim_channel("sim-base", ["base-weak", "base-mid"]),  # base-mid on both channels
            _sim_channel("sim-strong", ["frontier", "base-mid"])]
    stack = await launch(tier_config(extra={"channels": both, "routes": [_target_route(
        target="frontier", fallbacks=["base-mid"])]}))
    stack.set_faults("sim-strong", status=503, rate=1.0)
    fell_back = ok(await _chat(stack, HELLO))
    assert (fell_back.model, fell_back.headers["x-orca-channel"]) == ("base-mid", "sim-base")
    for preferred in ("sim-base", "sim-strong"):
        stack = await launch(tier_config(extra={"channels": both, "routes": [_target_route(
            target="base-mid", prefer=[preferred])]}))
        for i in range(6):
            body = {**HELLO, "messages": [{"role": "user", "content": f"question {i}"}]}
            assert ok(await _chat(stack, body)).headers["x-orca-channel"] == preferred
    stack = await launch(tier_config(extra={"routes": [_target_route(
        target="base-mid", only=["sim-strong"])]}))
    refused = await _chat(stack, HELLO)
    assert refused.status == 503 and "sim-strong" in refused.body["error"]["message"]


async def test_budgets_ride_on_the_one_read_and_the_one_commit(launch: Launch,
                                                             backend: str) -> None:
    """[budgets] and inbound keys add no store call: one read and one commit a request (each
    one round trip on Redis); only a route with budget nodes reads its counters before."""
    stack = await launch(tier_config(extra={"budgets": {"day_usd": 100.0, "session_usd": 50.0},
                                            "inbound_keys": KEYS}))
    store: Any = stack.store
    ci = {"authorization": "Bearer ci-token", "x-orca-session": "counted"}
    ok(await _chat(stack, HELLO, ci))  # connects and loads the scripts
    before = (store.reads, store.commits, getattr(store, "round_trips", 0))
    ok(await _chat(stack, HELLO, ci))
    after = (store.reads, store.commits, getattr(store, "round_trips", 0))
    assert (after[0] - before[0], after[1] - before[1]) == (1, 1)
    if backend == "redis":
        assert after[2] - before[2] == 2
