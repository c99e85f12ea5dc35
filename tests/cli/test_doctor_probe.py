"""`orca doctor --probe` sends one tiny request per format a channel speaks, on a real socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import orjson
import pytest
from aiohttp import web

from orca_cli.config.schema import ChannelConfig, Config, ModelConfig, Secret
from orca_cli.doctor import _channel_check, channel_apis, model_notes, serves
from orca_cli.proxy.transport import models_list_url


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


class ListingUpstream:
    """A provider that lists its models on `GET /v1/models`, Anthropic's way: pages of
    `page` models, `has_more` and `last_id`, the next page from `after_id`; and answers every
    POST with 200 unless the model is not listed (then 404, as a retired model's request is)."""

    def __init__(self, models: list[str], page: int = 2) -> None:
        self.models = models
        self.page = page
        self.lists: list[dict[str, str]] = []
        self.posted: list[tuple[str, str]] = []
        self.headers: list[dict[str, str]] = []
        self.entries: dict[str, dict[str, Any]] = {}  # id -> what the list says of it

    async def list_models(self, request: web.Request) -> web.Response:
        self.lists.append(dict(request.query))
        self.headers.append(dict(request.headers))
        after = request.query.get("after_id")
        start = self.models.index(after) + 1 if after else 0
        chunk = self.models[start:start + self.page]
        doc = {"data": [{**self.entries.get(m, {"type": "model"}), "id": m} for m in chunk],
               "has_more": start + self.page < len(self.models),
               "first_id": chunk[0] if chunk else None, "last_id": chunk[-1] if chunk else None}
        return web.json_response(doc)

    async def post(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        self.posted.append((request.path, body["model"]))
        known = body["model"] in self.models or any(m.startswith(body["model"] + "-")
                                                      for m in self.models)
        return web.json_response({}, status=200 if known else 404)


@pytest.fixture
async def listing() -> AsyncIterator[tuple[ListingUpstream, str]]:
    up = ListingUpstream(["claude-opus-4-8", "claude-sonnet-4-6", "claude-haiku-4-5-20251001",
                          "claude-3-haiku-20240307", "claude-sonnet-5-5"])
    app = web.Application()
    app.router.add_get("/v1/models", up.list_models)
    app.router.add_post("/v1/{tail:.*}", up.post)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield up, f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


def _anthropic(base_url: str, models: tuple[str, ...]) -> ChannelConfig:
    return ChannelConfig(name="anthropic", type="anthropic", base_url=base_url,
                         api="anthropic", keys=(Secret("sk-ant-doctor-list"),), models=models)


async def test_a_retired_model_fails_the_probe_by_name_with_the_nearest_listed_one(
    listing: tuple[ListingUpstream, str],
) -> None:
    up, base = listing
    ch = _anthropic(base, ("claude-sonnet-4-5", "claude-haiku-4-5", "claude-sonnet-5-5"))
    check = await _channel_check(ch, Config(), True)
    assert check.status == "fail", check
    assert ("not among the 5 models it lists: claude-sonnet-4-5 (nearest claude-sonnet-5-5 or "
            "claude-sonnet-4-6)") in check.detail
    unserved = check.detail.split("it lists: ")[1]
    assert "claude-haiku-4-5" not in unserved  # served as its dated snapshot's alias
    assert "claude-sonnet-5-5 (" not in unserved  # on the last page: served
    assert "channels.anthropic.models" in check.fix and "404" in check.fix
    # every page read, Anthropic's way; the probe went to the first model the list serves
    assert [q.get("after_id") for q in up.lists] == [None, "claude-sonnet-4-6",
                                                     "claude-3-haiku-20240307"]
    assert all(q["limit"] == "1000" for q in up.lists)
    assert up.headers[0]["x-api-key"] == "sk-ant-doctor-list"
    assert "anthropic-version" in up.headers[0]
    assert up.posted == [("/v1/messages", "claude-haiku-4-5")]
    assert "sk-ant-doctor-list" not in check.detail + check.fix


async def test_every_model_listed_or_mapped_passes(listing: tuple[ListingUpstream, str]) -> None:
    _, base = listing
    ch = replace(_anthropic(base, ("claude-haiku-4-5", "strong")),
                 model_map={"strong": "claude-opus-4-8"})
    check = await _channel_check(ch, Config(), True)
    assert check.status == "ok", check
    assert "all 2 of its models are among the 5 it lists" in check.detail
    mapped = replace(ch, model_map={"strong": "claude-opus-4-1"})
    failed = await _channel_check(mapped, Config(), True)
    assert failed.status == "fail"
    assert "strong (upstream claude-opus-4-1; nearest claude-opus-4-8" in failed.detail


async def test_a_provider_without_a_model_list_is_still_probed(
    upstream: tuple[Upstream, str],
) -> None:
    _, base = upstream
    check = await _channel_check(_channel(base, "openai"), Config(), True)
    assert check.status == "ok"
    assert "model list is unavailable (HTTP 405)" in check.detail


def test_serves_reads_an_undated_alias_from_its_dated_snapshot() -> None:
    listed = frozenset({"claude-haiku-4-5-20251001", "gpt-4.1", "gpt-4.1-2025-04-14"})
    assert serves(listed, "claude-haiku-4-5")
    assert serves(listed, "claude-haiku-4-5-20251001")
    assert serves(listed, "gpt-4.1")
    assert not serves(listed, "claude-haiku-4")  # a prefix is not an alias
    assert not serves(listed, "gpt-4")


def test_the_model_list_url_follows_the_endpoint_rule() -> None:
    assert models_list_url("https://api.anthropic.com") == "https://api.anthropic.com/v1/models"
    assert models_list_url("https://api.openai.com/v1/") == "https://api.openai.com/v1/models"
    assert (models_list_url("https://generativelanguage.googleapis.com/v1beta/openai")
            == "https://generativelanguage.googleapis.com/v1beta/openai/models")
    assert models_list_url("https://openrouter.ai/api") == "https://openrouter.ai/api/v1/models"


def _entry(window: int, output: int, images: bool, adaptive: bool, budget: bool
           ) -> dict[str, Any]:
    """A model as Anthropic's model list describes it (limits and capabilities)."""
    return {"type": "model", "id": "x", "max_input_tokens": window, "max_tokens": output,
            "capabilities": {"image_input": {"supported": images}, "thinking": {
                "supported": True, "types": {"adaptive": {"supported": adaptive},
                                             "enabled": {"supported": budget}}}}}


def test_model_notes_name_what_the_provider_contradicts() -> None:
    cfg = ModelConfig(context_window=1_000_000, max_output_tokens=128_000)
    notes = model_notes(cfg, "claude-haiku-4-5", _entry(200_000, 64_000, False, True, False))
    assert notes == ["context_window 1000000 is above its max_input_tokens 200000",
                     "max_output_tokens 128000 is above its max_tokens 64000",
                     "it reads no images: set vision = false",
                     "it takes adaptive thinking, where orca judges budget by its id"]
    fits = ModelConfig(context_window=200_000, max_output_tokens=64_000)
    assert model_notes(fits, "claude-haiku-4-5", _entry(200_000, 64_000, True, False, True)) == []
    assert model_notes(replace(fits, vision=False), "claude-haiku-4-5",
                       _entry(200_000, 64_000, False, False, True)) == []
    # a list that says nothing (OpenAI's), or zeros, contradicts nothing
    assert model_notes(cfg, "gpt-4.1", {"id": "gpt-4.1", "object": "model"}) == []
    assert model_notes(cfg, "claude-opus-4-8", _entry(0, 0, True, True, False)) == []


async def test_a_limit_the_provider_contradicts_warns_the_probe(
    listing: tuple[ListingUpstream, str],
) -> None:
    up, base = listing
    listed = {m: _entry(1_000_000, 128_000, True, True, False) for m in up.models}
    listed["claude-haiku-4-5-20251001"] = _entry(200_000, 64_000, True, False, True)
    up.entries = listed
    ch = _anthropic(base, ("claude-haiku-4-5", "claude-opus-4-8"))
    cfg = Config(models={"claude-haiku-4-5": ModelConfig(context_window=1_000_000),
                         "claude-opus-4-8": ModelConfig(context_window=1_000_000)})
    check = await _channel_check(ch, cfg, True)
    assert check.status == "warn", check
    assert ("the provider says otherwise of claude-haiku-4-5: context_window 1000000 is above "
            "its max_input_tokens 200000") in check.detail
    assert "claude-opus-4-8:" not in check.detail
    assert "[models]" in check.fix
