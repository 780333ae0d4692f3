"""Order conditions of a Runge-Kutta tableau in floating point, batched, for the optimisers.

A condition is a rooted tree t with a target: b·g(t) = target, g(•) = e and g([t₁..t_m]) =
Π_k A g(t_k) (the stage weights). The order conditions are the trees of order ≤ p with target
1/γ(t); a stability polynomial's coefficient a_k is the tall tree of order k with target a_k. The
trees come from the analysis stage (`TreeFamily`), the same ones `bf.check` proves.

Every function takes arrays with leading batch dimensions, so the Jacobian is one call on a
batch of complex-step perturbations x + iεe_k (the functions are analytic in the entries):
exact to rounding, with no finite-difference step to tune.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import final

import numpy as np

from ..analysis import Tree, TreeFamily

STEP = 1e-30  # the complex step


@final
@dataclass(frozen=True)
class Condition:
    """b·g(tree) = target."""

    tree: Tree
    target: Fraction


@final
class Trees:
    """The rooted trees up to an order, with their children as positions in one list."""

    def __init__(self, order: int) -> None:
        self.family = TreeFamily()
        self.trees = list(self.family.up_to(order))
        self._needed: dict[frozenset[int], frozenset[int]] = {}

    def needed(self, conditions: list[Condition]) -> frozenset[int]:
        """The trees whose weights the conditions use: theirs and their subtrees' (a
        realisation of degree 8 uses 10 of the 200 trees of order ≤ 8)."""
        roots = frozenset(c.tree.index for c in conditions)
        if roots not in self._needed:
            by_index = {t.index: t for t in self.trees}
            found, todo = set(), list(roots)
            while todo:
                k = todo.pop()
                if k not in found:
                    found.add(k)
                    todo.extend(by_index[k].children)
            self._needed[roots] = frozenset(found)
        return self._needed[roots]

    def of_order(self, n: int) -> list[Tree]:
        return [t for t in self.trees if t.order == n]

    def tall(self, n: int) -> Tree:
        """The tall tree [[…[•]…]] of order n (b·Aⁿ⁻¹e)."""
        tree = self.family.find("y", ())
        for _ in range(n - 1):
            tree = self.family.find("y", (tree.index,))
        return tree

    def order_conditions(self, p: int) -> list[Condition]:
        return [Condition(t, Fraction(1, t.density)) for t in self.trees if t.order <= p]

    def weights(
        self, A: np.ndarray, upto: int, only: frozenset[int] | None = None
    ) -> dict[int, np.ndarray]:
        """g(t) for every tree of order ≤ upto (or those in `only`, closed under subtrees):
        (..., s) arrays (A: (..., s, s))."""
        g: dict[int, np.ndarray] = {}
        for t in self.trees:
            if t.order > upto:
                break
            if only is not None and t.index not in only:
                continue
            value = np.ones(A.shape[:-1], dtype=A.dtype)
            for child in t.children:
                value = value * np.einsum("...ij,...j->...i", A, g[child])
            g[t.index] = value
        return g

    def exact_weights(
        self, A: list[list[Fraction]], upto: int, only: frozenset[int] | None = None
    ) -> dict[int, list[Fraction]]:
        """g(t) exactly, for rational A (`only` as in `weights`)."""
        s = len(A)
        g: dict[int, list[Fraction]] = {}
        for t in self.trees:
            if t.order > upto:
                break
            if only is not None and t.index not in only:
                continue
            value = [Fraction(1)] * s
            for child in t.children:
                Ag = [sum((A[i][j] * g[child][j] for j in range(s)), Fraction(0)) for i in range(s)]
                value = [v * w for v, w in zip(value, Ag, strict=True)]
            g[t.index] = value
        return g


def residuals(
    trees: Trees, conditions: list[Condition], A: np.ndarray, b: np.ndarray
) -> np.ndarray:
    """b·g(t) − target for each condition, (..., n)."""
    upto = max((c.tree.order for c in conditions), default=1)
    g = trees.weights(A, upto, trees.needed(conditions))
    return np.stack(
        [np.einsum("...i,...i->...", b, g[c.tree.index]) - float(c.target) for c in conditions],
        axis=-1,
    )


def holds_exactly(
    trees: Trees, conditions: list[Condition], A: list[list[Fraction]], b: list[Fraction]
) -> bool:
    """Every condition, in exact rational arithmetic."""
    upto = max((c.tree.order for c in conditions), default=1)
    g = trees.exact_weights(A, upto, trees.needed(conditions))
    return all(
        sum((bi * gi for bi, gi in zip(b, g[c.tree.index], strict=True)), Fraction(0)) == c.target
        for c in conditions
    )


def with_jacobian(f: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """The Jacobian of an analytic vector function of x, by the complex step on a batch."""

    def jacobian(x: np.ndarray) -> np.ndarray:
        n = len(x)
        batch = x[None, :] + 1j * STEP * np.eye(n)
        return (f(batch).imag / STEP).T  # (outputs, n)

    return jacobian
