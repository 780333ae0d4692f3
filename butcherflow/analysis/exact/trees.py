"""Rooted trees, generated (not tabulated), optionally with coloured nodes.

A tree is a root colour and a multiset of subtrees. Trees are numbered in order of generation
(all trees of order n before those of order n+1), and a tree's children are stored as a sorted
tuple of those numbers, which makes the representation canonical.

Generation rests on one unique decomposition: removing the smallest child s of a tree t leaves a
tree u of the same root colour whose children are all >= s. So the trees of order n are exactly
the pairs (u, s) with |u| + |s| = n and s <= min(children of u), each giving t = u + s once.

Colours serve two analyses: additive (coloured) trees for splittings whose sub-flows are advanced
by Runge-Kutta sub-steps (one colour per operator), and a leaf-only colour for the time variable
of non-autonomous problems when a tableau declares c different from the row sums of A.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache, cached_property


@dataclass(frozen=True)
class Tree:
    """One rooted tree of a `TreeFamily`.

    **Arguments:**

    - `index`: its number in the family (generation order).
    - `colour`: the root's colour.
    - `children`: the children's indices, sorted.
    - `order`: number of nodes |t|.
    - `density`: γ(t) = |t| · Π γ(children).
    - `symmetry`: σ(t) = Π σ(child)^m · m! over distinct children with multiplicity m.
    """

    index: int
    colour: str
    children: tuple[int, ...]
    order: int
    density: int
    symmetry: int


class TreeFamily:
    """All rooted trees up to a growing order over given colours (generated on demand).

    **Arguments:**

    - `colours`: node colours; one colour (the default) gives ordinary rooted trees.
    - `leaf_only`: colours whose nodes never have children (the time variable t, whose
      derivative is the constant 1).
    """

    def __init__(self, colours: Sequence[str] = ("y",), leaf_only: Sequence[str] = ()) -> None:
        self.colours = tuple(colours) + tuple(c for c in leaf_only if c not in colours)
        self.leaf_only = frozenset(leaf_only)
        self.trees: list[Tree] = []
        self._by_order: list[list[int]] = [[]]
        self._key: dict[tuple[str, tuple[int, ...]], int] = {}
        self._add_order_one()

    def _new(self, colour: str, children: tuple[int, ...]) -> None:
        """Add the tree (colour, children); children sorted, and (colour, children[1:]) known.

        With t = u + s (s = children[0], the smallest child): |t| = |u| + |s|,
        γ(t) = |t|·γ(u)/|u|·γ(s), and σ(t) = σ(u)·σ(s)·m where m counts s among t's children.
        """
        key = (colour, children)
        if key in self._key:  # pragma: no cover - the decomposition makes this impossible
            raise AssertionError(f"tree generated twice: {key}")
        if not children:
            tree = Tree(len(self.trees), colour, children, 1, 1, 1)
        else:
            u = self.trees[self._key[(colour, children[1:])]]
            s = self.trees[children[0]]
            m = 1
            while m < len(children) and children[m] == children[0]:
                m += 1
            order = u.order + s.order
            density = order * (u.density // u.order) * s.density
            tree = Tree(
                len(self.trees), colour, children, order, density, u.symmetry * s.symmetry * m
            )
        self._key[key] = tree.index
        self.trees.append(tree)
        self._by_order[tree.order].append(tree.index)

    def _add_order_one(self) -> None:
        self._by_order.append([])
        for colour in self.colours:
            self._new(colour, ())

    def _extend(self) -> None:
        n = len(self._by_order)
        self._by_order.append([])
        for k in range(1, n):
            for s in self._by_order[k]:
                for u in list(self._by_order[n - k]):
                    tree_u = self.trees[u]
                    if tree_u.colour in self.leaf_only:
                        continue
                    if tree_u.children and tree_u.children[0] < s:
                        continue
                    self._new(tree_u.colour, (s, *tree_u.children))

    def of_order(self, n: int) -> list[Tree]:
        """Every tree with exactly n nodes."""
        while len(self._by_order) <= n:
            self._extend()
        return [self.trees[i] for i in self._by_order[n]]

    def find(self, colour: str, children: Sequence[int]) -> Tree:
        """The tree with this root colour and these children (indices, any order), generating
        the trees of its order first when needed."""
        kids = tuple(sorted(children))
        self.of_order(1 + sum(self.trees[c].order for c in kids))
        return self.trees[self._key[(colour, kids)]]

    def split(self, tree: Tree) -> tuple[Tree, Tree]:
        """(u, s): the tree without its smallest child s, and s (t = u + s; `tree` has children)."""
        rest = self._key[(tree.colour, tree.children[1:])]
        return self.trees[rest], self.trees[tree.children[0]]

    def up_to(self, n: int) -> Iterator[Tree]:
        for k in range(1, n + 1):
            yield from self.of_order(k)

    def bracket(self, tree: Tree) -> str:
        """Butcher's bracket notation: τ for a leaf, [τ, [τ]] for a root with two children."""
        leaf = "τ" if len(self.colours) == 1 else f"τ_{tree.colour}"
        if not tree.children:
            return leaf
        inner = ", ".join(self.bracket(self.trees[c]) for c in reversed(tree.children))
        suffix = "" if len(self.colours) == 1 else f"_{tree.colour}"
        return f"[{inner}]{suffix}"

    @cached_property
    def is_plain(self) -> bool:
        return len(self.colours) == 1


PLAIN = TreeFamily()


@cache
def coloured(colours: tuple[str, ...]) -> TreeFamily:
    """The trees coloured by `colours`, one family per tuple: series over the same colours
    (a splitting's, an additive method's) compare, and share the group's tables."""
    return TreeFamily(colours)


def by_colour(trees: Sequence[Tree]) -> list[tuple[str, list[Tree]]]:
    """`trees` grouped by root colour, in order of first appearance.

    **Arguments:** `trees`: any trees of one family.

    **Returns:** `[(colour, trees of that colour)]`, each group non-empty.
    """
    groups: dict[str, list[Tree]] = {}
    for tree in trees:
        groups.setdefault(tree.colour, []).append(tree)
    return list(groups.items())
