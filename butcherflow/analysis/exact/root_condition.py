"""The root condition on ρ(ζ) = Σⱼ αⱼ ζ^j: roots in the closed unit disc, those on the circle
simple (zero-stability of a linear multistep method; the general linear analysis uses it for
the characteristic polynomial of V).

Decided exactly for rational coefficients: ρ is factored over QQ, and each factor's roots are
placed by its kind (linear, cyclotomic, palindromic by Sturm counting); other factors have no
root on the circle, and their roots' sides are read from high-precision mpmath roots. A numeric
declaration counts a root within the first-order effect of its rounding of |ζ| = 1 as on it.
"""

from __future__ import annotations

import math
from itertools import combinations
from typing import Any

import mpmath
import sympy

ZETA = sympy.Symbol("zeta")
DIGITS = 50  # working precision of the root moduli that exact factoring leaves to numerics
Root = tuple[Any, int, Any]  # (value, multiplicity, |value|)


def _mp(value: Any) -> Any:
    if isinstance(value, (mpmath.mpf, mpmath.mpc)):
        return value
    return mpmath.mpmathify(str(sympy.N(value, DIGITS + 10)))


def _on_circle_reciprocal(f: sympy.Poly) -> bool:
    """Whether every root of a palindromic f (degree 2m) lies on |ζ| = 1, exactly.

    f(ζ) = ζ^m g(ζ + 1/ζ), and |ζ| = 1 iff w = ζ + 1/ζ is real in [−2, 2]: Sturm counting decides.
    """
    w, a = sympy.Symbol("w"), f.all_coeffs()[::-1]
    m, t = len(a) // 2, [sympy.Integer(2), w]  # t[i] = ζ^i + ζ^(−i) as a polynomial in w
    while len(t) <= m:
        t.append(sympy.expand(w * t[-1] - t[-2]))
    g = sympy.Poly(a[m] + sum(a[m + i] * t[i] for i in range(1, m + 1)), w)
    return bool(g.count_roots(-2, 2) == g.degree())


def _place(modulus: Any, eps: float = 0.0) -> int:  # -1 inside, 0 on, 1 outside |ζ| = 1
    return 0 if abs(modulus - 1) <= eps else (-1 if modulus < 1 else 1)


def _roots(coeffs: list[Any]) -> list[Any]:
    """The roots of a polynomial (sympy coefficients, highest first) to DIGITS digits."""
    try:
        return list(mpmath.polyroots([_mp(c) for c in coeffs], 400, 4 * DIGITS))
    except mpmath.libmp.NoConvergence:
        # Durand-Kerner stalls on a cluster (a double root that the digits split by 1e-9, as in
        # a float V's characteristic polynomial); the companion matrix's eigenvalues do not, and
        # at twice the digits (coefficients included) a double root keeps DIGITS of them.
        n = len(coeffs) - 1
        with mpmath.workdps(2 * DIGITS):
            lead = mpmath.mpmathify(str(sympy.N(coeffs[0], 2 * DIGITS + 10)))
            companion = mpmath.zeros(n)
            for i in range(1, n):
                companion[i, i - 1] = 1
            for i in range(n):
                c = mpmath.mpmathify(str(sympy.N(coeffs[n - i], 2 * DIGITS + 10)))
                companion[i, n - 1] = -c / lead
            return list(mpmath.eig(companion, left=False, right=False))


# One root as placed: (value, multiplicity, |value|, side: -1 inside / 0 on / 1 outside the
# unit circle, eps: how far its modulus may be from the exact one's for a numeric declaration).
Placed = tuple[Any, int, Any, int, float]


