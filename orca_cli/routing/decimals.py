"""`round(x, digits)` for the figures a request's trace and evidence carry, in a few float
operations where `round` would format the float in decimal and parse it back.

`round(x, digits)` is the double nearest the exact value of `x` rounded to `digits` decimals
(ties to even). For a positive float `x` with `y = x * 10**digits` below 2**32, the product's
own rounding error is at most half an ulp of `y` (under 2.4e-7), so when `y` lies more than
0.4999 from a half-integer's other side, the integer nearest `y` is the integer nearest the
exact `x * 10**digits`; that integer divided by `10**digits` (both exact doubles) is then
correctly rounded by the division itself: the same double `round` returns. A zero is
returned as it is (`round` returns it unchanged too, of its type and sign); anything else (a
near-tie, a negative, a large or non-finite figure, an int) is `round`'s own.
On CPython 3.11 a `round` with digits is about 2,600 instructions, this path about 1,300
(tests/routing/test_decimals.py holds it to `round`).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["fixed_round"]

# y + 1.5 * 2**52 - 1.5 * 2**52 is the integer nearest a float y in [0, 2**51): the sum
# lands where doubles are exactly the integers, and the subtraction is exact.
_MAGIC = 6755399441055744.0


def fixed_round(digits: int) -> Callable[[float], float]:
    """A function that returns what `round(x, digits)` returns (a zero as it is), for
    0 <= digits <= 22 (10**digits is an exact double)."""
    if not 0 <= digits <= 22:
        raise ValueError(f"digits must be within 0..22, got {digits}")
    scale = float(10**digits)

    def rounded(x: float) -> float:
        if type(x) is float:  # an int or a bool keeps `round`'s own answer (and its type)
            y = x * scale
            if 0.0 < y < 4e9:
                n = y + _MAGIC - _MAGIC
                d = y - n
                if -0.4999 < d < 0.4999:  # no near-tie: n is the exact value's rounding
                    return n / scale
        return x if x == 0 else round(x, digits)

    rounded.__name__ = rounded.__qualname__ = f"round{digits}"
    return rounded
