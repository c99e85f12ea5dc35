"""The Responses API endpoint on the upstream side (SPEC §13.1)."""

from __future__ import annotations

import pytest

from orca_cli.config.schema import ChannelConfig
from orca_cli.proxy.transport import API_PATHS, ENDPOINTS, auth_headers, upstream_url


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1/responses"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1/responses"),
        ("https://api.openai.com", "https://api.openai.com/v1/responses"),
        ("https://openrouter.ai/api", "https://openrouter.ai/api/v1/responses"),
        ("https://r.example/openai/v1", "https://r.example/openai/v1/responses"),
        ("http://127.0.0.1:9000", "http://127.0.0.1:9000/v1/responses"),
        ("sim://local", "sim://local/v1/responses"),
    ],
)
def test_responses_maps_like_chat_completions(base: str, url: str) -> None:
    ch = ChannelConfig(name="c", base_url=base)
    assert upstream_url(ch, "responses", "/v1/responses") == url
    chat = upstream_url(ch, "openai", "/v1/chat/completions")
    assert chat.removesuffix("/chat/completions") == url.removesuffix("/responses")


def test_responses_endpoint_speaks_only_responses() -> None:
    ch = ChannelConfig(name="c", base_url="https://api.openai.com/v1")
    assert ENDPOINTS["/v1/responses"] == "responses"
    assert API_PATHS["responses"] == "/v1/responses"
    with pytest.raises(ValueError, match="speaks responses"):
        upstream_url(ch, "openai", "/v1/responses")
    with pytest.raises(ValueError, match="speaks openai"):
        upstream_url(ch, "responses", "/v1/chat/completions")


def test_responses_auth_is_a_bearer_token() -> None:
    assert auth_headers("responses", "sk-x") == (("authorization", "Bearer sk-x"),)
