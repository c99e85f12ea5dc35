"""`intake.scan_head`: one pass over a request's headers; the names are read lower-cased, by a
bounded memo of the names clients send."""

from __future__ import annotations

from typing import Any

from orca_cli.config.schema import ServerConfig
from orca_cli.proxy import intake
from orca_cli.proxy.guard import GuardPolicy

PORT = 8787


def _scope(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": "/v1/chat/completions",
            "headers": [(b"host", f"127.0.0.1:{PORT}".encode()),
                        (b"content-type", b"application/json"), *headers]}


def test_names_are_read_lower_cased_and_values_as_sent() -> None:
    policy = GuardPolicy.from_config(ServerConfig(), port=PORT, admin_token="")
    for _ in range(2):  # the second pass reads the names from the memo
        head = intake.scan_head(policy, _scope([(b"X-Request-Id", b"Abc-1"),
                                               (b"X-OrcaRouter-Tier", b"strong"),
                                               (b"Anthropic-Version", b"2023-06-01")]))
        assert ("x-request-id", "Abc-1") in head.headers
        assert head.client_request_id == "Abc-1"
        assert head.tier_ask == "strong"
        assert head.api == "openai"  # the path decides; the hint matters for /v1/models


def test_the_name_memo_stays_bounded_whatever_names_a_client_makes_up() -> None:
    policy = GuardPolicy.from_config(ServerConfig(), port=PORT, admin_token="")
    long_name = b"x-" + b"a" * 200
    for i in range(intake._NAMES_MAX + 100):
        head = intake.scan_head(policy, _scope([(f"x-made-up-{i}".encode(), b"1"),
                                               (long_name, b"2")]))
        assert (f"x-made-up-{i}", "1") in head.headers
        assert (long_name.decode(), "2") in head.headers
    assert len(intake._NAMES) <= intake._NAMES_MAX
    assert long_name not in intake._NAMES
