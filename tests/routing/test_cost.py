"""Request cost from usage and the replay's turn-cost model (SPEC §10), hand-computed.

Prices are $ per 1M tokens, so each expectation is written as "micro-dollars" · 1e-6.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orca_cli.config.schema import ModelConfig
from orca_cli.routing.cost import (
    REPLAY_OUTPUT_TOKENS,
    BillableTokens,
    billable_tokens,
    cold_turn_cost,
    expected_turn_cost,
    request_cost,
    warm_turn_cost,
)
from orca_cli.wire.usage import ResponseTap, Usage

# An OpenAI-style model (no write premium), an Anthropic 5-minute and 1-hour cache pricing.
GPT = ModelConfig(input=2.50, output=10.00, cache_read=0.1, cache_write=1.0)
HAIKU = ModelConfig(input=1.00, output=5.00, cache_read=0.1, cache_write=1.25)
HAIKU_1H = ModelConfig(input=1.00, output=5.00, cache_read=0.1, cache_write=2.0)
SONNET_VIA_OPENROUTER = ModelConfig(input=3.00, output=15.00, cache_read=0.1, cache_write=1.25)


def tapped(api: str, body: dict[str, object]) -> Usage:
    tap = ResponseTap(api, stream=False, max_tokens=None)  # type: ignore[arg-type]
    tap.feed_body(orjson.dumps(body))
    assert tap.usage is not None
    return tap.usage


# --- OpenAI-format usage ----------------------------------------------------------------------


def test_openai_uncached_is_prompt_minus_cached() -> None:
    usage = Usage(prompt_tokens=2006, cached_tokens=1920, cache_write_tokens=0, output_tokens=300)
    # 86 uncached · 2.50 + 1,920 read · 0.1 · 2.50 + 300 out · 10 = 215 + 480 + 3,000
    assert request_cost(usage, "openai", GPT) == pytest.approx(3695e-6)
    assert billable_tokens(usage, "openai") == BillableTokens(86, 1920, 0, 300)


def test_openai_reported_cache_writes_are_part_of_prompt_tokens() -> None:
    """OpenRouter's `cache_write_tokens` sits inside `prompt_tokens`: charged once, at write."""
    usage = tapped(
        "openai",
        {
            "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 194,
                "completion_tokens": 2,
                "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 100},
            },
        },
    )
    # 94 uncached · 3 + 100 written · 1.25 · 3 + 2 out · 15 = 282 + 375 + 30
    assert request_cost(usage, "openai", SONNET_VIA_OPENROUTER) == pytest.approx(687e-6)


def test_deepseek_cache_hits_are_read_and_misses_full_price() -> None:
    deepseek = ModelConfig(input=0.28, output=0.42, cache_read=0.1, cache_write=1.0)
    usage = tapped(
        "openai",
        {
            "choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": 10_000,
                "completion_tokens": 1_000,
                "prompt_cache_hit_tokens": 8_000,
                "prompt_cache_miss_tokens": 2_000,
            },
        },
    )
    # 2,000 · 0.28 + 8,000 · 0.028 + 1,000 · 0.42 = 560 + 224 + 420
    assert request_cost(usage, "openai", deepseek) == pytest.approx(1204e-6)


def test_openai_cold_request_is_the_whole_prompt_at_the_input_price() -> None:
    usage = Usage(prompt_tokens=12_000, output_tokens=500)
    assert request_cost(usage, "openai", GPT) == pytest.approx((30_000 + 5_000) * 1e-6)


# --- Anthropic-format usage -------------------------------------------------------------------


def test_anthropic_input_tokens_are_the_uncached_part_and_nothing_is_counted_twice() -> None:
    usage = tapped(
        "anthropic",
        {
            "type": "message",
            "content": [{"type": "text", "text": "done"}],
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 50,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
                "output_tokens": 89,
            },
        },
    )
    assert usage == Usage(1250, 1000, 200, 89)  # the tap adds reads and writes to the prompt
    assert billable_tokens(usage, "anthropic") == BillableTokens(50, 1000, 200, 89)
    # 50 · 1 + 1,000 · 0.1 + 200 · 1.25 + 89 · 5 = 50 + 100 + 250 + 445
    assert request_cost(usage, "anthropic", HAIKU) == pytest.approx(845e-6)


def test_anthropic_one_hour_writes_use_the_models_write_multiplier() -> None:
    usage = Usage(prompt_tokens=10_050, cached_tokens=0, cache_write_tokens=10_000, output_tokens=0)
    assert request_cost(usage, "anthropic", HAIKU) == pytest.approx((50 + 12_500) * 1e-6)
    assert request_cost(usage, "anthropic", HAIKU_1H) == pytest.approx((50 + 20_000) * 1e-6)


def test_both_formats_agree_on_consistent_usage() -> None:
    usage = Usage(
        prompt_tokens=5_000, cached_tokens=3_000, cache_write_tokens=1_500, output_tokens=7
    )
    assert request_cost(usage, "openai", HAIKU) == request_cost(usage, "anthropic", HAIKU)


# --- inconsistent usage -----------------------------------------------------------------------


