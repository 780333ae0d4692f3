"""Linear stability of Runge-Kutta methods: R(z), its intervals, A- and L-stability.

R(z) = det(I − zA + z·1bᵀ) / det(I − zA) is computed exactly (for explicit methods it is the
polynomial 1 + Σₖ zᵏ bᵀAᵏ⁻¹1). The stability intervals are the ends of {x ≤ 0 : |R(x)| ≤ 1} and
{y ≥ 0 : |R(iy)| ≤ 1} containing 0. They are located from the exact polynomials
P(x) = N(x)² − D(x)² and E(y) = |N(iy)|² − |D(iy)|² (|R| ≤ 1 ⇔ P ≤ 0, resp. E ≤ 0) by finding
their roots at 60 significant digits (mpmath) and testing the sign between consecutive roots.
"""

from __future__ import annotations

import math
from typing import Any, final

import mpmath
import numpy as np
import sympy

from ..methods import ButcherTableau

z = sympy.Symbol("z")
_x = sympy.Symbol("x", real=True)
_DPS = 60


def _roots(poly: sympy.Poly) -> list[Any]:
    """The distinct complex roots (mpmath numbers), x = 0 removed exactly, at 60 digits.

    The square-free part is taken first: multiple roots (SDIRK's (1 − z/4)⁵) stall polyroots,
    and only the distinct roots matter for where |R| crosses 1.
    """
    coeffs = list(poly.sqf_part().all_coeffs())
    while coeffs and coeffs[-1] == 0:
        coeffs.pop()  # a root at 0 of any multiplicity: not a boundary, drop it exactly
    if len(coeffs) <= 1:
        return []
    with mpmath.workdps(_DPS):
        values = [mpmath.mpf(sympy.N(c, _DPS)) for c in coeffs]
        try:
            return list(mpmath.polyroots(values, maxsteps=800, extraprec=400))
        except mpmath.libmp.NoConvergence:  # multiple roots converge slowly; accept less
            return list(mpmath.polyroots(values, maxsteps=800, extraprec=400, error=False))


def _interval_end(poly: sympy.Poly, direction: int) -> float:
    """Largest r ≥ 0 with poly(direction·u) ≤ 0 for u in [0, r] (math.inf when unbounded)."""
    if poly.is_zero:
        return math.inf
    if poly.get_domain().is_QQ or poly.get_domain().is_ZZ:
        # Exact real-root isolation: ~10x faster than all complex roots at 60 digits for the
        # degree-34 polynomials of Feagin 10, and certain.
        squarefree = poly.sqf_part()
        reals = [(a + b) / 2 for (a, b), _ in squarefree.intervals(eps=sympy.Rational(1, 10**15))]
        candidates = sorted(float(abs(r)) for r in reals if r * direction > 0)
    else:
        candidates = sorted(
            float(abs(r.real))
            for r in _roots(poly)
            if abs(r.imag) <= 1e-30 * max(1, abs(r)) and r.real * direction > 0
        )

    def sign_at(u: float) -> float:
        return float(poly.eval(sympy.Float(direction * u, 30)))

    left = 0.0
    for root in candidates:
        if root - left > 1e-12 and sign_at((left + root) / 2) > 0:
            return left
        left = root
    return math.inf if sign_at(left + 1.0 + left) <= 0 else left


