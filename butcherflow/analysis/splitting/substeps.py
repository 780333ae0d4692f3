"""A splitting with Runge-Kutta sub-steps is an additive Runge-Kutta method: its order by
coloured trees.

The composition advances each operator's field by the declared sub-step in turn; written out, it
is an additive Runge-Kutta method over the fields {f_X} (`additive_tableau`), one colour per
operator, and its order is proved with coloured trees (`exact/weights.py`). A numeric declaration's
elementary weights are enclosed in balls holding every splitting and sub-step within the
precision of their entries (`enclosure.WeightEnclosures`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flint
import sympy

from ...methods import ButcherTableau, Splitting
from ..additive.order import search_coloured_order
from ..budget import Deadline
from ..enclosure.weights import WeightEnclosures
from ..exact.trees import Tree, TreeFamily
from ..search import Search


def additive_tableau(
    steps: Sequence[tuple[str, Any]], A: Sequence[Sequence[Any]], b: Sequence[Any], zero: Any = 0
) -> tuple[dict[str, list[list[Any]]], dict[str, list[Any]]]:
    """The additive Runge-Kutta method that a splitting with Runge-Kutta sub-steps computes.

    Sub-step k advances operator X_k by c_k·h with the tableau (A, b): its stages are rows
    k·s .. k·s+s−1, which use c_k·A within the block and c_m·b in the block of every earlier
    sub-step m (whose result they start from); the weights are c_k·b. A column is coloured by the
    operator its sub-step advances.

    **Arguments:**

    - `steps`: `(operator, coefficient)` pairs in order of application.
    - `A`, `b`: the sub-step's explicit tableau (s stages).
    - `zero`: the zero of the entries' type.

    **Returns:** `(A_by_colour, b_by_colour)`: per operator the (n·s)×(n·s) matrix with the other
    colours' columns zeroed, and the n·s weights likewise.
    """
    s = len(b)
    size = len(steps) * s
    operators = dict.fromkeys(op for op, _ in steps)
    big_A = {op: [[zero] * size for _ in range(size)] for op in operators}
    big_b = {op: [zero] * size for op in operators}
    for k, (op, c) in enumerate(steps):
        for i in range(s):
            row = k * s + i
            for m, (earlier, c_m) in enumerate(steps[:k]):
                for j in range(s):
                    big_A[earlier][row][m * s + j] = c_m * b[j]
            for j in range(s):
                big_A[op][row][k * s + j] = c * A[i][j]
        for j in range(s):
            big_b[op][k * s + j] = c * b[j]
    return big_A, big_b


def search_substep_order(
    method: Splitting,
    substep: ButcherTableau,
    family: TreeFamily,
    *,
    limit: int,
    deadline: Deadline,
    capped: bool,
    prec: int | None,
) -> Search[Tree]:
    """Judge the coloured-tree conditions of a splitting advanced by `substep`, order by order.

    **Arguments:**

    - `method`, `substep`: the splitting and its explicit Runge-Kutta sub-step.
    - `family`: the coloured trees, one colour per operator of `method`.
    - `limit`, `deadline`, `capped`: as `search.search_order` takes them.
    - `prec`: the working precision in which a numeric declaration's weights are enclosed in
      balls; `None` judges every condition exactly.

    **Returns:** the `Search` over `family`'s trees.
    """
    big_A, big_b = additive_tableau(method.steps, substep.A, substep.b, sympy.Integer(0))
    balls = None if prec is None else _ball_weights(method, family, substep, prec)
    return search_coloured_order(
        family, big_A, big_b, balls, limit=limit, deadline=deadline, capped=capped
    )


def _ball_weights(
    method: Splitting, family: TreeFamily, sub: ButcherTableau, prec: int
) -> WeightEnclosures:
    """The additive tableau of the composition, in balls (steps and sub-step entries)."""
    with flint.ctx.workprec(prec):
        balls = method.numbers.steps.balls()
        steps = [(op, x) for (op, _), x in zip(method.steps, balls, strict=True)]
        A, b = sub.numbers.A.balls(), sub.numbers.b.balls()
        big_A, big_b = additive_tableau(steps, A, b, flint.arb(0))
    return WeightEnclosures(family, big_A, big_b, prec=prec)
