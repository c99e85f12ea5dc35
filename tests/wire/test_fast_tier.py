"""A request served in fast mode is priced at its model's `fast` multiplier: the tap reads the
tier from what each provider reports (Anthropic's `usage.speed`, OpenAI's `service_tier`), and
`routing.cost.request_cost` applies it."""

from __future__ import annotations

import orjson
import pytest

from orca_cli.config.schema import ModelConfig
from orca_cli.routing.cost import request_cost
from orca_cli.wire.usage import ResponseTap, Usage

OPUS = ModelConfig(input=5.0, output=25.0, fast=2.0)


def _sse(*events: tuple[str | None, dict[str, object]]) -> bytes:
    return b"".join((f"event: {n}\n" if n else "").encode() + b"data: " + orjson.dumps(o)
                    + b"\n\n" for n, o in events)


@pytest.mark.parametrize(("tier", "fast"), [("priority", True), ("fast", True),
                                            ("default", False), (None, False)])
def test_openai_reports_the_tier_it_served(tier: str | None, fast: bool) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 100}
    body = {"id": "c", "object": "chat.completion", "service_tier": tier, "usage": usage,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                         "finish_reason": "stop"}]}
    tap = ResponseTap("openai", False, None)
    tap.feed_body(orjson.dumps(body))
    assert tap.usage is not None and tap.usage.fast is fast
    stream = ResponseTap("openai", True, None)
    stream.feed(_sse((None, {"id": "c", "service_tier": tier, "choices": [
        {"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}),
        (None, {"id": "c", "service_tier": tier, "choices": [], "usage": usage})))
    assert stream.usage is not None and stream.usage.fast is fast
    responses = ResponseTap("responses", False, None)
    responses.feed_body(orjson.dumps({
        "id": "r", "object": "response", "status": "completed", "service_tier": tier,
        "output": [{"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "ok"}]}],
        "usage": {"input_tokens": 1000, "output_tokens": 100}}))
    assert responses.usage is not None and responses.usage.fast is fast


def test_anthropic_reports_fast_mode_in_its_usage() -> None:
    tap = ResponseTap("anthropic", True, None)
    tap.feed(_sse(
        ("message_start", {"type": "message_start", "message": {
            "id": "m", "type": "message", "role": "assistant", "content": [],
            "usage": {"input_tokens": 1000, "output_tokens": 1, "speed": "fast"}}}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 100}}),
        ("message_stop", {"type": "message_stop"})))
    assert tap.usage == Usage(1000, 0, 0, 100, True)


def test_a_fast_request_costs_its_models_multiplier() -> None:
    plain = request_cost(Usage(1000, 0, 0, 100), "anthropic", OPUS)
    assert plain == pytest.approx((1000 * 5.0 + 100 * 25.0) / 1e6)
    assert request_cost(Usage(1000, 0, 0, 100, True), "anthropic", OPUS) == pytest.approx(
        2 * plain)
    # a model with no `fast` set is priced at its standard rates
    assert request_cost(Usage(1000, 0, 0, 100, True), "anthropic",
                        ModelConfig(input=5.0, output=25.0)) == pytest.approx(plain)
