"""How far a numeric entry may lie from its value: half a unit in a decimal's last digit, 256
units in a float's last place, carried through an expression exactly (intervals, when it is
rational) or by arb balls; and the decimal text whose digits cover a given rounding."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import flint
import sympy

from .balls import ball, enclose, upper_fraction


def literal_rounding(literal: str) -> Fraction:
    """Half a unit in the last digit given, e.g. `"0.1667"` -> 5e-5, `"1.5e-3"` -> 5e-5 * 1e-3."""
    mantissa, _, exponent = literal.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return Fraction(1, 2) * Fraction(10) ** (int(exponent or 0) - decimals)


# How closely a float is taken to hold the number it stands for, relative to its size: 256
# units in its last binary place, the rounding of a short computation in its format
# (coefficients computed from formulas, numpy's quadrature nodes), not only of one conversion.
# For a double that is 2⁻⁴⁴: residuals of met conditions sit eight orders below it.
ULPS_SLACK = 256
DOUBLE_MANTISSA = 52


def float_rounding(value: float, mantissa: int = DOUBLE_MANTISSA) -> Fraction:
    """How far the real number a float stands for may lie from its binary value (0 for 0.0).

    **Arguments:**

    - `value`: the float's binary value.
    - `mantissa`: the stored mantissa bits of the format it was held in (52 for a double).
    """
    return abs(Fraction(value)) * Fraction(ULPS_SLACK, 2**mantissa)


def expression_rounding(
    tree: sympy.Expr, boxes: dict[sympy.Symbol, tuple[sympy.Expr, Fraction]], value: Any
) -> Fraction:
    """How far the expression can move when each box (a decimal literal, or a family's symbol
    given a numeric value) moves within its rounding: exact interval arithmetic when the
    expression and the boxes are rational, balls (arb) otherwise."""
    if not boxes or all(r == 0 for _, r in boxes.values()) or value == 0:
        return Fraction(0)
    if tree in boxes:  # a lone decimal: its own rounding
        return boxes[tree][1]
    exact = None
    if all(v.is_Rational for v, _ in boxes.values()):  # a family member's values may be roots
        intervals = {s: (_fraction(v) - r, _fraction(v) + r) for s, (v, r) in boxes.items()}
        exact = _interval(tree, intervals)
    if exact is not None:
        centre = _fraction(value)
        return max(exact[1] - centre, centre - exact[0])
    smallest = min(r for _, r in boxes.values() if r > 0)
    with flint.ctx.workprec(max(128, 64 + smallest.denominator.bit_length())):
        enclosure = enclose(tree, {s: ball(v, r) for s, (v, r) in boxes.items()})
        spread = enclosure - ball(value)
    return upper_fraction(spread)


_SLACK = Fraction(1, 10**6)


def covering_text(value: sympy.Expr, rounding: Fraction) -> str:
    """An entry text that reads back (`parse_number`) as a numeric entry holding every number
    within `rounding` (> 0) of `value` (not 0: a zero entry is exact), known to at most ten
    times `rounding`: the decimal whose half-unit in the last digit covers it (`1/3` to 1e-6 is
    `"0.333333"`) where there is one that fine, else the exact value plus and minus a decimal
    (`"1/3 + 1.0e2 - 1.0e2"` for `1/3` to 5: their two roundings add up)."""
    with flint.ctx.workprec(max(128, 64 + rounding.denominator.bit_length())):
        enclosure = ball(value)
        centre = _arf_fraction(enclosure.mid())
        slack = _arf_fraction(enclosure.rad())
    for k in range(math.floor(math.log10(rounding)), math.floor(math.log10(rounding)) + 3):
        unit = Fraction(10) ** k
        m = round(centre / unit)
        covers = abs(m * unit - centre) + slack + rounding <= unit / 2 <= 10 * rounding
        if m != 0 and covers:
            sign, digits = ("-" if m < 0 else ""), str(abs(m))
            if k >= 0:
                return f"{sign}{abs(m) // 10}.{abs(m) % 10}e{k + 1}"
            digits = digits.rjust(1 - k, "0")
            return f"{sign}{digits[:k]}.{digits[k:]}"
    # "1.0e{k}" is known to half of 10**(k-1), so "+ 1.0e{k} - 1.0e{k}" adds 10**(k-1). The
    # parser encloses an irrational expression's rounding in arb balls, whose radii it rounds up
    # (by ~1e-9 relative): keep SLACK clear of both ends.
    e = math.floor(math.log10(rounding))
    while Fraction(10) ** e < rounding * (1 + _SLACK):
        e += 1
    if Fraction(10) ** e * (1 + _SLACK) <= 10 * rounding:
        return f"{value} + 1.0e{e + 1} - 1.0e{e + 1}"
    # rounding lies within SLACK of 10**(e-1): 1.1 * 10**(e-1) covers it, well under ten times
    return f"{value} + 1.0e{e} - 1.0e{e} + 1.0e{e - 1} - 1.0e{e - 1}"


def _arf_fraction(x: Any) -> Fraction:
    man, exp = x.man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _fraction(value: Any) -> Fraction:
    return Fraction(int(value.p), int(value.q))


Interval = tuple[Fraction, Fraction]


def _interval(expr: sympy.Expr, boxes: dict[sympy.Symbol, Interval]) -> Interval | None:
    """An exact enclosure of a rational expression over boxes (None when it is not rational)."""
    if isinstance(expr, sympy.Symbol):
        return boxes.get(expr)
    if isinstance(expr, sympy.Rational):
        return (_fraction(expr), _fraction(expr))
    found = [_interval(a, boxes) for a in expr.args]
    parts = [p for p in found if p is not None]
    if len(parts) < len(found):
        return None
    if isinstance(expr, sympy.Add):
        return (sum((p[0] for p in parts), Fraction(0)), sum((p[1] for p in parts), Fraction(0)))
    if isinstance(expr, sympy.Mul):
        out: Interval = (Fraction(1), Fraction(1))
        for p in parts:
            ends = [x * y for x in out for y in p]
            out = (min(ends), max(ends))
        return out
    if isinstance(expr, sympy.Pow) and isinstance(expr.exp, sympy.Integer):
        (lo, hi), n = parts[0], int(expr.exp)
        if n < 0:
            if lo <= 0 <= hi:
                return None
            lo, hi, n = 1 / hi, 1 / lo, -n
        ends = [lo**n, hi**n] + ([Fraction(0)] if lo < 0 < hi else [])
        return (min(ends), max(ends))
    return None
