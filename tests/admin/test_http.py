"""The admin API against a real sidecar (uvicorn + OrcaApp + sim channels), both backends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from orca_cli.testing import Sidecar

MSGS = [{"role": "user", "content": "rename the variable x to count in utils.py"}]


@pytest.fixture
async def http(admin_sidecar: Sidecar) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=admin_sidecar.base, timeout=10) as client:
        yield client


async def _turn(http: httpx.AsyncClient, session: str, n: int = 1,
                **headers: str) -> httpx.Response:
    msgs: list[dict[str, Any]] = list(MSGS)
    for i in range(1, n):
        msgs += [{"role": "assistant", "content": f"done {i}"},
                 {"role": "user", "content": f"now step {i}"}]
    r = await http.post("/v1/chat/completions", json={"model": "orca/coding", "messages": msgs},
                        headers={"x-orca-session": session, **headers})
    assert r.status_code == 200, r.text
    return r


async def test_a_missing_or_wrong_token_is_refused(admin_sidecar: Sidecar,
                                                   http: httpx.AsyncClient) -> None:
    assert (await http.get("/orca/v1/sessions")).status_code == 401
    r = await http.get("/orca/v1/sessions", headers={"authorization": "Bearer zz-not-the-token-9"})
    assert r.status_code == 401 and "admin token" in r.json()["error"]["message"]
    assert "zz-not-the-token-9" not in r.text


async def test_sessions_list_and_show(admin_sidecar: Sidecar,
                                      http: httpx.AsyncClient) -> None:
    await _turn(http, "s-1")
    listed = (await http.get("/orca/v1/sessions", headers=admin_sidecar.auth)).json()
    assert [s["session_id"] for s in listed] == ["s-1"]
    r = await http.get("/orca/v1/sessions/coding/s-1", headers=admin_sidecar.auth)
    doc = r.json()
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert doc["tier"] == "base" and doc["pins"]["base"]["model"]
    assert doc["channel_pins"]["base"]["channel"].startswith("sim-")
    assert len(doc["channel_pins"]["base"]["key_fp"]) == 8
    recent = (await http.get("/orca/v1/sessions/recent?within_s=300",
                             headers=admin_sidecar.auth)).json()
    assert [(row["router"], row["session_id"]) for row in recent] == [("coding", "s-1")]


async def test_escalate_once_serves_the_next_request_strong_then_the_cap_refuses(
        admin_sidecar: Sidecar, http: httpx.AsyncClient) -> None:
    await _turn(http, "s-once")
    r = await http.post("/orca/v1/sessions/coding/s-once/escalate",
                        json={"once": True, "reason": "stuck on a failing test"},
                        headers=admin_sidecar.auth)
    assert r.status_code == 200 and r.json()["status"] == "pending"
    served = await _turn(http, "s-once", 2)
    assert served.headers["x-orca-session-tier"] == "strong; reason=once"
    assert served.headers["x-orca-model"] in admin_sidecar.rt.cfg.routers["coding"].escalation_pool
    rid = served.headers["x-orca-request-id"]
    trace = (await http.get(f"/orca/v1/explain/{rid}", headers=admin_sidecar.auth)).json()
    assert trace["tier"]["decision"] == "strong" and trace["tier"]["reason"] == "once"
    assert trace["tier"]["evaluations"]["A"]["actor"] == "admin-api"
    assert trace["committed"] is True
    after = await _turn(http, "s-once", 3)
    assert after.headers["x-orca-session-tier"] == "base; reason=default"
    again = await http.post("/orca/v1/sessions/coding/s-once/escalate", json={},
                            headers=admin_sidecar.auth)
    assert again.status_code == 409 and again.json()["error"]["code"] == "session_cap"
    events = (await http.get("/orca/v1/audit?router=coding", headers=admin_sidecar.auth)).json()
    assert [e["event"] for e in events] == ["once"]
    assert set(events[0]) >= {"ts", "router", "session", "request_id", "event", "trigger",
                              "reason", "actor"}


async def test_reset_takes_a_strong_session_back_to_base(
        admin_sidecar: Sidecar, http: httpx.AsyncClient) -> None:
    first = await _turn(http, "s-strong", 1, **{"x-orcarouter-tier": "strong"})
    assert first.headers["x-orca-session-tier"] == "strong; reason=explicit"
    same = await http.post("/orca/v1/sessions/coding/s-strong/escalate", json={},
                           headers=admin_sidecar.auth)
    assert same.status_code == 200 and same.json()["status"] == "already_strong"
    r = await http.post("/orca/v1/sessions/coding/s-strong/reset", json={"reason": "done"},
                        headers=admin_sidecar.auth)
    assert r.status_code == 200 and r.json()["ask"] == "base"
    nxt = await _turn(http, "s-strong", 2)
    assert nxt.headers["x-orca-session-tier"] == "base; reason=reset"
    doc = (await http.get("/orca/v1/sessions/coding/s-strong", headers=admin_sidecar.auth)).json()
    assert doc["tier"] == "base" and doc["escalation_count"] == 1


async def test_explain_by_client_request_id_and_unknown_ids(
        admin_sidecar: Sidecar, http: httpx.AsyncClient) -> None:
    await _turn(http, "s-x", 1, **{"x-request-id": "client-abc-1"})
    doc = (await http.get("/orca/v1/explain/client-abc-1", headers=admin_sidecar.auth)).json()
    assert doc["client_request_id"] == "client-abc-1" and doc["request_id"].startswith("req_")
    for key in ("session_id", "router", "inbound_api", "tier", "difficulty", "caps", "pins",
                "candidates", "selected", "attempts", "usage", "cost_usd", "intents",
                "committed", "degraded", "algorithm_version"):
        assert key in doc
    missing = await http.get("/orca/v1/explain/req_nope", headers=admin_sidecar.auth)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "no_such_request"


async def test_errors_are_json_with_the_right_status(
        admin_sidecar: Sidecar, http: httpx.AsyncClient) -> None:
    auth = admin_sidecar.auth
    r = await http.get("/orca/v1/sessions/coding/never", headers=auth)
    assert r.status_code == 404 and "no such session" in r.json()["error"]["message"]
    r = await http.get("/orca/v1/sessions/nope/s", headers=auth)
    assert r.status_code == 404 and "coding" in r.json()["error"]["message"]
    assert (await http.get("/orca/v1/nothing", headers=auth)).status_code == 404
    assert (await http.post("/orca/v1/stats", json={}, headers=auth)).status_code == 405
    await _turn(http, "s-e")
    bad = await http.post("/orca/v1/sessions/coding/s-e/escalate", content=b"{nope",
                          headers={**auth, "content-type": "application/json"})
    assert bad.status_code == 400 and "JSON" in bad.json()["error"]["message"]
    bad = await http.post("/orca/v1/sessions/coding/s-e/escalate", json={"once": "yes"},
                          headers=auth)
    assert bad.status_code == 400
    assert (await http.get("/orca/v1/audit?since=yesterday", headers=auth)).status_code == 400
    assert (await http.get("/orca/v1/sessions/recent?within_s=x", headers=auth)).status_code == 400


async def test_a_session_id_with_a_slash_travels_percent_encoded(
        admin_sidecar: Sidecar, http: httpx.AsyncClient) -> None:
    await _turn(http, "team/alice")
    r = await http.get("/orca/v1/sessions/coding/team%2Falice", headers=admin_sidecar.auth)
    assert r.status_code == 200 and r.json()["session_id"] == "team/alice"


async def test_pins_audit_and_stats_shapes(admin_sidecar: Sidecar,
                                           http: httpx.AsyncClient) -> None:
    await _turn(http, "s-p")
    await _turn(http, "s-q", 1, **{"x-orcarouter-tier": "strong"})
    auth = admin_sidecar.auth
    pins = (await http.get("/orca/v1/pins", headers=auth)).json()
    kinds = {(p["session"], p["kind"], p["tier"]) for p in pins}
    assert {("s-p", "model", "base"), ("s-p", "channel", "base"),
            ("s-q", "model", "strong"), ("s-q", "channel", "strong")} <= kinds
    only = (await http.get("/orca/v1/pins?session=s-p", headers=auth)).json()
    assert {p["session"] for p in only} == {"s-p"}
    stats = (await http.get("/orca/v1/stats", headers=auth)).json()
    coding = stats["routers"]["coding"]
    assert coding["requests"] == 2 and coding["strong_share"] == 0.5
    assert coding["escalations"] == 1 and coding["cost_usd"] > 0
    assert stats["workspace"]["requests"] == 2
    audit = (await http.get("/orca/v1/audit?since=1h", headers=auth)).json()
    assert [(e["event"], e["trigger"], e["session"]) for e in audit] == [
        ("escalated", "explicit", "s-q")]
