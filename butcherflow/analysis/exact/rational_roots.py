"""Real roots of integer polynomials over QQ, isolated exactly, for `real_roots.py`'s fields.

flint factors a polynomial and isolates the complex roots of each factor in ball arithmetic
(`positive_boxes`), precision doubling until the boxes tell the real roots apart; sympy's exact
continued-fraction isolation takes over where flint's boxes stay overlapping. Every isolating
interval is rational, narrowed by exact bisection (`halve`), and every loop checks the report's
`Deadline`. Nothing is decided by a rounded value.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import Any

import flint
from sympy.polys.densebasic import dup_strip
from sympy.polys.densetools import dup_clear_denoms
from sympy.polys.domains import QQ
from sympy.polys.rootisolation import dup_isolate_real_roots_sqf

from ..budget import Deadline

Dense = list[Any]  # a dense polynomial over a domain, highest degree first (sympy's dup)
# An isolated real root: a rational interval [lo, hi] holding it and no other root, and the sign
# of a polynomial at a rational point, which changes across the root (for bisection).
Root = tuple[Any, Any, Callable[[Any], int]]


# Past this many bits, a factor whose root boxes still overlap is isolated exactly instead
# (`_isolated_exactly`): doubling further is minutes of work, and has not helped where seen.
MAX_BALL_BITS = 4096


def positive_boxes(poly: flint.acb_poly) -> list[tuple[Any, Any]] | None:
    """Rational isolating intervals, ascending, of the positive real roots of the polynomials
    within `poly`'s real coefficient balls, at the working precision; None when that does not
    decide them.

    `acb_poly.roots` finds n disjoint boxes, each holding a root (Aberth's iteration, then
    flint's inclusion test), within a bounded number of iterations and bits (a ValueError
    otherwise). A box is a real root's when it meets the real axis and its mirror image meets
    no other box (real coefficients: the mirror of a root is a root, and it has to be in some
    box), a non-real one's when it misses the axis.
    """
    try:
        boxes = poly.roots()
    except ValueError:  # not isolated at this precision (or a multiple root)
        return None
    found = []
    for k, box in enumerate(boxes):
        if not box.imag.contains(0):
            continue  # a non-real root
        mirror = box.conjugate()
        if any(mirror.overlaps(other) for j, other in enumerate(boxes) if j != k):
            return None  # real or one of a close pair: not told apart yet
        if box.real.contains(0):
            return None
        if box.real > 0:
            found.append((rational_of(box.real.lower()), rational_of(box.real.upper())))
    return sorted(found)


def ball(q: Any) -> flint.arb:
    """A rational as an arb ball holding it exactly (rounded outwards at the working
    precision)."""
    return flint.arb(flint.fmpq(int(QQ.numer(q)), int(QQ.denom(q))))


def at_minus(g: flint.fmpz_poly) -> Dense:
    """The coefficients of g(−x), highest degree first (integers)."""
    low = [int(c) for c in g.coeffs()]  # ascending
    return [(-c if k % 2 else c) for k, c in enumerate(low)][::-1]


def integer_poly(gz: Dense) -> flint.fmpz_poly:
    """A dense polynomial with integer coefficients as a flint polynomial (its signs at
    rational points are then evaluated in C, `integer_sign`)."""
    return flint.fmpz_poly([int(c) for c in reversed(gz)])


def integer_sign(g: flint.fmpz_poly, u: Any) -> int:
    """The sign of g(u) for g with integer coefficients and u = p/q rational, exactly (flint
    evaluates q^n·g(p/q) in integers; rational Horner in Python reduced a fraction per step)."""
    value = g(flint.fmpq(int(QQ.numer(u)), int(QQ.denom(u))))
    return (value > 0) - (value < 0)


def rational_of(x: flint.arb) -> Any:
    """An exact arb (a ball's end) as a rational."""
    man, exp = x.mid().man_exp()
    return QQ(int(man) * 2 ** int(exp)) if exp >= 0 else QQ(int(man), 2 ** int(-exp))


def halve(g: flint.fmpz_poly, lo: Any, hi: Any) -> tuple[Any, Any]:
    """The half of [lo, hi] holding the one simple root of g in it (exact bisection; a point
    interval when an end or the midpoint is the root)."""
    return _halve_by(functools.partial(integer_sign, g), lo, hi)


def _halve_by(sign: Callable[[Any], int], lo: Any, hi: Any) -> tuple[Any, Any]:
    """`halve` for the polynomial whose sign at a rational `sign` gives."""
    at_lo = sign(lo)
    if lo == hi or not at_lo:
        return lo, lo
    mid = (lo + hi) / 2
    at_mid = sign(mid)
    if not at_mid:
        return mid, mid
    return (lo, mid) if at_mid != at_lo else (mid, hi)


def positive_roots(g: flint.fmpz_poly, deadline: Deadline) -> list[Root]:
    """Disjoint rational isolating intervals, 0 < lo, ascending, of the positive real roots of
    g ≠ 0, each with the sign of an irreducible factor of g that changes across its root.

    g is factored (flint), and the roots of each factor are isolated by `positive_boxes`,
    precision doubling until they are (checking `deadline` in between: flint's own
    `complex_roots` cannot be interrupted, and took minutes on roots of sizes 1e-300 and 1).
    Factoring first matters: (N − D)(N + D) has pairs of roots within 1e-40 of each other,
    one from each factor. Intervals that overlap are narrowed by exact bisection (a simple
    root changes the sign of its factor across it).
    """
    found: list[Root] = []
    for factor, _power in g.factor()[1]:
        if factor.degree() < 1 or factor.coeffs()[0] == 0:
            continue  # a constant, or x itself: its root 0 bounds no gap of (0, ∞)
        bits, spent = 64, 0.0
        while True:
            deadline.check(ahead=4 * spent)  # twice the bits: about four times as long
            started = time.monotonic()
            with flint.ctx.workprec(bits):
                boxes = positive_boxes(flint.acb_poly(factor))
            if boxes is not None:
                break
            spent, bits = time.monotonic() - started, 2 * bits
            if bits > MAX_BALL_BITS:
                boxes = _isolated_exactly(factor)
                break
        sign = functools.partial(integer_sign, factor)
        found += [(lo, hi, sign) for lo, hi in boxes]
    return _apart(found, deadline)


def _isolated_exactly(factor: flint.fmpz_poly) -> list[tuple[Any, Any]]:
    """The positive roots of an irreducible integer polynomial isolated in exact arithmetic
    (sympy's continued-fraction isolation), for the factors whose complex root boxes flint's
    Aberth iteration leaves overlapping at every precision: roots of sizes 1 and 2·10⁵ beside a
    close complex pair did (a random float tableau of six stages, tests/test_stability.py)."""
    dense = [QQ(int(c)) for c in reversed(factor.coeffs())]  # highest degree first
    found = []
    for lo, hi in dup_isolate_real_roots_sqf(dense, QQ, inf=QQ(0)):
        sign = functools.partial(integer_sign, factor)
        while lo <= 0 < hi:  # the factor has no root at 0: narrow the interval off it
            lo, hi = _halve_by(sign, lo, hi)
        if lo > 0:
            found.append((lo, hi))
    return sorted(found)


def _apart(found: list[Root], deadline: Deadline) -> list[Root]:
    """The intervals sorted, overlapping ones narrowed (each around its own root) until apart."""
    while True:
        found.sort(key=lambda root: root[0])
        touching = [i for i in range(len(found) - 1) if found[i][1] >= found[i + 1][0]]
        if not touching:
            return found
        deadline.check()
        for i in touching[:1]:
            for k in (i, i + 1):
                lo, hi, sign = found[k]
                found[k] = (*_halve_by(sign, lo, hi), sign)


def first_failure(breaks: Dense, fails: Callable[[Any], bool], deadline: Deadline) -> float:
    """The first root r > 0 of `breaks` after which `fails` holds (math.inf when none), exactly.

    **Arguments:**

    - `breaks`: a non-zero polynomial over QQ, highest degree first, whose positive real roots
      include every u > 0 where `fails` may change.
    - `fails`: a property of a rational u > 0, constant between consecutive roots of `breaks`.
    - `deadline`: the report's; `OutOfTime` is raised past it, between two gaps.

    **Returns:** r as a float (its isolating interval bisected exactly), 0.0 when `fails` holds
    just right of 0; roots where `fails` stays false on both sides (a touch) are passed. The
    positive roots of its irreducible factors are isolated at once (`positive_roots`), and each
    gap is tested once, at a rational point strictly between two isolating intervals.
    """
    g = integer_poly(dup_clear_denoms(dup_strip(breaks), QQ, convert=True)[1])
    roots = positive_roots(g, deadline) if g.degree() > 0 else []
    return first_failed_gap(roots, fails, deadline)


def first_failed_gap(roots: list[Root], fails: Callable[[Any], bool], deadline: Deadline) -> float:
    """`first_failure` on the isolated positive roots."""
    if not roots:
        return 0.0 if fails(QQ.one) else math.inf  # no positive root: one piece
    if fails(roots[0][0] / 2):  # (0, first root) is not after a root: tested on its own
        return 0.0
    for i, (a, b, sign) in enumerate(roots):
        deadline.check()
        point = (b + roots[i + 1][0]) / 2 if i + 1 < len(roots) else b + 1
        if fails(point):
            return float(a) if a == b else bisect(sign, a, b)
    return math.inf


def bisect(sign: Callable[[Any], int], lo: Any, hi: Any) -> float:
    """The root in its isolating interval [lo, hi] of the polynomial whose sign `sign` gives,
    to double precision, by exact bisection."""
    low_sign = sign(lo)
    while hi - lo > max(abs(hi), 1) * QQ(1, 2**56):
        mid = (lo + hi) / 2
        at_mid = sign(mid)
        if not at_mid:
            return float(mid)
        if at_mid == low_sign:
            lo = mid
        else:
            hi = mid
    return float((lo + hi) / 2)
