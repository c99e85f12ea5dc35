"""An image goes only to a model that reads images (`[models.X] vision = false` excludes the
rest, reason `vision`), through the real server in each inbound format.

The router's cheapest model reads none (as DeepSeek's chat models, which answer an image
400): a request carrying an image — in the user's message or in a tool result — is served by
the next model of its tier, the session's pin moves with it, and a router whose every model
is blind refuses it with a 400 in the inbound shape before any upstream call. A text-only
request still goes to the cheapest."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from orca_cli.testing import Sidecar, eventually
from tests.e2e.media_kit import doc_sidecar, post_json

pytestmark = pytest.mark.asyncio

BLIND, SEEING = "text-only-chat", "vision-chat"
SMALL, BIG_BLIND = "small-vision", "big-text-only"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
DATA_URL = "data:image/png;base64," + PNG


@pytest.fixture
async def sidecar() -> AsyncIterator[Sidecar]:
    doc: dict[str, Any] = {
        "channels": [{"name": "sim-all", "type": "sim", "keys": ["sim-all-key"],
                      "api": ["openai", "anthropic", "responses"],
                      "models": [BLIND, SEEING, SMALL, BIG_BLIND], "latency_ms": 0}],
        "models": {BLIND: {"input": 0.27, "output": 1.1, "vision": False},
                   SEEING: {"input": 0.4, "output": 1.6},
                   SMALL: {"input": 0.5, "output": 2.0, "context_window": 2_000},
                   BIG_BLIND: {"input": 0.1, "output": 0.4, "vision": False,
                               "context_window": 1_000_000}},
        "routers": {"coding": {"strategy": "cheapest", "allowed_models": [BLIND, SEEING]},
                    "blind": {"strategy": "cheapest", "allowed_models": [BLIND]},
                    "small": {"strategy": "cheapest", "allowed_models": [BIG_BLIND, SMALL]}},
    }
    async with doc_sidecar(doc, "vision-test") as sc:
        yield sc


def _bodies(router: str, image: bool) -> dict[str, tuple[str, dict[str, Any]]]:
    """A two-turn conversation in each format, the second user message with a PNG or not."""
    model = f"orca/{router}"
    chat_img = [{"type": "image_url", "image_url": {"url": DATA_URL}}] if image else []
    ant_img = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                            "data": PNG}}] if image else []
    resp_img = [{"type": "input_image", "image_url": DATA_URL}] if image else []
    return {
        "openai": ("/v1/chat/completions", {"model": model, "messages": [
            {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
            {"role": "user", "content": [*chat_img, {"type": "text", "text": "what is it"}]}]}),
        "anthropic": ("/v1/messages", {"model": model, "max_tokens": 64, "messages": [
            {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
            {"role": "user", "content": [*ant_img, {"type": "text", "text": "what is it"}]}]}),
        "responses": ("/v1/responses", {"model": model, "store": False, "input": [
            {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"},
            {"type": "message", "role": "user", "content": [
                *resp_img, {"type": "input_text", "text": "what is it"}]}]}),
    }


async def _post(sc: Sidecar, path: str, body: dict[str, Any], session: str) -> Any:
    return await post_json(sc, path, body, **{"x-orca-session": session})


@pytest.mark.parametrize("api", ["openai", "anthropic", "responses"])
async def test_an_image_goes_to_the_model_that_reads_it_and_the_pin_follows(
        sidecar: Sidecar, api: str) -> None:
    session = f"vision-{api}"
    path, text = _bodies("coding", image=False)[api]
    first = await _post(sidecar, path, text, session)
    assert first.status_code == 200, first.text
    assert first.headers["x-orca-model"] == BLIND  # the cheapest, while no image is in sight
    path, shot = _bodies("coding", image=True)[api]
    got = await _post(sidecar, path, shot, session)
    assert got.status_code == 200, got.text
    assert got.headers["x-orca-model"] == SEEING
    rid = got.headers["x-orca-request-id"]
    trace = await eventually(lambda: sidecar.store.get_trace(rid), 10, what="the trace")
    excluded = {c["model"]: c.get("excluded") for c in trace["candidates"]}
    assert excluded == {BLIND: "vision", SEEING: None}, trace["candidates"]
    again = await _post(sidecar, path, shot, session)  # the history carries the image on
    assert again.headers["x-orca-model"] == SEEING


async def test_an_image_in_a_tool_result_counts(sidecar: Sidecar) -> None:
    body = {"model": "orca/coding", "max_tokens": 64, "messages": [
        {"role": "user", "content": "look at shot.png"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                           "input": {"file_path": "shot.png"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "image", "source": {
                                          "type": "base64", "media_type": "image/png",
                                          "data": PNG}}]}]}]}
    got = await _post(sidecar, "/v1/messages", body, "vision-tool")
    assert got.status_code == 200 and got.headers["x-orca-model"] == SEEING, got.text


@pytest.mark.parametrize("api", ["openai", "anthropic", "responses"])
async def test_a_router_of_blind_models_refuses_an_image_in_the_inbound_shape(
        sidecar: Sidecar, api: str) -> None:
    path, shot = _bodies("blind", image=True)[api]
    got = await _post(sidecar, path, shot, f"blind-{api}")
    assert got.status_code == 400, got.text
    body = got.json()
    if api == "anthropic":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    else:
        assert body["error"]["type"] == "invalid_request_error"
        assert body["error"]["code"] == "image_not_supported"
    assert "carries an image" in body["error"]["message"]
    assert f"{BLIND}: vision = false" in body["error"]["message"]
    path, text = _bodies("blind", image=False)[api]
    assert (await _post(sidecar, path, text, f"blind-text-{api}")).status_code == 200


async def test_too_long_for_every_model_that_reads_the_image_is_an_overflow(
        sidecar: Sidecar) -> None:
    """The one model that reads images is too small, the one large enough is blind: the
    request is too long (the agent compacts, then fits the model that reads it), not a 503."""
    body = {"model": "orca/small", "max_tokens": 64, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "text", "text": "word " * 4_000}]}]}
    got = await _post(sidecar, "/v1/messages", body, "vision-long")
    assert got.status_code == 400, got.text
    assert got.json()["error"]["message"].startswith("prompt is too long: ")
    assert "> 2000 maximum" in got.json()["error"]["message"]
