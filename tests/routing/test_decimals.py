"""`decimals.fixed_round` returns exactly what `round(x, digits)` returns."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orca_cli.routing.decimals import fixed_round
from orca_cli.routing.features import round6

DIGITS = (3, 4, 6, 8)
ROUNDERS = {d: fixed_round(d) for d in DIGITS}


def _same(got: object, want: object) -> bool:
    return type(got) is type(want) and repr(got) == repr(want)  # -0.0, int and float apart


@settings(max_examples=3000)
@given(st.sampled_from(DIGITS),
       st.one_of(st.floats(), st.floats(0, 1), st.floats(0, 5000), st.integers(-10**6, 10**6)))
@example(6, 0.0)
@example(6, -0.0)
@example(6, 0)
@example(6, 1e-300)
@example(6, 5e-7)
@example(6, 4294.967295)
@example(6, 4000.0)
@example(6, math.inf)
@example(6, math.nan)
def test_fixed_round_is_round(digits: int, x: float) -> None:
    got, want = ROUNDERS[digits](x), round(x, digits)
    assert _same(got, want) or (math.isnan(x) and math.isnan(got))


@settings(max_examples=3000)
@given(st.sampled_from(DIGITS), st.integers(0, 2**53), st.integers(-3, 3))
def test_fixed_round_is_round_at_and_beside_half_way(digits: int, k: int, ulps: int) -> None:
    # the double nearest (k + 1/2) / 10**digits and its neighbours: the near-ties, where the
    # fast path must leave the answer to `round`
    x = (k + 0.5) / 10**digits
    for _ in range(abs(ulps)):
        x = math.nextafter(x, math.copysign(math.inf, ulps))
    assert _same(ROUNDERS[digits](x), round(x, digits))


@given(st.floats(allow_nan=False))
def test_round6_is_round_with_zero_as_it_is(x: float) -> None:
    assert _same(round6(x), x if x == 0 else round(x, 6))


@pytest.mark.parametrize("digits", [-1, 23])
def test_digits_outside_exact_powers_of_ten_are_refused(digits: int) -> None:
    with pytest.raises(ValueError, match="digits"):
        fixed_round(digits)
