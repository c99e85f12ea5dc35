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