def place_roots(
    rho: sympy.Poly, rounding: float
) -> tuple[list[tuple[sympy.Poly, list[Placed]]], set[str]]:
    """Every root of ρ placed against the unit circle, factor by factor: exactly for rational ρ
    (factored over QQ: linear, cyclotomic and palindromic factors by algebra, the others, which
    have no root on the circle, by 50-digit roots), and within the first-order effect of the
    rounding for a numeric ρ (irreducible factors of rational digits, else square-free ones).

    **Returns:** `(factors, used)`: each factor of the factorisation with its placed roots (the
    multiplicity is the factor's), and the reasons used, in words.
    """
    rational = bool(rho.domain.is_QQ or rho.domain.is_ZZ)
    exact = rational and rounding == 0
    k, used = rho.degree(), set()
    factors: list[tuple[sympy.Poly, list[Placed]]] = []
    # irreducible factors whenever the digits are rational: a factor's roots then share their
    # Jordan structure (zero_stability's rank test), also for a numeric declaration
    for f, mult in rho.factor_list()[1] if rational else rho.sqf_list()[1]:
        with mpmath.workdps(DIGITS):
            values = [-f.nth(0) / f.nth(1)] if f.degree() == 1 else _roots(f.all_coeffs())
        place: int | None = None
        placed: list[Placed] = []
        if exact and f.degree() == 1:
            used.add("linear factors give exact rational roots")
            place = _place(abs(values[0]))
        elif exact and f.is_cyclotomic:
            used.add("cyclotomic factors have every root on the unit circle")
            place = 0
        elif exact and f.all_coeffs() == f.all_coeffs()[::-1]:
            used.add(
                "palindromic factors were decided by w = ζ + 1/ζ and Sturm counting on [-2, 2]"
            )
            place = 0 if _on_circle_reciprocal(f) else None  # else: some root lies outside
        elif exact:
            used.add(
                "the other factors have no root on the circle (a factor with one is palindromic); "
                f"each root's side was read from {DIGITS}-digit mpmath roots"
            )
        for value in values:
            modulus = abs(_mp(value))
            side = _place(modulus, 0.0 if exact else 1e-40) if place is None else place
            eps = 0.0
            if rounding > 0:
                # How far the root can move when ρ moves by (k+1)·rounding on the circle:
                # |δζ|^m |ρ^(m)(ζ)| / m! = |δρ| for a root of multiplicity m.
                taylor = [_mp(c) for c in rho.diff((ZETA, mult)).all_coeffs()]
                with mpmath.workdps(DIGITS):
                    size = abs(mpmath.polyval(taylor, _mp(value))) / math.factorial(mult)
                eps = float(((k + 1) * rounding / size) ** (1.0 / mult)) if size else math.inf
                side = 0 if abs(modulus - 1) <= eps else side
            placed.append((value, mult, modulus, side, eps))
        factors.append((f, placed))
    return factors, used


def root_condition(
    rho: sympy.Poly, rounding: float, *, matrix: bool = False
) -> tuple[bool | None, list[Root], str, bool]:
    """The root condition on ρ: every root in the closed unit disc, those on the circle simple.

    **Arguments:**

    - `rho`: ρ(ζ) as a univariate `sympy.Poly`.
    - `rounding`: how far each coefficient may be from the digits given (0 for exact ones).
    - `matrix`: ρ is a matrix's characteristic polynomial, whose repeated roots on the circle
      the caller decides by its own rank test (semisimple eigenvalues are fine): they are
      neither a failure nor undetermined here.

    **Returns:** `(zero_stable, roots, how, weakly)`: `zero_stable` is None when a numeric
    declaration leaves a root other than 1 within its precision of the unit circle (on it, or
    just outside: the digits cannot tell), or a repeated root on it; `roots` are `(value,
    multiplicity, |value|)`, largest modulus first; `how` says how it was decided; `weakly`:
    zero-stable with roots on the circle other than 1.
    """
    exact = bool(rho.domain.is_QQ or rho.domain.is_ZZ) and rounding == 0
    factors, used = place_roots(rho, rounding)
    found = [root for _, placed in factors for root in placed]
    circle = [r for r in found if r[3] == 0]
    clustered = any(abs(_mp(a[0]) - _mp(b[0])) <= a[4] + b[4] for a, b in combinations(circle, 2))
    # A definite failure: a root the digits put outside, or an exact ρ's repeated root on the
    # circle. A numeric declaration's repeated root on the circle (exactly, or within the
    # precision), or two roots on it within each other's reach, is undetermined: a method within
    # the precision may have it inside, or split into simple roots on the circle.
    definite = any(r[3] == 1 for r in found) or (
        rounding == 0 and not matrix and any(r[1] > 1 and abs(r[2] - 1) <= 1e-30 for r in circle)
    )
    simple = matrix or all(r[1] == 1 for r in circle)
    stable: bool | None = not definite and simple and not clustered
    near = not definite and not stable and rounding > 0
    if near:
        stable = None
    parasitic = [r for r in circle if abs(_mp(r[0]) - 1) > max(r[4], 1e-30)]
    weakly = bool(stable and parasitic)
    if stable and parasitic and rounding > 0:
        stable, weakly = None, False  # on the circle only to within the precision
    how = (
        "zero-stability decided exactly: ρ factored over QQ; " + "; ".join(sorted(used))
        if exact
        else f"ρ is over {rho.domain}: multiplicities exact ("
        + ("factored over QQ" if rho.domain.is_QQ or rho.domain.is_ZZ else "square-free factors")
        + "), sides "
        f"from {DIGITS}-digit mpmath roots (within 1e-40 of |ζ| = 1 counts as on it)"
    )
    if rounding > 0:
        how += "; numeric declaration: a root within the first-order effect of the rounding of "
        how += "|ζ| = 1 counts as on it"
    found.sort(key=lambda r: (-float(r[2]), float(mpmath.arg(_mp(r[0])))))
    roots = [
        (v if isinstance(v, sympy.Basic) else complex(v), m, float(a)) for v, m, a, *_ in found
    ]
    if near:
        how += (
            "; a repeated root, or two close roots, within the precision of |ζ| = 1: undetermined"
        )
    elif stable is None:
        how += "; a root other than 1 lies within the precision of |ζ| = 1: undetermined"
    return stable, roots, how, weakly
