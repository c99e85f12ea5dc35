"""Responses API usage billed like Chat Completions: cached tokens are part of input_tokens."""

from __future__ import annotations

import orjson
import pytest

from orca_cli.config.schema import ModelConfig
from orca_cli.routing.cost import BillableTokens, billable_tokens, request_cost
from orca_cli.wire.usage import ResponseTap

GPT = ModelConfig(input=1.25, output=10.00, cache_read=0.1, cache_write=1.0)


def test_responses_usage_from_the_wire_is_billed_once_per_token() -> None:
    tap = ResponseTap("responses", stream=False, max_tokens=None)
    tap.feed_body(orjson.dumps({
        "id": "resp_1", "object": "response", "status": "completed", "output": [],
        "usage": {"input_tokens": 9000, "input_tokens_details": {"cached_tokens": 8192},
                  "output_tokens": 700, "output_tokens_details": {"reasoning_tokens": 500},
                  "total_tokens": 9700},
    }))
    assert tap.usage is not None
    parts = billable_tokens(tap.usage, "responses")
    assert parts == BillableTokens(uncached=808, cache_read=8192, cache_write=0, output=700)
    # 808 · 1.25 + 8,192 · 0.1 · 1.25 + 700 · 10 = 1,010 + 1,024 + 7,000
    assert request_cost(tap.usage, "responses", GPT) == pytest.approx(9034e-6)
    assert request_cost(tap.usage, "responses", GPT) == request_cost(tap.usage, "openai", GPT)


def test_responses_cached_above_input_is_clamped() -> None:
    tap = ResponseTap("responses", stream=False, max_tokens=None)
    tap.feed_body(orjson.dumps({
        "object": "response", "status": "completed",
        "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 500},
                  "output_tokens": 1},
    }))
    assert tap.usage is not None
    assert billable_tokens(tap.usage, "responses") == BillableTokens(0, 100, 0, 1)


def test_responses_reported_cache_writes_are_part_of_input_tokens() -> None:
    tap = ResponseTap("responses", stream=False, max_tokens=None)
    tap.feed_body(orjson.dumps({
        "object": "response", "status": "completed",
        "usage": {"input_tokens": 5000,
                  "input_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 3000},
                  "output_tokens": 10},
    }))
    assert tap.usage is not None and tap.usage.cache_write_tokens == 3000
    assert billable_tokens(tap.usage, "responses") == BillableTokens(1000, 1000, 3000, 10)
