"""The stability intervals and A-stability of a numeric tableau, enclosed over every method within
the precision of its entries.

`runge_kutta/stability.py` decides the rows for the method the digits spell. Neighbouring methods,
as close to the digits as their rounding allows, may differ: RK4 typed to three digits spells a
method whose imaginary interval is [−2.83i, 2.83i], but moving b₃ by 4·10⁻⁴ (inside the rounding of
`"0.333"`) leaves it none. Here P(u) = N(−u)² − D(−u)² and F(w) = |N(iy)|² − |D(iy)|² (w = y²)
are built in arb balls from the entries' balls, with the terms of degree ≤ p taken as order p
makes them (as in `runge_kutta/stability.py`). A coefficient is an exact zero only where every such
method has it zero: by the order, or by the structure of the tableau (its exact zeros, and a row of
A typed as b digit for digit, or a column of b_j, which rounding moves with b: `_tied_to_b`). One
that is zero for the digits alone, or within the resolution at which conditions are met, stays a
ball holding 0: methods within the precision that meet the same conditions can give it either sign
(Merson 4's y⁶ term; det A of a matrix with proportional rows, whose neighbours have a pole near
−1/e in the left half-plane). A point counts as stable when |R|² − 1 ≤ 1.5·10⁻⁸ (P ≤ 2⁻²⁶·D², the
resolution of met conditions), and just right of 0 by the exact sign of the lowest term. An end r
of the digits' interval is then *enclosed*: every method within the precision has its end in [r(1 −
δ), r(1 + δ)] when it is stable on (0, r(1 − δ)] (certified by bisection with mean-value
enclosures) and not at r(1 + δ). δ is tried from 10⁻¹² up to 10⁻¹ in steps of √10; beyond that the
row is undetermined. An unbounded interval is certified on [0, 1] and, for t = 1/s, on s in (0, 1];
"none" needs the lowest term certainly positive.

N and D are det(I − z(A − 1bᵀ)) and det(I − zA) over the stages R depends on (a stage with an
exactly zero weight that no used stage reads is dropped), without the common factor the exact
analysis cancels: it multiplies P and F by a square, which leaves their signs, but its roots are
roots of D, so a pole that Routh's test finds left of the axis counts against A-stability only
where the resultant of N and D is certainly nonzero (no method within the precision cancels it).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

import flint
import numpy as np

from ...methods import ButcherTableau
from ...methods.entries.precision import RESOLUTION, working_precision
from ..enclosure.common import DELTAS, PIECES, Enclosure, padded


@final
@dataclass(frozen=True)
class StabilityEnclosure:
    """What every method within a numeric tableau's precision shares.

    **Arguments:**

    - `real`, `imaginary`: enclosures (lo, hi) of r and y, the ends of [−r, 0] and
      [−iy, iy]; (0, 0) is "none", (inf, inf) unbounded, None undetermined.
    - `poles_right`: every pole of R(z) certainly has a positive real part; False: one certainly
      has not, and no method within the precision cancels it (None: not decided).
    - `polynomial`: R is certainly a polynomial of degree ≥ 1 (an explicit method), unbounded
      on the imaginary axis: never A-stable.
    - `resolution_used`: an end needed |R|² − 1 ≤ 1.5e-8 to count as stable (a touch of
      |R| = 1 inside the interval, as in SSP methods, that rounding could lift).
    """

    real: Enclosure | None
    imaginary: Enclosure | None
    resolution_used: bool
    poles_right: bool | None
    polynomial: bool

    @property
    def a_stable(self) -> bool | None:
        """A-stability, decided for every method within the precision (None: not decided)."""
        if self.polynomial or (self.imaginary is not None and self.imaginary[1] < math.inf):
            return False  # |R(iy)| > 1 somewhere for every one of them
        if self.imaginary is None or self.poles_right is None:
            return None
        return self.poles_right


def enclose_stability(
    tableau: ButcherTableau, order: int, real_end: float | None, imaginary_end: float | None
) -> StabilityEnclosure:
    """Enclose the digits' interval ends over the methods within the entries' precision.

    **Arguments:**

    - `tableau`: a numeric tableau.
    - `order`: the order its conditions establish (terms of degree ≤ order are fixed by it).
    - `real_end`, `imaginary_end`: the digits' r and y (inf when unbounded, None: not decided).

    **Returns:** a `StabilityEnclosure`.
    """
    with flint.ctx.workprec(working_precision(tableau.numbers.flat)):
        a, w = tableau.numbers.A.balls(), tableau.numbers.b.balls()
        used = _used_stages(a, w)
        a, w = [[a[i][j] for j in used] for i in used], [w[j] for j in used]
        tied = _tied_to_b(tableau, used)
        N, D = _numerator_denominator(a, w, tableau.is_explicit, tied)
        real, imaginary = _axis_polynomials(N, D, order)
        dminus = flint.arb_poly([(-c if k % 2 else c) for k, c in enumerate(D)])
        real_scale = _coefficients(dminus * dminus)
        imaginary_scale = _coefficients(_square_on_axis(D))
        y2 = None if imaginary_end is None else imaginary_end**2
        found, tolerant = _enclose_end(imaginary, imaginary_scale, y2)
        real_found, real_tolerant = _enclose_end(real, real_scale, real_end)
        return StabilityEnclosure(
            real=real_found,
            imaginary=None if found is None else (math.sqrt(found[0]), math.sqrt(found[1])),
            resolution_used=tolerant or real_tolerant,
            polynomial=all(c.is_zero() for c in D[1:]) and any(not c.contains(0) for c in N[1:]),
            poles_right=_poles_right(N, D),
        )


def _used_stages(a: list[list[flint.arb]], w: list[flint.arb]) -> list[int]:
    """The stages R depends on: those with a weight that is not an exact zero, and those a used
    stage reads through an entry of A that is not. The others add a factor to N and D alike
    (the poles of their diagonal block), which Routh's test would read as R's own poles."""
    used = {j for j, x in enumerate(w) if not x.is_zero()}
    grown = True
    while grown:
        reads = {j for i in used for j, x in enumerate(a[i]) if not x.is_zero()}
        grown = not reads <= used
        used |= reads
    return sorted(used)


def _poles_right(N: list[flint.arb], D: list[flint.arb]) -> bool | None:
    """Every pole of R = N/D certainly in the right half-plane (True), certainly one that is not
    (False: a root of D there that no method within the precision can cancel against N, their
    resultant being certainly nonzero), or not decided (None)."""
    if len(D) == 1:
        return True
    right = _hurwitz([(-c if k % 2 else c) for k, c in enumerate(D)])
    if right is False and _resultant(N, D).contains(0):
        return None  # the digits' own method (or a neighbour) may cancel that pole
    return right


def _resultant(N: list[flint.arb], D: list[flint.arb]) -> flint.arb:
    """Res(N, D) as a ball: the determinant of their Sylvester matrix, after the exact zeros
    at the top (a ball holding 0 there leaves the degree, and the resultant, open: 0 is in it)."""
    p, q = _top_trimmed(N), _top_trimmed(D)
    m, n = len(p) - 1, len(q) - 1
    if m == 0 or n == 0:
        return flint.arb(1)
    if p[-1].contains(0) or q[-1].contains(0):
        return flint.arb(0, 1)
    rows = [[flint.arb(0)] * k + p[::-1] + [flint.arb(0)] * (n - 1 - k) for k in range(n)]
    rows += [[flint.arb(0)] * k + q[::-1] + [flint.arb(0)] * (m - 1 - k) for k in range(m)]
    return flint.arb_mat(rows).det()


def _top_trimmed(p: list[flint.arb]) -> list[flint.arb]:
    p = list(p)
    while len(p) > 1 and p[-1].is_zero():
        p.pop()
    return p


Tied = frozenset[tuple[int, int]]  # entries (i, j) of A that are b_j: M_ij = a_ij − b_j is 0


def _tied_to_b(tableau: ButcherTableau, used: list[int]) -> Tied:
    """The entries of A (over the used stages, renumbered) in a row that is b, or in a column
    whose every entry is its b_j, entry for entry and digit for digit: a stiffly accurate
    tableau's last row, Lobatto IIIB's first column. That is structure, as zeros are: rounding
    moves the two together, so those entries of A − 1bᵀ are exact zeros. Were they free, A's
    last row off b by 10⁻³⁰ would give an ESDIRK's R a z^s term over a denominator of degree
    s − 1, and no such tableau could be A-stable at any precision."""
    A, b = tableau.numbers.A, tableau.numbers.b

    def same(i: int, j: int) -> bool:
        x, y = A[i][j], b[j]
        return (x.value, x.rounding) == (y.value, y.rounding)

    rows = {k for k, i in enumerate(used) if all(same(i, j) for j in used)}
    columns = {m for m, j in enumerate(used) if all(same(i, j) for i in used)}
    return frozenset(
        (k, m) for k in range(len(used)) for m in range(len(used)) if k in rows or m in columns
    )


def _numerator_denominator(
    a: list[list[flint.arb]], w: list[flint.arb], explicit: bool, tied: Tied
) -> tuple[list[flint.arb], list[flint.arb]]:
    """N and D, ascending, in balls: 1 + Σ zᵏ bᵀAᵏ⁻¹1 over 1 for an explicit tableau (its A is
    nilpotent), else the reversed characteristic polynomials of A − 1bᵀ (its `tied` entries,
    those of A that are b, exact zeros) and A."""
    s = len(w)
    shifted = [
        [flint.arb(0) if (i, j) in tied else a[i][j] - w[j] for j in range(s)] for i in range(s)
    ]
    if explicit:
        N, column = [flint.arb(1)], [flint.arb(1)] * s
        for _ in range(s):
            N.append(sum((x * y for x, y in zip(w, column, strict=True)), flint.arb(0)))
            column = [
                sum((x * y for x, y in zip(row, column, strict=True)), flint.arb(0)) for row in a
            ]
        return _tighter(N, _centred(a, w, tied)), [flint.arb(1)]
    N = _tighter(_reversed_charpoly(shifted), _centred(a, w, tied))
    return N, _tighter(_reversed_charpoly(a), _centred(a, None, frozenset()))


def _tighter(plain: list[flint.arb], centred: list[flint.arb]) -> list[flint.arb]:
    """Both enclose the same coefficients: keep their intersection (exact zeros stay)."""
    return [p if p.is_zero() else p.intersection(c) for p, c in zip(plain, centred, strict=True)]


def _centred(a: list[list[flint.arb]], w: list[flint.arb] | None, tied: Tied) -> list[flint.arb]:
    """det(I − zM), ascending, for M = A − 1bᵀ (A when `w` is None), by the mean-value form over
    the entries' box: its value at the midpoints plus Σ |∂/∂x| · radius, the gradient enclosed
    over the box. Evaluating the coefficients on the box itself lets every entry's rounding
    meet itself again in each product (arb cannot know it is the same entry), which spreads
    them about tenfold at coarse precisions; here the box enters only through the radii.

    ∂det(I − zM)/∂M_ij = −z·adj(I − zM)_ji, and adj(I − zM) = Σₖ z^(s−1−k) Qₖ with
    Q_(s−1) = I, Q_(k−1) = M Qₖ + cₖ I (cₖ the coefficients of det(xI − M)): so the z^m
    coefficient moves by at most Σ_ij |(Q_(s−m))_ji| r(a_ij) + Σ_j |Σ_i (Q_(s−m))_ji| r(b_j),
    the sums over the entries not `tied` (those of A that are b: M_ij is 0 for every method).
    """
    s = len(a)
    shift = [flint.arb(0)] * s if w is None else w
    zero = flint.arb(0)
    box = flint.arb_mat(
        [[zero if (i, j) in tied else a[i][j] - shift[j] for j in range(s)] for i in range(s)]
    )
    middle = [
        [
            zero if (i, j) in tied else flint.arb(a[i][j].mid()) - flint.arb(shift[j].mid())
            for j in range(s)
        ]
        for i in range(s)
    ]
    centre = flint.arb_mat(middle).charpoly().coeffs()[::-1]
    c = box.charpoly().coeffs()
    eye = flint.arb_mat([[1 if i == j else 0 for j in range(s)] for i in range(s)])
    Q = [eye] * s
    for k in range(s - 1, 0, -1):
        Q[k - 1] = box * Q[k] + eye * c[k]
    out = [flint.arb(1)]
    for m in range(1, s + 1):
        q = Q[s - m]
        free = [(i, j) for i in range(s) for j in range(s) if (i, j) not in tied]
        spread = sum((abs(q[j, i]) * a[i][j].rad() for i, j in free), flint.arb(0))
        if w is not None:
            spread += sum(
                (
                    abs(sum((q[j, i] for i in range(s) if (i, j) not in tied), flint.arb(0)))
                    * w[j].rad()
                    for j in range(s)
                ),
                flint.arb(0),
            )
        out.append(centre[m] + flint.arb(0, spread.upper()))
    return out


def _reversed_charpoly(m: list[list[flint.arb]]) -> list[flint.arb]:
    """det(I − zM), ascending, in balls; a coefficient that vanishes for every matrix with M's
    exact zeros (a zero row makes det M = 0) is an exact zero, which arb's elimination loses:
    the degree of D decides the poles and the sign of F far out. Such coefficients are found as
    those of two matrices with the same zeros and random integers elsewhere (a coefficient that
    is not identically zero vanishes at both with probability below s/2⁶⁰: Schwartz–Zippel)."""
    coefficients = flint.arb_mat(m).charpoly().coeffs()[::-1]  # det(xI − M) read backwards
    coefficients[0] = flint.arb(1)  # det(I) = 1 exactly
    generic = [_generic_reversed_charpoly(m, seed) for seed in (1, 2)]
    return [
        flint.arb(0) if all(g[k] == 0 for g in generic) else c for k, c in enumerate(coefficients)
    ]


def _generic_reversed_charpoly(m: list[list[flint.arb]], seed: int) -> list[flint.fmpq]:
    draw = random.Random(seed)
    entries = [0 if x.is_zero() else draw.randrange(1, 2**60) for row in m for x in row]
    s = len(m)
    return flint.fmpq_mat(s, s, entries).charpoly().coeffs()[::-1]


def _axis_polynomials(
    N: list[flint.arb], D: list[flint.arb], order: int
) -> tuple[list[flint.arb], list[flint.arb]]:
    """P(u) and F(w), ascending, with the terms order p fixes (R = e^z + O(z^(p+1)))."""
    minus = flint.arb_poly([(-c if k % 2 else c) for k, c in enumerate(N)])
    dminus = flint.arb_poly([(-c if k % 2 else c) for k, c in enumerate(D)])
    real = _coefficients(minus * minus - dminus * dminus)
    d2 = _coefficients(flint.arb_poly(D) * flint.arb_poly(D))
    for k in range(1, min(order, len(real) - 1) + 1):  # D(x)²(e^(2x) − 1) at x = −u
        term = sum(
            (
                d2[j] * flint.arb(flint.fmpq(2 ** (k - j), math.factorial(k - j)))
                for j in range(min(k, len(d2) - 1) + 1)
                if k - j >= 1
            ),
            flint.arb(0),
        )
        real[k] = -term if k % 2 else term
    imaginary = _coefficients(_square_on_axis(N) - _square_on_axis(D))
    for j in range(1, min(order // 2, len(imaginary) - 1) + 1):
        imaginary[j] = flint.arb(0)
    for axis in (real, imaginary):  # R(0) = 1 (an empty list: |R| = 1 all along)
        axis[:1] = [flint.arb(0)] * min(1, len(axis))
    return real, imaginary


def _square_on_axis(p: Sequence[flint.arb]) -> flint.arb_poly:
    """|p(iy)|² as a polynomial in w = y²: e(w)² + w·o(w)², e and o p's even and odd parts."""
    even = flint.arb_poly([(-c if j % 2 else c) for j, c in enumerate(p[0::2])])
    odd = flint.arb_poly([(-c if j % 2 else c) for j, c in enumerate(p[1::2])])
    return even * even + flint.arb_poly([0, 1]) * odd * odd


