"""One session id per request (SPEC §1.4, §17): the route step derives a session id exactly
as the turn does — under the router the request's own `model` names (an alias resolved), or
a concrete model's pin scope — so `orca budget`, `orca requests`, `explain` and a 429 name
one id; and a route that retargets the request does not change it."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from orca_cli.config.load import loads
from orca_cli.routing.features import Scorer
from orca_cli.routing.routes import compile_routes
from orca_cli.testing import Sidecar, sidecar
from orca_cli.turn import Arrival, RequestHead, Turn, prepare
from orca_cli.turn.routes import LiveRoutes, route_facts

CONFIG = """
[[channels]]
name = "sim-cheap"
type = "sim"
api = ["openai", "anthropic"]
keys = ["sim-key-1"]
models = ["small", "other"]

[models.small]
input = 1.0
output = 1.0
[models.other]
input = 1.0
output = 1.0

[routers.coding]
strategy = "cheapest"
allowed_models = ["small"]
[routers.coding.escalation]
mode = "off"

[routers.alt]
strategy = "cheapest"
allowed_models = ["other"]
[routers.alt.escalation]
mode = "off"

[aliases]
"claude-sonnet-*" = "orca/coding"

[[inbound_keys]]
name = "ci"
token = "ci-token"

[budgets]
session_usd = 100.0
"""

RETARGET = CONFIG + """
[[routes]]
name = "move"
start = "go"
[routes.nodes.go]
type = "target"
target = "orca/alt"
"""

MESSAGES = [{"role": "system", "content": "you are terse"},
            {"role": "user", "content": "rename x to y"}]


def _head(token: str = "ci-token") -> RequestHead:
    return RequestHead("POST", "/v1/chat/completions", "openai",
                       [("content-type", "application/json"),
                        ("authorization", f"Bearer {token}")], None)


@pytest.mark.parametrize("model", ["orca/coding", "claude-sonnet-4", "small"])
def test_the_route_step_derives_the_session_the_turn_derives(model: str) -> None:
    cfg = loads(CONFIG, source="test", environ={})
    live = LiveRoutes.of(cfg, compile_routes(cfg.routes))
    assert live is not None
    body: dict[str, Any] = {"model": model, "messages": MESSAGES}
    facts, sid = route_facts(live, cfg, _head(), body, request_id="req_1", now=time.time())
    turn = prepare(cfg, Scorer(cfg.difficulty), _head(),
                   Arrival("req_1", b"{}", body, time.time(), 0.0))
    assert isinstance(turn, Turn) and turn.sid is not None
    assert facts.session_id.startswith("d:")
    assert (facts.session_id, sid.id) == (turn.sid.id, turn.sid.id)


async def _chat(sc: Sidecar) -> httpx.Response:
    return await sc.http.post("/v1/chat/completions",
                              headers={"authorization": "Bearer ci-token"},
                              json={"model": "orca/coding", "messages": MESSAGES})


async def _one_id(cfg_text: str) -> tuple[str, list[str]]:
    cfg = loads(cfg_text, source="test", environ={})
    async with sidecar(cfg) as sc:
        r = await _chat(sc)
        assert r.status_code == 200, r.text
        rid = r.headers["x-orca-request-id"]
        await sc.settled(rid)
        await sc.idle()
        trace = await sc.store.get_trace(rid)
        assert trace is not None
        doc = (await sc.admin("GET", "/budgets")).json()
    rows = [r["holder"] for r in doc["budgets"] if r["budget"] == "session_usd"]
    return trace["session_id"], rows


async def test_orca_budget_names_the_session_the_trace_names() -> None:
    sid, rows = await _one_id(CONFIG)
    assert sid.startswith("d:") and rows == [f"session {sid}"]


async def test_a_retargeted_request_keeps_the_route_steps_session_id() -> None:
    sid, rows = await _one_id(RETARGET)
    assert sid.startswith("d:") and rows == [f"session {sid}"]
