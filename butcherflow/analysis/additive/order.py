"""The order conditions of an additive Runge-Kutta method, over trees coloured by field.

For y' = Σ_X f_X(y), the exact flow's B-series is 1/γ(t) on every tree whose nodes carry field
colours, and a method with per-field coefficients (A⁽ˣ⁾, b⁽ˣ⁾) has the elementary weight
Φ(t) = Σᵢ b⁽ʳᵒᵒᵗ⁾ᵢ Πchildren (A⁽ᶜʰⁱˡᵈ⁾ Φ)ᵢ (Kennedy and Carpenter 2003, §2; Hairer, Nørsett and
Wanner II.15). The method has order p when Φ(t) = 1/γ(t) on every coloured tree of at most p
nodes. `exact/weights.py` computes the weights exactly, `enclosure/weights.py` in balls for
numeric entries; this module judges them order by order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ...methods.entries.precision import Judgement, judge_enclosure
from ..budget import Deadline
from ..enclosure.weights import WeightEnclosures
from ..exact.trees import Tree, TreeFamily
from ..exact.weights import WeightTable, judge_element
from ..search import Search, search_order


def search_coloured_order(
    family: TreeFamily,
    A: Mapping[str, Sequence[Sequence[Any]]],
    b: Mapping[str, Sequence[Any]],
    balls: WeightEnclosures | None,
    *,
    limit: int,
    deadline: Deadline,
    capped: bool,
) -> Search[Tree]:
    """Judge Φ(t) = 1/γ(t) on the coloured trees, order by order.

    **Arguments:**

    - `family`: the trees, one colour per field (the keys of `A` and `b`).
    - `A`, `b`: per colour the s×s matrix and s weights of that field's calls (others zero),
      exact (sympy values).
    - `balls`: the same weights enclosed in balls for a numeric declaration (its conditions are
      judged at its precision), or None to judge every condition exactly.
    - `limit`, `deadline`, `capped`: as `search.search_order` takes them.

    **Returns:** the `Search` over `family`'s trees.
    """
    table = WeightTable(family, A, b)

    def judged_at(n: int) -> list[tuple[Tree, Judgement]]:
        out = []
        for tree in family.of_order(n):
            res = table.residual(tree)
            if balls is None:
                out.append((tree, judge_element(table.domain, res)))
                continue
            zero = res == table.domain.zero
            scale = Fraction(1, tree.density)
            out.append((tree, judge_enclosure(balls.residual(tree), scale, zero)))
        return out

    return search_order(judged_at, limit=limit, deadline=deadline, capped=capped)
