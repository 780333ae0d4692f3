"""Polishing an optimiser's tableau in 256-bit arithmetic before it is made exact.

SLSQP meets the order conditions to about 1e-12, which is short of what 17 printed digits
claim, and far short of what an SSP coefficient needs. The SSP coefficient of a tableau is the
first r where an entry of K(I + rK)⁻¹ or (I + rK)⁻¹e turns negative. At an optimum many of
those entries are 0 at r = C, some with a slope near 0 in r (entries the optimal Shu-Osher form
holds at zero), so a change of 1e-12 in the tableau can move C by 1e-4. The optimiser's point
is therefore refined first: the constraints it holds active (value below 1e-8), the order
conditions, and the entries at the bound 0 are solved together by Newton's method at 256 bits
(python-flint's complex balls; the Jacobian by the complex step, minimum-norm steps), then
rounded (`exact.py`: 200 bits for an SSP design). A refinement that does not converge is
dropped and the float point is used as it is. Designs without inequalities refine the order
conditions alone.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import flint
import numpy as np
import scipy.linalg

from .conditions import Condition, Trees

PREC = 256
ACTIVE = 1e-8


def _fraction(x: flint.arb) -> Fraction:
    man, exp = x.mid().man_exp()
    return Fraction(int(man) * 2 ** int(exp)) if exp >= 0 else Fraction(int(man), 2 ** int(-exp))


def polish(
    positions: list[tuple[int, int]],
    s: int,
    trees: Trees,
    conditions: list[Condition],
    x: np.ndarray,
    ssp: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[Fraction] | None:
    """The refined point (module docstring) as exact binary fractions, or None.

    **Arguments:** `positions` of the free entries of A; `s` stages; the `conditions`;
    `x` = (A entries, b[, r]), the optimiser's point; `ssp`: for an SSP design, the inequality
    values at x (the entries of K(I + rK)⁻¹ at the positions of the boolean mask, then
    (I + rK)⁻¹e) and the mask; those below `ACTIVE` join the equations, and entries at the
    bound 0 stay at 0.
    """
    n = len(x)
    if ssp is None:
        free, active, cells = list(range(n)), [], np.zeros((0, 2), dtype=int)
    else:
        free = [k for k in range(n - 1) if abs(x[k]) > 1e-9] + [n - 1]
        active = [k for k, v in enumerate(ssp[0]) if v < ACTIVE]
        cells = np.argwhere(ssp[1])
    upto = max(c.tree.order for c in conditions)

    def F(v: list[flint.acb]) -> list[flint.acb]:
        full = [flint.acb(0)] * n
        for k, value in zip(free, v, strict=True):
            full[k] = value
        A = [[flint.acb(0)] * s for _ in range(s)]
        for (i, j), value in zip(positions, full, strict=False):
            A[i][j] = value
        b = full[len(positions) : len(positions) + s]
        out = _residuals(trees, conditions, A, b, upto)
        if not active:
            return out
        return out + [_monotonicity(A, b, full[-1], cells)[k] for k in active]

    with flint.ctx.workprec(PREC):
        v = _newton(F, [flint.acb(float(x[k])) for k in free])
    if v is None:
        return None
    out = [Fraction(0)] * n
    for k, value in zip(free, v, strict=True):
        out[k] = _fraction(value.real)
    return out


def _monotonicity(
    A: list[list[flint.acb]], b: list[flint.acb], r: flint.acb, cells: np.ndarray
) -> list[flint.acb]:
    """The entries of K(I + rK)⁻¹ at `cells`, then (I + rK)⁻¹e."""
    s = len(b)
    K = flint.acb_mat(s + 1, s + 1)
    for i in range(s):
        for j in range(s):
            K[i, j] = A[i][j]
        K[s, i] = b[i]
    eye = flint.acb_mat([[1 if i == j else 0 for j in range(s + 1)] for i in range(s + 1)])
    inverse = (eye + r * K).inv()
    P = r * (K * inverse)
    values = [P[int(i), int(j)] for i, j in cells]
    return values + [sum((inverse[i, j] for j in range(s + 1)), flint.acb(0)) for i in range(s + 1)]


def _newton(
    F: Callable[[list[flint.acb]], list[flint.acb]], v: list[flint.acb]
) -> list[flint.acb] | None:
    """Minimum-norm Newton steps on F(v) = 0 (the Jacobian by the complex step, rows
    independent in floating point kept), until |F| < 1e-60; None if that takes over 12."""
    step = flint.arb(2) ** -200
    for _ in range(12):
        Fv = F(v)
        if max(abs(float(f.real.mid())) for f in Fv) < 1e-60:
            return v
        columns = []
        for k in range(len(v)):
            w = list(v)
            w[k] = w[k] + flint.acb(0, step)
            columns.append([f.imag / step for f in F(w)])
        J = np.array([[float(c[i].mid()) for c in columns] for i in range(len(Fv))])
        rows = _independent(J)
        Jm = flint.arb_mat([[columns[k][i] for k in range(len(v))] for i in rows])
        Fm = flint.arb_mat([[Fv[i].real] for i in rows])
        try:
            y = (Jm * Jm.transpose()).solve(Fm)
        except ZeroDivisionError:
            return None
        dx = Jm.transpose() * y
        v = [v[k] - flint.acb(dx[k, 0].mid()) for k in range(len(v))]
    return None


def _independent(J: np.ndarray) -> list[int]:
    """A maximal set of rows of J independent in floating point (pivoted QR of Jᵀ)."""
    _, R, order = scipy.linalg.qr(J.T, pivoting=True)
    diagonal = np.abs(np.diag(R))
    rank = int((diagonal > 1e-10 * max(diagonal.max(initial=0), 1e-300)).sum())
    return sorted(int(i) for i in order[:rank])


def _residuals(
    trees: Trees,
    conditions: list[Condition],
    A: list[list[flint.acb]],
    b: list[flint.acb],
    upto: int,
) -> list[flint.acb]:
    s = len(b)
    g: dict[int, list[flint.acb]] = {}
    needed = trees.needed(conditions)
    for t in trees.trees:
        if t.order > upto:
            break
        if t.index not in needed:
            continue
        value = [flint.acb(1)] * s
        for child in t.children:
            Ag = [sum((A[i][j] * g[child][j] for j in range(s)), flint.acb(0)) for i in range(s)]
            value = [p * q for p, q in zip(value, Ag, strict=True)]
        g[t.index] = value
    out = []
    for c in conditions:
        total = sum((bi * gi for bi, gi in zip(b, g[c.tree.index], strict=True)), flint.acb(0))
        out.append(total - flint.acb(flint.fmpq(c.target.numerator, c.target.denominator)))
    return out
