"""The official openai SDK's `client.responses.create` against the sim over a real socket:
JSON and streaming, text and a function tool, usage with the simulated prompt cache."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import openai
import orjson
import pytest
from aiohttp import web

from orca_cli.clock import SystemClock
from orca_cli.config.schema import ChannelConfig
from orca_cli.proxy.sim import SimTransport
from orca_cli.proxy.transport import Timeouts, UpstreamRequest

SHELL: Any = {
    "type": "function",
    "name": "shell",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                   "required": ["cmd"]},
}


@pytest.fixture
async def base_url() -> AsyncIterator[str]:
    """The sim behind a plain HTTP server on 127.0.0.1 (a stand-in for an upstream provider)."""
    clock = SystemClock()
    sim = SimTransport(ChannelConfig(name="sim", type="sim", api="responses"), clock)

    async def handle(request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        req = UpstreamRequest("POST", str(request.url), tuple(request.headers.items()), raw,
                              "sim", 0, b'"stream":true' in raw)
        resp = await sim.send(req, Timeouts(5, 5, 5, clock.monotonic() + 30))
        out = web.StreamResponse(status=resp.status, headers=dict(resp.headers))
        await out.prepare(request)
        async for chunk in resp.chunks():
            await out.write(chunk)
        await out.write_eof()
        return out

    app = web.Application()
    app.router.add_post("/v1/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    await runner.cleanup()
    await sim.aclose()


async def test_responses_create_json_and_stream_with_a_function_tool(base_url: str) -> None:
    async with openai.AsyncOpenAI(api_key="sk-socket", base_url=base_url,
                                  max_retries=0) as client:
        opening: Any = [{"role": "user", "content": "hello there"}]
        first = await client.responses.create(model="sim-small", instructions="be brief",
                                              input=opening, tools=[SHELL], store=False)
        assert first.status == "completed" and first.output_text.startswith("[sim]")
        assert first.usage is not None and first.usage.input_tokens_details.cached_tokens == 0

        history: Any = [*opening,
                        {"role": "assistant", "content": first.output_text},
                        {"role": "user", "content": "run ls [tool]"}]
        stream = await client.responses.create(model="sim-small", instructions="be brief",
                                               input=history, tools=[SHELL], stream=True,
                                               store=False)
        kinds: list[str] = []
        args = ""
        final = None
        async for event in stream:
            kinds.append(event.type)
            if event.type == "response.function_call_arguments.delta":
                args += event.delta
            if event.type == "response.completed":
                final = event.response
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert orjson.loads(args) == {"cmd": orjson.loads(args)["cmd"]}
        assert final is not None and final.output[0].type == "function_call"
        assert final.usage is not None
        # turn 2 of the same prefix reads the simulated prompt cache
        assert 0 < final.usage.input_tokens_details.cached_tokens < final.usage.input_tokens


async def test_responses_create_maps_an_upstream_error(base_url: str) -> None:
    async with openai.AsyncOpenAI(api_key="sk-socket", base_url=base_url,
                                  max_retries=0) as client:
        with pytest.raises(openai.BadRequestError) as info:
            await client.responses.create(model=None, input="x")  # type: ignore[arg-type]
        assert "model" in str(info.value)
