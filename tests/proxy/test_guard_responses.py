"""orca's own errors answered in the Responses API shape through `send_error` (SPEC §13.1)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from orca_cli.proxy.guard import send_error


@pytest.mark.parametrize(
    ("status", "etype", "code"),
    [(400, "invalid_request_error", "invalid_request"), (404, "invalid_request_error", "model_not_found"),
     (413, "invalid_request_error", "request_too_large"),
     (429, "rate_limit_error", "rate_limit_exceeded"), (503, "server_error", "service_unavailable")],
)
async def test_send_error_in_the_responses_shape(status: int, etype: str, code: str) -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await send_error(send, "responses", status, "no router named x",  # type: ignore[arg-type]
                     extra_headers=[(b"x-should-retry", b"false")])
    start, body = sent
    assert start["status"] == status
    headers = dict(start["headers"])
    assert headers[b"content-type"].startswith(b"application/json")
    assert headers[b"x-should-retry"] == b"false"
    assert orjson.loads(body["body"]) == {
        "error": {"message": "no router named x", "type": etype, "param": None, "code": code}
    }


async def _sent(api: str, status: int, message: str, code: str) -> tuple[dict[bytes, bytes], Any]:
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(dict(message))

    await send_error(send, api, status, message, code=code,  # type: ignore[arg-type]
                     extra_headers=[(b"x-should-retry", b"false")])
    start, body = sent
    assert start["status"] == status
    return dict(start["headers"]), orjson.loads(body["body"])


@pytest.mark.parametrize("code", ["budget_exceeded", "budget", "workspace_cap", "route_denied"])
async def test_a_spend_limit_429_is_a_usage_limit_codex_shows_with_its_message(
        code: str) -> None:
    """Codex CLI prints a 429's body only for `usage_limit_reached`, with the text of
    `x-codex-promo-message`; any other 429 reads "exceeded retry limit"."""
    message = 'budget session_usd for session "s\u00e9\nx" is spent: $0.0062 of $0.006'
    headers, body = await _sent("responses", 429, message, code)
    assert body["error"]["type"] == "usage_limit_reached"
    assert body["error"]["code"] == code and body["error"]["message"].startswith("budget")
    assert headers[b"x-should-retry"] == b"false"
    # printable ASCII only: a session id is the client's text, never a header break
    assert headers[b"x-codex-promo-message"] == (
        b'budget session_usd for session "s??x" is spent: $0.0062 of $0.006')


@pytest.mark.parametrize(("api", "status", "code"), [
    ("openai", 429, "budget_exceeded"), ("anthropic", 429, "budget_exceeded"),
    ("responses", 429, "rate_limited"), ("responses", 503, "no_candidate"),
    ("responses", 403, "route_denied")])
async def test_other_refusals_keep_their_type_and_no_codex_header(
        api: str, status: int, code: str) -> None:
    headers, body = await _sent(api, status, "refused", code)
    assert b"x-codex-promo-message" not in headers
    assert body["error"]["type"] != "usage_limit_reached"