def _coefficients(p: flint.arb_poly) -> list[flint.arb]:
    return [p[k] for k in range(p.length())]


def _enclose_end(
    coefficients: list[flint.arb], scale: list[flint.arb], end: float | None
) -> tuple[Enclosure | None, bool]:
    """Where every member's polynomial G first turns positive on t > 0 (or, where that cannot
    be certified, first exceeds the resolution times `scale`, |D|² on the axis: |R|² − 1 above
    1.5e-8), near the digits' `end` (inf: never; 0: at once) or near a root of the balls'
    midpoints; None when the balls cannot certify it. Just right of 0 the sign is exact: the
    lowest term of G must be certainly negative (certainly positive for "none").

    **Returns:** the enclosure and whether the resolution was needed."""
    if end is None:
        return None, False
    low = list(coefficients)
    while low and low[0].is_zero():  # an exact factor t^k keeps the sign for t > 0
        low.pop(0)
    if not low:
        return (math.inf, math.inf), False
    if low[0] > 0:
        return (0.0, 0.0), False
    if not low[0] < 0:
        return None, False
    resolution = flint.arb(flint.fmpq(RESOLUTION.numerator, RESOLUTION.denominator))
    tries = (  # strictly: G/t^k, negative at 0; then within the resolution: G itself
        (flint.arb_poly(low), flint.arb_poly([0]), False),
        (flint.arb_poly(coefficients), flint.arb_poly(scale) * resolution, True),
    )
    for G, S, tolerant in tries:
        for candidate in _candidates(end, coefficients):
            found = _around(G, S, candidate)
            if found is not None:
                return found, tolerant
    return None, False


