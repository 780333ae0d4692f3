"""Internal stability of a Runge-Kutta tableau (Ketcheson, Lóczi and Parsani, SIAM J. Numer.
Anal. 52, 2014, whose stage residuals include an implicit method's solver errors).

On y' = λy with z = hλ, a perturbation r of the stage equations Y = e·yₙ + zAY + r (rounding,
or the residual an implicit stage solver leaves) reaches the step as Σ_j Q_j(z)·r_j with

    Q_j(z) = z bᵀ(I − zA)⁻¹e_j,

the internal stability functions. Stages whose row of A is zero are yₙ itself (the first stage
of an explicit method, of Lobatto IIIA, of an ESDIRK): nothing perturbs them and they are left
out. The maximal internal amplification is max_j sup |Q_j(x)| over the real stability interval:

- explicit: A is nilpotent and Q_j(z) = Σ_k (bᵀA^k)_j z^(k+1) are polynomials; the interval is
  bounded, and the maximum is taken over its end points and the critical points (float64).
- implicit: Q_j = P_j/D_j are rational functions (D_j = det(I − zA) over gcd(P_j, det)),
  exact in the field of the entries. Over [−R, 0] when the interval is bounded; when it is
  unbounded (every A-stable method), over the whole negative real axis (−∞, 0], where the stiff
  limit Q_j(−∞) = −bᵀA⁻¹e_j (A invertible) is part of the supremum. Poles and the critical
  points (roots of P′D − PD′) are isolated exactly (`real_roots`), the values there are read in
  float64; a pole in the interval, or growth as x → −∞, is said in words: no number is given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, final

import numpy as np
import sympy
from sympy.polys.densearith import dup_mul, dup_sub
from sympy.polys.densebasic import dup_strip
from sympy.polys.densetools import dup_diff
from sympy.polys.matrices import DomainMatrix

from ...methods import ButcherTableau
from ..budget import Deadline
from ..exact.real_roots import RealField, as_dense, positive_root_values
from ..exact.weights import entries_in_field

Z = sympy.Symbol("z")


@final
@dataclass(frozen=True)
class InternalStability:
    """Internal stability of a tableau over its real stability interval.

    - `polynomials`: Q_j(z) = z bᵀ(I − zA)⁻¹e_j (sympy, in z), one per stage counted:
      polynomials for an explicit method, rational functions for an implicit one.
    - `stages`: the stage numbers (from 1) of those functions.
    - `interval`: R with [−R, 0] the real stability interval (math.inf: unbounded, and the
      supremum is over (−∞, 0]).
    - `amplification`: max_j sup |Q_j(x)| over that interval (float; None when not computed or
      unbounded, `how` says which).
    - `how`: how the maximum was found, or why there is none.
    - `note`: where the supremum is reached, when that is worth saying (a limit at −∞).
    """

    polynomials: list[sympy.Expr]
    interval: float | None
    amplification: float | None
    how: str
    stages: tuple[int, ...] = ()
    note: str = ""

    def text(self) -> str:
        """The report row: the amplification and the interval it is taken over, or `how`."""
        if self.amplification is None or self.interval is None:
            return self.how
        over = "(−∞, 0]" if self.interval == math.inf else f"[−{self.interval:.6g}, 0]"
        return f"{self.amplification:.6g} over {over}" + (f" ({self.note})" if self.note else "")


def internal_stability(
    tableau: ButcherTableau, real_interval: float | None, deadline: Deadline | None = None
) -> InternalStability:
    """The internal stability functions and their maximum over the real stability interval
    (see the module).

    **Arguments:** `tableau`: the method (a family with symbols is not computed); `real_interval`:
    R with [−R, 0] its real stability interval (math.inf: unbounded; None: unknown, and the
    functions are given without a maximum); `deadline`: the report's (`OutOfTime` past it).

    **Returns:** an `InternalStability`.
    """
    if tableau.symbols:
        return InternalStability([], real_interval, None, "not computed for parametrised families")
    if tableau.is_explicit:
        return _explicit(tableau, real_interval)
    return _implicit(tableau, real_interval, deadline or Deadline.never())


def _explicit(tableau: ButcherTableau, real_interval: float | None) -> InternalStability:
    """Q_j(z) = Σ_k (bᵀA^k)_j z^(k+1), exactly, maximised over end and critical points."""
    s = tableau.stages
    K, A, b = entries_in_field(tableau)
    rows = [list(b)]  # bᵀA^k, k = 0 … s − 1
    for _ in range(s - 1):
        last = rows[-1]
        rows.append([sum((last[i] * A[i][j] for i in range(s)), K.zero) for j in range(s)])
    coefficients = [[rows[k][j] for k in range(s)] for j in range(1, s)]  # stage 1 is y_n
    polys = [
        sympy.Add(*(K.to_sympy(c) * Z ** (k + 1) for k, c in enumerate(cs) if c))
        for cs in coefficients
    ]
    stages = tuple(range(2, s + 1))
    if real_interval is None or real_interval == math.inf:
        why = "not computed: no bounded interval"
        return InternalStability(polys, real_interval, None, why, stages)
    worst = 0.0
    for cs in coefficients:
        poly = np.poly1d([*(float(K.to_sympy(c)) for c in reversed(cs)), 0.0])
        points = [-real_interval, 0.0]
        for r in poly.deriv().roots if poly.order > 0 else []:
            if abs(r.imag) < 1e-12 and -real_interval <= r.real <= 0.0:
                points.append(r.real)
        worst = max(worst, *(abs(poly(x)) for x in points))
    how = "max over end points and critical points of each Q_j (float64)"
    return InternalStability(polys, real_interval, float(worst), how, stages)


def _implicit(
    tableau: ButcherTableau, real_interval: float | None, deadline: Deadline
) -> InternalStability:
    """Q_j = P_j/D_j exactly; their supremum over [−R, 0] or (−∞, 0] (see the module)."""
    K, A, b = entries_in_field(tableau)
    field = RealField.of(K)
    if field is None:
        why = f"not computed: the entries' field {K} is not real"
        return InternalStability([], real_interval, None, why)
    stages = tuple(j + 1 for j in range(tableau.stages) if any(A[j]))
    pairs = [(P, D) for j, (P, D) in enumerate(_rational_functions(K, A, b)) if j + 1 in stages]
    exprs = [_expr(P, K) / _expr(D, K) for P, D in pairs]
    if real_interval is None:
        why = "not computed: the real stability interval is unknown"
        return InternalStability(exprs, real_interval, None, why, stages)
    worst, note = 0.0, ""
    for stage, (P, D) in zip(stages, pairs, strict=True):
        found = _supremum(_at_minus(P), _at_minus(D), real_interval, field, deadline)
        if isinstance(found, str):
            why = f"unbounded: Q_{stage} {found}"
            return InternalStability(exprs, real_interval, None, why, stages)
        value, at_limit = found
        if value > worst:
            worst, note = value, "a supremum, approached as x → −∞" if at_limit else ""
    how = (
        "sup over the end points, the limit at −∞ and the critical points of each Q_j = P/D "
        "(poles and critical points isolated exactly, values in float64)"
    )
    return InternalStability(exprs, real_interval, worst, how, stages, note)


def _rational_functions(K: Any, A: list[list[Any]], b: list[Any]) -> list[tuple[Any, Any]]:
    """(P_j, D_j) in lowest terms with D_j(0) = 1, for every stage j: Q_j = P_j/D_j, from
    z bᵀ adj(I − zA) e_j / det(I − zA) over K[z]."""
    s = len(b)
    ring = K[sympy.Symbol("_z")]
    z = ring.gens[0]

    def const(x: Any) -> Any:
        return ring.ring.ground_new(x)

    shifted = [
        [const(K.one if i == j else K.zero) - z * const(A[i][j]) for j in range(s)]
        for i in range(s)
    ]
    adj, det = DomainMatrix(shifted, (s, s), ring).adj_det()
    columns = adj.to_list()
    out = []
    for j in range(s):
        P = z * sum((const(b[i]) * columns[i][j] for i in range(s)), ring.zero)
        common = P.gcd(det)
        P, D = P.exquo(common), det.exquo(common)
        lead = as_dense(D, K)[-1]  # D(0) ≠ 0: det(I) = 1
        out.append((P.quo_ground(lead), D.quo_ground(lead)))
    return out


def _expr(p: Any, K: Any) -> sympy.Expr:
    dense = as_dense(p, K)
    n = len(dense) - 1
    return sympy.Add(*(K.to_sympy(c) * Z ** (n - k) for k, c in enumerate(dense) if c))


def _at_minus(p: Any) -> list[Any]:
    """p(−u) as a dense list over K (u = −x ≥ 0 runs over the negative real axis)."""
    K = p.ring.domain
    dense = as_dense(p, K)
    n = len(dense) - 1
    return [-c if (n - k) % 2 else c for k, c in enumerate(dense)]


def _supremum(
    p: list[Any], d: list[Any], bound: float, field: RealField, deadline: Deadline
) -> tuple[float, bool] | str:
    """sup |p(u)/d(u)| over u ∈ [0, bound] (bound = math.inf: [0, ∞)), with whether it is the
    limit at ∞; a str says why it is unbounded."""
    K = field.domain
    poles = [u for u in positive_root_values(d, field, deadline) if u <= bound]
    if poles:
        return f"has a pole at x = {-poles[0]:.6g}, inside the interval"
    p, d = dup_strip(p), dup_strip(d)
    if bound == math.inf and len(p) > len(d):
        return "grows without bound as x → −∞ (its numerator has the higher degree)"
    derivative = dup_sub(dup_mul(dup_diff(p, 1, K), d, K), dup_mul(p, dup_diff(d, 1, K), K), K)
    points = [u for u in positive_root_values(derivative, field, deadline) if u <= bound]
    if bound < math.inf:
        points.append(bound)
    pf = np.poly1d([float(sympy.N(K.to_sympy(c), 30)) for c in p] or [0.0])
    df = np.poly1d([float(sympy.N(K.to_sympy(c), 30)) for c in d])
    attained = max((abs(pf(u) / df(u)) for u in points), default=0.0)
    if bound < math.inf or len(p) < len(d):
        return float(attained), False
    limit = abs(pf.coeffs[0] / df.coeffs[0])
    return (float(limit), True) if limit > attained else (float(attained), False)
