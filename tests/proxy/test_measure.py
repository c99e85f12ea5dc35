"""SPEC §20: the sidecar's measured first-byte latency and throughput (EWMA per channel and
model), folded in from a request's attempts, forgotten once stale."""

from __future__ import annotations

import pytest

from orca_cli.clock import FakeClock
from orca_cli.proxy.measure import ALPHA, MAX_AGE_S, Measurements
from orca_cli.routing.route_types import Attempt
from orca_cli.turn.model import AttemptRecord, Outcome
from orca_cli.wire.usage import ResponseTap


def _served(channel: str, *, first_byte: float, total: float, tokens: int) -> Outcome:
    rec = AttemptRecord("m", channel, 0, status=200, latency_ms=total, first_byte_ms=first_byte)
    tap = ResponseTap("openai", False, None)
    tap.feed_body(b'{"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}],'
                  b' "usage": {"prompt_tokens": 5, "completion_tokens": %d}}' % tokens)
    return Outcome(attempts=[rec], served=Attempt("m", channel, 0, "ranked"), tap=tap, status=200)


def test_ewma_of_first_byte_and_throughput() -> None:
    m = Measurements(FakeClock())
    m.after(_served("a", first_byte=100, total=1100, tokens=50), 50, stream=True)
    assert m.figures[("a", "m")].latency_ms == 100
    assert m.figures[("a", "m")].tps == pytest.approx(50.0)  # 50 tokens over 1 s
    m.after(_served("a", first_byte=200, total=1200, tokens=50), 50, stream=True)
    assert m.figures[("a", "m")].latency_ms == pytest.approx(100 + ALPHA * 100)


def test_a_first_byte_timeout_counts_what_it_waited_and_few_tokens_no_speed() -> None:
    m = Measurements(FakeClock())
    rec = AttemptRecord("m", "slow", 0, latency_ms=5000, error="UpstreamTimeout:first_byte")
    m.after(Outcome(attempts=[rec]), 0, stream=False)
    assert m.figures[("slow", "m")].latency_ms == 5000
    m.after(_served("a", first_byte=10, total=20, tokens=2), 2, stream=False)
    assert m.figures[("a", "m")].tps == 0.0  # below MIN_TOKENS: no throughput sample


def test_stale_figures_are_forgotten() -> None:
    clock = FakeClock()
    m = Measurements(clock)
    m.observe("a", "m", first_byte_ms=900)
    clock.advance(MAX_AGE_S + 60)
    m.observe("b", "m", first_byte_ms=10)
    m.after(Outcome(), 0, stream=False)
    assert ("a", "m") not in m.figures and ("b", "m") in m.figures