def test_openai_reads_above_the_prompt_are_clamped_to_it() -> None:
    usage = Usage(prompt_tokens=100, cached_tokens=150, output_tokens=0)
    assert billable_tokens(usage, "openai") == BillableTokens(0, 100, 0, 0)
    assert request_cost(usage, "openai", GPT) == pytest.approx(100 * 0.25e-6)


def test_openai_writes_fill_only_what_the_reads_left() -> None:
    usage = Usage(prompt_tokens=100, cached_tokens=80, cache_write_tokens=50)
    assert billable_tokens(usage, "openai") == BillableTokens(0, 80, 20, 0)


def test_anthropic_parts_are_kept_and_the_uncached_remainder_floors_at_zero() -> None:
    usage = Usage(prompt_tokens=100, cached_tokens=150, cache_write_tokens=10, output_tokens=1)
    assert billable_tokens(usage, "anthropic") == BillableTokens(0, 150, 10, 1)
    assert request_cost(usage, "anthropic", HAIKU) == pytest.approx((15 + 12.5 + 5) * 1e-6)


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_negative_counts_cost_nothing(api: str) -> None:
    usage = Usage(prompt_tokens=-5, cached_tokens=-3, cache_write_tokens=-2, output_tokens=-1)
    assert request_cost(usage, api, HAIKU) == 0.0  # type: ignore[arg-type]


counts = st.integers(min_value=-1_000, max_value=10_000_000)


@given(counts, counts, counts, counts, st.sampled_from(["openai", "anthropic"]))
def test_cost_is_never_negative(prompt: int, cached: int, write: int, out: int, api: str) -> None:
    usage = Usage(prompt, cached, write, out)
    parts = billable_tokens(usage, api)  # type: ignore[arg-type]
    assert min(parts.uncached, parts.cache_read, parts.cache_write, parts.output) >= 0
    if api == "openai":
        assert parts.uncached + parts.cache_read + parts.cache_write == max(prompt, 0)
    assert request_cost(usage, api, HAIKU_1H) >= 0.0  # type: ignore[arg-type]


def test_an_unknown_api_is_rejected() -> None:
    with pytest.raises(ValueError, match="'gemini'"):
        request_cost(Usage(1), "gemini", GPT)  # type: ignore[arg-type]


# --- the replay model -------------------------------------------------------------------------


def test_replay_charges_500_output_tokens_a_turn() -> None:
    assert REPLAY_OUTPUT_TOKENS == 500


def test_warm_turn_reads_the_prefix_and_writes_the_delta() -> None:
    # Anthropic: 10,000 · 0.1 · 1 + 2,000 · 1.25 · 1 + 500 · 5 = 1,000 + 2,500 + 2,500
    assert warm_turn_cost(10_000, 2_000, 500, HAIKU) == pytest.approx(6000e-6)
    # OpenAI: 10,000 · 0.25 + 2,000 · 2.5 + 500 · 10 = 2,500 + 5,000 + 5,000
    assert warm_turn_cost(10_000, 2_000, 500, GPT) == pytest.approx(12_500e-6)


def test_cold_turn_writes_the_whole_prompt() -> None:
    assert cold_turn_cost(12_000, 500, HAIKU) == pytest.approx((15_000 + 2_500) * 1e-6)
    assert cold_turn_cost(12_000, 500, HAIKU_1H) == pytest.approx((24_000 + 2_500) * 1e-6)
    assert cold_turn_cost(12_000, 500, GPT) == pytest.approx((30_000 + 5_000) * 1e-6)


def test_expected_turn_cost_weights_warm_by_one_over_n_keys() -> None:
    # three keys, no affinity: 1/3 · 6,000 + 2/3 · 17,500
    expected = expected_turn_cost(10_000, 2_000, 500, HAIKU, warm_probability=1 / 3)
    assert expected == pytest.approx((2_000 + 35_000 / 3) * 1e-6)


def test_expected_turn_cost_at_the_ends_is_warm_or_cold() -> None:
    warm = expected_turn_cost(10_000, 2_000, 500, GPT, warm_probability=1.0)
    cold = expected_turn_cost(10_000, 2_000, 500, GPT, warm_probability=0.0)
    assert warm == pytest.approx(warm_turn_cost(10_000, 2_000, 500, GPT))
    assert cold == pytest.approx(cold_turn_cost(12_000, 500, GPT))


def test_warm_is_cheaper_than_cold_whenever_reads_are_discounted() -> None:
    for model in (GPT, HAIKU, HAIKU_1H):
        assert warm_turn_cost(50_000, 800, 500, model) < cold_turn_cost(50_800, 500, model)


@pytest.mark.parametrize("p", [-0.1, 1.5, float("nan"), float("inf")])
def test_warm_probability_outside_the_unit_interval_is_rejected(p: float) -> None:
    with pytest.raises(ValueError, match="warm_probability"):
        expected_turn_cost(1, 1, 1, GPT, warm_probability=p)


def test_negative_replay_token_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match="delta_tokens: must be >= 0, got -1"):
        warm_turn_cost(10, -1, 0, GPT)
    with pytest.raises(ValueError, match="prompt_tokens"):
        cold_turn_cost(-1, 0, GPT)
