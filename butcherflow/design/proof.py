"""Exact signs of rational polynomials on intervals: what every stability proof of a design
reduces to.

A claim "|R(z)| ≤ 1 on a set" becomes "g(u) ≥ 0 for u in [0, U]" for a polynomial g with
rational coefficients in a real parameter u of the set's boundary (`spectra.py`). That is decided
exactly: the real roots of g are isolated by flint, and g keeps one sign between two consecutive
roots, which is read at a rational point of each gap by exact evaluation. No rounded value
decides anything. (flint's `complex_roots` is used: it factors g squarefree and certifies the
real roots itself, where the analysis stage's `rational_roots.positive_roots` doubled its precision
on the tangential double roots an optimal polynomial has on a disk's boundary.)
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import flint

from ..analysis.budget import Deadline


def fmpq(x: Fraction) -> flint.fmpq:
    """A Fraction as flint's exact rational."""
    return flint.fmpq(x.numerator, x.denominator)


def fraction(x: Any) -> Fraction:
    """An exact flint number (fmpq, or an arb with no radius: a ball's end) as a Fraction."""
    if isinstance(x, flint.fmpq):
        return Fraction(int(x.p), int(x.q))
    man, exp = x.mid().man_exp()
    return Fraction(int(man) * 2 ** int(exp)) if exp >= 0 else Fraction(int(man), 2 ** int(-exp))


def sign_at(g: flint.fmpq_poly, u: Fraction) -> int:
    """The exact sign of g(u)."""
    value = g(fmpq(u))
    return (value > 0) - (value < 0)


def nonnegative_on(
    g: flint.fmpq_poly, upper: Fraction | None, deadline: Deadline | None = None
) -> bool:
    """Whether g(u) ≥ 0 for every u in [0, upper] (upper None: [0, ∞)), exactly.

    **Arguments:**

    - `g`: a polynomial with rational coefficients.
    - `upper`: the interval's right end (a rational > 0), or None for the half-line.
    - `deadline`: checked before the root isolation (`OutOfTime` past it).

    **Returns:** True or False, decided by the isolated real roots of g and exact signs in
    every gap between them. The roots come from flint's `complex_roots` (squarefree
    factorisation, then disjoint balls each proved to hold one root, real ones with an exactly
    zero imaginary part), whose precision grows as needed; a ball that cannot be told from 0
    answers False (not proved), never True.
    """
    (deadline or Deadline.never()).check()
    if g.is_zero():
        return True
    if sign_at(g, Fraction(0)) < 0:
        return False
    integer = g.numer()
    while integer.degree() > 0 and integer.coeffs()[0] == 0:  # the root 0 bounds no gap
        integer = flint.fmpz_poly(integer.coeffs()[1:])
    balls = []
    if integer.degree() > 0:
        found: Any = integer.complex_roots()  # (acb, multiplicity) pairs
        for root, _multiplicity in found:
            if root.imag != 0:
                continue
            lo, hi = fraction(root.real.lower()), fraction(root.real.upper())
            if lo <= 0 <= hi:
                if hi > 0:
                    return False  # a root not told from 0: undecided, so not proved
                continue
            if hi > 0 and (upper is None or lo < upper):
                balls.append((lo, hi))
    balls.sort()
    return all(sign_at(g, u) >= 0 for u in _gap_points(balls, upper))


def _gap_points(roots: list[tuple[Fraction, Fraction]], upper: Fraction | None) -> list[Fraction]:
    """A rational point in every gap of [0, upper] between consecutive isolating intervals, and
    the right end itself (where an interval holds the end, g's sign there and in the gap before
    it decide: one root at most lies between them)."""
    if not roots:
        return [Fraction(1) if upper is None else upper / 2] + ([] if upper is None else [upper])
    points = [roots[0][0] / 2]
    for (_, b), (a, _) in itertools.pairwise(roots):
        points.append((b + a) / 2)
    last = roots[-1][1]
    if upper is None:
        points.append(last + 1)
    else:
        points += [(last + upper) / 2, upper] if last < upper else [upper]
    return [u for u in points if upper is None or u <= upper]


def largest_verified(
    verify: Any, start: Fraction, ceiling: Fraction, bits: int = 30
) -> Fraction | None:
    """The largest rational in [start, ceiling·2^k] (k ≥ 0 as needed) that `verify` accepts, by
    exact bisection to a relative width 2^-bits, where `verify` is monotone (true up to some
    point, false beyond it); None when `verify(start)` is false.

    **Arguments:** `verify`: rational -> bool; `start`: a candidate expected to pass;
    `ceiling`: a candidate expected to fail (doubled until it does, at most 8 times).
    """
    if not verify(start):
        return None
    lo, hi = start, max(ceiling, start * Fraction(1025, 1024))
    for _ in range(8):
        if not verify(hi):
            break
        lo, hi = hi, hi * 2
    else:
        return lo
    width = lo / 2**bits
    while hi - lo > width:
        mid = _short_between(lo, hi)
        if verify(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _short_between(lo: Fraction, hi: Fraction) -> Fraction:
    """A rational with a small denominator strictly inside (lo, hi), near the middle: the proof
    polynomials grow with the denominators of the step."""
    mid = (lo + hi) / 2
    span = (hi - lo) / 4
    for limit in (2**k for k in range(2, 64, 2)):
        near = mid.limit_denominator(limit)
        if abs(near - mid) <= span:
            return near
    return mid


def dyadic(x: float, bits: int) -> Fraction:
    """x rounded to a multiple of 2^-bits·2^⌈log₂|x|⌉: `bits` significant bits, exactly."""
    if x == 0 or not math.isfinite(x):
        return Fraction(0)
    scale = 2 ** (bits - math.frexp(x)[1])
    return Fraction(round(x * scale), scale)
