"""Burrage-Butcher algebraic stability of Runge-Kutta methods, decided exactly.

bᵢ ≥ 0 and M = BA + AᵀB − bbᵀ positive semidefinite, by an LDLᵀ elimination with exact signs
(`real_roots.RealField`) in the field of the entries. A numeric tableau is judged for every
method within the rounding of its digits.
"""

from __future__ import annotations

from typing import Any

import sympy

from ...methods import ButcherTableau, Number
from ..exact.real_roots import RealField
from ..exact.weights import entries_in_field


def _positive_semidefinite(M: list[list[Any]], field: RealField) -> bool:
    """Exactly, by symmetric elimination (O(s³) operations): a positive diagonal pivot d leaves
    M PSD iff its Schur complement is; when no diagonal entry is positive, M is PSD iff what
    remains is zero."""
    M = [list(row) for row in M]
    left = list(range(len(M)))
    while left:
        signs = {i: field.sign(M[i][i]) for i in left}
        if any(v < 0 for v in signs.values()):
            return False
        pivot = next((i for i in left if signs[i] > 0), None)
        if pivot is None:
            return all(not M[i][j] for i in left for j in left)
        left.remove(pivot)
        for i in left:
            factor = M[i][pivot] / M[pivot][pivot]
            for j in left:
                M[i][j] -= factor * M[pivot][j]
    return True


def _rounding_bound(
    tableau: ButcherTableau, A: list[list[Any]], b: list[Any], field: RealField
) -> tuple[list[Any], Any]:
    """For a numeric tableau: each weight's rounding, and β ≥ ‖δM‖₂ for every method whose
    entries lie within their rounding of the digits (β = s·max |δMᵢⱼ|, bounded term by term)."""
    K, s = field.domain, tableau.stages

    def eps(x: Number) -> Any:
        return K.convert(sympy.Rational(x.rounding))

    def size(x: Any) -> Any:
        return -x if field.sign(x) < 0 else x

    def product(x: Any, ex: Any, y: Any, ey: Any) -> Any:  # max |δ(xy)| over the box
        return size(x) * ey + ex * size(y) + ex * ey

    eb = [eps(x) for x in tableau.numbers.b]
    ea = [[eps(x) for x in row] for row in tableau.numbers.A]
    worst = K.zero
    for i in range(s):
        for j in range(s):
            bound = product(b[i], eb[i], A[i][j], ea[i][j]) + product(
                b[j], eb[j], A[j][i], ea[j][i]
            )
            bound += product(b[i], eb[i], b[j], eb[j])
            if field.sign(bound - worst) > 0:
                worst = bound
    return eb, worst * s


def algebraically_stable(tableau: ButcherTableau) -> bool | None:
    """Burrage-Butcher algebraic stability: bᵢ ≥ 0 and M = BA + AᵀB − bbᵀ positive semidefinite.

    Decided exactly in the field of the entries. For a numeric tableau the answer must hold for
    every method within the entries' rounding: `True` when bᵢ ≥ its rounding and M − βI is PSD,
    `False` when some bᵢ + rounding < 0 or M + βI is not PSD (β bounds ‖δM‖₂), `None`
    (undetermined) otherwise, e.g. Gauss-Legendre in floats, whose exact M is 0. `None` for
    families.
    """
    if tableau.symbols:
        return None
    K, A, b = entries_in_field(tableau)
    field = RealField.of(K)
    if field is None:
        return None
    s = tableau.stages
    M = [[b[i] * A[i][j] + b[j] * A[j][i] - b[i] * b[j] for j in range(s)] for i in range(s)]
    if not tableau.numeric:
        return all(field.sign(x) >= 0 for x in b) and _positive_semidefinite(M, field)
    eb, beta = _rounding_bound(tableau, A, b, field)

    def shifted(shift: Any) -> list[list[Any]]:
        return [[M[i][j] + (shift if i == j else K.zero) for j in range(s)] for i in range(s)]

    if any(field.sign(x + e) < 0 for x, e in zip(b, eb, strict=True)):
        return False
    if not _positive_semidefinite(shifted(beta), field):
        return False
    robust = all(field.sign(x - e) >= 0 for x, e in zip(b, eb, strict=True))
    return True if robust and _positive_semidefinite(shifted(-beta), field) else None
