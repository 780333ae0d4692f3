"""Zero-stability and linear stability of a general linear method: V power-bounded (decided
exactly for rational V), M(z) = V + zB(I − zA)⁻¹U, the real stability interval (its ends exact
roots, the pieces between them decided exactly), and the power bound of a trained V.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import sympy
from sympy.polys.domains import QQ
from sympy.polys.matrices import DomainMatrix

from ...methods.general_linear import GeneralLinear
from ..budget import Deadline
from ..exact.rational_roots import first_failure
from ..exact.root_condition import DIGITS, ZETA, place_roots, root_condition

Z = sympy.Symbol("z")
W = sympy.Symbol("w")  # an eigenvalue of M(z)


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


def zero_stability(
    V: Sequence[Sequence[sympy.Expr]], rounding: float, unpinned: bool = False
) -> tuple[bool | None, str]:
    """Power-boundedness of V: eigenvalues in the closed unit disc, those on the circle
    semisimple. Exact for rational V; `None` for symbolic V, and for a numeric V whose
    eigenvalue 1 is repeated when `unpinned` (`unpinned_copies`: V u = u holds one copy on the
    circle, the digits may move another off it)."""
    M = as_matrix(V)
    if any(x.free_symbols for x in M):
        return None, "V has symbols: power-boundedness depends on the parameters"
    # exactly doubly stochastic only: a numeric V's neighbours need not be ([[0, 1.0], [1.0, 0]]
    # within its rounding has the eigenvalue √(1 + ε) > 1), so its eigenvalues decide below
    if rounding == 0 and doubly_stochastic(V):
        return True, "V is doubly stochastic: ‖Vⁿ‖∞ = 1 for every n, so V is power-bounded"
    char = sympy.Poly(M.charpoly(ZETA).as_expr(), ZETA)
    inside, _roots, how, _weak = root_condition(char, rounding, matrix=True)
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
                # defective: a failure for an exact V; a numeric V within its precision may have
                # the eigenvalue split, or moved inside ([[1, 1], [0, 1 - ε]]): undetermined
                (bad if rounding == 0 else near).append(str(factor.as_expr()))
    if bad:
        return False, f"eigenvalues on the unit circle are not semisimple ({', '.join(bad)})"
    if near:
        return None, (
            f"eigenvalues within the precision of the unit circle are not semisimple "
            f"({', '.join(near)}): undetermined; " + how
        )
    repeated_one = any(
        factor.degree() == 1 and factor.eval(1) == 0 and placed and placed[0][1] > 1
        for factor, placed in factors
    )
    if rounding > 0 and unpinned and repeated_one:
        return None, (
            "the eigenvalue 1 of V is repeated: V u = u holds one copy on the unit circle, and "
            "within the precision of V's digits another may leave it: undetermined; " + how
        )
    return True, "eigenvalues of V in the closed unit disc, those on the circle semisimple; " + how


def unpinned_copies(method: GeneralLinear, u: Sequence[sympy.Expr]) -> bool:
    """Whether V's digits leave a neighbour V' ≠ V with V' u = u (preconsistency, which the
    enclosures keep as they keep ρ(1) = 0) moving within V's diagonal blocks: a row with two
    numeric entries there, or one whose u component is 0. V = [[1, 0], [0, 1.0]] with
    u = (1, 0) has [[1, 0], [0, 1 + 2⁻⁴⁵]]; with u = (1, 1) the exact zeros leave only V."""
    r, V = len(method.V), method.numbers.V
    blocks = _blocks(method)
    for i in range(r):
        free = [j for j in range(r) if blocks[i][j] and V[i][j].rounding > 0]
        if len(free) > 1 or (len(free) == 1 and u[free[0]] == 0):
            return True
    return False


def spectral_rounding(method: GeneralLinear) -> Fraction:
    """The most that the digits of V's entries can move its characteristic polynomial's own
    entries: V's rounding, less the entries that move no eigenvalue.

    Permuted to block-triangular form, V's eigenvalues are those of its diagonal blocks, the
    strongly connected components of the graph i → j for V[i][j] ≠ 0; an entry joining two
    components lies off those blocks (a multistep method's β in V multiply the h·f inputs, which
    never feed the y values back). Exact zeros are exact, so the pattern is the digits' own.
    """
    r, V = len(method.V), method.numbers.V
    blocks = _blocks(method)
    return max(
        (V[i][j].rounding for i in range(r) for j in range(r) if blocks[i][j]),
        default=Fraction(0),
    )


def _blocks(method: GeneralLinear) -> list[list[bool]]:
    """Whether V[i][j] lies within a diagonal block of V's block-triangular form: i and j in
    one strongly connected component of the graph i → j for V[i][j] ≠ 0."""
    r = len(method.V)
    reach = [[i == j or method.V[i][j] != 0 for j in range(r)] for i in range(r)]
    for m in range(r):  # Warshall: reach[i][j] when j can be reached from i
        for i in range(r):
            if reach[i][m]:
                reach[i] = [a or b for a, b in zip(reach[i], reach[m], strict=True)]
    return [[reach[i][j] and reach[j][i] for j in range(r)] for i in range(r)]


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


def real_stability_interval(method: GeneralLinear, deadline: Deadline) -> tuple[float, str]:
    """r of the largest [−r, 0] where M(x) is power-bounded, decided exactly.

    The eigenvalues can meet |w| = 1 or escape to infinity only at the real roots of polynomials
    in x (`_breakpoints`). M(0) = V, and each piece between consecutive roots, and beyond the
    last, is decided at one rational point of it by `zero_stability` of M(x) there (exact
    eigenvalue sides and Jordan structure); `rational_roots.first_failure` isolates the roots up to
    the first unstable piece only. Irrational entries enter as `DIGITS`-digit rationals, and a
    test point's eigenvalue within their reach of the circle counts as on it.

    `deadline`: the report's; `OutOfTime` past it, between two pieces.

    **Returns:** `(r, how)`: r is `math.inf` when unbounded; `how` says how it was read, for the
    report's notes (a numeric declaration's end is then enclosed, `general_linear/enclosure.py`).
    """
    A, U, B, V, approximated = _rational_matrices(method)
    rounding = 10.0 ** (10 - DIGITS) if approximated else 0.0

    def unstable(u: Any) -> bool:  # at x = −u, u ≥ 0 rational
        x = -sympy.Rational(int(QQ.numer(u)), int(QQ.denom(u)))
        shifted = DomainMatrix.from_Matrix(sympy.eye(A.rows) - x * A).convert_to(QQ)
        solved = shifted.lu_solve(DomainMatrix.from_Matrix(U).convert_to(QQ)).to_Matrix()
        return zero_stability((V + x * B * solved).tolist(), rounding)[0] is False

    breaks = _breakpoints(A, U, B, V).all_coeffs()[::-1]  # lowest degree first
    at_minus = [QQ.convert(c) * (-1) ** k for k, c in enumerate(breaks)][::-1]  # u = −x
    r = 0.0 if unstable(QQ.zero) else first_failure(at_minus, unstable, deadline)
    how = (
        "the real stability interval is exact up to float64 rounding of its end: the "
        "eigenvalues of M(x) meet |w| = 1 only at real roots of polynomials found exactly"
        + (f" (irrational entries as {DIGITS}-digit rationals)" if approximated else "")
        + ", and power-boundedness at one rational point between consecutive roots, decided "
        "exactly, decides each piece" + ("; it is the digits' method's" if method.numeric else "")
    )
    return r, how


def _rational_matrices(
    method: GeneralLinear,
) -> tuple[sympy.Matrix, sympy.Matrix, sympy.Matrix, sympy.Matrix, bool]:
    """A, U, B, V with irrational entries replaced by `DIGITS`-digit rationals, and whether any
    was."""
    approximated = False

    def rational(v: Any) -> sympy.Rational:
        nonlocal approximated
        v = sympy.sympify(v)
        if v.is_Rational:
            return v
        approximated = True
        return sympy.Rational(str(sympy.N(v, DIGITS)))

    A, U, B, V = (
        as_matrix(m).applyfunc(rational) for m in (method.A, method.U, method.B, method.V)
    )
    return A, U, B, V, approximated


def _breakpoints(A: sympy.Matrix, U: sympy.Matrix, B: sympy.Matrix, V: sympy.Matrix) -> sympy.Poly:
    """A polynomial in x whose real roots include every x where an eigenvalue of M(x) may meet
    |w| = 1 or escape to infinity: Φ(±1, x), the resultant in w of Φ and its reversal (a pair
    w, 1/w: on the circle, a root and its conjugate; for a factor whose roots pair so for every
    x, its discriminant: they leave the circle only where two meet), det(I − xA), where
    Φ(w, x) = det[[I − xA, U], [xB, wI − V]] = det(I − xA)·det(wI − M(x))."""
    s, r = A.rows, V.rows
    block = sympy.zeros(s + r, s + r)
    block[:s, :s] = sympy.eye(s) - Z * A
    block[:s, s:] = U
    block[s:, :s] = Z * B
    block[s:, s:] = W * sympy.eye(r) - V
    det = DomainMatrix.from_Matrix(block).convert_to(sympy.QQ[W, Z]).det()
    phi = sympy.Poly(det.as_expr(), W, Z)
    candidates = [sympy.Poly(phi.as_expr().coeff(W, r), Z)]  # det(I − xA): escapes to infinity
    whole = _pairs_on_the_circle(phi)
    # a factor of Φ paired with its reversal (an eigenvalue fixed on the circle, or w ↔ 1/w for
    # every x) makes the whole resultant vanish: then each irreducible factor on its own
    factors = [phi] if not whole.is_zero else [f for f, _ in phi.factor_list()[1]]
    for factor in factors:
        if Z not in factor.free_symbols or W not in factor.free_symbols:
            continue  # eigenvalues constant in x (every test point sees them), or a pole
        pair = whole if factor is phi else _pairs_on_the_circle(factor)
        if pair.is_zero:
            # its roots pair as w, 1/w for every x: they leave the circle only where two meet
            pair = sympy.Poly(sympy.discriminant(factor.as_expr(), W), Z)
        candidates += [pair, sympy.Poly(factor.as_expr().subs(W, 1), Z)]
        candidates.append(sympy.Poly(factor.as_expr().subs(W, -1), Z))
    product = sympy.Poly(1, Z, domain=QQ)
    for c in candidates:
        if not c.is_zero:
            product = product * c
    return product


def _pairs_on_the_circle(factor: sympy.Poly) -> sympy.Poly:
    """The resultant in w of f(w, x) and its reversal w^deg f(1/w, x): zero exactly where two
    roots w, 1/w meet (on the circle, a root there and its conjugate), as a polynomial in x."""
    reversal = sympy.expand(W ** factor.degree(W) * factor.as_expr().subs(W, 1 / W))
    return sympy.Poly(sympy.resultant(factor.as_expr(), reversal, W), Z)
