"""From an optimiser's floating-point tableau to exact entries that meet every condition exactly.

Two routes, tried in order:

1. **Snap**: every entry to the nearest rational with a small denominator (10, 100, ... 10⁶)
   when within `tolerance` of it (1e-9 for a float point, 1e-40 for one polished at 256 bits,
   `polish.py`), entries below 1e-10 to 0; kept when every condition then holds in exact
   arithmetic (optimal SSP methods are often rational: SSP(10,4) is in sixths and fifteenths).
2. **Solve the last stage**: the first s − 1 rows of A are rounded (to the best rational with
   a denominator below 2^(bits/2), about `bits` bits of accuracy; tiny entries to 0), and so is
   the last abscissa c_s. With those fixed, every condition of order ≤ 4 is affine in the last
   row of A (stage s feeds no other stage, and a tree of order ≤ 4 has at most one child that
   is not a leaf at its root), so in the unknowns
   u = (b₁..b_s, y_j = b_s·a_sj) each condition b·g(t) = target is linear. n of them, chosen by
   pivoted QR among the unknowns the optimum does not hold at 0, are solved exactly (the rest
   rounded), and a_sj = y_j/b_s, one entry of the row taking c_s − the others. The stage
   weights of the last stage are computed exactly and their affinity checked, not assumed.

Neither route is an approximation of the conditions: the result meets them exactly, and
`bf.check` proves it. A tableau neither route reaches is reported numeric.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np
import scipy.linalg

from .conditions import Condition, Trees, holds_exactly

ZERO = 1e-10  # an entry this small is taken as an exact 0

Matrix = list[list[Fraction]]


def exact_tableau(
    trees: Trees,
    conditions: list[Condition],
    A: Matrix,
    b: list[Fraction],
    tolerance: float = 1e-9,
    bits: int = 53,
) -> tuple[Matrix, list[Fraction], str] | None:
    """Exact entries near (A, b) that meet every condition: (A, b, route), or None.

    **Arguments:** the tree list and conditions; the point as exact rationals (a float's own
    binary value, or a polished one); `tolerance` for snapping; `bits` kept when rounding.
    """
    found = snap(trees, conditions, A, b, tolerance)
    if found is not None:
        return (*found, "snapped to small rationals")
    found = solve_last_stage(trees, conditions, A, b, bits)
    if found is not None:
        return (*found, f"first rows rounded to about {bits} bits, the last stage solved exactly")
    return None


def snap(
    trees: Trees, conditions: list[Condition], A: Matrix, b: list[Fraction], tolerance: float
) -> tuple[Matrix, list[Fraction]] | None:
    """Route 1 (module docstring): the tableau in small rationals, or None."""
    s = len(b)
    for limit in (10**k for k in range(1, 7)):
        exact = _snapped([*(x for row in A for x in row), *b], limit, tolerance)
        if exact is None:
            continue
        Ae = [exact[i * s : (i + 1) * s] for i in range(s)]
        be = exact[s * s :]
        if holds_exactly(trees, conditions, Ae, be):
            return Ae, be
    return None


def _snapped(values: list[Fraction], limit: int, tolerance: float) -> list[Fraction] | None:
    out = []
    for v in values:
        if abs(v) < ZERO:
            out.append(Fraction(0))
            continue
        q = v.limit_denominator(limit)
        if abs(q - v) > Fraction(tolerance) * max(Fraction(1), abs(v)):
            return None
        out.append(q)
    return out


def solve_last_stage(
    trees: Trees, conditions: list[Condition], A: Matrix, b: list[Fraction], bits: int
) -> tuple[Matrix, list[Fraction]] | None:
    """Route 2 (module docstring): exact entries meeting every condition, or None when the
    conditions are not affine in the last row or the linear system has no solution here."""
    s = len(b)
    if s < 2:  # affinity in the last row is checked below, tree by tree (tall trees always are)
        return None
    last = s - 1

    def rounded(x: Fraction) -> Fraction:
        return Fraction(0) if abs(x) < ZERO else _bits(x, bits)

    A_exact = [[rounded(A[i][j]) for j in range(s)] for i in range(s)]
    c_last = rounded(sum(A[last], Fraction(0)))
    row = A[last]
    free = list(range(last))  # a_ss (a DIRK's diagonal) stays at its rounded value
    derived = max(free, key=lambda j: abs(row[j]))  # takes c_s − Σ others
    others = [j for j in free if j != derived]
    columns = _columns(trees, conditions, A_exact, c_last, derived, others)
    if columns is None:
        return None
    unknowns = [*b, *(b[last] * row[j] for j in others)]
    solved = _solve(columns, [c.target for c in conditions], unknowns, rounded)
    if solved is None or solved[last] == 0:
        return None
    be = solved[:s]
    for k, j in enumerate(others):
        A_exact[last][j] = solved[s + k] / be[last]
    A_exact[last][derived] = (
        c_last - A_exact[last][last] - sum((A_exact[last][j] for j in others), Fraction(0))
    )
    if not holds_exactly(trees, conditions, A_exact, be):
        return None
    return A_exact, be


def _bits(x: Fraction, bits: int) -> Fraction:
    """The best rational approximation of x with a denominator below 2^(bits/2): within about
    2^-bits of it (continued fractions), in far fewer digits than a dyadic of `bits` bits."""
    return x.limit_denominator(2 ** (bits // 2))


def _columns(
    trees: Trees,
    conditions: list[Condition],
    A: Matrix,
    c_last: Fraction,
    derived: int,
    others: list[int],
) -> list[list[Fraction]] | None:
    """The exact coefficient of each unknown in each condition: rows = conditions, columns =
    b₁..b_s then y_j; None when the last stage's weights are not affine in its row."""
    s, last = len(A), len(A) - 1
    upto = max(c.tree.order for c in conditions)
    used = {c.tree.index for c in conditions}
    needed = trees.needed(conditions)

    def last_weights(entries: dict[int, Fraction]) -> dict[int, Fraction]:
        row = [entries.get(j, Fraction(0)) for j in range(s)]
        row[last] = A[last][last]
        row[derived] = c_last - sum((row[j] for j in range(s) if j != derived), Fraction(0))
        trial = [*A[:last], row]
        g = trees.exact_weights(trial, upto, needed)
        return {t: g[t][last] for t in used}

    base = last_weights({})
    slopes = []
    for j in others:
        one, two = last_weights({j: Fraction(1)}), last_weights({j: Fraction(2)})
        slope = {t: one[t] - base[t] for t in base}
        if any(two[t] - one[t] != slope[t] for t in base):
            return None  # not affine (a tree of order 5 or more)
        slopes.append(slope)
    g = trees.exact_weights(A, upto, needed)
    rows = []
    for c in conditions:
        t = c.tree.index
        rows.append([*(g[t][i] for i in range(last)), base[t], *(sl[t] for sl in slopes)])
    return rows


