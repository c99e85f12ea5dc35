"""The auto router's model classifier counts in its parent's budgets and always leaves its
trace (SPEC §16: a child request "billed and counted like any request"; §17: budgets count
billed spend at commit), over real sockets."""

from __future__ import annotations

from typing import Any

import orjson

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, fake_upstream, sidecar
from orca_cli.testing.sidecar import Sidecar
from tests.e2e.test_auto_classifier import classifier_config


def _config(up: FakeUpstream, timeout_ms: int) -> str:
    """The classifier tests' config, with an inbound key and budgets."""
    return classifier_config(up, timeout_ms) + """
[[inbound_keys]]
name = "team"
token = "tok-team"

[budgets]
day_usd = 1.0
session_usd = 1.0
"""


BODY = {"model": "orca/auto", "messages": [{"role": "user", "content": "fix the typo in x.py"}]}
HEADERS = {"content-type": "application/json", "authorization": "Bearer tok-team",
           "x-orca-session": "cls-budget-1"}


async def _traces(sc: Sidecar) -> list[dict[str, Any]]:
    return [e.value for e in await sc.store.scan("all")
            if e.slot.kind == "traces" and isinstance(e.value, dict)
            and "request_id" in e.value]


def _child_of(traces: dict[str, dict[str, Any]], parent_id: str) -> dict[str, Any]:
    children = [t for t in traces.values() if t.get("parent_request_id") == parent_id]
    assert len(children) == 1, sorted(traces)
    return children[0]


def _row(doc: dict[str, Any], budget: str, holder: str) -> dict[str, Any]:
    rows = [r for r in doc["budgets"] if r["budget"] == budget and r["holder"] == holder]
    assert len(rows) == 1, doc
    return rows[0]


async def test_the_classifier_child_is_counted_in_the_parents_budgets() -> None:
    answer = orjson.dumps({"workloads": ["code"], "complexity": 0.2, "confidence": 0.9})
    async with fake_upstream() as up:
        cfg = loads(_config(up, 5000), source="test", environ={})
        up.on("cls", Act(text=answer.decode()))
        async with sidecar(cfg) as sc:
            r = await sc.http.post("/v1/chat/completions", content=orjson.dumps(BODY),
                                   headers=HEADERS)
            assert r.status_code == 200, r.text
            parent_id = r.headers["x-orca-request-id"]
            await sc.settled(parent_id)
            await sc.idle()
            traces = {t["request_id"]: t for t in await _traces(sc)}
            doc = (await sc.admin("GET", "/budgets")).json()
    parent = traces[parent_id]
    child = _child_of(traces, parent_id)
    assert child["purpose"] == "auto_routing_classifier"
    assert child["cost_usd"] > 0 and parent["cost_usd"] > 0
    both = round(parent["cost_usd"] + child["cost_usd"], 6)
    day = _row(doc, "day_usd", "key team")
    assert (day["requests"], day["spent_usd"]) == (2, both)
    session = _row(doc, "session_usd", "session cls-budget-1")
    assert (session["requests"], session["spent_usd"]) == (2, both)
    assert session["keys"] == ["team"]
    assert child["route"]["key"] == "team"
    assert parent["auto"]["classifier_request_id"] == child["request_id"]


async def test_a_timed_out_classifier_leaves_its_trace_and_the_parent_names_it() -> None:
    async with fake_upstream() as up:
        cfg = loads(_config(up, 200), source="test", environ={})
        up.on("cls", Act(stall_before_s=3.0))
        async with sidecar(cfg) as sc:
            r = await sc.http.post("/v1/chat/completions", content=orjson.dumps(BODY),
                                   headers=HEADERS)
            assert r.status_code == 200, r.text
            parent_id = r.headers["x-orca-request-id"]
            await sc.settled(parent_id)
            traces = {t["request_id"]: t for t in await _traces(sc)}
    auto = traces[parent_id]["auto"]
    assert (auto["fallback_reason"], auto["classifier"]) == ("timeout", "local")
    child = _child_of(traces, parent_id)  # stored before the parent went on
    assert child["purpose"] == "auto_routing_classifier"
    assert child["status"] == 504
    assert child["error"].startswith("classifier_timeout: no answer within")
    assert [a["error"] for a in child["attempts"]] == ["classifier_timeout"]
    assert child["committed"] is False and child["cost_usd"] == 0
    assert auto["classifier_request_id"] == child["request_id"]
