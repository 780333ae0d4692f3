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
from collections.abc import Callable, Collection, Sequence
from fractions import Fraction
from typing import Any, final, overload

import flint
import sympy

from ...methods import ButcherTableau
from ...methods.entries.balls import ball
from ...methods.entries.numbers import Number
from ...methods.entries.precision import (
    Judgement,
    Verdict,
    judge_enclosure,
    known_to_double,
    working_precision,
)
from ..budget import Deadline
from ..enclosure.weights import WeightEnclosures
from ..exact.trees import PLAIN, Tree, TreeFamily
from ..exact.weights import WeightTable, tableau_field
from ..search import Search, search_order

# Bits of the balls that screen an exact tableau's failing conditions. 192 rather than 128: the
# error norm reads the residuals of order p + 1 off these balls when they are known to double
# precision, and Dormand-Prince 8's are 1e-22 against terms of 1e-5 (the exact fallback
# cost it a tenth of its report at 128 bits).
SCREEN_PRECISION = 192


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
    if tableau.row_sum_c or all(
        sympy.simplify(x - sympy.Add(*row)) == 0
        for x, row in zip(tableau.c, tableau.A, strict=True)
    ):
        return PLAIN, {}
    return TreeFamily(("y",), leaf_only=("t",)), {"t": tableau.c}


def _entries(tableau: ButcherTableau, weights: str) -> dict[str, Any]:
    """The `Number`s of A, the weights (`b` or `b_hat`) and c."""
    n = tableau.numbers
    return {"A": n.A, "b": n.arrays[weights], "c": n.c}


