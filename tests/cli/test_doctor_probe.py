"""`orca doctor --probe` sends one tiny request per format a channel speaks, on a real socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson
import pytest
from aiohttp import web

from orca_cli.config.schema import ChannelConfig, Config, Secret
from orca_cli.doctor import _channel_check, channel_apis


class Upstream:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any], str]] = []
        self.status: dict[str, int] = {}

    async def handle(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        self.seen.append((request.path, body, request.headers.get("authorization", "")))
        status = self.status.get(request.path, 200)
        return web.Response(status=status, body=b"{}", content_type="application/json")


@pytest.fixture
async def upstream() -> AsyncIterator[tuple[Upstream, str]]:
    up = Upstream()
    app = web.Application()
    app.router.add_post("/v1/{tail:.*}", up.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield up, f"http://127.0.0.1:{port}/v1"
    await runner.cleanup()


def _channel(base_url: str, api: str) -> ChannelConfig:
    return ChannelConfig(name="oa", type="openai-compatible", base_url=base_url,
                         api=api,  # type: ignore[arg-type]
                         keys=(Secret("sk-doctor-probe"),), models=("gpt-5",))


async def test_a_responses_channel_is_probed_on_v1_responses(
    upstream: tuple[Upstream, str],
) -> None:
    up, base = upstream
    ch = _channel(base, "responses")
    check = await _channel_check(ch, Config(), True)
    assert check.status == "ok", check
    assert "200 (responses)" in check.detail
    path, body, auth = up.seen[-1]
    assert path == "/v1/responses"
    assert body["input"] == "ping" and body["max_output_tokens"] == 16 and body["store"] is False
    assert auth == "Bearer sk-doctor-probe"
    assert "sk-doctor-probe" not in check.detail


async def test_a_channel_listing_several_formats_is_probed_on_each(
    upstream: tuple[Upstream, str],
) -> None:
    up, base = upstream
    plain = _channel(base, "responses")
    ch: Any = (replace(plain, apis=("responses", "openai")) if hasattr(plain, "apis")
               else _WithApis(plain, ("responses", "openai")))
    assert channel_apis(ch) == ("responses", "openai")
    check = await _channel_check(ch, Config(), True)
    assert check.status == "ok"
    assert [p for p, _, _ in up.seen] == ["/v1/responses", "/v1/chat/completions"]
    up.status["/v1/responses"] = 404
    failed = await _channel_check(ch, Config(), True)
    assert failed.status == "fail" and "responses probe of gpt-5 answered 404" in failed.detail
    assert "/v1/responses" in failed.fix


class _WithApis:
    """A channel config carrying `apis` before the config schema has it."""

    def __init__(self, ch: ChannelConfig, apis: tuple[str, ...]) -> None:
        self._ch = ch
        self.apis = apis

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ch, name)


def test_channel_apis_defaults_to_api() -> None:
    ch = ChannelConfig(name="a", api="anthropic")
    assert channel_apis(ch) == ("anthropic",)
    assert channel_apis(replace(ch, api="openai")) == ("openai",)
