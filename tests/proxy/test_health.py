"""Provider health: status effects, breaker, last-key rule, cool-downs, Retry-After, budget."""

from __future__ import annotations

import email.utils

import pytest

from orca_cli.clock import FakeClock
from orca_cli.errors import UpstreamError
from orca_cli.proxy.health import (
    Health,
    RetryBudget,
    classify_status,
    outcome_of_error,
    parse_retry_after,
    retry_after_seconds,
)
from orca_cli.proxy.transport import UpstreamConnectError, UpstreamStreamError, UpstreamTimeout


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def make(clock: FakeClock, **kw: object) -> Health:
    """Channel `a` has two keys, `solo` one; defaults as in SPEC §7 unless overridden."""
    return Health(clock, keys_per_channel={"a": 2, "solo": 1}, **kw)  # type: ignore[arg-type]


def row(h: Health, channel: str, key: int) -> dict[str, object]:
    return next(r for r in h.snapshot() if r["channel"] == channel and r["key_index"] == key)


def fail(h: Health, channel: str, key: int, n: int, status: int = 500) -> None:
    for _ in range(n):
        h.record(channel, key, "status", status=status)


# --- classify_status ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, "success"),
        (201, "success"),
        (429, "retry"),
        (500, "retry"),
        (502, "retry"),
        (503, "retry"),
        (504, "retry"),
        (507, "retry"),
        (401, "key_error"),
        (402, "key_error"),
        (400, "client_error"),
        (403, "client_error"),
        (404, "client_error"),
        (413, "client_error"),
        (422, "client_error"),
        (304, "client_error"),
    ],
)
def test_classify_status(status: int, expected: str) -> None:
    assert classify_status(status) == expected


def test_outcome_of_error_separates_local_failures_from_stream_errors() -> None:
    assert outcome_of_error(UpstreamConnectError("refused")) == "local"
    assert outcome_of_error(UpstreamTimeout("first_byte")) == "local"
    assert outcome_of_error(UpstreamTimeout("idle")) == "local"
    assert outcome_of_error(UpstreamStreamError("broken")) == "stream_error"
    assert outcome_of_error(UpstreamError("bad", status=502)) == "status"


# --- what lowers health ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 500, 502, 503, 504, 529])
def test_lowering_status_counts_as_failure_and_opens_the_breaker(
    clock: FakeClock, status: int
) -> None:
    h = make(clock)
    fail(h, "a", 0, 4, status)
    assert row(h, "a", 0)["failures"] == 4
    assert h.healthy("a", 0)
    fail(h, "a", 0, 1, status)
    assert row(h, "a", 0)["state"] == "open"
    assert not h.healthy("a", 0)
    assert h.healthy("a", 1)


@pytest.mark.parametrize("outcome", ["stream_error", "error_finish"])
def test_stream_error_and_error_finish_lower_health(clock: FakeClock, outcome: str) -> None:
    h = make(clock)
    for _ in range(5):
        h.record("a", 0, outcome)  # type: ignore[arg-type]
    assert row(h, "a", 0)["failures"] == 5
    assert not h.healthy("a", 0)


@pytest.mark.parametrize("status", [400, 403, 413, 422, 429, 409])
def test_client_errors_and_429_never_lower_health(clock: FakeClock, status: int) -> None:
    h = make(clock)
    fail(h, "a", 0, 50, status)
    r = row(h, "a", 0)
    assert r["state"] == "closed"
    assert r["failures"] == 0 and r["successes"] == 0
    assert h.healthy("a", 0)


def test_429_is_counted_apart(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 3, 429)
    assert row(h, "a", 0)["rate_limited"] == 3


def test_local_failures_are_counted_apart_and_still_open_the_breaker(clock: FakeClock) -> None:
    h = make(clock)
    for _ in range(3):
        h.record("a", 0, "local")
    fail(h, "a", 0, 2, 503)
    r = row(h, "a", 0)
    assert (r["local_failures"], r["failures"]) == (3, 2)
    assert r["state"] == "open"


def test_2xx_status_counts_as_success(clock: FakeClock) -> None:
    h = make(clock)
    h.record("a", 0, "status", status=200)
    h.record("a", 0, "ok")
    assert row(h, "a", 0)["successes"] == 2


