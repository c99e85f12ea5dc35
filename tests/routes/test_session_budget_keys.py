"""`session_usd` with inbound keys (SPEC §17): a session row shows the limit in force for
the key its requests carry, and the 429 names the exact command (with `--key`) and words a
budget without a window as such."""

from __future__ import annotations

import time
from typing import Any

import httpx

from orca_cli.cli.budget import render_budget_row
from orca_cli.config.load import loads
from orca_cli.routing.routes import RequestFacts, check_budgets, config_budget_counters
from orca_cli.routing.routes.budget import Spend, session_key_counter, spend_keys
from orca_cli.testing import Sidecar, sidecar

CONFIG = """
[[channels]]
name = "sim-cheap"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-1"]
models = ["small"]

[models.small]   # one request spends more than the session budget
input = 100.0
output = 100.0

[routers.coding]
strategy = "cheapest"
allowed_models = ["small"]
[routers.coding.escalation]
mode = "off"

[[inbound_keys]]
name = "ci"
token = "ci-token"

[[inbound_keys]]
name = "dev"
token = "dev-token"

[budgets]
session_usd = 0.004
"""


def test_a_keyed_session_refusal_names_the_key_and_no_window() -> None:
    f = RequestFacts("openai", "small", session_id="b-s1", key_name="ci", now=time.time())
    counter = config_budget_counters(f)["session_usd"]
    over = check_budgets({"session_usd": 0.01}, f, {counter: Spend(2, 0.0104)})
    assert over.verdict == "refuse"
    assert over.message.startswith(
        'budget session_usd for session "b-s1" (inbound key "ci") is spent: $0.0104 of $0.01 '
        "over the session's whole life")
    assert "`orca budget raise session_usd <usd> --key ci`" in over.message
    assert "window" not in over.message
    keyless = check_budgets({"session_usd": 0.01}, RequestFacts(
        "openai", "small", session_id="b-s1", now=time.time()), {counter: Spend(2, 0.0104)})
    assert "`orca budget raise session_usd <usd>`" in keyless.message
    assert "--key" not in keyless.message and "window" not in keyless.message


def test_a_keyed_request_counts_its_keys_part_of_the_session() -> None:
    f = RequestFacts("openai", "small", session_id="d:1e24", key_name="ci", now=time.time())
    assert session_key_counter("d:1e24", "ci") in spend_keys(f, "")
    keyless = RequestFacts("openai", "small", session_id="d:1e24", now=time.time())
    assert not [c for c in spend_keys(keyless, "") if c.startswith("sessionkey:")]


async def _chat(sc: Sidecar, session: str, token: str | None = None) -> httpx.Response:
    auth = {"authorization": f"Bearer {token}"} if token else {}
    return await sc.http.post("/v1/chat/completions", headers={"x-orca-session": session, **auth},
                              json={"model": "orca/coding",
                                    "messages": [{"role": "user", "content": "rename x"}]})


def _session_row(doc: dict[str, Any], sid: str) -> dict[str, Any]:
    rows = [r for r in doc["budgets"] if r["holder"] == f"session {sid}"]
    assert len(rows) == 1, doc
    return rows[0]


async def test_a_session_row_shows_the_limit_of_the_key_its_requests_carry() -> None:
    cfg = loads(CONFIG, source="test", environ={})
    async with sidecar(cfg) as sc:
        raised = await sc.admin("POST", "/budgets/session_usd/raise", {"usd": 0.5})
        assert raised.status_code == 200, raised.text  # for requests without a key
        assert (await _chat(sc, "b-s1", "ci-token")).status_code == 200
        await sc.idle()
        refused = await _chat(sc, "b-s1", "ci-token")
        assert refused.status_code == 429  # ci's limit is still the configured $0.004
        message = refused.json()["error"]["message"]
        assert "`orca budget raise session_usd <usd> --key ci`" in message
        assert "until the window ends" not in message
        row = _session_row((await sc.admin("GET", "/budgets")).json(), "b-s1")
        assert (row["limit_usd"], row["keys"], row["raised"]) == (0.004, ["ci"], False)
        assert row["key_limits_usd"] == {"-": 0.5}
        assert "of $0.004 (" in render_budget_row(row) and "key ci" in render_budget_row(row)

        again = await sc.admin("POST", "/budgets/session_usd/raise", {"usd": 0.9, "key": "ci"})
        assert again.status_code == 200, again.text
        row = _session_row((await sc.admin("GET", "/budgets")).json(), "b-s1")
        assert (row["limit_usd"], row["keys"], row["raised"]) == (0.9, ["ci"], True)
        text = render_budget_row(row)
        assert "of $0.90 (" in text and "key ci" in text and "$0.50" not in text

        assert (await _chat(sc, "b-s1", "ci-token")).status_code == 200
        dev = await _chat(sc, "b-s1", "dev-token")  # the session's spend, dev's own limit
        assert dev.status_code == 429
        assert "`orca budget raise session_usd <usd> --key dev`" in dev.json()["error"]["message"]


async def test_a_budget_refusal_says_denied_budget_in_the_tier_header() -> None:
    """SPEC §1.2's closed list has no `budget_exceeded`; §17 adds `denied:budget`."""
    cfg = loads(CONFIG, source="test", environ={})
    async with sidecar(cfg) as sc:
        assert (await _chat(sc, "b-s2", "ci-token")).status_code == 200
        await sc.idle()
        refused = await _chat(sc, "b-s2", "ci-token")
    assert refused.status_code == 429
    assert refused.headers["x-orca-session-tier"] == "base; reason=denied:budget"


async def test_a_route_to_a_sessionless_router_names_the_budgets_session_in_its_trace() -> None:
    """README: the session a session budget counts is the one the request's trace names —
    also when a route sends it to a sessionless router (no pin, no tier state)."""
    text = CONFIG.replace('[routers.coding]\nstrategy = "cheapest"',
                          '[routers.coding]\nstrategy = "cheapest"\nsession_aware = false')
    cfg = loads(text, source="test", environ={})
    async with sidecar(cfg) as sc:
        got = await _chat(sc, "b-s3", "ci-token")
        assert got.status_code == 200
        assert got.headers["x-orca-session-tier"] == "base; reason=no_session"
        await sc.idle()
        trace = await sc.rt.gate.store.get_trace(got.headers["x-orca-request-id"])
        assert trace is not None and trace["session_id"] == "b-s3"
        row = _session_row((await sc.admin("GET", "/budgets")).json(), "b-s3")
        assert row["spent_usd"] > 0
