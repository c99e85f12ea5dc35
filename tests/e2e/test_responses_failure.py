"""A Responses stream that breaks after its first byte ends with the format's own
`response.failed`, naming the response it announced and continuing its sequence (SPEC §13.1,
§7) — never a clean `response.completed`."""

from __future__ import annotations

import orjson

from orca_cli.config.load import loads
from orca_cli.testing import Act, fake_upstream, sidecar, sse_events


def _config(url: str) -> str:
    return f"""
[[channels]]
name = "resp"
type = "openai"
api = ["responses", "openai"]
base_url = "{url}"
keys = ["sk-test-resp"]
models = ["gpt-5-codex"]

[routers.r]
strategy = "cheapest"
allowed_models = ["gpt-5-codex"]
[routers.r.escalation]
mode = "off"
"""


async def test_a_broken_responses_stream_ends_with_its_own_response_failed() -> None:
    async with fake_upstream() as up:
        cfg = loads(_config(up.url("resp")), source="test", environ={})
        up.on("resp", Act(drop_after=4))
        async with sidecar(cfg) as sc:
            body = {"model": "orca/r", "stream": True, "store": False, "input": "hello"}
            r = await sc.http.post("/v1/responses", content=orjson.dumps(body),
                                   headers={"content-type": "application/json",
                                            "session-id": "broken-1"})
    assert r.status_code == 200
    events = [(name, orjson.loads(data)) for name, data in sse_events(r.content) if data]
    names = [e["type"] for _, e in events]
    assert names[0] == "response.created" and "response.completed" not in names
    last = events[-1][1]
    assert last["type"] == "response.failed" and last["response"]["status"] == "failed"
    assert last["response"]["id"] == events[0][1]["response"]["id"]
    seq = [e["sequence_number"] for _, e in events if "sequence_number" in e]
    assert seq == sorted(seq) and len(set(seq)) == len(seq)
