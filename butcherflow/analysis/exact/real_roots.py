"""Exact signs and real roots over a real number field (QQ or QQ<θ>), for the stability rows.

Every root of a polynomial over QQ<θ> is a root of its norm, a polynomial over QQ (a resultant
computed by flint); the real roots of that are isolated by flint in C (`rational_roots.py`), and
the sign of the polynomial between two of them is the sign of an algebraic number, decided with
rational interval arithmetic on an isolating interval of θ. The cost grows polynomially with the
degree and the size of the coefficients (sympy's resultants over fields of degree 24 and its
root isolation of 1e40-sized coefficients took minutes), and every loop checks the report's
`Deadline`. `runge_kutta/stability.py` reads the interval ends and the Routh-Hurwitz test of the
poles from here; `algebraic_stability.py` the signs of its pivots.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any, final

import flint
import sympy
from sympy.polys.densebasic import dup_strip
from sympy.polys.densetools import dup_clear_denoms, dup_eval
from sympy.polys.domains import QQ

from ..budget import Deadline
from .rational_roots import (
    Dense,
    Root,
    at_minus,
    ball,
    bisect,
    first_failed_gap,
    first_failure,
    halve,
    integer_poly,
    integer_sign,
    positive_boxes,
    positive_roots,
    rational_of,
)


def is_rational(c: Any) -> bool:
    """An element of an algebraic field that lies in QQ."""
    return len(c.to_list()) <= 1


def rational_part(c: Any) -> Any:
    """The QQ value of a rational element of an algebraic field."""
    return c.to_list()[0] if c else QQ.zero


def as_dense(p: Any, K: Any) -> Dense:
    """A univariate polynomial (a ring element over the field K) as a dense list over K,
    highest degree first."""
    terms = p.to_dict()
    if not terms:
        return []
    degree = max(k[0] for k in terms)
    return [terms.get((d,), K.zero) for d in range(degree, -1, -1)]


@final
class RealField:
    """A real number field K (QQ or QQ<θ>) with exact signs of its elements.

    θ is pinned down by an isolating interval of its minimal polynomial; an element h(θ) ≠ 0
    gets its sign from h evaluated in exact rational interval arithmetic on that interval,
    narrowed until the result excludes 0 (which always happens, since h(θ) ≠ 0).
    """

    def __init__(self, domain: Any) -> None:
        self.domain = domain
        self.algebraic = bool(domain.is_AlgebraicField)
        self._theta: tuple[Any, Any] | None = None
        if self.algebraic and sympy.N(domain.ext.as_expr(), 20).as_real_imag()[1] != 0:
            raise ValueError(f"{domain} is not a real field")
        self._minpoly = (
            integer_poly(dup_clear_denoms(domain.mod.to_list(), QQ, convert=True)[1])
            if self.algebraic
            else None
        )

    def _isolate_theta(self) -> tuple[Any, Any]:
        """A rational interval holding θ and no other root of its minimal polynomial: the
        isolating interval of a real root of it (`positive_roots` of m(±x)) that holds θ's
        50-digit value with a margin far above that value's error."""
        assert self._minpoly is not None
        approx = QQ.from_sympy(sympy.Rational(sympy.N(self.domain.ext.as_expr(), 50)))
        margin = QQ(1, 10**40)
        sign = 1 if approx > 0 else -1
        g = self._minpoly if sign > 0 else integer_poly(at_minus(self._minpoly))
        if not integer_sign(g, QQ.zero):  # θ = 0 is rational: never an algebraic generator
            raise ValueError(f"{self.domain}: a generator with the root 0")
        target = abs(approx)
        intervals = [(a, b) for a, b, _ in positive_roots(g, Deadline.never())]
        while True:
            holding = [
                (a, b) for a, b in intervals if a + margin < target < b - margin or a == b == target
            ]
            if holding:
                a, b = holding[0]
                return (a, b) if sign > 0 else (-b, -a)
            # θ's 50-digit value sits near an end: narrow every interval and look again
            for _ in range(8):
                intervals = [halve(g, a, b) for a, b in intervals]

    @classmethod
    def of(cls, domain: Any) -> RealField | None:
        """The field, or None when `domain` is not QQ or a real algebraic field."""
        if domain.is_ZZ or domain.is_QQ or domain.is_AlgebraicField:
            try:
                return cls(domain)
            except ValueError:
                return None
        return None

    def sign(self, value: Any) -> int:
        """-1, 0 or 1: the exact sign of an element of the field."""
        if not value:
            return 0
        if not self.algebraic:
            return 1 if value > 0 else -1
        h = value.to_list()
        if len(h) == 1:  # a rational element
            return 1 if h[0] > 0 else -1
        if self._theta is None:
            self._theta = self._isolate_theta()
        lo, hi = self._theta
        assert self._minpoly is not None
        while True:
            low = high = h[0]
            for coeff in h[1:]:
                ends = (low * lo, low * hi, high * lo, high * hi)
                low, high = min(ends) + coeff, max(ends) + coeff
            if low > 0 or high < 0:
                return 1 if low > 0 else -1
            for _ in range(40):  # θ's interval 2⁴⁰ times narrower, by exact bisection
                lo, hi = halve(self._minpoly, lo, hi)
            if lo == hi:  # θ rational: impossible for a generator of degree ≥ 2
                raise AssertionError(f"{self.domain}: θ = {lo} is rational")
            self._theta = (lo, hi)

    def theta_ball(self, bits: int) -> flint.arb:
        """θ as an arb ball narrower than 2^−bits·max(1, |θ|), from its isolating interval:
        narrowed to the one real root ball of the minimal polynomial (flint, at that precision)
        that meets it, then by exact bisection if still too wide."""
        if self._theta is None:
            self._theta = self._isolate_theta()
        lo, hi = self._theta
        assert self._minpoly is not None
        width = max(abs(lo), abs(hi), 1) * QQ(1, 2**bits)
        if hi - lo > width:
            with flint.ctx.workprec(bits + 16):
                around = ball(lo).union(ball(hi))
                try:  # refined to the width asked (roots() alone stops once isolated)
                    boxes = flint.acb_poly(self._minpoly).roots(tol=flint.arb(2) ** -bits)
                except ValueError:
                    boxes = []
                # the boxes that meet [lo, hi] on the real axis; θ is in one of them
                near = [r.real for r in boxes if r.imag.contains(0) and r.real.overlaps(around)]
            if len(near) == 1:  # so θ is in this one, and in [lo, hi]
                ball_lo, ball_hi = rational_of(near[0].lower()), rational_of(near[0].upper())
                lo, hi = max(lo, ball_lo), min(hi, ball_hi)
            while hi - lo > width:
                lo, hi = halve(self._minpoly, lo, hi)
            self._theta = (lo, hi)
        return ball(lo).union(ball(hi))

    def norm(self, f: Dense, deadline: Deadline) -> flint.fmpz_poly:
        """The norm of f (a polynomial over QQ<θ>, not over QQ) up to a constant factor: an
        integer polynomial whose roots are the roots of f and of its conjugates.

        It is Res_y(m(y), F(x, y)) = lc(m)^deg_y(F)·Π F(x, θᵢ), F(x, θ) = f(x) with integer
        coefficients, m the integer minimal polynomial of θ: the product over the conjugates
        θᵢ (flint's isolated complex roots of m) in complex ball arithmetic, each coefficient of
        which then holds exactly one integer, its value. Precision doubles until it does.
        """
        assert self._minpoly is not None
        rows = [list(reversed(c.to_list())) for c in reversed(f)]  # [x^k][y^j]
        scale = 1
        for row in rows:
            for q in row:
                scale = math.lcm(scale, int(QQ.denom(q)))
        integers = [[int(QQ.numer(q * scale)) for q in row] for row in rows]
        power = max(len(row) for row in integers) - 1
        bits, spent = 128, 0.0
        while True:
            deadline.check(ahead=4 * spent)
            started = time.monotonic()
            with flint.ctx.workprec(bits):
                try:
                    conjugates = flint.acb_poly(self._minpoly).roots(
                        tol=flint.arb(2) ** (16 - bits)
                    )
                except ValueError:
                    spent, bits = time.monotonic() - started, 2 * bits
                    continue
                product = flint.acb_poly([flint.acb(int(self._minpoly.coeffs()[-1]) ** power)])
                for theta in conjugates:
                    coefficients = []
                    for row in integers:
                        value = flint.acb(0)
                        for n in reversed(row):  # Horner in θᵢ
                            value = value * theta + n
                        coefficients.append(value)
                    product *= flint.acb_poly(coefficients)
                exact = product.unique_fmpz_poly()
            if exact is not None:
                return exact
            spent, bits = time.monotonic() - started, 2 * bits

    def sign_at(self, f: Dense, u: Any) -> int:
        """The exact sign of f(u), f over the field, u rational."""
        return self.sign(dup_eval(f, self.domain.convert_from(u, QQ), self.domain))

    def positive_roots(self, f: Dense, deadline: Deadline) -> list[Root]:
        """Disjoint rational isolating intervals, 0 < lo, ascending, of the positive real roots
        of f over QQ<θ> (f(0) ≠ 0) or of its norm, each with the sign of a polynomial that
        changes across it.

        Its coefficients are enclosed in arb balls (θ from its isolating interval) and flint
        isolates every complex root of the polynomials within those balls (`acb_poly.roots`:
        n disjoint boxes, each holding a root); a box is a real root's when it meets the real
        axis and its mirror image meets no other box (f has real coefficients, so the mirror of
        a root is a root), and a non-real one's when it misses the axis. Precision doubles
        until each box is one or the other and the positive ones are apart from 0, up to 1024
        bits; past that the roots of f's norm over QQ (`norm`, degree deg f · [K:QQ]) are
        isolated instead, a superset of f's, each with the sign of its factor of the norm
        (between two of them f keeps its sign, which `first_exit` reads). `OutOfTime` past
        `deadline`. Nothing is decided by a rounded value.
        """
        bits, spent = 64, 0.0
        while bits <= 1024:
            deadline.check(ahead=4 * spent)  # twice the bits: about four times as long
            started = time.monotonic()
            with flint.ctx.workprec(bits):
                found = self._isolate(f, self.theta_ball(bits + 32))
            if found is not None:
                sign = functools.partial(self.sign_at, f)
                return [(lo, hi, sign) for lo, hi in found]
            spent, bits = time.monotonic() - started, 2 * bits
        # the balls did not isolate the roots (a multiple root, or roots of very different
        # sizes: Aberth's iteration crawls towards a root at 1e-300): isolate those of the norm
        return positive_roots(self.norm(f, deadline), deadline)

    def _isolate(self, f: Dense, theta: flint.arb) -> list[tuple[Any, Any]] | None:
        """One attempt of `positive_roots` at the working precision; None: not decided."""
        coefficients = []
        for c in reversed(f):  # ascending
            value = flint.arb(0)
            for q in c.to_list():  # Horner in θ, highest power first
                value = value * theta + ball(q)
            coefficients.append(value)
        if coefficients[-1].contains(0):
            return None
        return positive_boxes(flint.acb_poly(coefficients))


