"""Dynamic routes on live requests (SPEC §17): conditions, splits, budget nodes, deny, inbound
keys, traces — over real sockets, on the memory store and a real Redis."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from orca_cli.config.routes import hash_token
from tests.e2e.tier_kit import Launch, ok, tier_config

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
    assert (await stack.trace(reply))["route"]["bucket"] in ("ab=0", "ab=1")


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


async def _chat(stack: Any, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    from tests.e2e.tier_kit import Reply

    if stack.step_s:
        stack.clock.advance(stack.step_s)
    resp = await stack.http.post("/v1/chat/completions", json=body,
                                 headers={"authorization": "Bearer agent-key", **(headers or {})})
    await stack.sidecar.idle()
    return Reply(resp.status_code, resp.headers, resp.json())