def _candidates(end: float, coefficients: list[flint.arb]) -> list[float]:
    """The digits' end, then the positive real roots of the midpoints' polynomial and inf: counted
    within the resolution, the end that every method shares may lie past a touch of |R| = 1
    that the digits' own method crosses by less than 1.5e-8."""
    largest = max((abs(c.mid()) for c in coefficients), default=flint.arb(0))
    if largest == 0:
        return [end, math.inf]
    mids = [float(c.mid() / largest) for c in coefficients]  # scaled: 1e600 is no float
    while mids and mids[-1] == 0:
        mids.pop()
    roots = np.roots(mids[::-1]) if len(mids) > 1 else np.array([])
    real = sorted(r.real for r in roots if r.real > 0 and abs(r.imag) <= 1e-9 * abs(r))
    return list(dict.fromkeys([end, *real[:4], math.inf]))


def _around(G: flint.arb_poly, S: flint.arb_poly, end: float) -> Enclosure | None:
    """[end(1 − δ), end(1 + δ)] for the smallest δ tried that certifies G ≤ S before it and
    G > S at its right end; (inf, inf) when G ≤ S on all of t > 0; None otherwise."""
    if end == 0:
        return None
    if end == math.inf:
        n = max(G.length(), S.length()) - 1  # G and S on [1, ∞) as s^n G(1/s) on (0, 1]
        turned_g = flint.arb_poly(padded(_coefficients(G), n + 1)[::-1])
        turned_s = flint.arb_poly(padded(_coefficients(S), n + 1)[::-1])
        certified = _below(G, S, 0.0, 1.0) and _below(turned_g, turned_s, 0.0, 1.0)
        return (math.inf, math.inf) if certified else None
    for delta in DELTAS:
        lo, hi = end * (1 - delta), end * (1 + delta)
        if G(flint.arb(hi)) - S(flint.arb(hi)) > 0 and _below(
            G, S, 0.0, lo, finest=end * delta / 64
        ):
            return lo, hi
    return None


