"""The real stability interval of a numeric general linear method, enclosed over every method
within the precision of its entries.

`general_linear/stability.py: real_stability_interval` reads the interval [−r, 0] of the method the
digits spell. Here every entry of A, U, B, V is an arb ball (the digits ± their rounding; exact
entries exact, exact zeros exactly zero), and the end is enclosed by `enclosure/schur.py` on

    Φ(w, z) = det [[I − zA, U], [zB, wI − V]] = det(I − zA)·det(wI − M(z)),

whose roots in w, where det(I − zA) ≠ 0, are the eigenvalues of M(z) = V + zB(I − zA)⁻¹U: the
method is stable at z when all of them lie strictly inside the unit disc, and unstable where one
lies strictly outside (M(z) is not power-bounded). Φ has degree r in w and at most s in z (z
enters the first s columns only), so its coefficients are the discrete Fourier transform of its
values at the (r + 1)-th and (s + 1)-th roots of unity: each value a determinant in complex
balls over the whole box, each coefficient then a ball holding it for every method in the box.
A coefficient that the declaration's exact entries and zeros fix (the h·f inputs of a multistep
method give Φ the factor w^k; with exact α, det(wI − V) is wᵏρ(w) whatever β carries) is exact,
found as one that two draws of random integers in the other places leave the same
(Schwartz–Zippel, as in `stability_enclosure._reversed_charpoly`).

Next to z = 0, M(0) = V has the eigenvalue 1 (preconsistency: V u = u), on the circle: the
Rouché argument of `schur_enclosure.near_zero` covers every method within the precision with
det(I − V) = 0 (among them those with V u = u, U u = 1, which the digits meet). It needs V's
other eigenvalues certified strictly inside the disc, the eigenvalue 1 certified simple (ρ̃(1),
that is Φ_w(1, 0), away from 0), and the principal root's speed c = −Φ_z(1, 0)/Φ_w(1, 0) (its
derivative in z at 0; 1 for a consistent method) certified positive: for z < 0 the principal
root moves inward. Where the digits do not meet preconsistency, only a box whose V has every
eigenvalue strictly inside the disc is enclosed.
"""

from __future__ import annotations

import math
import random

import flint
import numpy as np

from ...methods.entries.numbers import Number
from ...methods.entries.precision import working_precision
from ...methods.general_linear import GeneralLinear
from ..enclosure.common import Enclosure
from ..enclosure.schur import enclose_axis

Entries = dict[str, list[list[flint.arb]]]  # "A", "U", "B", "V": rows of balls


def enclose_real_interval(
    method: GeneralLinear, end: float, rooted: bool
) -> tuple[Enclosure | None, bool, str]:
    """Enclose the end of the real stability interval over the methods within the precision.

    **Arguments:**

    - `method`: a numeric general linear method (no symbols).
    - `end`: the digits' r (0 < r ≤ inf).
    - `rooted`: the digits meet preconsistency: the methods enclosed are then those whose V has
      the eigenvalue 1, as the module docstring says.

    **Returns:** `(enclosure, widened, why)` as `schur_enclosure.enclose_axis`.
    """
    with flint.ctx.workprec(working_precision(method.numbers.flat)):
        family = [flint.arb_poly(row) for row in _coefficients(method)]
        unrooted = (
            None
            if rooted
            else "the digits do not meet preconsistency (V u = u) within their precision, and "
            "V's eigenvalues are not certainly inside |w| = 1"
        )
        return enclose_axis(family, end, unrooted)


def candidates_after_none(method: GeneralLinear) -> list[float]:
    """Ends to try enclosing where the digits' own method reads "none": its eigenvalue 1 can
    leave the disc by their rounding next to z = 0 (float BDF6's ρ(1) is not exactly 0), while
    every method with V u = u has the end of the others. Unbounded, then the first x in
    10⁻³ … 10³ (200 a decade, then bisection) where numpy's eigenvalues of the midpoints' M(−x)
    leave |w| ≤ 1 + 10⁻⁷: only candidates, which `enclose_real_interval` certifies or not."""
    A, U, B, V = (
        np.array([[float(x) for x in row] for row in rows], dtype=float).reshape(n, m)
        for rows, n, m in (
            (method.A, method.stages, method.stages),
            (method.U, method.stages, method.values),
            (method.B, method.values, method.stages),
            (method.V, method.values, method.values),
        )
    )
    eye = np.eye(method.stages)

    def unstable(x: float) -> bool:
        try:
            M = V - x * B @ np.linalg.solve(eye + x * A, U)
        except np.linalg.LinAlgError:
            return True
        return bool(np.abs(np.linalg.eigvals(M)).max() > 1 + 1e-7)

    grid = np.geomspace(1e-3, 1e3, 1201)
    first = next((i for i, x in enumerate(grid) if unstable(x)), None)
    if first is None or first == 0:
        return [math.inf]
    lo, hi = float(grid[first - 1]), float(grid[first])
    for _ in range(50):
        lo, hi = (lo, (lo + hi) / 2) if unstable((lo + hi) / 2) else ((lo + hi) / 2, hi)
    return [math.inf, hi]


