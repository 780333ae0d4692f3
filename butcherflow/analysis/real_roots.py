"""Exact signs and real roots over a real number field (QQ or QQ<θ>), for the stability rows.

Every root of a polynomial over QQ<θ> is a root of its norm, a polynomial over QQ, whose real
roots are isolated exactly; the sign of the polynomial between two of them is the sign of an
algebraic number, decided with rational interval arithmetic on an isolating interval of θ.
`stability.py` reads the interval ends and the Routh-Hurwitz test of the poles from here;
`algebraic_stability.py` the signs of its pivots.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, final

import flint
import sympy
from sympy.polys.densebasic import dup_reverse, dup_strip
from sympy.polys.densetools import dup_clear_denoms, dup_eval, dup_scale, dup_shift
from sympy.polys.domains import QQ, ZZ
from sympy.polys.rootisolation import (
    dup_isolate_real_roots_sqf,
    dup_refine_real_root,
    dup_root_upper_bound,
)
from sympy.polys.sqfreetools import dmp_norm, dup_sqf_part

Dense = list[Any]  # a dense polynomial over a domain, highest degree first (sympy's dup)


def is_rational(c: Any) -> bool:
    """An element of an algebraic field that lies in QQ."""
    return len(c.to_list()) <= 1


def rational_part(c: Any) -> Any:
    """The QQ value of a rational element of an algebraic field."""
    return c.to_list()[0] if c else QQ.zero


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

    def _isolate_theta(self) -> tuple[Any, Any]:
        """A rational interval holding θ and no other root of its minimal polynomial."""
        minpoly = self.domain.mod.to_list()
        approx = QQ.from_sympy(sympy.Rational(sympy.N(self.domain.ext.as_expr(), 50)))
        intervals = dup_isolate_real_roots_sqf(minpoly, QQ)
        while True:
            margin = QQ(1, 10**40)  # far above the error of a 50-digit evalf
            holding = [(a, b) for a, b in intervals if a + margin < approx < b - margin]
            if holding:
                return holding[0]
            # θ's 50-digit value sits on an end: narrow every interval and look again
            intervals = [dup_refine_real_root(minpoly, a, b, QQ, steps=8) for a, b in intervals]

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
        while True:
            low = high = h[0]
            for coeff in h[1:]:
                ends = (low * lo, low * hi, high * lo, high * hi)
                low, high = min(ends) + coeff, max(ends) + coeff
            if low > 0 or high < 0:
                return 1 if low > 0 else -1
            minpoly = self.domain.mod.to_list()
            lo, hi = dup_refine_real_root(minpoly, lo, hi, QQ, eps=(hi - lo) / 2**40)
            self._theta = (lo, hi)

    def rational_polynomial(self, f: Dense) -> Dense:
        """A polynomial over QQ whose roots include every root of f (its norm when needed)."""
        if not self.algebraic:
            return [QQ.convert(c) for c in f]
        if all(is_rational(c) for c in f):
            return [rational_part(c) for c in f]
        return dmp_norm(f, 0, self.domain)


def _integer_poly(gz: Dense) -> flint.fmpz_poly:
    """A dense polynomial with integer coefficients as a flint polynomial (its signs at
    rational points are then evaluated in C, `_integer_sign`)."""
    return flint.fmpz_poly([int(c) for c in reversed(gz)])


def _integer_sign(g: flint.fmpz_poly, u: Any) -> int:
    """The sign of g(u) for g with integer coefficients and u = p/q rational, exactly (flint
    evaluates q^n·g(p/q) in integers; rational Horner in Python reduced a fraction per step)."""
    value = g(flint.fmpq(int(QQ.numer(u)), int(QQ.denom(u))))
    return (value > 0) - (value < 0)


def _roots_between(gz: Dense, lo: Any, hi: Any) -> list[tuple[Any, Any]]:
    """Isolating intervals, sorted, of the roots of the squarefree gz (integer coefficients) in
    (lo, hi), neither of which may be a root.

    (1 + x)ⁿ·g(lo + (hi − lo)/(1 + x)) has exactly these roots as its positive roots, so roots
    beyond hi (close pairs included, which are costly to separate) are never isolated. With
    lo = a/d and hi − lo = b/d, everything stays in integers: dⁿ·g((a + b·t)/d).
    """
    d = ZZ.lcm(QQ.denom(lo), QQ.denom(hi))
    a, b = QQ.numer(lo * d), QQ.numer((hi - lo) * d)
    n = len(gz) - 1
    G = [c * d ** (n - k) for k, c in zip(range(n, -1, -1), gz, strict=True)]  # dⁿ·g(x/d)
    moved = dup_shift(dup_reverse(dup_scale(dup_shift(G, a, ZZ), b, ZZ)), ZZ.one, ZZ)
    out = []
    for x0, x1 in dup_isolate_real_roots_sqf(moved, ZZ, inf=QQ.zero):
        out.append((lo + (hi - lo) / (1 + x1), lo + (hi - lo) / (1 + x0)))
    return sorted(out)


def first_exit(f: Dense, field: RealField) -> float:
    """Largest r ≥ 0 with f(u) ≤ 0 for u in [0, r] (math.inf when unbounded), exactly.

    Between consecutive positive real roots of f's rational norm g, f keeps one sign (its roots
    are among g's); that sign is read at a rational point in the gap (`first_failure`).
    """
    K = field.domain
    f = dup_strip(f)
    if not f:
        return math.inf
    while not f[-1]:
        f = f[:-1]  # u^k > 0 for u > 0: the factor does not change the sign there
    if field.algebraic:

        def positive_at(u: Any) -> bool:
            return field.sign(dup_eval(f, K.convert_from(u, QQ), K)) > 0

    else:
        fz = _integer_poly(dup_clear_denoms(f, QQ, convert=True)[1])

        def positive_at(u: Any) -> bool:
            return _integer_sign(fz, u) > 0

    if positive_at(QQ.zero):
        return 0.0
    return first_failure(field.rational_polynomial(f), positive_at)


def first_failure(breaks: Dense, fails: Callable[[Any], bool]) -> float:
    """The first root r > 0 of `breaks` after which `fails` holds (math.inf when none), exactly.

    **Arguments:**

    - `breaks`: a non-zero polynomial over QQ, highest degree first, whose positive real roots
      include every u > 0 where `fails` may change.
    - `fails`: a property of a rational u > 0, constant between consecutive roots of `breaks`.

    **Returns:** r as a float (its isolating interval bisected exactly), 0.0 when `fails` holds
    just right of 0; roots where `fails` stays false on both sides (a touch) are passed. Roots
    are isolated window by window ((0, 1], (1, 2], (2, 4], ...) up to the first failure, each
    gap tested once at a rational point strictly inside it.
    """
    g = dup_sqf_part(dup_strip(breaks), QQ)
    while not g[-1]:
        g = g[:-1]  # a root at 0 bounds no gap of (0, ∞)
    gz = dup_clear_denoms(g, QQ, convert=True)[1]
    gp = _integer_poly(gz)
    bound = dup_root_upper_bound(gz, ZZ)  # every positive root lies below it; None: none
    lo, hi = QQ.zero, QQ.one
    first_gap = True  # (0, first root) is not after a root: tested on its own
    while bound is not None and lo < bound:
        while not _integer_sign(gp, hi):
            hi += hi / 2**30  # a window must not end on a root
        roots = _roots_between(gz, lo, hi)
        if first_gap and roots:
            if fails(roots[0][0] / 2):
                return 0.0
            first_gap = False
        for i in range(len(roots)):
            while True:  # a rational point strictly between root i and root i + 1 (or hi)
                a, b = roots[i]
                point = (b + (roots[i + 1][0] if i + 1 < len(roots) else hi)) / 2
                if _integer_sign(gp, point):
                    break
                if i + 1 < len(roots) and roots[i + 1] == (b, b) and _integer_sign(gp, a):
                    # the next root is b itself, exactly: refining root i never moves b
                    # (an endless loop on float GLMs), so bisect [a, b) exactly instead
                    point = _below_root(gp, a, b)
                    break
                roots[i] = dup_refine_real_root(g, a, b, QQ, steps=1)
                roots[i + 1] = dup_refine_real_root(g, *roots[i + 1], QQ, steps=1)
            if fails(point):
                return _bisect(gp, a, b)
        lo, hi = hi, 2 * hi
    if first_gap and fails(QQ.one):  # no positive root: one piece
        return 0.0
    return math.inf


def _below_root(g: flint.fmpz_poly, a: Any, r: Any) -> Any:
    """A rational point strictly between the one root of g in (a, r) and the root r, where g is
    not zero (g(a) ≠ 0): exact bisection until the root is left of a midpoint m, then the
    midpoint of (m, r), which holds no root."""
    side = _integer_sign(g, a)
    while True:
        middle = (a + r) / 2
        sign = _integer_sign(g, middle)
        if sign != side:  # the root is in (a, middle], so none is in (middle, r)
            return (middle + r) / 2
        a = middle


def _bisect(g: flint.fmpz_poly, lo: Any, hi: Any) -> float:
    """The root of g in its isolating interval [lo, hi], to double precision, by exact bisection
    (cheaper than sympy's continued-fraction refinement for a printed value)."""
    low_sign = _integer_sign(g, lo)
    while hi - lo > max(abs(hi), 1) * QQ(1, 2**56):
        mid = (lo + hi) / 2
        sign = _integer_sign(g, mid)
        if not sign:
            return float(mid)
        if sign == low_sign:
            lo = mid
        else:
            hi = mid
    return float((lo + hi) / 2)


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
