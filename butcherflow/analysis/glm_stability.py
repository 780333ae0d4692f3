"""Zero-stability and linear stability of a general linear method: V power-bounded (decided
exactly for rational V), M(z) = V + zB(I − zA)⁻¹U, the real stability interval (float64), and
the power bound of a trained (numeric) V.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import sympy
from sympy.polys.matrices import DomainMatrix

from ..methods.general_linear import GeneralLinear
from .root_condition import ZETA, place_roots, root_condition

Z = sympy.Symbol("z")


def as_matrix(rows: Sequence[Sequence[Any]]) -> sympy.Matrix:
    """A declaration's rows as a sympy Matrix (0×0 for no rows)."""
    return sympy.Matrix([list(r) for r in rows]) if rows else sympy.zeros(0, 0)


def doubly_stochastic(V: Sequence[Sequence[sympy.Expr]]) -> bool:
    """Non-negative entries, every row and every column summing to 1 (exactly)."""
    M = as_matrix(V)
    if any(x.free_symbols for x in M):
        return False
    nonnegative = all(bool(x >= 0) for x in M)
    rows = all(sympy.simplify(sum(M.row(i)) - 1) == 0 for i in range(M.rows))
    cols = all(sympy.simplify(sum(M.col(j)) - 1) == 0 for j in range(M.cols))
    return nonnegative and rows and cols


def zero_stability(V: Sequence[Sequence[sympy.Expr]], rounding: float) -> tuple[bool | None, str]:
    """Power-boundedness of V: eigenvalues in the closed unit disc, those on the circle
    semisimple. Exact for rational V; `None` for symbolic V."""
    M = as_matrix(V)
    if any(x.free_symbols for x in M):
        return None, "V has symbols: power-boundedness depends on the parameters"
    if doubly_stochastic(V):
        return True, "V is doubly stochastic: ‖Vⁿ‖∞ = 1 for every n, so V is power-bounded"
    char = sympy.Poly(M.charpoly(ZETA).as_expr(), ZETA)
    inside, _roots, how, _weak = root_condition(char, rounding)
    if inside is None:
        return None, how
    # root_condition asks for simple roots on the circle (right for ρ); for a matrix, a repeated
    # eigenvalue on the circle is fine when it is semisimple: rank f(V) = n − m·deg f. The sides
    # are root_condition's own (exact for rational V), never a float tolerance.
    factors, _used = place_roots(char, rounding)
    bad: list[str] = []
    near: list[str] = []
    for factor, placed in factors:
        sides = {side for *_, side, _eps in placed}
        if 1 in sides:
            return False, "an eigenvalue of V lies outside the unit disc; " + how
        mult = placed[0][1] if placed else 1
        if 0 in sides and mult > 1:
            fV = sympy.zeros(M.rows)
            for power, coeff in enumerate(reversed(factor.all_coeffs())):
                fV += coeff * M**power
            if fV.rank() != M.rows - mult * factor.degree():
                # a numeric V's digits put a defective eigenvalue on the circle only when the
                # factor is cyclotomic; otherwise it is within the precision of it: undetermined
                rational = factor.domain.is_QQ or factor.domain.is_ZZ
                on = rounding == 0 or bool(rational and factor.is_cyclotomic)
                (bad if on else near).append(str(factor.as_expr()))
    if bad:
        return False, f"eigenvalues on the unit circle are not semisimple ({', '.join(bad)})"
    if near:
        return None, (
            f"eigenvalues within the precision of the unit circle are not semisimple "
            f"({', '.join(near)}): undetermined; " + how
        )
    return True, "eigenvalues of V in the closed unit disc, those on the circle semisimple; " + how


def stability_matrix(method: GeneralLinear) -> sympy.Matrix | None:
    """M(z) = V + zB(I − zA)⁻¹U, exactly, for rational entries (None otherwise: radicals make the
    symbolic inverse slow, and the interval is read numerically anyway)."""
    A, U, B, V = (as_matrix(m) for m in (method.A, method.U, method.B, method.V))
    if not all(x.is_Rational for m in (A, U, B, V) for x in m):
        return None
    s = method.stages
    if method.is_explicit:  # A is nilpotent: (I − zA)⁻¹ = I + zA + … + (zA)^(s−1), exactly
        term, inverse = sympy.eye(s), sympy.eye(s)
        for _ in range(s - 1):
            term = term * A * Z
            inverse += term
        return (V + Z * B * inverse * U).applyfunc(sympy.expand)
    field = sympy.QQ.frac_field(Z)
    shifted = DomainMatrix.from_Matrix(sympy.eye(s) - Z * A).convert_to(field)
    inverse = shifted.inv().to_Matrix()
    return (V + Z * B * inverse * U).applyfunc(sympy.cancel)


def power_bound(V: Any, depth: int) -> tuple[float, float]:
    """(spectral radius, max_{n ≤ depth} ‖Vⁿ‖₂) of a numeric V (e.g. a trained layer's)."""
    M = np.asarray(V, dtype=float)
    radius = float(max(abs(np.linalg.eigvals(M)))) if M.size else 0.0
    power, worst = np.eye(M.shape[0]), 0.0
    for _ in range(depth):
        power = power @ M
        worst = max(worst, float(np.linalg.norm(power, 2)))
    return radius, worst


def real_stability_interval(method: GeneralLinear) -> float:
    """r of the largest [−r, 0] (up to 50) where every eigenvalue of M(x) has modulus ≤ 1, read
    in float64 on a grid of step 0.01."""
    A, U, B, V = (
        np.array([[float(x) for x in row] for row in m], dtype=float).reshape(len(m), -1)
        for m in (method.A, method.U, method.B, method.V)
    )
    eye = np.eye(method.stages)
    edge = 0.0
    for x in np.linspace(0.0, -50.0, 5001)[1:]:
        M = V + x * B @ np.linalg.solve(eye - x * A, U)
        if max(abs(np.linalg.eigvals(M))) > 1 + 1e-9:
            return edge
        edge = -x
    return math.inf
