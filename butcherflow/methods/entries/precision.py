"""One rule for judging a condition of a declaration whose entries may be numeric.

A condition is an equation residual = 0 (an order condition Φ(t) − 1/γ(t), a root condition, c
against the row sums of A, ...). Its residual is computed from the digits given, and the
uncertainty those digits carry (`rounding.py`: 256 units in the last place for floats, half a
unit in the last digit for decimals, or a declared precision) is carried through the computation by
interval (ball) arithmetic, so that the enclosure holds the residual of *every* method within
the precision of the entries. Then:

- **fails**: 0 is outside the enclosure. No method within the precision meets the condition.
- **met**: the residual is exactly zero, or the enclosure holds 0 and is narrower than
  `RESOLUTION` times the condition's scale (entries carrying about eight significant digits or
  more: floats, long decimals, a fine declared precision). Numerically zero at the precision the
  entries carry.
- **undetermined**: the enclosure holds 0 but is wider than that: the digits cannot tell a
  method that meets the condition from one that misses it. Never counted as met.

Exact declarations only ever get met (residual exactly zero) or fails.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any, final

import flint

from .numbers import Number

# Half of double precision's 53 bits: the usual threshold for calling a computed quantity zero.
RESOLUTION = Fraction(1, 2**26)


class Verdict(enum.Enum):
    MET = "met"
    FAILS = "fails"
    UNDETERMINED = "undetermined"


@final
class Judgement:
    """The verdict on one condition.

    **Arguments:**

    - `verdict`: met, fails or undetermined.
    - `residual`: the residual computed from the digits (exact sympy value for exact
      declarations, a float otherwise).
    - `bound`: how far the precision of the entries can move the residual (0.0 when exact).
    - `compute`: instead of `residual`, a function that computes it when it is first read (a
      failing condition's exact residual costs more to convert than to decide, and a report
      prints only a few).
    """

    __slots__ = ("_compute", "_residual", "bound", "verdict")

    def __init__(
        self,
        verdict: Verdict,
        residual: Any = None,
        bound: float = 0.0,
        *,
        compute: Callable[[], Any] | None = None,
    ) -> None:
        self.verdict = verdict
        self.bound = bound
        self._residual = residual
        self._compute = compute

    @property
    def residual(self) -> Any:
        if self._compute is not None:
            self._residual, self._compute = self._compute(), None
        return self._residual

    @property
    def met(self) -> bool:
        return self.verdict is Verdict.MET

    def __repr__(self) -> str:
        return f"Judgement({self.verdict}, {self.residual!r}, {self.bound!r})"


def judge_exact(residual: Any, is_zero: bool) -> Judgement:
    """The verdict on a condition evaluated exactly."""
    return Judgement(Verdict.MET if is_zero else Verdict.FAILS, residual)


def judge_enclosure(
    enclosure: flint.arb, scale: Fraction, exactly_zero: bool | Callable[[], bool] = False
) -> Judgement:
    """The verdict on a condition from a ball holding its residual for every admissible method.

    **Arguments:**

    - `enclosure`: an arb ball containing the residual of every method within the precision.
    - `scale`: the size of the condition's terms (1/γ(t) for an order condition); the
      resolution is relative to it.
    - `exactly_zero`: whether the digits' own residual is exactly zero (or a function deciding
      it, asked only when the enclosure alone cannot decide: a coarse precision).

    **Returns:** a `Judgement` (residual: the ball's midpoint; bound: its radius).
    """
    residual, bound = float(enclosure.mid()), float(enclosure.rad())
    if not enclosure.contains(0):
        return Judgement(Verdict.FAILS, residual, bound)
    if enclosure.abs_upper() < _limit(scale):
        return Judgement(Verdict.MET, residual, bound)
    if exactly_zero() if callable(exactly_zero) else exactly_zero:
        return Judgement(Verdict.MET, 0.0, bound)
    return Judgement(Verdict.UNDETERMINED, residual, bound)


def known_to_double(enclosure: flint.arb) -> bool:
    """Whether a ball pins its value down to double precision (radius at most 2⁻⁶⁰ of the
    midpoint's size), so that `float(enclosure.mid())` can stand for the value. Always False
    for a ball around 0 with a nonzero radius.

    **Arguments:** `enclosure`: an arb ball.

    **Returns:** True when the midpoint is the value to double precision.
    """
    return bool(enclosure.rad() <= abs(enclosure.mid()) * 2**-60)


@functools.lru_cache(maxsize=4096)
def _limit(scale: Fraction) -> flint.arb:
    """RESOLUTION · scale as a ball; a comparison with it is True only when certain."""
    with flint.ctx.workprec(64):
        value = RESOLUTION * scale
        return flint.arb(flint.fmpq(value.numerator, value.denominator))


def working_precision(numbers: Iterable[Number]) -> int:
    """Bits of working precision for enclosures: 64 beyond the finest relative precision of the
    numeric entries, so that the arithmetic's own rounding is negligible beside theirs."""
    finest = 53
    for number in numbers:
        value = number.value
        if number.rounding and value.is_Rational and value != 0:
            ratio = abs(Fraction(int(value.p), int(value.q))) / number.rounding
            finest = max(finest, int(ratio).bit_length())
        elif number.rounding:
            finest = max(finest, number.rounding.denominator.bit_length())
    return finest + 64


def digits_hint(failing: Iterable[Judgement]) -> str | None:
    """A note for failures that sit within a few units of the entries' last digit: decimals
    printed from floats promise more than floats hold, and rounded tables need a precision."""
    close = [j for j in failing if j.bound > 0 and abs(j.residual) <= 64 * j.bound]
    if not close:
        return None
    worst = max(close, key=lambda j: abs(j.residual))
    return (
        f"{len(close)} failing condition(s) miss by only a few units of the entries' last digit "
        f"(e.g. {worst.residual:.3g} against a bound of {worst.bound:.3g}): if these decimals "
        "were printed from floating-point numbers, give them as floats (known to half an ulp); "
        "if they are rounded values of a table, declare its precision (precision = ...)."
    )
