"""The order of a Runge-Kutta method: verdicts on its order conditions, order by order.

The order is the largest p such that Φ(t) = 1/γ(t) for every rooted tree t with |t| ≤ p. Exact
tableaux are decided exactly (`weights.WeightTable`, the smallest exact domain). Numeric ones are
judged by `precision.judge_enclosure` on balls that hold Φ(t) − 1/γ(t) for every method within
the precision of the entries (`enclosure.WeightEnclosures`): met, fails or undetermined.

The search is bounded by what the stage count allows, never by a constant: an explicit s-stage
method has order ≤ s, and ≤ s − 1, s − 2, s − 3 from 5, 7, 9 stages on and s − 3 beyond
(Butcher's barriers: order 5 needs 6 stages, 6 needs 7, 7 needs 9, p ≥ 8 needs p + 3); an
implicit one has order ≤ 2s. A time budget stops it with what was established.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, final

import flint
import sympy

from ..methods import ButcherTableau
from ..methods.numbers import Number, ball
from ..methods.precision import Judgement, judge_enclosure, judge_exact, working_precision
from .enclosure import WeightEnclosures
from .search import Search, search_order
from .trees import PLAIN, Tree, TreeFamily
from .weights import WeightTable

DEFAULT_TIME_BUDGET = 300.0  # seconds an order search may take before it reports what it has


def explicit_barrier(stages: int) -> int:
    """The highest order an explicit method with `stages` stages can have (Butcher)."""
    if stages <= 4:
        return stages
    if stages <= 6:
        return stages - 1
    if stages <= 8:
        return 6
    if stages <= 10:
        return 7
    return stages - 3


def order_bound(tableau: ButcherTableau) -> int:
    """The highest order the stage count allows: the explicit barrier, or 2s when implicit."""
    s = tableau.stages
    return explicit_barrier(s) if tableau.is_explicit else 2 * s


def tree_family(tableau: ButcherTableau) -> tuple[TreeFamily, dict[str, Sequence[Any]]]:
    """Plain trees, or trees with a leaf-only time colour when c is not the row sums of A."""
    sums = [sympy.Add(*row) for row in tableau.A]
    if tableau.row_sum_c or all(
        sympy.simplify(x - y) == 0 for x, y in zip(tableau.c, sums, strict=True)
    ):
        return PLAIN, {}
    return TreeFamily(("y",), leaf_only=("t",)), {"t": tableau.c}


def _entries(tableau: ButcherTableau, weights: str) -> dict[str, Any]:
    """The `Number`s of A, the weights (`b` or `b_hat`) and c."""
    s, e = tableau.stages, tableau.entries
    return {
        "A": [[e[f"A[{i}][{j}]"] for j in range(s)] for i in range(s)],
        "b": [e[f"{weights}[{i}]"] for i in range(s)],
        "c": [e[f"c[{i}]"] for i in range(s)],
    }


@final
class Conditions:
    """Verdicts on the order conditions of one tableau (its main or its embedded weights).

    **Arguments:**

    - `tableau`: the method.
    - `weights`: `"b"` or `"b_hat"`.
    """

    def __init__(self, tableau: ButcherTableau, weights: str = "b") -> None:
        self.tableau = tableau
        self.family, leaves = tree_family(tableau)
        self.numeric = tableau.numeric
        entries = _entries(tableau, weights)
        self._A: list[list[Any]] = [[x.value for x in row] for row in entries["A"]]
        self._b: list[Any] = [x.value for x in entries["b"]]
        self._leaves: dict[str, list[Any]] = {k: list(v) for k, v in leaves.items()}
        self._table: WeightTable | None = None
        self.balls = None
        if self.numeric:
            numbers = [x for row in entries["A"] for x in row] + entries["b"] + entries["c"]
            prec = working_precision(numbers)
            with flint.ctx.workprec(prec):

                def balls(vector: Sequence[Number]) -> list[flint.arb]:
                    return [ball(x.value, x.rounding) for x in vector]

                colours = self.family.colours
                self.balls = _enclosures(self.family, entries, balls, leaves, colours, prec)

    @property
    def table(self) -> WeightTable:
        """The exact weights (built on first use: numeric tableaux need them only rarely)."""
        if self._table is None:
            A, b, leaves = self._A, self._b, self._leaves
            colours = self.family.colours
            self._table = WeightTable(
                self.family,
                {c: A for c in colours if c not in leaves},
                {c: b for c in colours},
                leaves,
            )
        return self._table

    @property
    def domain(self) -> str:
        return "numeric (ball arithmetic)" if self.numeric else str(self.table.domain)

    def judge(self, tree: Tree) -> Judgement:
        if self.balls is None:
            table = self.table
            res = table.residual(tree)
            return judge_exact(table.to_sympy(res), res == table.domain.zero)

        def exactly_zero() -> bool:
            return bool(self.table.residual(tree) == self.table.domain.zero)

        return judge_enclosure(self.balls.residual(tree), _scale(tree.density), exactly_zero)

    def search(self, bound: int, deadline: float, cap: int | None = None) -> Search[Tree]:
        """Judge the trees order by order, up to the first failure, `cap` (a user's limit), the
        order `bound` + 1 (what the stage count allows, plus the order that must fail) or the
        deadline (`search.search_order`)."""

        def judged_at(n: int) -> list[tuple[Tree, Judgement]]:
            return [(t, self.judge(t)) for t in self.family.of_order(n)]

        limit = cap if cap is not None else bound + 1
        return search_order(
            judged_at, limit=limit, deadline=deadline, bound=bound, capped=cap is not None
        )


@functools.lru_cache(maxsize=4096)
def _scale(density: int) -> Fraction:
    return Fraction(1, density)


def _enclosures(
    family: TreeFamily,
    entries: dict[str, Any],
    balls: Any,
    leaves: dict[str, Sequence[Any]],
    colours: Sequence[str],
    prec: int,
) -> WeightEnclosures:
    A = [balls(row) for row in entries["A"]]
    b = balls(entries["b"])
    leaf_balls = {k: balls(entries["c"]) for k in leaves}
    return WeightEnclosures(
        family,
        {c: A for c in colours if c not in leaves},
        {c: b for c in colours},
        leaf_balls,
        prec=prec,
    )
