"""What orca measures of its upstreams on live traffic, per sidecar process (SPEC §20): an
EWMA of first-byte latency and one of output tokens per second per (channel, model).

The `latency` and `throughput` modes order by these figures (`routing.modes.mode_key`), the
configured `expected_latency_ms` / `expected_tps` standing in until a figure exists. Updated
after each request with a few float operations; the routing core reads the mapping as it
is when the (synchronous) decision runs, so it never sees a half-written figure.

* First byte: the first body chunk of a stream; the response headers of a non-streamed
  answer. An attempt that timed out waiting for it counts the time it waited: a stalling
  upstream loses its place even though it never answered.
* Throughput: output tokens over the generation time — after the first chunk for a stream,
  the whole answer for a non-streamed one; measured on billed successes with at least
  `MIN_TOKENS` output tokens (a one-token answer says nothing about speed).
* A figure not refreshed for `MAX_AGE_S` is forgotten, so a channel that was slow once is
  tried again at its prior instead of being starved forever.
"""

from __future__ import annotations

from orca_cli.clock import Clock
from orca_cli.routing.modes import Measure
from orca_cli.turn.model import Outcome

__all__ = ["ALPHA", "MAX_AGE_S", "Measurements"]

ALPHA = 0.3  # weight of the newest sample
MAX_AGE_S = 600.0
MIN_TOKENS = 8
_PRUNE_EVERY_S = 10.0
_UNMEASURED = Measure()  # one shared default (a NamedTuple's `__new__` is Python code)


class Measurements:
    """The process's figures; `figures` is what the routing core reads."""

    __slots__ = ("_clock", "_pruned", "_seen", "figures")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.figures: dict[tuple[str, str], Measure] = {}
        self._seen: dict[tuple[str, str], float] = {}  # last update, monotonic
        self._pruned = clock.monotonic()

    def observe(self, channel: str, model: str, *, first_byte_ms: float | None = None,
                tps: float | None = None) -> None:
        key = (channel, model)
        old = self.figures.get(key, _UNMEASURED)
        lat, rate = old.latency_ms, old.tps
        if first_byte_ms is not None and first_byte_ms >= 0:
            lat = first_byte_ms if lat <= 0 else lat + ALPHA * (first_byte_ms - lat)
        if tps is not None and tps > 0:
            rate = tps if rate <= 0 else rate + ALPHA * (tps - rate)
        self.figures[key] = Measure(lat, rate)
        self._seen[key] = self._clock.monotonic()

    def after(self, outcome: Outcome, output_tokens: int, stream: bool) -> None:
        """Fold one request's attempts in: the served one, and first-byte timeouts."""
        served = outcome.served
        for rec in outcome.attempts:
            if rec.first_byte_ms is None and (rec.error or "").endswith(":first_byte"):
                self.observe(rec.channel, rec.model, first_byte_ms=rec.latency_ms)
        if served is None or not outcome.billed_success or not outcome.attempts:
            self._prune()
            return
        rec = outcome.attempts[-1]
        if (rec.channel, rec.model) != (served.channel, served.model):
            return
        tps = None
        span_ms = rec.latency_ms - (rec.first_byte_ms or 0.0) if stream else rec.latency_ms
        if output_tokens >= MIN_TOKENS and span_ms > 0:
            tps = output_tokens / (span_ms / 1000.0)
        self.observe(rec.channel, rec.model, first_byte_ms=rec.first_byte_ms, tps=tps)
        self._prune()

    def _prune(self) -> None:
        now = self._clock.monotonic()
        if now - self._pruned < _PRUNE_EVERY_S:
            return
        self._pruned = now
        for key in [k for k, at in self._seen.items() if now - at > MAX_AGE_S]:
            del self._seen[key]
            self.figures.pop(key, None)
