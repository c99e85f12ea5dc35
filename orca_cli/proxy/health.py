"""Provider health per (channel, key): outcomes, breaker, cool-downs, retry budget (SPEC §7).

A pure state machine: no I/O, no asyncio, time only through the injected `Clock`
(`clock.monotonic()`). The forwarder records every attempt's outcome; the selector asks
`healthy(channel, key_index)` (the `Healthy` predicate of `routing/candidates.py`).

Per key the states are::

    closed ──(sustained failure)──> open ──(open_s)──> half_open ──(probe ok)──> closed
       │                                                 │  └──(probe failed)──> open
       └──(401/402, from any state)──> cooldown ──(cooldown_s)──> half_open

Evidence lives in a ring of `_BUCKETS` time buckets spanning `window_s`, so memory per key is
fixed and old failures fall out of the window as time passes. What lowers health, and what
does not, is SPEC §7: 401, 402, 404, >= 500, errors after the stream started, 2xx answers with
an error finish reason and local failures (timeouts, resets, refused connects, counted apart
from upstream failures) lower it; 400, 403, 413, 422 and 429 do not. A 429 is counted apart
and honours its Retry-After. Other statuses (other 4xx, 1xx, 3xx) leave health unchanged.

The last-key rule: a breaker whose opening would leave its channel with no closed key needs
stronger evidence, at least 2 x `min_volume` failures and no success in the window (ratio 1.0).
A 401/402 cool-down is strong evidence on its own and always applies.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from orca_cli.clock import Clock
from orca_cli.errors import UpstreamError
from orca_cli.proxy.transport import UpstreamStreamError, header_value
from orca_cli.routing.candidates import Healthy

__all__ = [
    "Health",
    "Outcome",
    "RetryBudget",
    "State",
    "StatusClass",
    "classify_status",
    "outcome_of_error",
    "parse_retry_after",
    "retry_after_seconds",
]

Outcome = Literal["ok", "status", "local", "stream_error", "error_finish"]
State = Literal["closed", "open", "half_open", "cooldown"]
StatusClass = Literal["success", "retry", "client_error", "key_error"]

_BUCKETS = 10
_KEY_ERRORS = frozenset({401, 402})


def classify_status(status: int) -> StatusClass:
    """What the forwarder does with an upstream status (SPEC §7).

    Every 5xx is retried, not only 500/502/503/504: another key or model is the better bet
    for any server-side failure. 1xx/3xx reach the client as they are, like a client error.
    """
    if 200 <= status < 300:
        return "success"
    if status in _KEY_ERRORS:
        return "key_error"
    if status == 429 or status >= 500:
        return "retry"
    return "client_error"


def outcome_of_error(exc: UpstreamError) -> Outcome:
    """The outcome of a failed attempt: local-origin errors (timeouts, refused) are `local`."""
    if getattr(exc, "local_origin", False):
        return "local"
    if isinstance(exc, UpstreamStreamError):
        return "stream_error"
    return "local" if exc.status is None else "status"


def parse_retry_after(value: str | None, now_wall: float) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP-date; junk is None."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        seconds = when.timestamp() - now_wall  # a naive date ("-0000") is read as UTC
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def retry_after_seconds(headers: Iterable[tuple[str, str]], now_wall: float) -> float | None:
    """`retry-after-ms` (OpenAI, Anthropic) first, being more precise; then `retry-after`."""
    pairs = tuple(headers)
    ms = header_value(pairs, "retry-after-ms")
    if ms is not None:
        try:
            value = float(ms.strip()) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    return parse_retry_after(header_value(pairs, "retry-after"), now_wall)


# Counter slots of a bucket; the verdicts of `_verdict` map onto them.
_FAIL, _OK, _LOCAL, _LIMITED = range(4)
_SLOT = {"failure": _FAIL, "key_error": _FAIL, "success": _OK, "local": _LOCAL, "limited": _LIMITED}
_NEVER = -(2**62)  # the epoch of a bucket never written


@dataclass(slots=True)
class _Bucket:
    epoch: int = _NEVER
    counts: list[int] = field(default_factory=lambda: [0, 0, 0, 0])


def _ring() -> list[_Bucket]:
    return [_Bucket() for _ in range(_BUCKETS)]


@dataclass(slots=True)
class _Key:
    buckets: list[_Bucket] = field(default_factory=_ring)
    state: State = "closed"
    until: float = 0.0  # open -> half_open at `until`; cooldown ends at `until`
    probe_since: float | None = None  # the half-open probe handed out, not yet recorded
    retry_until: float = 0.0
    retry_status: int = 429  # the status whose Retry-After set `retry_until` (429, 503, 529)

    def totals(self, epoch: int) -> list[int]:
        """[failures, successes, local, rate_limited] over the buckets still in the window."""
        live = [b.counts for b in self.buckets if epoch - _BUCKETS < b.epoch <= epoch]
        return [sum(c[i] for c in live) for i in range(4)]

    def count(self, epoch: int, slot: int) -> None:
        b = self.buckets[epoch % _BUCKETS]
        if b.epoch != epoch:
            b.epoch, b.counts = epoch, [0, 0, 0, 0]
        b.counts[slot] += 1


class Health:
    """Health of every (channel, key); `healthy` is the selector's predicate.

    In half-open, `healthy()` answers True to exactly one caller, the probe, until that
    probe's outcome is recorded; a probe never recorded expires after `open_s`. One request
    that asks several times about the same key should use `request_view()`.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        keys_per_channel: Mapping[str, int],
        window_s: float = 60,
        min_volume: int = 5,
        failure_ratio: float = 0.5,
        open_s: float = 30,
        cooldown_s: float = 300,
    ) -> None:
        if window_s <= 0 or open_s <= 0 or cooldown_s < 0:
            raise ValueError("health: window_s and open_s must be > 0 and cooldown_s >= 0")
        if min_volume < 1 or not 0 < failure_ratio <= 1:
            raise ValueError(
                f"health: min_volume must be >= 1 and failure_ratio in (0, 1], "
                f"got {min_volume} and {failure_ratio}"
            )
        self._clock = clock
        self._slots = {ch: max(1, n) for ch, n in keys_per_channel.items()}
        self._bucket_s = window_s / _BUCKETS
        self._min_volume = min_volume
        self._ratio = failure_ratio
        self._open_s = float(open_s)
        self._cooldown_s = float(cooldown_s)
        self._keys: dict[tuple[str, int], _Key] = {}

    def healthy(self, channel: str, key_index: int) -> bool:
        """May an attempt go to this key now? Hands out the half-open probe when it is free."""
        key = self._keys.get((channel, key_index))
        if key is None:
            return True
        now = self._clock.monotonic()
        state = self._advance(key, now)
        if key.retry_until > now:
            return False
        if state == "closed":
            return True
        if state != "half_open":
            return False
        if key.probe_since is None or now - key.probe_since >= self._open_s:
            key.probe_since = now
            return True
        return False

    def request_view(self) -> Healthy:
        """A predicate for one routing decision: each key is asked once, then remembered."""
        seen: dict[tuple[str, int], bool] = {}

        def healthy(channel: str, key_index: int) -> bool:
            slot = (channel, key_index)
            known = seen.get(slot)  # asked several times a request: one lookup when known
            if known is None:
                known = seen[slot] = self.healthy(channel, key_index)
            return known

        return healthy

    def release_probe(self, channel: str, key_index: int) -> None:
        """Give back a half-open probe that was handed out but not attempted."""
        key = self._keys.get((channel, key_index))
        if key is not None and key.state == "half_open":
            key.probe_since = None

    def record(
        self,
        channel: str,
        key_index: int,
        outcome: Outcome,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        """Count one attempt's outcome and move the key's state (SPEC §7)."""
        if outcome == "status" and status is None:
            raise ValueError("health: a 'status' outcome needs the status code")
        now = self._clock.monotonic()
        key = self._keys.get((channel, key_index))
        if key is None:  # built only once per key: a _Key holds its ring of buckets
            key = self._keys[(channel, key_index)] = _Key()
        state = self._advance(key, now)
        if retry_after_s is not None and retry_after_s > 0:
            # Capped at a cool-down: a daily-quota Retry-After must not bench a key for a day.
            wait = min(retry_after_s, self._cooldown_s)
            if now + wait > key.retry_until:
                key.retry_until = now + wait
                key.retry_status = 429 if status is None else status
        verdict = _verdict(outcome, 0 if status is None else status)
        if verdict in _SLOT:
            key.count(self._epoch(now), _SLOT[verdict])
        if verdict == "key_error":
            key.state, key.probe_since = "cooldown", None
            key.until = now + self._cooldown_s
            return
        if state == "half_open":
            if verdict == "success":
                key.state, key.probe_since = "closed", None
                key.buckets = _ring()
            elif verdict in ("failure", "local"):
                self._open(key, now)
            else:
                key.probe_since = None  # no verdict on the key: the next caller probes
        elif state == "closed" and verdict in ("failure", "local"):
            self._maybe_open(channel, key_index, key, now)

    def retry_after_remaining(self, channel: str, key_index: int) -> float:
        """Seconds until a rate-limited key may be tried again (0 when it may now)."""
        key = self._keys.get((channel, key_index))
        if key is None:
            return 0.0
        return max(0.0, key.retry_until - self._clock.monotonic())

    def retry_after_status(self, channel: str, key_index: int) -> int:
        """The upstream status whose `Retry-After` the key waits out: 429 (rate-limited),
        503 or 529 (overloaded)."""
        key = self._keys.get((channel, key_index))
        return key.retry_status if key is not None else 429

    def snapshot(self) -> list[dict[str, object]]:
        """One row per known (channel, key) for /metrics and `orca doctor`; no key values."""
        now = self._clock.monotonic()
        slots = {(ch, i) for ch, n in self._slots.items() for i in range(n)} | set(self._keys)
        rows: list[dict[str, object]] = []
        for channel, index in sorted(slots):
            key = self._keys.get((channel, index)) or _Key()
            state = self._advance(key, now)
            failures, successes, local, limited = key.totals(self._epoch(now))
            benched = state in ("open", "cooldown")
            rows.append(
                {
                    "channel": channel,
                    "key_index": index,
                    "state": state,
                    "failures": failures,
                    "successes": successes,
                    "local_failures": local,
                    "rate_limited": limited,
                    "remaining_s": max(0.0, key.until - now) if benched else 0.0,
                    "retry_after_s": max(0.0, key.retry_until - now),
                }
            )
        return rows

    def _epoch(self, now: float) -> int:
        return math.floor(now / self._bucket_s)

    def _advance(self, key: _Key, now: float) -> State:
        """Apply the time-driven transitions: open and cooldown both end in half_open."""
        if key.state in ("open", "cooldown") and now >= key.until:
            key.state, key.probe_since = "half_open", None
        return key.state

    def _open(self, key: _Key, now: float) -> None:
        key.state, key.until, key.probe_since = "open", now + self._open_s, None

    def _maybe_open(self, channel: str, key_index: int, key: _Key, now: float) -> None:
        failures, successes, local, _ = key.totals(self._epoch(now))
        bad = failures + local
        if bad < self._min_volume or bad / (bad + successes) < self._ratio:
            return
        if not self._others_closed(channel, key_index, now) and (
            bad < 2 * self._min_volume or successes > 0
        ):
            return  # the last usable key: weak evidence does not eject it
        self._open(key, now)

    def _others_closed(self, channel: str, key_index: int, now: float) -> bool:
        """Does the channel keep at least one other closed key?"""
        for i in range(self._slots.get(channel, 1)):
            if i == key_index:
                continue
            other = self._keys.get((channel, i))
            if other is None or self._advance(other, now) == "closed":
                return True
        return False


def _verdict(outcome: Outcome, status: int) -> str:
    """success | failure | local | key_error | limited | neutral for one recorded outcome."""
    if outcome == "ok":
        return "success"
    if outcome == "local":
        return "local"
    if outcome != "status":
        return "failure"  # stream_error, error_finish
    if 200 <= status < 300:
        return "success"
    if status in _KEY_ERRORS:
        return "key_error"
    if status == 429:
        return "limited"
    if status == 404 or status >= 500:
        return "failure"
    return "neutral"  # 400, 403, 413, 422 and every other status leave health unchanged


class RetryBudget:
    """Retries in flight stay below `floor + ratio x requests in flight` (SPEC §7).

    An upstream outage then costs at most that many extra attempts, not one per request.
    """

    def __init__(self, *, ratio: float = 0.2, floor: int = 3) -> None:
        if ratio < 0 or floor < 0:
            raise ValueError(f"retry budget: ratio and floor must be >= 0, got {ratio} and {floor}")
        self._ratio = ratio
        self._floor = floor
        self.requests = 0
        self.retries = 0

    def request_started(self) -> None:
        self.requests += 1

    def request_finished(self) -> None:
        self.requests = max(0, self.requests - 1)

    def try_retry(self) -> bool:
        """Take a retry slot if the budget allows one; pair with `retry_finished()`."""
        if self.retries < self._floor + self._ratio * self.requests:
            self.retries += 1
            return True
        return False

    def retry_finished(self) -> None:
        self.retries = max(0, self.retries - 1)
