"""The B-series of a general linear method relative to its starting procedure, and its
preconsistency judged from it (`general_linear.py` reports both).

The stages have the B-series η(t) = A η′(t) + U ξ(t), with η′([t₁…t_m]) = η(t₁)⋯η(t_m); the
outputs B η′(t) + V ξ(t) must equal the starting procedure advanced by one step, E ξ(t), where an
input c·y(x + θh) has the coefficients c·θ^|t|/γ(t) and c·h·f(y(x + θh)) has c·|t|θ^(|t|−1)/γ(t).
Preconsistency (V u = u, U u = 1) is the empty tree's part of the same equations, judged like an
order condition: exactly for exact entries, in ball arithmetic within the digits otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, final

import flint
import sympy

from ...methods.entries.precision import (
    Verdict,
    judge_enclosure,
    working_precision,
)
from ...methods.general_linear import GeneralLinear, StartTerm
from ..enclosure.weights import BallDomain
from ..exact.trees import PLAIN, Tree
from ..exact.weights import judge_element, smallest_domain


def _start_coefficient(terms: Sequence[StartTerm], tree: Tree | None, advance: int) -> Any:
    """The B-series coefficient of one input at `tree` (None: the empty tree), its starting
    values shifted by `advance` steps."""
    total = sympy.Integer(0)
    for c, kind, theta in terms:
        shift = theta + advance
        if tree is None:
            total += c if kind == "y" else 0
        elif kind == "y":
            total += c * shift**tree.order / tree.density
        else:
            total += c * tree.order * shift ** (tree.order - 1) / tree.density
    return total


@final
class StageSeries:
    """The stage and output B-series coefficients of a GLM, tree by tree (memoised): exactly,
    or in balls holding every method within the precision of numeric entries (`balls=True`).
    Per tree, one coefficient per stage and per output (`bseries.series.BSeries` is one
    series, tree → coefficient; `general_linear_series` reads an output's from here)."""

    def __init__(self, method: GeneralLinear, balls: bool = False) -> None:
        self.method = method
        s, r = method.stages, method.values
        self.domain: Any
        if balls:
            self.domain = BallDomain()
            conv = [x.ball() for x in method.numbers.flat]
        else:
            self.domain, conv = smallest_domain([*method.numbers.values, sympy.Rational(1, 2)])
        pos = 0

        def take(rows: int, cols: int) -> list[list[Any]]:
            nonlocal pos
            out = [conv[pos + i * cols : pos + (i + 1) * cols] for i in range(rows)]
            pos += rows * cols
            return out

        self.A, self.U, self.B, self.V = take(s, s), take(s, r), take(r, s), take(r, r)
        self.family = PLAIN
        self._eta: dict[int, list[Any]] = {}
        self._deta: dict[int, list[Any]] = {}

    def convert(self, value: Any) -> Any:
        """A sympy value (or float) as an element of this series' domain."""
        return self.domain.from_sympy(sympy.nsimplify(value) if isinstance(value, float) else value)

    def xi(self, tree: Tree | None, advance: int = 0) -> list[Any]:
        """ξ(t): the inputs' B-series coefficients at `tree` (None: the empty tree), shifted by
        `advance` steps (1: E ξ, the starting procedure one step on)."""
        return [self.convert(_start_coefficient(t, tree, advance)) for t in self.method.start]

    def eta_prime(self, tree: Tree) -> list[Any]:
        """η′(t) = η(t₁)⋯η(t_m) for t = [t₁…t_m], one entry per stage (memoised)."""
        found = self._deta.get(tree.index)
        if found is None:
            found = [self.domain.one] * self.method.stages
            for child in tree.children:
                eta = self.eta(self.family.trees[child])
                found = [x * y for x, y in zip(found, eta, strict=True)]
            self._deta[tree.index] = found
        return found

    def eta(self, tree: Tree) -> list[Any]:
        """η(t) = A η′(t) + U ξ(t), one entry per stage (memoised)."""
        found = self._eta.get(tree.index)
        if found is None:
            found = _add(_mul(self.A, self.eta_prime(tree)), _mul(self.U, self.xi(tree)))
            self._eta[tree.index] = found
        return found

    def residuals(self, tree: Tree) -> list[Any]:
        """B η′(t) + V ξ(t) − E ξ(t), one entry per output."""
        out = _add(_mul(self.B, self.eta_prime(tree)), _mul(self.V, self.xi(tree)))
        return [x - y for x, y in zip(out, self.xi(tree, advance=1), strict=True)]


def _mul(M: list[list[Any]], v: list[Any]) -> list[Any]:
    return [sum((a * x for a, x in zip(row, v, strict=True)), v[0] * 0) for row in M]


def _add(x: list[Any], y: list[Any]) -> list[Any]:
    return [a + b for a, b in zip(x, y, strict=True)]


@final
@dataclass(frozen=True)
class Preconsistency:
    """Butcher's preconsistency of a GLM, V u = u and U u = 1, judged entry by entry as the
    order conditions are (`methods/entries/precision.py`): exactly for exact entries; for numeric
    ones in balls holding every method within their precision (met, fails, or undetermined when the
    digits cannot tell).

    - `holds`: True (every entry met), False (one fails), None (none fails, some undetermined).
    - `u`: the inputs' y(x)-coefficients of the starting procedure (exact).
    - `why`: the verdict in words.
    - `undetermined`: `(condition, residual, bound)` for the entries the digits cannot decide.
    - `tolerance`: the largest bound used (None for exact entries).
    """

    holds: bool | None
    u: list[Any]
    why: str
    undetermined: list[tuple[str, Any, float]]
    tolerance: float | None


def series_of(method: GeneralLinear) -> tuple[StageSeries, StageSeries | None, int]:
    """The exact B-series, the ball one for numeric entries (else None), and the working
    precision in bits the balls were made at."""
    series = StageSeries(method)
    prec = working_precision(method.numbers.flat)
    with flint.ctx.workprec(prec):
        balls = StageSeries(method, balls=True) if method.numeric else None
    return series, balls, prec


def preconsistency(method: GeneralLinear) -> Preconsistency:
    """Judge V u = u and U u = 1 (see `Preconsistency`)."""
    return judge_preconsistency(*series_of(method))


def judge_preconsistency(
    series: StageSeries, balls: StageSeries | None, prec: int
) -> Preconsistency:
    """V u = u and U u = 1 judged like order conditions: exactly from `series`, and for numeric
    entries from `balls` at `prec` bits (met, fails: the ball excludes 0, or undetermined)."""

    def residuals(s: StageSeries) -> list[Any]:
        """V u − u (one per input), then U u − 1 (one per stage)."""
        u = s.xi(None)
        fixed = [x - y for x, y in zip(_mul(s.V, u), u, strict=True)]
        return fixed + [x - s.domain.one for x in _mul(s.U, u)]

    r = series.method.values
    labels = [f"(V u − u)[{i}]" for i in range(r)]
    labels += [f"(U u − 1)[{j}]" for j in range(series.method.stages)]
    exact = residuals(series)
    if balls is None:
        judged = [judge_element(series.domain, res) for res in exact]
    else:
        with flint.ctx.workprec(prec):
            boxes = residuals(balls)
            judged = [
                judge_enclosure(box, Fraction(1), bool(res == series.domain.zero))
                for res, box in zip(exact, boxes, strict=True)
            ]
    u = [_start_coefficient(t, None, 0) for t in series.method.start]
    fails = [j.verdict is Verdict.FAILS for j in judged]
    undetermined = [
        (label, j.residual, j.bound)
        for label, j in zip(labels, judged, strict=True)
        if j.verdict is Verdict.UNDETERMINED
    ]
    tolerance = max((j.bound for j in judged), default=0.0) if balls is not None else None
    if any(fails):
        missed = []
        if any(fails[:r]):
            missed.append("V u ≠ u (u, the starting values' coefficients of y(x), is not kept)")
        if any(fails[r:]):
            missed.append("U u ≠ 1 (a stage does not start from y(x))")
        return Preconsistency(False, u, "; ".join(missed), undetermined, tolerance)
    if undetermined:
        why = "V u = u and U u = 1 only within the rounding of the entries (undetermined)"
        return Preconsistency(None, u, why, undetermined, tolerance)
    return Preconsistency(True, u, "V u = u and U u = 1", [], tolerance)
