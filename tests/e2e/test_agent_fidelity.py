"""What real agents need back (SPEC §14): the model name they sent, the provider's own
context-overflow error, probes of the base URL, and honest error codes."""

from __future__ import annotations

import anthropic
import httpx
import openai
import orjson
import pytest

from tests.e2e.conftest import Sidecar

pytestmark = pytest.mark.asyncio

MSGS = [{"role": "user", "content": "rename the variable x to count in utils.py"}]
JSON = {"content-type": "application/json"}


def _oa(sc: Sidecar, **headers: str) -> openai.AsyncOpenAI:
    client = openai.AsyncOpenAI(base_url=sc.base + "/v1", api_key="agent-key", max_retries=0,
                                default_headers=headers or None)
    sc.closers.append(client.close)
    return client


def _an(sc: Sidecar, **headers: str) -> anthropic.AsyncAnthropic:
    client = anthropic.AsyncAnthropic(base_url=sc.base, api_key="agent-key", max_retries=0,
                                      default_headers=headers or None)
    sc.closers.append(client.close)
    return client


async def test_a_router_answers_under_the_name_the_client_sent(sidecar: Sidecar) -> None:
    client = _oa(sidecar, **{"X-Orca-Session": "name-oa"})
    raw = await client.chat.completions.with_raw_response.create(model="orca/coding",
                                                                  messages=MSGS)
    assert raw.parse().model == "orca/coding"
    assert raw.headers["x-orca-model"] != "orca/coding"  # the served one is in the header
    stream = await client.chat.completions.create(model="orca/coding", messages=MSGS,
                                                  stream=True)
    models = {chunk.model async for chunk in stream}
    assert models == {"orca/coding"}


async def test_an_alias_answers_under_the_agents_own_model_name(sidecar: Sidecar) -> None:
    # Claude Code re-reads this name on --continue; a served name would move the session
    # to another alias (claude-haiku-* goes to the background router).
    client = _an(sidecar, **{"X-Claude-Code-Session-Id": "name-an"})
    msg = await client.messages.create(model="claude-sonnet-4-5-20250929", max_tokens=64,
                                       messages=MSGS)
    assert msg.model == "claude-sonnet-4-5-20250929"
    async with client.messages.stream(model="claude-sonnet-4-5-20250929", max_tokens=64,
                                      messages=MSGS) as stream:
        final = await stream.get_final_message()
    assert final.model == "claude-sonnet-4-5-20250929"


async def test_a_concrete_model_answers_as_itself(sidecar: Sidecar) -> None:
    client = _oa(sidecar)
    done = await client.chat.completions.create(model="deepseek-chat", messages=MSGS)
    assert done.model == "deepseek-chat"


def _huge(chars: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": "word " * (chars // 5)}]


async def test_context_overflow_is_the_providers_own_400(sidecar: Sidecar) -> None:
    messages = _huge(5_000_000)  # over every window of the example config (1,047,576 tokens)
    with pytest.raises(anthropic.BadRequestError) as an_err:
        await _an(sidecar).messages.create(model="orca/coding", max_tokens=64,
                                           messages=messages)  # type: ignore[arg-type]
    assert an_err.value.status_code == 400
    body = an_err.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("prompt is too long: ")
    assert "maximum" in body["error"]["message"]
    with pytest.raises(openai.BadRequestError) as oa_err:
        await _oa(sidecar).chat.completions.create(model="orca/coding",
                                                   messages=messages)  # type: ignore[arg-type]
    assert oa_err.value.code == "context_length_exceeded"
    assert "maximum context length is 1047576 tokens" in oa_err.value.message


async def test_a_concrete_model_overflows_in_the_providers_words_too(sidecar: Sidecar) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        await _oa(sidecar).chat.completions.create(
            model="deepseek-chat", messages=_huge(800_000))  # type: ignore[arg-type]
    assert err.value.code == "context_length_exceeded"
    assert "128000" in err.value.message


async def test_the_base_url_answers_probes(sidecar: Sidecar) -> None:
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.get("/")
        assert got.status_code == 200 and got.json()["name"] == "orca"
        head = await http.head("/")
        assert head.status_code == 200 and head.content == b""


async def test_an_unknown_endpoint_is_not_an_unknown_model(sidecar: Sidecar) -> None:
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.post("/v1/embeddings", content=b"{}", headers=JSON)
    assert got.status_code == 404
    assert got.json()["error"]["code"] == "unknown_endpoint"
    assert "/v1/responses" in got.json()["error"]["message"]


async def test_an_unknown_model_is_model_not_found(sidecar: Sidecar) -> None:
    with pytest.raises(openai.NotFoundError) as err:
        await _oa(sidecar).chat.completions.create(model="no-such-model", messages=MSGS)
    assert err.value.code == "model_not_found"


@pytest.mark.parametrize("body", [
    {"model": 5, "messages": "x"},
    {"model": "orca/coding", "messages": "x"},
    {"model": "orca/coding", "messages": [1, 2]},
    {"messages": []},
])
async def test_count_tokens_checks_its_types(sidecar: Sidecar, body: dict[str, object]) -> None:
    async with httpx.AsyncClient(base_url=sidecar.base) as http:
        got = await http.post("/v1/messages/count_tokens", content=orjson.dumps(body),
                              headers={**JSON, "anthropic-version": "2023-06-01"})
    assert got.status_code == 400
    assert got.json()["error"]["type"] == "invalid_request_error"
