"""The SSP coefficient and the threshold factor of a Runge-Kutta tableau, exactly.

- The SSP coefficient is Kraaijevanger's radius of absolute monotonicity (BIT 31, 1991): the
  largest r with (I + rK) invertible, K(I + rK)⁻¹ ≥ 0 and (I + rK)⁻¹e ≥ 0 entrywise, for
  K = [[A, 0], [bᵀ, 0]]. The admissible r form an interval [0, R]; every entry is a rational
  function in r over the field of the tableau, and R is the first r > 0 where a numerator
  turns negative or det(I + rK) vanishes, found exactly (`real_roots.first_exit`).
- The threshold factor is the radius of absolute monotonicity of the stability polynomial alone.
- `monotonicity_margin` reads the same entries in float64 at given r, for plots.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, final

import numpy as np
import sympy
from sympy.polys.matrices import DomainMatrix

from ...errors import AnalysisError
from ...methods import ButcherTableau
from ..budget import Deadline
from ..exact.real_roots import RealField, as_dense, first_exit
from ..exact.weights import entries_in_field


@final
@dataclass(frozen=True)
class SSPCoefficient:
    """Kraaijevanger's radius of absolute monotonicity R of a tableau.

    - `value`: R as a float (math.inf for unconditional monotonicity), its end isolated exactly.
    - `exact`: R as an exact sympy number when it is rational (found and checked), else None.
    - `digits`: True for a numeric tableau: R of the method its digits spell.
    """

    value: float
    exact: sympy.Expr | None
    digits: bool

    def text(self) -> str:
        if self.value == math.inf:
            shown = "∞ (absolutely monotonic for every step)"
        else:
            shown = str(self.exact) if self.exact is not None else f"{self.value:.12g}"
        return shown + (" (of the digits as given)" if self.digits else "")


def ssp_coefficient(tableau: ButcherTableau, deadline: Deadline | None = None) -> SSPCoefficient:
    """The SSP coefficient (radius of absolute monotonicity) of a tableau, exactly.

    **Arguments:** `tableau`: an explicit or implicit method without free symbols.

    **Returns:** an `SSPCoefficient`.
    """
    deadline = deadline or Deadline.never()
    K, A, b = entries_in_field(tableau)
    field = RealField.of(K)
    if field is None:
        raise AnalysisError(
            f"{tableau.name}: the SSP coefficient needs real exact entries without symbols "
            f"(their field is {K})"
        )
    if any(field.sign(x) < 0 for x in (*b, *(a for row in A for a in row))):
        # K(I + rK)⁻¹ = K + O(r): a negative entry of K is negative for every small r > 0
        return SSPCoefficient(0.0, sympy.Integer(0), tableau.numeric)
    if tableau.is_explicit:
        radius = _explicit_radius(K, A, b, field, deadline)
        found = None if radius in (0.0, math.inf) else _rational_from(radius, K, A, b)
        return SSPCoefficient(radius, sympy.Integer(0) if radius == 0.0 else found, tableau.numeric)
    s = tableau.stages
    R = K[sympy.Symbol("_r")]  # polynomials in r over the field of the tableau
    r = R.gens[0]

    def const(x: Any) -> Any:
        return R.ring.ground_new(x)

    rows = [[*A[i], K.zero] for i in range(s)] + [[*b, K.zero]]
    n = s + 1
    shifted = [
        [const(K.one if i == j else K.zero) + r * const(rows[i][j]) for j in range(n)]
        for i in range(n)
    ]
    adj, det = DomainMatrix(shifted, (n, n), R).adj_det()
    kmat = DomainMatrix([[const(x) for x in row] for row in rows], (n, n), R)
    polys = [x for row in (kmat * adj).to_list() for x in row]
    polys += [sum(row, R.zero) for row in adj.to_list()]  # (I + rK)⁻¹e, times det
    radius = first_exit(as_dense(-det, K), field, deadline)  # det(I + rK) > 0 from r = 0 up to here
    for p in polys:
        if radius == 0.0:
            break
        radius = min(radius, first_exit(as_dense(-p, K), field, deadline))
    if radius == 0.0:
        exact: sympy.Expr | None = sympy.Integer(0)
    elif radius == math.inf:
        exact = None
    else:
        exact = _root_if_rational(radius, [as_dense(p, K) for p in [*polys, det]], K)
    return SSPCoefficient(radius, exact, tableau.numeric)


def threshold_factor(
    tableau: ButcherTableau, deadline: Deadline | None = None
) -> SSPCoefficient | None:
    """The threshold factor of an explicit tableau: the radius of absolute monotonicity of its
    stability polynomial R(z) alone, the largest r with R⁽ᵏ⁾(x) ≥ 0 on [−r, 0] for every k
    (Kraaijevanger 1986; what RK-Opt reports beside the SSP coefficient, which never exceeds
    it: the SSP coefficient bounds nonlinear and the threshold factor linear monotone steps).

    **Arguments:** `tableau`: a method without free symbols.

    **Returns:** an `SSPCoefficient`-shaped value, or None for an implicit method (a rational
    R, whose derivatives are not examined here).
    """
    if not tableau.is_explicit:
        return None
    deadline = deadline or Deadline.never()
    K, A, b = entries_in_field(tableau)
    field = RealField.of(K)
    if field is None:
        raise AnalysisError(f"{tableau.name}: the threshold factor needs real exact entries")
    s = len(b)
    coefficients, v = [K.one], [K.one] * s  # c_k = bᵀA^(k−1)e, R(z) = Σ c_k z^k
    for _ in range(s):
        coefficients.append(sum((bi * vi for bi, vi in zip(b, v, strict=True)), K.zero))
        v = [sum((A[i][j] * v[j] for j in range(s)), K.zero) for i in range(s)]
    radius, bounding = math.inf, []
    for k in range(len(coefficients)):
        # −R⁽ᵏ⁾(−ρ) = −Σ_j c_j·j!/(j−k)!·(−ρ)^(j−k), highest degree first
        dense = [
            -coefficients[j] * K.convert(math.perm(j, k)) * (K.one if (j - k) % 2 == 0 else -K.one)
            for j in range(len(coefficients) - 1, k - 1, -1)
        ]
        bounding.append(_strip(dense, K))
        radius = min(radius, first_exit(bounding[-1], field, deadline))
        if radius == 0.0:
            return SSPCoefficient(0.0, sympy.Integer(0), tableau.numeric)
    exact = None if radius == math.inf else _root_if_rational(radius, bounding, K)
    return SSPCoefficient(radius, exact, tableau.numeric)


def _root_if_rational(radius: float, dense_polys: list[list[Any]], K: Any) -> sympy.Expr | None:
    """`radius` exactly when a nearby rational is a root of one of the dense polynomials."""
    guess = sympy.nsimplify(radius, rational=True, tolerance=1e-12)
    if abs(float(guess) - radius) > 1e-9 * max(1.0, radius):
        return None
    point = K.convert(guess)
    for dense in dense_polys:
        value = K.zero
        for c in dense:
            value = value * point + c
        if dense and value == K.zero:
            return sympy.Rational(guess)
    return None


def _explicit_radius(
    K: Any, A: list[list[Any]], b: list[Any], field: RealField, deadline: Deadline
) -> float:
    """R for an explicit tableau: K is nilpotent, so (I + rK)⁻¹ = Σ_k (−r)^k K^k (det = 1),
    and every entry is a polynomial whose coefficients are entries of the powers of K."""
    polys = _explicit_polynomials(K, A, b)
    radius = math.inf
    for p in polys:
        if radius == 0.0:
            break
        radius = min(radius, first_exit([-c for c in p], field, deadline))
    return radius


def _explicit_polynomials(K: Any, A: list[list[Any]], b: list[Any]) -> list[list[Any]]:
    """The numerators of K(I + rK)⁻¹ and (I + rK)⁻¹e of an explicit tableau, as dense
    polynomials in r (highest degree first)."""
    s = len(b)
    n = s + 1
    rows = [[*A[i], K.zero] for i in range(s)] + [[*b, K.zero]]
    kmat = DomainMatrix(rows, (n, n), K)
    power = DomainMatrix.eye(n, K)
    terms_k, terms_e = [], []  # (−1)^k K^(k+1) and (−1)^k K^k e, k = 0 … n − 1
    for k in range(n):
        sign = K.one if k % 2 == 0 else -K.one
        terms_e.append([sign * sum(row, K.zero) for row in power.to_list()])
        power = power * kmat
        terms_k.append([[sign * x for x in row] for row in power.to_list()])
    polys = []
    for i in range(n):
        for j in range(n):
            polys.append(_strip([terms_k[k][i][j] for k in reversed(range(n))], K))
        polys.append(_strip([terms_e[k][i] for k in reversed(range(n))], K))
    return polys


def _strip(dense: list[Any], K: Any) -> list[Any]:
    while dense and dense[0] == K.zero:
        dense = dense[1:]
    return dense


def _rational_from(radius: float, K: Any, A: list[list[Any]], b: list[Any]) -> sympy.Expr | None:
    """R of an explicit tableau exactly when rational (a root of one of its polynomials)."""
    return _root_if_rational(radius, _explicit_polynomials(K, A, b), K)


def monotonicity_margin(tableau: ButcherTableau, r: np.ndarray) -> np.ndarray:
    """min over the entries of K(I + rK)⁻¹ and (I + rK)⁻¹e that are not identically zero, at
    each r, in float64: non-negative exactly on [0, R] (R the SSP coefficient, found exactly by
    `ssp_coefficient`; this is its picture). Entries zero for every r (those above the diagonal
    of an explicit method) are left out, since they never decide R.

    **Arguments:** `tableau`: a method without symbols; `r`: the points, shape `(n,)`, r ≥ 0.

    **Returns:** the margins, shape `(n,)` (nan where I + rK is singular).
    """
    s = tableau.stages
    A = np.array([[float(x) for x in row] for row in tableau.A], dtype=np.float64)
    b = np.array([float(x) for x in tableau.b], dtype=np.float64)
    K = np.zeros((s + 1, s + 1))
    K[:s, :s], K[s, :s] = A, b
    shifted = np.eye(s + 1)[None] + np.asarray(r, dtype=np.float64)[:, None, None] * K[None]
    entries = np.full((len(r), (s + 1) * (s + 2)), np.nan)
    for k, m in enumerate(shifted):
        if abs(np.linalg.det(m)) > 1e-12:
            inverse = np.linalg.inv(m)
            entries[k] = np.concatenate([(K @ inverse).ravel(), inverse.sum(axis=1)])
    live = np.nanmax(np.abs(entries), axis=0) > 1e-13 if np.isfinite(entries).any() else []
    return np.asarray(np.min(entries[:, live], axis=1))
