"""Rigorous arb-ball enclosures of exact sympy values: what the numeric verdicts and the
ball screening of order conditions read (an enclosure may be wide, never wrong)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import flint
import sympy

TRIG = {"sin": sympy.sin, "cos": sympy.cos, "tan": sympy.tan}  # the trig functions entries may use


def ball(value: Any, radius: Fraction = Fraction(0)) -> flint.arb:
    """An arb ball around an exact sympy value (rational, algebraic or a symbol-free expression)
    with the given radius, at the current working precision."""
    v = sympy.sympify(value)
    centre = (
        flint.arb(flint.fmpq(int(v.p), int(v.q)))
        if isinstance(v, sympy.Rational)
        else enclose(v, {})
    )
    if radius:
        centre = centre + flint.arb(0, flint.arb(flint.fmpq(radius.numerator, radius.denominator)))
    return centre


def enclose(expr: sympy.Expr, boxes: dict[sympy.Symbol, flint.arb]) -> flint.arb:
    """A rigorous enclosure of a symbol-free sympy expression (symbols taken from `boxes`)."""
    if isinstance(expr, sympy.Symbol):
        return boxes[expr]
    if isinstance(expr, sympy.Rational):
        return flint.arb(flint.fmpq(int(expr.p), int(expr.q)))
    if expr is sympy.pi:
        return flint.arb.pi()
    if isinstance(expr, sympy.Add):
        return sum((enclose(a, boxes) for a in expr.args), flint.arb(0))
    if isinstance(expr, sympy.Mul):
        return math.prod((enclose(a, boxes) for a in expr.args), start=flint.arb(1))
    if isinstance(expr, sympy.Pow) and isinstance(expr.exp, sympy.Rational):
        base, exp = enclose(expr.base, boxes), expr.exp
        if exp.q == 1:
            return base ** int(exp.p)
        # Only a root of a positive number is real (parse refuses the others); a ball that
        # does not prove its base positive encloses nothing: nan, which every verdict reads as
        # undetermined.
        root = base.root(int(exp.q)) if base > 0 else flint.arb.nan()
        return root ** int(exp.p)
    for name, function in TRIG.items():
        if isinstance(expr, function):
            return getattr(enclose(expr.args[0], boxes), name)()
    raise ValueError(f"cannot enclose {expr}")  # pragma: no cover - parse refuses the rest


def upper_fraction(x: flint.arb) -> Fraction:
    """An exact upper bound on |x| (as a Fraction) for an arb ball."""
    mid_man, mid_exp = x.mid().man_exp()
    rad_man, rad_exp = x.rad().man_exp()
    return abs(Fraction(int(mid_man)) * Fraction(2) ** int(mid_exp)) + Fraction(
        int(rad_man)
    ) * Fraction(2) ** int(rad_exp)
