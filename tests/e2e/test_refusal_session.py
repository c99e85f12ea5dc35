"""A refused request keeps the session it named (SPEC §8, §15, §1.4): its trace carries the
explicit session id the headers or the body gave, so `orca requests --session S` and `orca
explain --session S` find it; a refusal never derives an id."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from orca_cli.admin.requests import recent_requests
from orca_cli.config.load import loads
from orca_cli.testing import Sidecar, eventually, sidecar
from orca_cli.trace.log import log_fields

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONFIG = """
[[channels]]
name = "s"
type = "sim"
keys = ["sk-sim-0"]
models = ["m1"]

[models.m1]
input = 1.0

[routers.r]
strategy = "cheapest"
allowed_models = ["m1"]
[routers.r.escalation]
mode = "off"
"""
MSGS = [{"role": "user", "content": "hi"}]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stack() -> AsyncIterator[Sidecar]:
    async with sidecar(loads(CONFIG, source="test")) as sc:
        yield sc


async def refused_trace(st: Sidecar, body: bytes, headers: dict[str, str],
                        status: int) -> dict[str, Any]:
    r = await st.http.post("/v1/chat/completions", content=body,
                           headers={"content-type": "application/json", **headers})
    assert r.status_code == status
    rid = r.headers["x-orca-request-id"]
    trace = await eventually(lambda: st.store.get_trace(rid), 10, what=f"the trace of {rid}")
    return dict(trace)  # type: ignore[call-overload]


async def test_a_bad_tier_header_is_refused_with_its_session_in_the_trace(
        stack: Sidecar) -> None:
    body = orjson.dumps({"model": "orca/r", "messages": MSGS})
    trace = await refused_trace(stack, body, {"x-orca-session": "sess-C",
                                              "x-orcarouter-tier": "bogus"}, 400)
    assert trace["session_id"] == "sess-C"
    assert trace["session_source"] == "header:x-orca-session"
    assert log_fields(trace)["session_id"] == "sess-C"
    assert trace["latency_ms"] > 0  # the time it took to refuse (it read 0 before)
    found = await recent_requests(stack.store, session="sess-C")
    assert [t["request_id"] for t in found] == [trace["request_id"]]


async def test_an_unknown_model_keeps_the_bodys_session(stack: Sidecar) -> None:
    body = orjson.dumps({"model": "nope", "messages": MSGS,
                         "metadata": {"session_id": "sess-body"}})
    trace = await refused_trace(stack, body, {}, 404)
    assert trace["session_id"] == "sess-body"
    assert trace["session_source"] == "body:metadata.session_id"


async def test_an_unreadable_body_keeps_the_headers_session(stack: Sidecar) -> None:
    trace = await refused_trace(stack, b'{"model": ', {"x-orca-session": "sess-bad-json"}, 400)
    assert trace["session_id"] == "sess-bad-json"


async def test_a_refusal_without_an_explicit_session_derives_none(stack: Sidecar) -> None:
    body = orjson.dumps({"model": "orca/r", "messages": MSGS})
    trace = await refused_trace(stack, body, {"x-orcarouter-tier": "bogus"}, 400)
    assert trace["session_id"] is None and trace["session_source"] is None
