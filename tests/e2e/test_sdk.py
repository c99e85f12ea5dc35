"""The official OpenAI and Anthropic SDKs against a real sidecar (sim upstreams)."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from tests.e2e.conftest import Sidecar
from tests.e2e.conftest import anthropic_client as _an
from tests.e2e.conftest import openai_client as _oa

pytestmark = pytest.mark.asyncio

MSGS = [{"role": "user", "content": "rename the variable x to count in utils.py"}]


async def test_openai_chat_non_streaming_is_routed_and_labelled(sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"X-Orca-Session": "s-openai-1"})
    raw = await client.chat.completions.with_raw_response.create(model="orca/coding",
                                                                  messages=MSGS)
    done = raw.parse()
    assert done.choices[0].message.content
    assert done.usage is not None and done.usage.prompt_tokens > 0
    assert raw.headers["x-orca-session-tier"] == "base; reason=default"
    assert raw.headers["x-orca-request-id"].startswith("req_")
    assert raw.headers["x-orca-model"] in sidecar.rt.cfg.routers["coding"].allowed_models
    assert raw.headers["x-orca-channel"].startswith("sim-")
    trace = await sidecar.rt.gate.store.get_trace(raw.headers["x-orca-request-id"])
    assert trace is not None and trace["committed"] is True
    assert trace["tier"]["decision"] == "base"


async def test_openai_stream_hides_the_usage_chunk_it_did_not_ask_for(sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"X-Orca-Session": "s-openai-2"})
    stream = await client.chat.completions.create(model="orca/coding", messages=MSGS,
                                                  stream=True)
    chunks = [c async for c in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    assert all(c.choices for c in chunks), "the extra usage-only chunk reached the client"


async def test_openai_stream_with_include_usage_keeps_the_usage_chunk(sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"X-Orca-Session": "s-openai-3"})
    stream = await client.chat.completions.create(
        model="orca/coding", messages=MSGS, stream=True,
        stream_options={"include_usage": True})
    chunks = [c async for c in stream]
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens > 0


async def test_anthropic_messages_non_streaming_and_streaming(sidecar: Sidecar) -> None:
    client = _an(sidecar, **{"X-Orca-Session": "s-anth-1"})
    raw = await client.messages.with_raw_response.create(
        model="claude-sonnet-4-5", max_tokens=256, messages=MSGS)
    msg = await raw.parse()
    assert msg.content[0].type == "text" and msg.content[0].text
    assert raw.headers["x-orca-session-tier"].startswith("base;")
    async with client.messages.stream(model="claude-sonnet-4-5", max_tokens=256,
                                      messages=MSGS) as stream:
        text = "".join([t async for t in stream.text_stream])
        final = await stream.get_final_message()
    assert text and final.usage.input_tokens >= 0


async def test_explicit_strong_header_serves_strong(sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"X-Orca-Session": "s-strong", "X-OrcaRouter-Tier": "strong"})
    raw = await client.chat.completions.with_raw_response.create(model="orca/coding",
                                                                  messages=MSGS)
    assert raw.headers["x-orca-session-tier"] == "strong; reason=explicit"
    assert raw.headers["x-orca-model"] in sidecar.rt.cfg.routers["coding"].escalation_pool
    # The next turn without the header stays strong: the escalation was committed.
    plain = _oa(sidecar, **{"X-Orca-Session": "s-strong"})
    raw2 = await plain.chat.completions.with_raw_response.create(
        model="orca/coding", messages=MSGS + [{"role": "assistant", "content": "done"},
                                              {"role": "user", "content": "thanks, now tests"}])
    assert raw2.headers["x-orca-session-tier"] == "strong; reason=explicit"


async def test_bad_tier_header_is_a_400_in_the_inbound_shape(sidecar: Sidecar) -> None:
    client = _an(sidecar, **{"X-OrcaRouter-Tier": "turbo"})
    with pytest.raises(anthropic.BadRequestError) as err:
        await client.messages.create(model="claude-sonnet-4-5", max_tokens=16, messages=MSGS)
    assert "strong, once, base" in str(err.value)
    assert "turbo" not in str(err.value)


async def test_unknown_model_is_a_404_listing_what_exists(sidecar: Sidecar) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        await _oa(sidecar).chat.completions.create(model="nope-9", messages=MSGS)
    assert "orca/coding" in str(err.value)


async def test_models_list_in_both_shapes(sidecar: Sidecar) -> None:
    models = await _oa(sidecar).models.list()
    ids = [m.id async for m in models]
    assert "orca/coding" in ids
    page = await _an(sidecar).models.list()
    assert "orca/coding" in [m.id for m in page.data]


async def test_malformed_json_and_guard_refusals(sidecar: Sidecar) -> None:
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        r = await http.post("/v1/chat/completions", content=b"{nope",
                            headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("the request")
        r = await http.post("/v1/messages", content=b"{}", headers={
            "content-type": "application/json", "origin": "https://evil.example"})
        assert r.status_code == 403 and r.json()["type"] == "error"
        r = await http.get("/healthz")
        assert r.status_code == 200 and r.json()["status"] == "ok"
        r = await http.get("/metrics")
        assert r.status_code == 200 and b"orca_requests_total" in r.content
