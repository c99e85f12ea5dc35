"""Inline images against the context-overflow check (SPEC §14.3), through the real server.

A pasted screenshot is ≈ 1.2 MB of base64: by its bytes ≈ 300k tokens, more than a 200k
window, yet a provider counts it as ≈ 1.6k. Sent in each inbound format to a router whose one
model has a 200k window, it is forwarded; a text that is really too long is still refused in
the provider's own words."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from orca_cli.testing import Sidecar
from tests.e2e.media_kit import doc_sidecar, post_json

pytestmark = pytest.mark.asyncio

MODEL = "claude-sonnet-4-5"
WIDE_MODEL = "gemini-wide"
WINDOW = 200_000
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 3_600).decode()  # ≈ 1.2 MB
DATA_URL = "data:image/png;base64," + PNG


@pytest.fixture
async def sidecar() -> AsyncIterator[Sidecar]:
    doc: dict[str, Any] = {
        "channels": [{"name": "sim-vision", "type": "sim", "keys": ["sim-vision-key"],
                      "api": ["openai", "anthropic", "responses"],
                      "models": [MODEL, WIDE_MODEL], "latency_ms": 0}],
        "models": {MODEL: {"input": 3.0, "output": 15.0, "context_window": WINDOW},
                   WIDE_MODEL: {"input": 1.0, "output": 5.0, "context_window": 2_000_000}},
        "routers": {"vision": {"strategy": "cheapest", "allowed_models": [MODEL]},
                    "wide": {"strategy": "cheapest", "allowed_models": [WIDE_MODEL]}},
    }
    async with doc_sidecar(doc, "media-test") as sc:
        yield sc


def _anthropic(content: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    return "/v1/messages", {"model": "orca/vision", "max_tokens": 64,
                            "messages": [{"role": "user", "content": content}]}


def _bodies(text: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """The same ask (an inline PNG and `text`) in each inbound format."""
    return {
        "openai": ("/v1/chat/completions", {"model": "orca/vision", "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": DATA_URL}},
                                         {"type": "text", "text": text}]}]}),
        "anthropic": _anthropic([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG}},
            {"type": "text", "text": text}]),
        "responses": ("/v1/responses", {"model": "orca/vision", "store": False, "input": [
            {"type": "message", "role": "user", "content": [
                {"type": "input_image", "image_url": DATA_URL},
                {"type": "input_text", "text": text}]}]}),
    }


@pytest.mark.parametrize("api", ["openai", "anthropic", "responses"])
async def test_a_large_inline_image_is_forwarded_not_refused_as_too_long(
        sidecar: Sidecar, api: str) -> None:
    path, body = _bodies("what is this")[api]
    assert len(orjson.dumps(body)) // 4 > WINDOW  # by its bytes it would not fit
    got = await post_json(sidecar, path, body)
    assert got.status_code == 200, got.text
    assert got.headers["x-orca-model"] == MODEL


async def test_an_image_in_a_tool_result_is_counted_as_an_image(sidecar: Sidecar) -> None:
    # Claude Code's Read tool answers with the picture inside the tool result.
    path, body = _anthropic([{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": PNG}}]}])
    body["messages"][:0] = [
        {"role": "user", "content": "look at shot.png"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                           "input": {"file_path": "shot.png"}}]}]
    got = await post_json(sidecar, path, body)
    assert got.status_code == 200, got.text


@pytest.mark.parametrize("api", ["openai", "anthropic", "responses"])
async def test_a_text_too_long_for_every_window_is_still_refused_beside_an_image(
        sidecar: Sidecar, api: str) -> None:
    path, body = _bodies("word " * 260_000)[api]  # 1.3 MB of text: 260k tokens, and a PNG
    got = await post_json(sidecar, path, body)
    assert got.status_code == 400, got.text
    err = got.json()["error"]
    if api == "anthropic":
        assert err["type"] == "invalid_request_error"
        assert err["message"].startswith("prompt is too long: ")
        assert f"> {WINDOW} maximum" in err["message"]
    else:
        assert err["code"] == "context_length_exceeded"


async def test_a_text_only_prompt_too_long_is_refused(sidecar: Sidecar) -> None:
    path, body = _anthropic([{"type": "text", "text": "word " * 260_000}])
    got = await post_json(sidecar, path, body)
    assert got.status_code == 400
    assert got.json()["error"]["message"].startswith("prompt is too long: ")


async def test_a_prompt_that_may_fit_goes_to_the_provider(sidecar: Sidecar) -> None:
    """190k tokens of prose against a 200k window: a token per 4 bytes would say 237k and
    refuse it, a provider takes it. When every candidate's window is below the upper estimate
    but one is above the lower bound (a token per 6 bytes), orca serves it and lets the
    provider decide (SPEC §14.3: refuse only what no candidate could take)."""
    path, body = _anthropic([{"type": "text", "text": "word " * 190_000}])
    got = await post_json(sidecar, path, body)
    assert got.status_code == 200, got.text[:300]


async def test_the_body_is_scanned_only_when_it_may_not_fit_a_model_the_target_reaches(
        sidecar: Sidecar, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan for inline media reads the whole body: it runs only where the byte estimate
    is over the window of a model the request can go to (here `vision`'s 200k), never for a
    target whose models all hold it (`wide`), whatever the other configured models' windows."""
    from orca_cli.wire import estimate

    scans: list[int] = []
    real = estimate._inline_media

    def counted(body: Any) -> tuple[int, int]:
        scans.append(1)
        return real(body)

    monkeypatch.setattr(estimate, "_inline_media", counted)
    path, body = _bodies("what is this")["openai"]
    for router, scanned in (("wide", 0), ("vision", 1), ("wide", 1)):
        body["model"] = f"orca/{router}"
        got = await post_json(sidecar, path, body)
        assert got.status_code == 200, got.text
        assert len(scans) == scanned, router
