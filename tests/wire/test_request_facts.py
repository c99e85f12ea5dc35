"""Stream, token-limit and include_usage facts of a request body, per format."""

from __future__ import annotations

from typing import Any

import pytest

from orca_cli.wire.request_facts import RequestFacts, request_facts


@pytest.mark.parametrize(
    ("body", "api", "facts"),
    [
        ({"stream": True, "max_output_tokens": 4096}, "responses", RequestFacts(True, 4096, False)),
        ({"max_output_tokens": 64, "max_tokens": 9}, "responses", RequestFacts(False, 64, False)),
        ({"stream": "true", "max_output_tokens": "5"}, "responses", RequestFacts(False, None, False)),
        ({"stream": True}, "openai", RequestFacts(True, None, True)),
        ({"stream": True, "stream_options": {"include_usage": True}, "max_completion_tokens": 7},
         "openai", RequestFacts(True, 7, False)),
        ({"max_tokens": 3, "max_completion_tokens": 7}, "openai", RequestFacts(False, 3, False)),
        ({"stream": True, "max_tokens": 1024}, "anthropic", RequestFacts(True, 1024, False)),
        ({"max_tokens": True}, "anthropic", RequestFacts(False, None, False)),
    ],
)
def test_request_facts(body: dict[str, Any], api: str, facts: RequestFacts) -> None:
    assert request_facts(body, api) == facts  # type: ignore[arg-type]