@final
class Conditions:
    """Verdicts on the order conditions of one tableau (its main or its embedded weights).

    **Arguments:**

    - `tableau`: the method.
    - `weights`: `"b"` or `"b_hat"`.
    - `stages_of`: the conditions of the same tableau with other weights, whose exact stage
      vectors (independent of the weights) these reuse.
    """

    def __init__(
        self, tableau: ButcherTableau, weights: str = "b", stages_of: Conditions | None = None
    ) -> None:
        self.tableau = tableau
        self._stages_of = stages_of
        self.family, leaves = tree_family(tableau)
        self.numeric = tableau.numeric
        entries = _entries(tableau, weights)
        self._weights = weights
        self._leaves = set(leaves)
        self._table: WeightTable | None = None
        self._screen: WeightEnclosures | None = None
        # symbols are collected from every entry: asked once here, not once per tree
        self._screens = not self.numeric and not tableau.symbols
        self.balls = None
        if self.numeric:
            numbers = [*entries["A"].flat, *entries["b"], *entries["c"]]
            prec = working_precision(numbers)
            with flint.ctx.workprec(prec):

                def balls(vector: Sequence[Number]) -> list[flint.arb]:
                    return [x.ball() for x in vector]

                colours = self.family.colours
                self.balls = _enclosures(self.family, entries, balls, leaves, colours, prec)

    @property
    def table(self) -> WeightTable:
        """The exact weights (built on first use: numeric tableaux need them only rarely)."""
        if self._table is None:
            domain, field = tableau_field(self.tableau)
            A, b = [list(row) for row in field["A"]], list(field[self._weights])
            if self._stages_of is not None:
                self._table = self._stages_of.table.reweighted({c: b for c in self.family.colours})
                return self._table
            leaves = {k: list(field["c"]) for k in self._leaves}
            colours = self.family.colours
            self._table = WeightTable(
                self.family,
                {c: A for c in colours if c not in leaves},
                {c: b for c in colours},
                leaves,
                domain=domain,
            )
        return self._table

    @property
    def screen(self) -> WeightEnclosures | None:
        """Balls around the exact weights of an exact tableau without symbols (built on first
        use): a ball that excludes 0 proves that a condition fails, so only the conditions that
        hold, and the few the balls cannot separate from 0, are computed exactly."""
        if self._screen is None and self._screens:
            entries = _entries(self.tableau, self._weights)
            with flint.ctx.workprec(SCREEN_PRECISION):

                def balls(vector: Sequence[Number]) -> list[flint.arb]:
                    return [ball(x.value) for x in vector]

                shared = self._stages_of.screen if self._stages_of is not None else None
                if shared is not None:
                    b = balls(entries["b"])
                    self._screen = shared.reweighted({c: b for c in self.family.colours})
                    return self._screen
                self._screen = _enclosures(
                    self.family, entries, balls, self._leaves, self.family.colours, SCREEN_PRECISION
                )
        return self._screen

    @property
    def domain(self) -> str:
        return "numeric (ball arithmetic)" if self.numeric else str(self.table.domain)

    def _screened(self, tree: Tree) -> bool:
        """Whether the balls of an exact tableau prove that the condition of `tree` fails."""
        screen = self.screen
        return screen is not None and not screen.residual(tree).contains(0)

    def judge(self, tree: Tree) -> Judgement:
        return self.judge_all([tree])[0]

    def judge_all(self, trees: Sequence[Tree]) -> list[Judgement]:
        """The verdicts on the conditions of `trees`; for an exact tableau, the conditions the
        balls cannot show to fail are computed exactly together (`WeightTable.prepare`).

        **Arguments:** `trees`: trees of `family`.

        **Returns:** one `Judgement` per tree, in the order of `trees`.
        """
        if self.balls is not None:
            return [self._judge_numeric(tree) for tree in trees]
        screened = [self._screened(tree) for tree in trees]
        table = self.table
        table.prepare([t for t, failing in zip(trees, screened, strict=True) if not failing])
        out = []
        for tree, failing in zip(trees, screened, strict=True):
            if failing:
                out.append(Judgement(Verdict.FAILS, compute=_residual_of(table, tree)))
            else:
                out.append(table.judge(tree))
        return out

    def _judge_numeric(self, tree: Tree) -> Judgement:
        assert self.balls is not None

        def exactly_zero() -> bool:
            return self.table.is_met(tree)

        return judge_enclosure(self.balls.residual(tree), _scale(tree.density), exactly_zero)

    def residual_floats(self, trees: Sequence[Tree]) -> list[float]:
        """Φ(t) − 1/γ(t) as floats: exactly computed and rounded (the screening balls where
        they give double precision), or the digits' own residuals for a numeric tableau.

        **Arguments:** `trees`: trees of `family`.

        **Returns:** one float per tree, in the order of `trees` (for error norms, never for a
        verdict).
        """
        if self.balls is not None:
            return [float(self.judge(tree).residual) for tree in trees]
        screen = self.screen
        known: list[float | None] = [None] * len(trees)
        if screen is not None:
            for k, tree in enumerate(trees):
                enclosure = screen.residual(tree)
                if known_to_double(enclosure):
                    known[k] = float(enclosure.mid())
        table = self.table
        table.prepare([t for t, x in zip(trees, known, strict=True) if x is None])
        return [
            table.residual_float(t) if x is None else x for t, x in zip(trees, known, strict=True)
        ]

    def search(self, bound: int, deadline: Deadline, cap: int | None = None) -> Search[Tree]:
        """Judge the trees order by order, up to the first failure, `cap` (a user's limit), the
        order `bound` + 1 (what the stage count allows, plus the order that must fail) or the
        deadline (`search.search_order`)."""

        def judged_at(n: int) -> list[tuple[Tree, Judgement]]:
            trees = self.family.of_order(n)
            return list(zip(trees, self.judge_all(trees), strict=True))

        limit = cap if cap is not None else bound + 1
        return search_order(
            judged_at, limit=limit, deadline=deadline, bound=bound, capped=cap is not None
        )


def _residual_of(table: WeightTable, tree: Tree) -> Callable[[], sympy.Expr]:
    return lambda: table.to_sympy(table.residual(tree))


@functools.lru_cache(maxsize=4096)
def _scale(density: int) -> Fraction:
    return Fraction(1, density)


def _enclosures(
    family: TreeFamily,
    entries: dict[str, Any],
    balls: Any,
    leaves: Collection[str],
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


@final
class FailingConditions(Sequence[tuple[str, Any]]):
    """The failing trees with their residuals, each converted to sympy when first read (Gauss-
    Legendre 5 fails 1842 conditions of order 11; a report prints four).

    **Arguments:**

    - `family`: the `TreeFamily` the trees belong to (it writes their brackets).
    - `judged`: the failing trees with their `Judgement`s (`Search.failing`).

    Items are `(bracket, residual)` pairs.
    """

    def __init__(self, family: TreeFamily, judged: list[tuple[Tree, Judgement]]) -> None:
        self._family = family
        self._judged = judged

    def __len__(self) -> int:
        return len(self._judged)

    @overload
    def __getitem__(self, index: int) -> tuple[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[tuple[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> tuple[str, Any] | list[tuple[str, Any]]:
        if isinstance(index, slice):
            return [self._pair(t, j) for t, j in self._judged[index]]
        return self._pair(*self._judged[index])

    def _pair(self, tree: Tree, judgement: Judgement) -> tuple[str, Any]:
        return self._family.bracket(tree), judgement.residual
