"""The Butcher group on B-series: composition, substitution, inverse and adjoint.

Composition (Hairer, Lubich and Wanner, Geometric Numerical Integration, III.1.4): the step a
followed by the step b is the B-series a·b with
    (a·b)(t) = b(∅)·a(t) + Σ_{s ⊆ t} b(s) · Π_{v ∈ t∖s} a(v),
the sum over the subtrees s of t that hold its root, t∖s the forest cut off (a(∅) = 1).
Substitution (Chartier, Hairer and Vilmart, Found. Comput. Math. 10, 2010): a field h·f replaced
by the vector-field series B(b) turns the series a into b ⋆ a with
    (b ⋆ a)(t) = Σ_{partitions p of t} a(skeleton of p) · Π_{pieces δ of p} b(δ),
a partition cutting some edges of t, its skeleton the tree of pieces.

Both sums are tabulated once per tree (the coproduct of the tree, memoised per tree family), by
the decomposition t = u + s of `trees.TreeFamily.split`: every root subtree or partition of t
is one of u combined with one of s, the edge between them kept or cut.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...errors import AnalysisError
from ..exact.trees import PLAIN, Tree, TreeFamily
from .series import Arithmetic, BallField, BSeries, unify

Forest = tuple[int, ...]
# root subtree (tree index) and the forest cut off -> count
Cuts = dict[tuple[int, Forest], int]
# (root piece, skeleton, other pieces) -> count; the skeleton is a PLAIN tree index
Partitions = dict[tuple[int, int, Forest], int]


def _graft(family: TreeFamily, root: Tree, child: int) -> int:
    """The tree `root` with one more child, `child` (an index), at its root."""
    return family.find(root.colour, (*root.children, child)).index


def _merge(family: TreeFamily, left: Tree, right: Tree) -> int:
    """The tree whose root has the children of both roots (colour of `left`)."""
    return family.find(left.colour, (*left.children, *right.children)).index


@functools.cache
def _cuts(family: TreeFamily, index: int) -> Cuts:
    """The subtrees of tree `index` that hold its root, with the forests they leave."""
    tree = family.trees[index]
    if not tree.children:
        return {(index, ()): 1}
    u, s = family.split(tree)
    out: Counter[tuple[int, Forest]] = Counter()
    for (root_u, forest_u), n in _cuts(family, u.index).items():
        out[(root_u, tuple(sorted((*forest_u, s.index))))] += n
        grown = family.trees[root_u]
        for (root_s, forest_s), m in _cuts(family, s.index).items():
            key = (_graft(family, grown, root_s), tuple(sorted(forest_u + forest_s)))
            out[key] += n * m
    return dict(out)


@functools.cache
def _partitions(family: TreeFamily, index: int) -> Partitions:
    """The partitions of tree `index` into pieces (subtrees, by cutting edges)."""
    tree = family.trees[index]
    leaf = PLAIN.of_order(1)[0].index
    if not tree.children:
        return {(index, leaf, ()): 1}
    u, s = family.split(tree)
    out: Counter[tuple[int, int, Forest]] = Counter()
    for (root_u, skel_u, pieces_u), n in _partitions(family, u.index).items():
        for (root_s, skel_s, pieces_s), m in _partitions(family, s.index).items():
            kept = (
                _graft(family, family.trees[root_u], root_s),
                _merge(PLAIN, PLAIN.trees[skel_u], PLAIN.trees[skel_s]),
                tuple(sorted(pieces_u + pieces_s)),
            )
            out[kept] += n * m
            cut = (
                root_u,
                _graft(PLAIN, PLAIN.trees[skel_u], skel_s),
                tuple(sorted((*pieces_u, *pieces_s, root_s))),
            )
            out[cut] += n * m
    return dict(out)


def common_domain(plain: BSeries, other: BSeries) -> tuple[BSeries, BSeries]:
    """A plain series and a series over any trees (plain or coloured) over one domain."""
    if plain.family is other.family:
        return unify(plain, other)
    if plain.family is not PLAIN:
        raise AnalysisError(f"{plain.name}: expected a series over plain (uncoloured) trees")
    domains = [d for d in (plain.domain, other.domain) if isinstance(d, BallField)]
    domain = domains[0] if domains else plain.domain.unify(other.domain)
    return plain.over(domain), other.over(domain)


def _product(ar: Arithmetic, values: dict[int, Any], forest: Sequence[int]) -> Any:
    out = ar.one
    for i in forest:
        out = ar.mul(out, values[i])
    return out


def _same_trees(a: BSeries, b: BSeries, what: str) -> int:
    if a.family is not b.family:
        raise AnalysisError(f"{what}: the two B-series are over different tree families")
    return min(a.order, b.order)


def compose(a: BSeries, b: BSeries) -> BSeries:
    """a·b: the step a followed by the step b (a(∅) must be 1).

    **Arguments:** `a`, `b`: B-series over one tree family.

    **Returns:** the composed series, to the lower of their orders.
    """
    order = _same_trees(a, b, "compose")
    a, b = unify(a, b)
    if a.empty != a.domain.one:
        raise AnalysisError(f"compose: the first series must have a(∅) = 1 (got {a[None]})")
    ar = Arithmetic(a.domain)
    va, vb, b_empty = ar.values(a), ar.values(b), ar.convert(b.empty)
    values = {}
    for t in a.family.up_to(order):
        total = ar.mul(b_empty, va[t.index])
        for (root, forest), n in _cuts(a.family, t.index).items():
            total += n * ar.mul(vb[root], _product(ar, va, forest))
        values[t.index] = total
    return ar.series(a.family, order, b_empty, values, f"({a.name})·({b.name})")


def substitute(b: BSeries, a: BSeries) -> BSeries:
    """b ⋆ a: the series a with its field h·f replaced by the vector-field series b.

    **Arguments:** `b`: the series substituted (usually b(∅) = 0, a modified field), over
    plain trees or trees coloured by operator (a splitting's field Σ_X f_X and its
    corrections); `a`: the plain series it is substituted into (its skeletons are plain).

    **Returns:** b ⋆ a over the trees of `b`, to the lower of their orders.
    """
    order = min(a.order, b.order)
    if a.family is not PLAIN:
        raise AnalysisError(
            "substitute: the series substituted into must be over plain trees (one field f); "
            "substituting into a coloured series needs one field series per operator"
        )
    a, b = common_domain(a, b)
    family = b.family
    ar = Arithmetic(a.domain)
    va, vb = ar.values(a), ar.values(b)
    values = {}
    for t in family.up_to(order):
        total = ar.zero
        for (root, skeleton, pieces), n in _partitions(family, t.index).items():
            total += n * ar.mul(ar.mul(va[skeleton], vb[root]), _product(ar, vb, pieces))
        values[t.index] = total
    return ar.series(family, order, ar.convert(a.empty), values, f"({b.name}) ⋆ ({a.name})")


def inverse(a: BSeries) -> BSeries:
    """a⁻¹ in the Butcher group: a·a⁻¹ = the identity (a(∅) = 1)."""
    if a.empty != a.domain.one:
        raise AnalysisError(f"inverse: needs a(∅) = 1 (got {a[None]})")
    ar = Arithmetic(a.domain)
    va = ar.values(a)
    values: dict[int, Any] = {}
    for t in a.family.up_to(a.order):
        # (a·b)(t) = a(t) + b(t) + Σ_{s ⊊ t, s ≠ ∅} b(s) Π a(forest) = 0
        total = -va[t.index]
        for (root, forest), n in _cuts(a.family, t.index).items():
            if root != t.index:
                total -= n * ar.mul(values[root], _product(ar, va, forest))
        values[t.index] = total
    return ar.series(a.family, a.order, ar.one, values, f"({a.name})⁻¹")


def adjoint(a: BSeries) -> BSeries:
    """The adjoint method a*(t) = (−1)^|t| a⁻¹(t): the step of a backwards in time, inverted."""
    inv = inverse(a)
    return inv.map(lambda t, x: -x if t.order % 2 else x, inv.empty, f"({a.name})*")
