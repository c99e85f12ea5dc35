"""The test kit itself: the fake provider speaks each wire format as the official SDKs read
it, its faults are what a script asks for, and `eventually` waits and fails as documented."""

from __future__ import annotations

import time

import anthropic
import httpx
import openai
import pytest

from orca_cli.config.load import loads
from orca_cli.testing import (
    Act,
    eventually,
    eventually_sync,
    fake_upstream,
    sidecar,
    sidecar_thread,
)


async def test_the_fake_answers_the_responses_api_as_the_openai_sdk_reads_it() -> None:
    async with fake_upstream() as up:
        client = openai.AsyncOpenAI(base_url=up.url("p"), api_key="sk-p", max_retries=0)
        done = await client.responses.create(model="gpt-r", input="hi")
        assert done.output_text == "the fix is in place" and done.usage is not None
        assert done.usage.input_tokens == 20
        stream = await client.responses.create(model="gpt-r", input="hi", stream=True)
        kinds = [event.type async for event in stream]
        await client.close()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_text.delta") == 5
    assert [s.api for s in up.calls("p")] == ["responses", "responses"]
    assert up.calls("p")[0].key == "sk-p" and up.calls("p")[1].stream


async def test_the_fake_answers_chat_and_messages_streams_the_sdks_read() -> None:
    async with fake_upstream() as up:
        oa = openai.AsyncOpenAI(base_url=up.url("o"), api_key="k", max_retries=0)
        chunks = [c async for c in await oa.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True)]
        an = anthropic.AsyncAnthropic(base_url=up.url("a", versioned=False), api_key="k",
                                      max_retries=0)
        msg = await an.messages.create(model="m", max_tokens=8,
                                       messages=[{"role": "user", "content": "hi"}])
        await oa.close()
        await an.close()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.split() == ["the", "fix", "is", "in", "place"]
    assert msg.content[0].type == "text" and msg.usage.output_tokens == 4


async def test_a_scripted_fault_is_answered_then_the_default() -> None:
    async with fake_upstream() as up, httpx.AsyncClient() as http:
        up.on("f", Act(status=429, retry_after=7, body=b'{"error": {"message": "slow down"}}'))
        first = await http.post(up.url("f") + "/chat/completions", json={"model": "m"})
        second = await http.post(up.url("f") + "/chat/completions", json={"model": "m"})
    assert (first.status_code, first.headers["retry-after"]) == (429, "7")
    assert second.status_code == 200 and second.json()["object"] == "chat.completion"


async def test_eventually_returns_the_truthy_value_and_names_what_did_not_happen() -> None:
    ready_at = time.monotonic() + 0.05

    async def value() -> int:
        return 42 if time.monotonic() >= ready_at else 0

    assert await eventually(value, 2) == 42
    with pytest.raises(AssertionError, match="the moon did not happen within 0.05 s"):
        await eventually(lambda: False, 0.05, what="the moon")
    with pytest.raises(AssertionError, match="within 0.05 s"):
        eventually_sync(lambda: None, 0.05)


SIM = """
[[channels]]
name = "sim"
type = "sim"
keys = ["sim-key"]
models = ["small"]
"""


async def test_the_sidecar_serves_a_config_and_settles_each_request() -> None:
    async with sidecar(loads(SIM, source="kit", environ={})) as sc:
        r = await sc.http.post("/v1/chat/completions", json={
            "model": "small", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200
        await sc.settled(r.headers["x-orca-request-id"])
        assert (await sc.admin("GET", "sessions")).status_code == 200
        assert (await sc.healthz())["status"] == "ok"


def test_a_sidecar_in_a_thread_serves_synchronous_clients() -> None:
    with sidecar_thread(loads(SIM, source="kit", environ={})) as served:
        assert httpx.get(served.url + "/healthz", timeout=5).json()["status"] == "ok"
    with pytest.raises(httpx.ConnectError):
        httpx.get(served.url + "/healthz", timeout=5)
