"""Elementary weights of numeric declarations, enclosed in balls (python-flint's arb).

For a numeric tableau every entry is a ball: its digits ± what they promise (`methods/numbers`).
Ball arithmetic is rigorous, so the ball computed for Φ(t) − 1/γ(t) holds the residual of every
method within the precision of the entries; `precision.judge_enclosure` reads the verdict off it.

The work is batched by tree order: with t = u + s (s the smallest child of t),
g(t) = g(u) ⊙ h(s) is one entrywise product, and h(t) = A g(t) and Φ(t) = bᵀ g(t) are two
matrix products for all trees of one order at once (in C). That keeps Feagin's 14th-order
method (35 stages, 141,000 trees) within seconds.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping, Sequence
from typing import Any, final

import flint

from ...methods.entries.balls import ball
from ..exact.trees import Tree, TreeFamily, by_colour

Vector = list[flint.arb]


@final
class BallDomain:
    """arb balls behind the few calls of a sympy domain that the proofs make on numeric
    declarations (`zero`, `one`, `convert` / `from_sympy`): splittings' free products and
    general linear methods' B-series."""

    def __init__(self) -> None:
        self.zero = flint.arb(0)
        self.one = flint.arb(1)

    def convert(self, value: Any) -> flint.arb:
        return ball(value)

    from_sympy = convert


@final
class WeightEnclosures:
    """Balls around Φ(t) − 1/γ(t) for the trees of a family, computed order by order.

    **Arguments:**

    - `family`: the `TreeFamily` (colours are keys of `A` and `b`, or of `leaves`).
    - `A`: per colour, the s×s matrix of balls.
    - `b`: per colour, the s weights as balls.
    - `leaves`: per leaf-only colour, its fixed stage vector (the nodes c for the time colour).
    - `prec`: working precision in bits (`precision.working_precision`).
    """

    def __init__(
        self,
        family: TreeFamily,
        A: Mapping[str, Sequence[Sequence[flint.arb]]],
        b: Mapping[str, Sequence[flint.arb]],
        leaves: Mapping[str, Sequence[flint.arb]] | None = None,
        *,
        prec: int,
    ) -> None:
        self.family = family
        self.prec = prec
        self.stages = len(next(iter(b.values())))
        s = self.stages
        with flint.ctx.workprec(prec):
            self._A = {c: flint.arb_mat([list(row) for row in m]) for c, m in A.items()}
            self._b = {c: flint.arb_mat([list(v)]) for c, v in b.items()}
            self._ones: Vector = [flint.arb(1)] * s
        self._leaves = {c: list(v) for c, v in (leaves or {}).items()}
        self._g: dict[int, Vector] = {}
        self._h: dict[int, Vector] = {}
        self._residual: dict[int, flint.arb] = {}
        self._h_done: set[int] = set()
        self._done = 0

    def reweighted(self, b: Mapping[str, Sequence[flint.arb]]) -> WeightEnclosures:
        """The same method with other weights (an embedded pair's b̂), as balls: the stage
        vectors, which do not depend on the weights, are shared, not recomputed."""
        other = copy.copy(self)
        with flint.ctx.workprec(self.prec):
            other._b = {c: flint.arb_mat([list(v)]) for c, v in b.items()}
        other._residual = {}
        other._done = 0
        return other

    def residual(self, tree: Tree) -> flint.arb:
        """A ball holding Φ(t) − 1/γ(t) for every method within the entries' precision."""
        while self._done < tree.order:
            self._compute(self._done + 1)
        return self._residual[tree.index]

    def child_vector(self, tree: Tree) -> Vector:
        """h(t) = A^[colour] g(t) (or a leaf-only colour's fixed vector), as balls."""
        self.residual(tree)
        if tree.order not in self._h_done:
            self._children(tree.order)
        return self._h[tree.index]

    def _compute(self, n: int) -> None:
        """g(t) and Φ(t) − 1/γ(t) for every tree of order n (h only when a larger tree asks)."""
        trees = self.family.of_order(n)
        with flint.ctx.workprec(self.prec):
            for tree in trees:
                if tree.index in self._g:  # shared with the same method's other weights
                    continue
                if not tree.children:
                    self._g[tree.index] = self._ones
                    continue
                u, child = self.family.split(tree)
                h = self.child_vector(child)
                self._g[tree.index] = [x * y for x, y in zip(self._g[u.index], h, strict=True)]
            for colour, group in by_colour(trees):
                columns = [self._g[t.index] for t in group]
                for t, (phi,) in zip(group, column_products(self._b[colour], columns), strict=True):
                    self._residual[t.index] = phi - _inverse(t.density, self.prec)
        self._done = n

    def _children(self, n: int) -> None:
        """h(t) = A g(t) for every tree of order n: one matrix product per colour."""
        trees = self.family.of_order(n)
        with flint.ctx.workprec(self.prec):
            for colour, group in by_colour(trees):
                if colour in self._leaves:
                    for t in group:
                        self._h[t.index] = self._leaves[colour]
                    continue
                columns = [self._g[t.index] for t in group]
                for t, h in zip(group, column_products(self._A[colour], columns), strict=True):
                    self._h[t.index] = h
        self._h_done.add(n)


def column_products(matrix: Any, columns: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """`matrix` times each of `columns`, as one flint matrix product (batched in C).

    **Arguments:**

    - `matrix`: a flint `fmpq_mat` or `arb_mat` of shape (r, s).
    - `columns`: m vectors of length s, elements `matrix`'s type accepts.

    **Returns:** m vectors of length r: `matrix @ column` for each column, in order.
    """
    s, m = len(columns[0]), len(columns)
    G = type(matrix)(s, m, [col[i] for i in range(s) for col in columns])
    entries = (matrix * G).entries()
    return [entries[j::m] for j in range(m)]


@functools.lru_cache(maxsize=4096)
def _inverse(density: int, prec: int) -> flint.arb:
    """1/γ(t) as a ball at the working precision `prec` (many trees share a density)."""
    with flint.ctx.workprec(prec):
        return flint.arb(flint.fmpq(1, density))
