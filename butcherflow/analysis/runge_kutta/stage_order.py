"""The stage order of a Runge-Kutta method: the largest q with B(q) and C(q) met.

B(k): Σᵢ bᵢcᵢ^(k−1) = 1/k; C(k): Σⱼ aᵢⱼcⱼ^(k−1) = cᵢ^k/k for every row i. Exact tableaux are
judged in the field of their entries (`weights.tableau_field`); numeric ones by the ball
enclosing every method within the entries' precision (`precision.judge_enclosure`).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import flint
import sympy

from ...methods import ButcherTableau
from ...methods.entries.numbers import Number
from ...methods.entries.precision import Verdict, judge_enclosure, working_precision
from ..exact.weights import tableau_field


def stage_residuals(
    A: Sequence[Sequence[Any]], b: Sequence[Any], c: Sequence[Any], k: int, inv_k: Any, one: Any
) -> list[Any]:
    """The residuals of B(k), Σᵢ bᵢcᵢ^(k−1) − 1/k, and of every row of C(k),
    Σⱼ aᵢⱼcⱼ^(k−1) − cᵢ^k/k, in any arithmetic with + and × (an exact domain, or balls)."""
    s = len(b)
    powers = [one] * s
    for _ in range(k - 1):
        powers = [p * x for p, x in zip(powers, c, strict=True)]
    quad = sum((b[i] * powers[i] for i in range(1, s)), b[0] * powers[0]) - inv_k
    rows = [
        sum((A[i][j] * powers[j] for j in range(1, s)), A[i][0] * powers[0])
        - powers[i] * c[i] * inv_k
        for i in range(s)
    ]
    return [quad, *rows]


def stage_order(tableau: ButcherTableau, cap: int) -> tuple[int, bool]:
    """Largest q with B(q) and C(q) met (exactly, or at the entries' precision), and whether
    the next order was decided (False: a condition of order q + 1 is undetermined)."""
    s, n = tableau.stages, tableau.numbers
    numbers: list[Number] = [*n.A.flat, *n.b, *n.c]
    domain, field = tableau_field(tableau)
    conv = [x for row in field["A"] for x in row] + [*field["b"], *field["c"]]

    def split(values: list[Any]) -> tuple[list[list[Any]], list[Any], list[Any]]:
        return (
            [values[i * s : (i + 1) * s] for i in range(s)],
            values[s * s : s * s + s],
            values[s * s + s :],
        )

    prec = working_precision(numbers)
    with flint.ctx.workprec(prec):
        balls = split([x.ball() for x in numbers]) if tableau.numeric else None
    for k in range(1, cap + 1):
        inv_k = domain.convert(sympy.Rational(1, k))
        exact = stage_residuals(*split(conv), k, inv_k, domain.one)
        if balls is None:
            if any(r != domain.zero for r in exact):
                return k - 1, True
            continue
        with flint.ctx.workprec(prec):
            enclosed = stage_residuals(*balls, k, flint.arb(flint.fmpq(1, k)), flint.arb(1))
            verdicts = {
                judge_enclosure(r, Fraction(1, k), bool(x == domain.zero)).verdict
                for r, x in zip(enclosed, exact, strict=True)
            }
        if Verdict.FAILS in verdicts:
            return k - 1, True
        if Verdict.UNDETERMINED in verdicts:
            return k - 1, False
    return cap, False