def _below(G: flint.arb_poly, S: flint.arb_poly, lo: float, hi: float, finest: float = 0.0) -> bool:
    """G ≤ S on [lo, hi] for every polynomial in the balls: bisection until each piece's ball
    of G − S lies below 0 (False when one certainly does not, when a piece narrower than
    `finest` still holds 0, or when the budget runs out)."""
    taylor = [G - S]  # g^(j)/j!: g(m + x) = Σ taylor[j](m) xʲ
    for j in range(1, taylor[0].length()):
        taylor.append(taylor[-1].derivative() * flint.arb(flint.fmpq(1, j)))
    pieces, spent = [(lo, hi)], 0
    while pieces:
        a, b = pieces.pop()
        spent += 1
        value = _range(taylor, a, b)
        if value <= 0:
            continue
        middle = (a + b) / 2
        if value > 0 or spent > PIECES or b - a < finest or not a < middle < b:
            return False
        pieces += [(a, middle), (middle, b)]
    return True


def _range(taylor: list[flint.arb_poly], a: float, b: float) -> flint.arb:
    """A ball holding g on [a, b] from its Taylor expansion at the midpoint m: g(m) + Σ
    g^(j)(m)/j!·[−r, r]ʲ. Evaluating g on the interval itself (Horner) overestimates by the
    size of its terms, ~e^(2t) far out, which no bisection overcomes; the expansion's excess
    comes from the balls' radii alone."""
    middle, half = flint.arb((a + b) / 2), flint.arb(0, flint.arb((b - a) / 2).upper())
    value, power = taylor[0](middle), flint.arb(1)
    for term in taylor[1:]:
        power = power * half
        value += term(middle) * power
    return value


def _hurwitz(q: list[flint.arb]) -> bool | None:
    """Every root of q (ascending) certainly has a negative real part (Routh's array), certainly
    not, or None when a ball holds 0."""
    q = list(q)
    while len(q) > 1 and q[-1].is_zero():  # the degree the exact zeros leave
        q.pop()
    q = q[::-1]  # highest degree first, as Routh's array reads it
    first = _sign(q[0])
    upper, lower = q[0::2], q[1::2]
    while lower:
        sign = _sign(lower[0])
        if sign is None or first is None:
            return None
        if sign != first:
            return False
        ratio = upper[0] / lower[0]
        padded = [*lower[1:], flint.arb(0)]
        upper, lower = lower, [upper[j + 1] - ratio * padded[j] for j in range(len(upper) - 1)]
    return True


def _sign(x: flint.arb) -> int | None:
    if x.is_zero():
        return 0
    return 1 if x > 0 else -1 if x < 0 else None