def test_status_outcome_without_a_code_is_refused(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="status code"):
        make(clock).record("a", 0, "status")


# --- breaker thresholds ---------------------------------------------------------------------


def test_below_min_volume_never_opens(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 4)
    assert row(h, "a", 0)["state"] == "closed"


def test_failure_ratio_below_threshold_keeps_closed(clock: FakeClock) -> None:
    h = make(clock)
    for _ in range(6):
        h.record("a", 0, "ok")
    fail(h, "a", 0, 5)  # 5 / 11 < 0.5
    assert row(h, "a", 0)["state"] == "closed"
    fail(h, "a", 0, 1)  # 6 / 12 = 0.5
    assert row(h, "a", 0)["state"] == "open"


def test_window_sliding_forgets_old_failures(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 4)
    clock.advance(30)
    assert row(h, "a", 0)["failures"] == 4  # still inside the window
    clock.advance(31)
    assert row(h, "a", 0)["failures"] == 0
    fail(h, "a", 0, 1)
    assert row(h, "a", 0)["state"] == "closed"


def test_window_slides_bucket_by_bucket(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 3)
    clock.advance(40)
    fail(h, "a", 0, 1)
    clock.advance(25)  # the first three fell out, the fourth did not
    assert row(h, "a", 0)["failures"] == 1


# --- open, half-open, single probe ----------------------------------------------------------