def _solve(
    rows: list[list[Fraction]],
    targets: list[Fraction],
    guess: list[Fraction],
    rounded: Callable[[Fraction], Fraction],
) -> list[Fraction] | None:
    """A solution of rows·u = targets: the unknowns that pivoted QR picks (among those not ≈ 0
    in `guess`, weighted by their size) solved exactly, the others fixed at `guess` rounded."""
    n, m = len(rows), len(guess)
    W = np.array([[float(x) for x in r] for r in rows])
    usable = [k for k in range(m) if abs(guess[k]) > ZERO]
    if len(usable) < n:
        return None
    weight = np.array([abs(float(guess[k])) for k in usable])
    _, _, order = scipy.linalg.qr(W[:, usable] * weight, pivoting=True)
    pivots = [usable[k] for k in order[:n]]
    values = [rounded(g) for g in guess]
    rest = [k for k in range(m) if k not in pivots]
    rhs = [targets[i] - sum((rows[i][k] * values[k] for k in rest), Fraction(0)) for i in range(n)]
    solution = _gauss([[rows[i][k] for k in pivots] for i in range(n)], rhs)
    if solution is None:
        return None
    for k, v in zip(pivots, solution, strict=True):
        values[k] = v
    return values


def _gauss(M: Matrix, rhs: list[Fraction]) -> list[Fraction] | None:
    """The solution of the square system M u = rhs in exact arithmetic (None: singular)."""
    n = len(M)
    rows = [[*M[i], rhs[i]] for i in range(n)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if pivot is None:
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col] / rows[col][col]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col], strict=True)]
    return [rows[i][n] / rows[i][i] for i in range(n)]