def first_exit(f: Dense, field: RealField, deadline: Deadline) -> float:
    """Largest r ≥ 0 with f(u) ≤ 0 for u in [0, r] (math.inf when unbounded), exactly.

    Between consecutive positive real roots of f, f keeps one sign; that sign is read at a
    rational point in each gap (`first_failure`). Raises `OutOfTime` past `deadline`.
    """
    f = dup_strip(f)
    if not f:
        return math.inf
    while not f[-1]:
        f = f[:-1]  # u^k > 0 for u > 0: the factor does not change the sign there
    if field.algebraic and all(is_rational(c) for c in f):
        f, field = [rational_part(c) for c in f], RealField(QQ)
    if not field.algebraic:
        fz = integer_poly(dup_clear_denoms([QQ.convert(c) for c in f], QQ, convert=True)[1])
        if integer_sign(fz, QQ.zero) > 0:
            return 0.0
        return first_failure(f, lambda u: integer_sign(fz, u) > 0, deadline)

    def positive(u: Any) -> bool:
        return field.sign_at(f, u) > 0

    if positive(QQ.zero):
        return 0.0
    return first_failed_gap(field.positive_roots(f, deadline), positive, deadline)


def positive_root_values(f: Dense, field: RealField, deadline: Deadline) -> list[float]:
    """The positive real roots of f (over the field, not identically zero), ascending, each
    isolated exactly and bisected to double precision. Where the balls cannot isolate f's own
    roots, those of its norm are given (a superset: `RealField.positive_roots`).
    """
    f = dup_strip(f)
    while f and not f[-1]:
        f = f[:-1]  # the root 0 is not positive
    if len(f) <= 1:
        return []
    if field.algebraic and all(is_rational(c) for c in f):
        f, field = [rational_part(c) for c in f], RealField(QQ)
    if field.algebraic:
        roots = field.positive_roots(f, deadline)
    else:
        gz = dup_clear_denoms([QQ.convert(c) for c in f], QQ, convert=True)[1]
        roots = positive_roots(integer_poly(gz), deadline)
    return [float(lo) if lo == hi else bisect(sign, lo, hi) for lo, hi, sign in roots]


def hurwitz(q: Dense, field: RealField) -> bool:
    """Every root of q has a negative real part (Routh's array: no zero, no sign change)."""
    K = field.domain
    first = field.sign(q[0])
    upper, lower = q[0::2], q[1::2]
    while lower:
        if field.sign(lower[0]) != first:
            return False
        ratio = upper[0] / lower[0]
        padded = [*lower[1:], K.zero]
        upper, lower = lower, [upper[j + 1] - ratio * padded[j] for j in range(len(upper) - 1)]
    return True
