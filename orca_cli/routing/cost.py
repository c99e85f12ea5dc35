"""What a request costs, from its usage, and the replay's turn-cost model (SPEC §10).

Per request, in dollars (prices are $ per 1M tokens, so every term is divided by 10⁶):

    p_in · uncached + cache_read · p_in · cached + cache_write · p_in · cache_creation
    + p_out · output

`p_in` / `p_out` are `ModelConfig.input` / `.output`; `cache_read` and `cache_write` are
`ModelConfig`'s multipliers on the input price. They come from the config, never from here:
read 0.1 for the major providers; write 1.25 for Anthropic's 5-minute cache, 2.0 for its
1-hour cache, 1.0 for OpenAI and DeepSeek (which bill no write premium).

How the wire fields reach `Usage` (`wire/usage.py`) and so how nothing is counted twice:

* OpenAI format: `prompt_tokens` is the whole prompt; `cached_tokens` is
  `prompt_tokens_details.cached_tokens` (or DeepSeek's `prompt_cache_hit_tokens`) and
  `cache_write_tokens` is `prompt_tokens_details.cache_write_tokens` (OpenRouter reports it;
  OpenAI itself does not). Both are parts *of* `prompt_tokens`, so
  uncached = prompt_tokens - cached_tokens - cache_write_tokens, which is
  prompt_tokens - cached_tokens whenever no write is reported.
* Responses API: `input_tokens` is the whole prompt and `input_tokens_details.cached_tokens`
  a part of it, exactly as in Chat Completions, so it is billed by the OpenAI rule.
* Anthropic format: `input_tokens` (uncached), `cache_read_input_tokens` → `cached_tokens`
  and `cache_creation_input_tokens` → `cache_write_tokens` are reported apart, and the tap
  sets `prompt_tokens` = input + read + write. The same subtraction therefore gives back
  exactly `input_tokens`: the reads and writes are charged once each, at their multipliers.
  Anthropic's split of writes into 5-minute and 1-hour tokens is not kept; the model's one
  `cache_write` multiplier prices them all.

The two formats differ only in which numbers are primary when usage is inconsistent (a read
count above the prompt, a negative count). OpenAI's `prompt_tokens` is the total, so reads and
writes are clamped into it (read first, then write) and the three parts always sum to it.
Anthropic's parts are the reported figures and `prompt_tokens` is derived, so each part is
kept as reported and only the uncached remainder is floored at 0. Either way every count is
≥ 0 and the cost is never negative.

The replay (SPEC §10) prices turns rather than responses: a warm turn reads the cached prefix
and writes the new delta; a cold turn writes the whole prompt; each turn adds
`REPLAY_OUTPUT_TOKENS` of output. Without affinity a turn lands on a warm key with
probability 1/N for N keys on the channel (`expected_turn_cost`).
"""

from __future__ import annotations

import math

from orca_cli.config.schema import ModelConfig
from orca_cli.immutable import immutable
from orca_cli.types import Api
from orca_cli.wire.usage import Usage

__all__ = [
    "REPLAY_OUTPUT_TOKENS",
    "BillableTokens",
    "billable_tokens",
    "cold_turn_cost",
    "expected_turn_cost",
    "request_cost",
    "warm_turn_cost",
]

REPLAY_OUTPUT_TOKENS = 500  # SPEC §10: output tokens the replay charges per turn
_PER_TOKEN = 1e-6  # prices are $ per 1M tokens


@immutable
class BillableTokens:
    """A response's tokens split the way they are billed; every part is ≥ 0."""

    uncached: int
    cache_read: int
    cache_write: int
    output: int


def billable_tokens(usage: Usage, api: Api) -> BillableTokens:
    """Split normalised `usage` into billed parts (see the module docstring for the mapping)."""
    prompt = max(usage.prompt_tokens, 0)
    read = max(usage.cached_tokens, 0)
    write = max(usage.cache_write_tokens, 0)
    output = max(usage.output_tokens, 0)
    if api in ("openai", "responses"):
        read = min(read, prompt)
        write = min(write, prompt - read)
    elif api != "anthropic":
        raise ValueError(f"api: must be 'openai', 'anthropic' or 'responses', got {api!r}")
    return BillableTokens(max(prompt - read - write, 0), read, write, output)


def request_cost(usage: Usage, api: Api, model: ModelConfig) -> float:
    """The dollar cost of one response from its reported usage (SPEC §10)."""
    t = billable_tokens(usage, api)
    p_in = model.input
    dollars = (
        p_in * t.uncached
        + model.cache_read * p_in * t.cache_read
        + model.cache_write * p_in * t.cache_write
        + model.output * t.output
    )
    if usage.fast:  # served in fast mode: every price times the model's `fast`
        dollars *= model.fast
    return dollars * _PER_TOKEN


def _check_tokens(**counts: int) -> None:
    for name, value in counts.items():
        if value < 0:
            raise ValueError(f"{name}: must be >= 0, got {value}")


def warm_turn_cost(
    prefix_tokens: int, delta_tokens: int, output_tokens: int, model: ModelConfig
) -> float:
    """A turn on a warm cache: read · p_in · prefix + write · p_in · delta + p_out · output."""
    _check_tokens(
        prefix_tokens=prefix_tokens, delta_tokens=delta_tokens, output_tokens=output_tokens
    )
    p_in = model.input
    dollars = (
        model.cache_read * p_in * prefix_tokens
        + model.cache_write * p_in * delta_tokens
        + model.output * output_tokens
    )
    return dollars * _PER_TOKEN


def cold_turn_cost(prompt_tokens: int, output_tokens: int, model: ModelConfig) -> float:
    """A turn on a cold cache (turn 1, a tier switch, a key change): the whole prompt is
    written, write · p_in · prompt + p_out · output."""
    _check_tokens(prompt_tokens=prompt_tokens, output_tokens=output_tokens)
    dollars = model.cache_write * model.input * prompt_tokens + model.output * output_tokens
    return dollars * _PER_TOKEN


def expected_turn_cost(
    prefix_tokens: int,
    delta_tokens: int,
    output_tokens: int,
    model: ModelConfig,
    *,
    warm_probability: float,
) -> float:
    """The mean of the warm and the cold cost of a turn whose prompt is prefix + delta,
    weighted by `warm_probability` (1/N for N keys on the channel without affinity, 1 with a
    pin that holds, 0 on turn 1)."""
    if not (math.isfinite(warm_probability) and 0.0 <= warm_probability <= 1.0):
        raise ValueError(f"warm_probability: must be in [0, 1], got {warm_probability}")
    warm = warm_turn_cost(prefix_tokens, delta_tokens, output_tokens, model)
    cold = cold_turn_cost(prefix_tokens + delta_tokens, output_tokens, model)
    return warm_probability * warm + (1.0 - warm_probability) * cold