def _coefficients(method: GeneralLinear) -> list[list[flint.arb]]:
    """Φ's coefficients at z = −x: row j holds the coefficients of wʲ xᵐ, m = 0 … s, in balls."""
    s, r = method.stages, method.values
    balls = {key: m.balls() for key, m in method.numbers.arrays.items()}  # digits ± rounding
    middles = {key: [[flint.arb(x.mid()) for x in row] for row in m] for key, m in balls.items()}
    moved = _moved(balls)
    box, centre = _transform(balls, r, s), _transform(middles, r, s)
    spreads = [(radius, _transform(balls, r, s, (key, i, j))) for key, i, j, radius in moved]
    first, second = (_generic_coefficients(method, seed) for seed in (1, 2))
    out: list[list[flint.arb]] = []
    for j in range(r + 1):
        row = []
        for m in range(s + 1):
            if first[j][m] == second[j][m]:  # the exact entries' alone
                row.append(flint.arb(first[j][m]))
            else:  # mean-value form: the centre's, moved by the gradient over the box
                spread = sum((abs(d[j][m]) * radius for radius, d in spreads), flint.arb(0))
                row.append(box[j][m].intersection(centre[j][m] + flint.arb(0, spread.upper())))
        out.append([x * (-1) ** m for m, x in enumerate(row)])  # z = −x
    return out


def _moved(balls: Entries) -> list[tuple[str, int, int, flint.arb]]:
    """The entries with a radius (the numeric ones, and exact irrationals' enclosures)."""
    return [
        (key, i, j, flint.arb(x.rad()))
        for key, m in balls.items()
        for i, row in enumerate(m)
        for j, x in enumerate(row)
        if x.rad() > 0
    ]


def _transform(
    balls: Entries, r: int, s: int, entry: tuple[str, int, int] | None = None
) -> list[list[flint.arb]]:
    """The coefficients of Φ (row j: wʲ zᵐ) over the box, from its values at the roots of unity
    (the inverse discrete Fourier transform; they are real), or those of ∂Φ/∂`entry`."""
    samples = [
        [_determinant(balls, _unit(a, r + 1), _unit(b, s + 1), entry) for b in range(s + 1)]
        for a in range(r + 1)
    ]
    out = []
    for j in range(r + 1):
        row = []
        for m in range(s + 1):
            terms = (
                samples[a][b] * _unit(-a * j, r + 1) * _unit(-b * m, s + 1)
                for a in range(r + 1)
                for b in range(s + 1)
            )
            row.append((sum(terms, flint.acb(0)) / ((r + 1) * (s + 1))).real)
        out.append(row)
    return out


def _unit(k: int, n: int) -> flint.acb:
    """e^{2πik/n} as a complex ball."""
    return flint.acb(flint.arb(flint.fmpq(2 * k, n))).exp_pi_i()


def _determinant(
    balls: Entries, w: flint.acb, z: flint.acb, entry: tuple[str, int, int] | None = None
) -> flint.acb:
    """Φ(w, z) over the box: det K, K = [[I − zA, U], [zB, wI − V]], in complex balls; or
    ∂Φ/∂`entry`: its cofactor in K times ∂K/∂entry (−z, 1, z, −1 for A, U, B, V)."""
    s, r = len(balls["A"]), len(balls["V"])
    one, zero = flint.acb(1), flint.acb(0)
    rows = [
        [(one if i == j else zero) - z * x for j, x in enumerate(balls["A"][i])]
        + [flint.acb(x) for x in balls["U"][i]]
        for i in range(s)
    ]
    rows += [
        [z * x for x in balls["B"][i]]
        + [(w if i == j else zero) - x for j, x in enumerate(balls["V"][i])]
        for i in range(r)
    ]
    if entry is None:
        return flint.acb_mat(rows).det()
    key, i, j = entry
    row, column = i + (s if key in "BV" else 0), j + (s if key in "UV" else 0)
    factor = {"A": -z, "U": one, "B": z, "V": -one}[key]
    minor = [[x for c, x in enumerate(k) if c != column] for n, k in enumerate(rows) if n != row]
    cofactor = flint.acb_mat(minor).det() if minor else one
    return factor * cofactor * (-1) ** (row + column)


def _generic_coefficients(method: GeneralLinear, seed: int) -> list[list[flint.fmpq]]:
    """Φ's coefficients (row j: wʲ zᵐ) exactly, for the declaration's exact rational entries and
    exact zeros with random integers in every other place. A coefficient equal for two draws
    is that of every method with those exact entries (the declaration's own among them): were
    it a non-constant polynomial in the other entries, the two draws would agree with
    probability below (r + s)/2⁶⁰ (Schwartz–Zippel on its difference)."""
    draw = random.Random(seed)
    s, r = method.stages, method.values

    def entry(number: Number) -> flint.fmpq:
        if number.value == 0:
            return flint.fmpq(0)
        if not number.numeric and number.value.is_Rational:
            return flint.fmpq(int(number.value.p), int(number.value.q))
        return flint.fmpq(draw.randrange(1, 2**60))

    parts = {
        key: [[entry(x) for x in row] for row in m] for key, m in method.numbers.arrays.items()
    }

    def phi(w: int, z: int) -> flint.fmpq:
        n = s + r
        rows = [
            [(1 if i == j else 0) - z * x for j, x in enumerate(parts["A"][i])] + parts["U"][i]
            for i in range(s)
        ]
        rows += [
            [z * x for x in parts["B"][i]]
            + [(w if i == j else 0) - x for j, x in enumerate(parts["V"][i])]
            for i in range(r)
        ]
        return flint.fmpq_mat(n, n, [x for row in rows for x in row]).det()

    values = flint.fmpq_mat(r + 1, s + 1, [phi(a, b) for a in range(r + 1) for b in range(s + 1)])
    in_w = flint.fmpq_mat(r + 1, r + 1, [a**j for a in range(r + 1) for j in range(r + 1)])
    in_z = flint.fmpq_mat(s + 1, s + 1, [b**m for b in range(s + 1) for m in range(s + 1)])
    # values = in_w · C · in_zᵀ
    solved = in_w.solve(values)
    coefficients = in_z.solve(solved.transpose()).transpose()
    return [[coefficients[j, m] for m in range(s + 1)] for j in range(r + 1)]
