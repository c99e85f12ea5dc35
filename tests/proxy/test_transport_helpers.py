"""Request/response rules of the transport seam (SPEC §1.2, §7)."""

from __future__ import annotations

import pytest

from orca_cli.config.schema import ChannelConfig, ServerConfig
from orca_cli.errors import UpstreamError
from orca_cli.proxy.transport import (
    Timeouts,
    UpstreamConnectError,
    UpstreamStreamError,
    UpstreamTimeout,
    anthropic_version_header,
    auth_headers,
    filter_response_headers,
    upstream_url,
)


def test_response_headers_pass_an_allow_list_only() -> None:
    upstream = [
        ("Content-Type", "text/event-stream"),
        ("request-id", "req_1"),
        ("x-request-id", "abc"),
        ("openai-processing-ms", "12"),
        ("retry-after", "3"),
        ("retry-after-ms", "3000"),
        ("x-should-retry", "false"),
        ("x-ratelimit-remaining-tokens", "10"),
        ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:00Z"),
        ("Set-Cookie", "session=1"),
        ("connection", "keep-alive"),
        ("transfer-encoding", "chunked"),
        ("content-length", "42"),
        ("server", "cloudflare"),
        ("openai-organization", "acme-corp"),
        ("cf-ray", "x"),
        ("x-ratelimit-evil", "a\r\nb"),
    ]
    kept = filter_response_headers(upstream)
    assert [k for k, _ in kept] == [
        "content-type",
        "request-id",
        "x-request-id",
        "openai-processing-ms",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "x-ratelimit-remaining-tokens",
        "anthropic-ratelimit-requests-reset",
    ]


def test_auth_headers_per_format() -> None:
    assert auth_headers("openai", "sk-1") == (("authorization", "Bearer sk-1"),)
    assert auth_headers("anthropic", "sk-ant") == (("x-api-key", "sk-ant"),)


def test_anthropic_version_is_added_only_when_the_client_sent_none() -> None:
    assert anthropic_version_header([("content-type", "application/json")]) == (
        ("anthropic-version", "2023-06-01"),
    )
    assert anthropic_version_header([("Anthropic-Version", "2024-10-22")]) == ()


@pytest.mark.parametrize(
    ("base", "api", "path", "url"),
    [
        (
            "https://api.anthropic.com",
            "anthropic",
            "/v1/messages",
            "https://api.anthropic.com/v1/messages",
        ),
        (
            "https://api.anthropic.com/",
            "anthropic",
            "/v1/messages/count_tokens",
            "https://api.anthropic.com/v1/messages/count_tokens",
        ),
        (
            "https://api.openai.com/v1",
            "openai",
            "/v1/chat/completions",
            "https://api.openai.com/v1/chat/completions",
        ),
        (
            "https://api.openai.com/v1/",
            "openai",
            "/v1/chat/completions",
            "https://api.openai.com/v1/chat/completions",
        ),
        (
            "https://openrouter.ai/api",
            "openai",
            "/v1/chat/completions",
            "https://openrouter.ai/api/v1/chat/completions",
        ),
        (
            "https://generativelanguage.googleapis.com/v1beta/openai",
            "openai",
            "/v1/chat/completions",
            "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
        ),
        (
            "http://127.0.0.1:9000",
            "openai",
            "/v1/chat/completions",
            "http://127.0.0.1:9000/v1/chat/completions",
        ),
        ("sim://local", "anthropic", "/v1/messages", "sim://local/v1/messages"),
    ],
)
def test_upstream_url(base: str, api: str, path: str, url: str) -> None:
    assert upstream_url(ChannelConfig(name="c", base_url=base), api, path) == url  # type: ignore[arg-type]


def test_upstream_url_rejects_an_unknown_or_mismatched_endpoint() -> None:
    ch = ChannelConfig(name="c", base_url="https://x.test")
    with pytest.raises(ValueError, match="unknown upstream endpoint"):
        upstream_url(ch, "openai", "/v1/embeddings")
    with pytest.raises(ValueError, match="speaks anthropic"):
        upstream_url(ch, "openai", "/v1/messages")


def test_errors_are_upstream_errors_with_retry_and_origin_flags() -> None:
    assert isinstance(UpstreamConnectError("x"), UpstreamError)
    assert UpstreamTimeout("connect").retryable and UpstreamTimeout("first_byte").retryable
    assert not UpstreamTimeout("idle").retryable and not UpstreamTimeout("total").retryable
    assert UpstreamTimeout("first_byte").local_origin and not UpstreamStreamError("x").local_origin
    assert str(UpstreamTimeout("first_byte")) == "upstream first-byte timeout"


def test_timeouts_from_the_server_config() -> None:
    t = Timeouts.for_request(ServerConfig(), 100.0)
    assert (t.connect_s, t.first_byte_s, t.idle_s, t.deadline_monotonic) == (10, 120, 300, 1000.0)