def test_open_half_opens_after_open_s_and_lets_exactly_one_probe(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    assert row(h, "a", 0)["remaining_s"] == 30
    clock.advance(29.9)
    assert not h.healthy("a", 0)
    clock.advance(0.1)
    assert row(h, "a", 0)["state"] == "half_open"
    assert h.healthy("a", 0)
    assert not h.healthy("a", 0)
    assert not h.healthy("a", 0)


def test_successful_probe_closes_and_clears_the_window(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    clock.advance(30)
    assert h.healthy("a", 0)
    h.record("a", 0, "ok")
    r = row(h, "a", 0)
    assert r["state"] == "closed" and r["failures"] == 0
    assert h.healthy("a", 0) and h.healthy("a", 0)
    fail(h, "a", 0, 1)  # the old failures are gone: one more does not reopen
    assert row(h, "a", 0)["state"] == "closed"


def test_failed_probe_reopens_for_open_s(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    clock.advance(30)
    assert h.healthy("a", 0)
    h.record("a", 0, "local")
    r = row(h, "a", 0)
    assert r["state"] == "open" and r["remaining_s"] == 30
    assert not h.healthy("a", 0)
    clock.advance(30)
    assert h.healthy("a", 0)


def test_unrecorded_probe_expires_after_open_s(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    clock.advance(30)
    assert h.healthy("a", 0)
    clock.advance(29)
    assert not h.healthy("a", 0)
    clock.advance(1)
    assert h.healthy("a", 0)
    assert not h.healthy("a", 0)


def test_probe_without_verdict_frees_the_probe(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    clock.advance(30)
    assert h.healthy("a", 0)
    h.record("a", 0, "status", status=400)
    assert row(h, "a", 0)["state"] == "half_open"
    assert h.healthy("a", 0)


def test_released_probe_goes_to_the_next_caller(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    clock.advance(30)
    assert h.healthy("a", 0)
    h.release_probe("a", 0)
    assert h.healthy("a", 0)
    assert not h.healthy("a", 0)


def test_request_view_answers_one_decision_consistently(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    clock.advance(30)
    view = h.request_view()
    assert view("a", 0) and view("a", 0)  # the selector asks twice per key
    assert not h.request_view()("a", 0)  # another request does not get the probe


def test_outcomes_while_open_do_not_close_early(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    h.record("a", 0, "ok")  # a request that started before the breaker opened
    assert row(h, "a", 0)["state"] == "open"


# --- the last usable key --------------------------------------------------------------------


def test_last_key_needs_twice_min_volume_and_no_success(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "solo", 0, 9)
    assert h.healthy("solo", 0)
    fail(h, "solo", 0, 1)
    assert row(h, "solo", 0)["state"] == "open"


def test_last_key_with_any_success_in_window_stays_closed(clock: FakeClock) -> None:
    h = make(clock)
    h.record("solo", 0, "ok")
    fail(h, "solo", 0, 30)
    assert row(h, "solo", 0)["state"] == "closed"
    assert h.healthy("solo", 0)


def test_second_key_of_a_channel_is_the_last_once_the_first_is_open(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    fail(h, "a", 1, 5)
    assert row(h, "a", 1)["state"] == "closed"
    fail(h, "a", 1, 5)
    assert row(h, "a", 1)["state"] == "open"


def test_unknown_channel_counts_as_single_key(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "other", 0, 5)
    assert h.healthy("other", 0)
    fail(h, "other", 0, 5)
    assert not h.healthy("other", 0)


# --- 401/402 cool-down ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 402])
def test_key_error_cools_down_at_once_even_the_last_key(clock: FakeClock, status: int) -> None:
    h = make(clock)
    h.record("solo", 0, "status", status=status)
    r = row(h, "solo", 0)
    assert r["state"] == "cooldown" and r["remaining_s"] == 300 and r["failures"] == 1
    assert not h.healthy("solo", 0)


def test_cooldown_expires_into_a_single_probe(clock: FakeClock) -> None:
    h = make(clock)
    h.record("a", 1, "status", status=401)
    clock.advance(299)
    assert not h.healthy("a", 1)
    clock.advance(1)
    assert row(h, "a", 1)["state"] == "half_open"
    assert h.healthy("a", 1)
    assert not h.healthy("a", 1)
    h.record("a", 1, "ok")
    assert row(h, "a", 1)["state"] == "closed"


def test_key_error_on_probe_cools_down_again(clock: FakeClock) -> None:
    h = make(clock)
    h.record("a", 0, "status", status=402)
    clock.advance(300)
    assert h.healthy("a", 0)
    h.record("a", 0, "status", status=402)
    assert row(h, "a", 0)["state"] == "cooldown"
    assert row(h, "a", 0)["remaining_s"] == 300


def test_key_error_overrides_an_open_breaker(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    h.record("a", 0, "status", status=401)
    assert row(h, "a", 0)["state"] == "cooldown"


# --- 429 and Retry-After --------------------------------------------------------------------


def test_retry_after_skips_the_key_without_lowering_health(clock: FakeClock) -> None:
    h = make(clock)
    h.record("a", 0, "status", status=429, retry_after_s=12)
    assert not h.healthy("a", 0)
    assert h.healthy("a", 1)
    assert h.retry_after_remaining("a", 0) == 12
    clock.advance(10)
    assert h.retry_after_remaining("a", 0) == 2
    r = row(h, "a", 0)
    assert (r["state"], r["failures"], r["rate_limited"], r["retry_after_s"]) == ("closed", 0, 1, 2)
    clock.advance(2)
    assert h.healthy("a", 0)
    assert h.retry_after_remaining("a", 0) == 0


def test_429_without_retry_after_keeps_the_key_usable(clock: FakeClock) -> None:
    h = make(clock)
    h.record("a", 0, "status", status=429)
    assert h.healthy("a", 0)
    assert h.retry_after_remaining("a", 0) == 0


def test_retry_after_is_capped_at_the_cooldown(clock: FakeClock) -> None:
    h = make(clock)
    h.record("a", 0, "status", status=429, retry_after_s=86_400)
    assert h.retry_after_remaining("a", 0) == 300


def test_rate_limited_half_open_key_keeps_its_probe(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    clock.advance(30)
    assert h.healthy("a", 0)
    h.record("a", 0, "status", status=429, retry_after_s=5)
    assert not h.healthy("a", 0)
    clock.advance(5)
    assert h.healthy("a", 0)


def test_unknown_key_is_healthy_with_nothing_to_wait(clock: FakeClock) -> None:
    h = make(clock)
    assert h.healthy("nowhere", 3)
    assert h.retry_after_remaining("nowhere", 3) == 0


# --- snapshot and configuration -------------------------------------------------------------


def test_snapshot_lists_every_configured_key(clock: FakeClock) -> None:
    h = make(clock)
    h.record("late", 0, "ok")
    rows = h.snapshot()
    assert [(r["channel"], r["key_index"]) for r in rows] == [
        ("a", 0),
        ("a", 1),
        ("late", 0),
        ("solo", 0),
    ]
    assert set(rows[0]) == {
        "channel",
        "key_index",
        "state",
        "failures",
        "successes",
        "local_failures",
        "rate_limited",
        "remaining_s",
        "retry_after_s",
    }
    assert rows[0]["state"] == "closed" and rows[0]["failures"] == 0


def test_snapshot_does_not_hand_out_the_probe(clock: FakeClock) -> None:
    h = make(clock)
    fail(h, "a", 0, 5)
    clock.advance(30)
    h.snapshot()
    assert h.healthy("a", 0)


@pytest.mark.parametrize(
    "kw",
    [
        {"window_s": 0},
        {"open_s": 0},
        {"cooldown_s": -1},
        {"min_volume": 0},
        {"failure_ratio": 0},
        {"failure_ratio": 1.5},
    ],
)
def test_bad_settings_are_refused(clock: FakeClock, kw: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        make(clock, **kw)


def test_custom_thresholds(clock: FakeClock) -> None:
    h = make(clock, min_volume=2, failure_ratio=1.0, open_s=5)
    h.record("a", 0, "ok")
    fail(h, "a", 0, 10)
    assert row(h, "a", 0)["state"] == "closed"  # ratio 10/11 < 1.0
    fail(h, "a", 1, 2)
    assert row(h, "a", 1)["state"] == "open" and row(h, "a", 1)["remaining_s"] == 5


# --- retry budget ---------------------------------------------------------------------------


def test_retry_budget_floor_with_no_requests() -> None:
    b = RetryBudget()
    assert [b.try_retry() for _ in range(4)] == [True, True, True, False]
    b.retry_finished()
    assert b.try_retry()
    assert not b.try_retry()


def test_retry_budget_grows_with_requests_in_flight() -> None:
    b = RetryBudget(ratio=0.2, floor=3)
    for _ in range(10):
        b.request_started()
    granted = sum(b.try_retry() for _ in range(20))
    assert granted == 5  # 3 + 0.2 x 10
    for _ in range(10):
        b.request_finished()
    b.retry_finished()
    assert not b.try_retry()  # 4 in flight, budget back to 3
    assert (b.requests, b.retries) == (0, 4)


def test_retry_budget_fractional_allowance() -> None:
    b = RetryBudget(ratio=0.2, floor=0)
    for _ in range(4):
        b.request_started()
    assert b.try_retry()  # 0 < 0.8
    assert not b.try_retry()  # 1 >= 0.8


def test_retry_budget_zero_refuses_all() -> None:
    b = RetryBudget(ratio=0, floor=0)
    b.request_started()
    assert not b.try_retry()


def test_retry_budget_counters_never_go_negative() -> None:
    b = RetryBudget()
    b.request_finished()
    b.retry_finished()
    assert (b.requests, b.retries) == (0, 0)


def test_retry_budget_refuses_negative_settings() -> None:
    with pytest.raises(ValueError):
        RetryBudget(ratio=-0.1)


# --- Retry-After parsing --------------------------------------------------------------------

NOW = 1_786_000_000.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),
        ("1.5", 1.5),
        ("0", 0.0),
        ("-5", 0.0),
        (email.utils.formatdate(NOW + 90, usegmt=True), 90.0),
        (email.utils.formatdate(NOW - 90, usegmt=True), 0.0),
        (email.utils.formatdate(NOW + 30), 30.0),  # "-0000": no zone, read as UTC
        ("soon", None),
        ("", None),
        (None, None),
        ("nan", None),
        ("inf", None),
        ("Mon, 99 Foo 2026", None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    got = parse_retry_after(value, NOW)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_retry_after_ms_wins_over_retry_after() -> None:
    headers = [("Retry-After", "10"), ("retry-after-ms", "1500")]
    assert retry_after_seconds(headers, NOW) == 1.5


def test_junk_retry_after_ms_falls_back_to_retry_after() -> None:
    assert retry_after_seconds([("retry-after-ms", "x"), ("retry-after", "4")], NOW) == 4.0


def test_negative_retry_after_ms_is_zero() -> None:
    assert retry_after_seconds([("retry-after-ms", "-20")], NOW) == 0.0


def test_no_retry_headers() -> None:
    assert retry_after_seconds([("content-type", "application/json")], NOW) is None
    assert retry_after_seconds(iter([("retry-after", "3")]), NOW) == 3.0