@final
class StabilityFunction:
    """R(z) of a Runge-Kutta method with its stability properties.

    **Attributes:**

    - `expression`: R(z), a sympy rational function of `z`.
    - `real_interval`: r ≥ 0 such that [−r, 0] is the real stability interval (inf: unbounded).
    - `imaginary_interval`: y ≥ 0 such that [−iy, iy] is the imaginary stability interval.
    - `a_stable`, `l_stable`: `None` for parametrised families.
    """

    def __init__(self, tableau: ButcherTableau, order: int | None = None) -> None:
        s = tableau.stages
        if tableau.is_explicit:
            ones = sympy.Matrix([1] * s)
            A = sympy.Matrix(tableau.A)
            b = sympy.Matrix([tableau.b])
            terms, vec = [sympy.Integer(1)], ones
            for k in range(1, s + 1):
                terms.append((b * vec)[0] * z**k)
                vec = A * vec
            if tableau.numeric and order:
                # The proved order fixes the coefficients of z^k, k <= order, at 1/k!; the
                # digits' rounding would otherwise leave noise there that decides the sign of
                # |R(iy)|^2 - 1 near 0 (and collapses the imaginary interval to {0}).
                terms[: order + 1] = [z**k / sympy.factorial(k) for k in range(order + 1)]
            expression = sympy.expand(sympy.Add(*terms))
        else:
            A = sympy.Matrix(tableau.A)
            eye = sympy.eye(s)
            rank_one = sympy.Matrix([1] * s) * sympy.Matrix([tableau.b])
            num = (eye - z * A + z * rank_one).det(method="berkowitz")
            den = (eye - z * A).det(method="berkowitz")
            expression = sympy.cancel(sympy.radsimp(sympy.expand(num)) / sympy.expand(den))
        self.expression: sympy.Expr = expression
        self.symbolic = bool(expression.free_symbols - {z})
        numer, denom = sympy.fraction(sympy.cancel(expression))
        self.numerator = sympy.Poly(numer, z)
        self.denominator = sympy.Poly(denom, z)
        self.real_interval: float | None = None
        self.imaginary_interval: float | None = None
        self.a_stable: bool | None = None
        self.l_stable: bool | None = None
        if not self.symbolic:
            self._intervals()

    def _intervals(self) -> None:
        N, D = self.numerator.as_expr(), self.denominator.as_expr()
        real = sympy.Poly(sympy.expand(N.subs(z, _x) ** 2 - D.subs(z, _x) ** 2), _x)
        n_iy, d_iy = sympy.expand(N.subs(z, sympy.I * _x)), sympy.expand(D.subs(z, sympy.I * _x))
        modulus = (
            sympy.re(n_iy) ** 2 + sympy.im(n_iy) ** 2 - sympy.re(d_iy) ** 2 - sympy.im(d_iy) ** 2
        )
        imaginary = sympy.Poly(sympy.expand(modulus), _x)
        self.real_interval = _interval_end(real, -1)
        self.imaginary_interval = _interval_end(imaginary, 1)
        poles = _roots(self.denominator) if self.denominator.degree() > 0 else []
        right_poles = all(p.real > mpmath.mpf(10) ** (-40) for p in poles)
        self.a_stable = bool(self.imaginary_interval == math.inf and right_poles)
        self.l_stable = bool(self.a_stable and self.numerator.degree() < self.denominator.degree())

    @property
    def real_interval_text(self) -> str | None:
        r = self.real_interval
        if r is None:
            return None
        if r == math.inf:
            return "(-∞, 0]"
        return "none (only z = 0)" if r == 0 else f"[{-r:.6g}, 0]"

    @property
    def imaginary_interval_text(self) -> str | None:
        y = self.imaginary_interval
        if y is None:
            return None
        if y == math.inf:
            return "the whole imaginary axis"
        return "none (only z = 0)" if y == 0 else f"[-{y:.6g}i, {y:.6g}i]"

    def evaluate(self, values: np.ndarray) -> np.ndarray:
        """R at complex points (numpy), e.g. to draw the stability region |R(z)| ≤ 1."""
        if self.symbolic:
            raise ValueError("substitute the family's parameters before evaluating R(z)")
        function = sympy.lambdify(z, self.expression, "numpy")
        return np.asarray(function(values), dtype=complex) * np.ones_like(values)


def stability_function(tableau: ButcherTableau, order: int | None = None) -> StabilityFunction:
    """R(z) and the linear stability properties of `tableau` (for a numeric explicit tableau,
    the coefficients of z^k up to its proved `order` are taken exactly as 1/k!)."""
    return StabilityFunction(tableau, order)
