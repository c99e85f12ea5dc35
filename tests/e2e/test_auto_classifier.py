"""The auto router's model classifier over real sockets (SPEC §16): a child request through
orca with its own trace (`purpose`, the parent's id), billed like any request; a stalled
classifier falls back to the local one within its timeout and the generation succeeds."""

from __future__ import annotations

import time

import orjson

from orca_cli.config.load import loads
from orca_cli.testing import Act, FakeUpstream, eventually, fake_upstream, sidecar


def classifier_config(up: FakeUpstream, timeout_ms: int) -> str:
    """Two generation models on `gen`, the classifier model `tiny-cls` on `cls`."""
    return f"""
[[channels]]
name = "gen"
type = "openai-compatible"
base_url = "{up.url('gen')}"
keys = ["sk-gen"]
models = ["nano", "big"]

[[channels]]
name = "cls"
type = "openai-compatible"
base_url = "{up.url('cls')}"
keys = ["sk-cls"]
models = ["tiny-cls"]

[models.nano]
input = 0.05
output = 0.40
quality = 0.3
[models.big]
input = 3.0
output = 15.0
quality = 0.9
[models.tiny-cls]
input = 0.02
output = 0.10
quality = 0.2

[auto]
models = ["gen/*"]
classifier = "tiny-cls"
classifier_timeout_ms = {timeout_ms}
"""


BODY = {"model": "orca/auto", "messages": [{"role": "user", "content": "fix the typo in x.py"}]}
HEADERS = {"content-type": "application/json", "x-orca-session": "auto-cls-1"}


async def test_the_model_classifier_is_a_traced_child_request() -> None:
    answer = orjson.dumps({"workloads": ["code"], "complexity": 0.2, "confidence": 0.9})
    async with fake_upstream() as up:
        cfg = loads(classifier_config(up, 5000), source="test", environ={})
        up.on("cls", Act(text=answer.decode()))
        async with sidecar(cfg) as sc:
            r = await sc.http.post("/v1/chat/completions", content=orjson.dumps(BODY),
                                   headers=HEADERS)
            assert r.status_code == 200, r.text
            parent = r.headers["x-orca-request-id"]
            await sc.settled(parent)
            trace = await sc.store.get_trace(parent)
            assert trace is not None
            assert trace["auto"]["classifier"] == "model:tiny-cls", trace["auto"]
            assert "fallback_reason" not in trace["auto"]

            async def child() -> dict[str, object] | None:
                for e in await sc.store.scan("all"):
                    doc = e.value
                    if (e.slot.kind == "traces" and isinstance(doc, dict)
                            and doc.get("parent_request_id") == parent):
                        return doc
                return None

            found = await eventually(child, timeout=10, what="the classifier's trace")
        assert isinstance(found, dict)
        assert found["purpose"] == "auto_routing_classifier"
        assert found["selected"]["model"] == "tiny-cls" and found["cost_usd"] > 0
        assert len(up.calls("cls")) == 1


async def test_a_stalled_classifier_falls_back_to_local_and_the_generation_succeeds() -> None:
    async with fake_upstream() as up:
        cfg = loads(classifier_config(up, 200), source="test", environ={})
        up.on("cls", Act(stall_before_s=3.0))
        async with sidecar(cfg) as sc:
            t0 = time.monotonic()
            r = await sc.http.post("/v1/chat/completions", content=orjson.dumps(BODY),
                                   headers=HEADERS)
            waited = time.monotonic() - t0
            assert r.status_code == 200, r.text
            await sc.settled(r.headers["x-orca-request-id"])
            trace = await sc.store.get_trace(r.headers["x-orca-request-id"])
            assert trace is not None
    assert trace["auto"]["fallback_reason"] == "timeout", trace["auto"]
    assert trace["auto"]["classifier"] == "local"
    assert waited < 2.5, "the generation waited for the stalled classifier"
