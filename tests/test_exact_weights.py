"""The batched exact weights (flint matrix products over QQ, shared stage vectors, screening
balls) agree with Φ(t) − 1/γ(t) computed straight from its definition, met or failing."""

from __future__ import annotations

import math
from fractions import Fraction

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.exact.trees import Tree, TreeFamily
from butcherflow.analysis.runge_kutta.order import Conditions

ORDER = 5
rationals = st.fractions(min_value=-3, max_value=3, max_denominator=10**4)


@st.composite
def tableaux(draw: st.DrawFn) -> bf.ButcherTableau:
    """A random rational tableau: explicit or implicit, with or without b̂, with c the row sums
    of A or its own nodes (a leaf-only time colour)."""
    s = draw(st.integers(2, 4))
    explicit = draw(st.booleans())
    A = [
        [draw(rationals) if (j < i or not explicit) else Fraction(0) for j in range(s)]
        for i in range(s)
    ]
    b = [draw(rationals) for _ in range(s)]
    b_hat = [draw(rationals) for _ in range(s)] if draw(st.booleans()) else None
    own_c = draw(st.booleans())
    c = [draw(rationals) for _ in range(s)] if own_c else None

    def text(xs: list[Fraction]) -> list[str]:
        return [str(x) for x in xs]

    return bf.ButcherTableau(
        A=[text(row) for row in A],
        b=text(b),
        c=text(c) if c is not None else None,
        b_hat=text(b_hat) if b_hat is not None else None,
        row_sum_c=not own_c,
        name="random",
    )


def _definition(
    method: bf.ButcherTableau, family: TreeFamily, weights: list[sympy.Expr], tree: Tree
) -> sympy.Expr:
    """Φ(t) − 1/γ(t) from its definition: g(t) = Π over children of A g(child), or of c for a
    child of the time colour; Φ(t) = b·g(t)."""
    A = sympy.Matrix(method.A)

    def g(t: Tree) -> sympy.Matrix:
        out = sympy.ones(method.stages, 1)
        for index in t.children:
            child = family.trees[index]
            h = sympy.Matrix(method.c) if child.colour == "t" else A * g(child)
            out = out.multiply_elementwise(h)
        return out

    phi = (sympy.Matrix([weights]) * g(tree))[0]
    return sympy.expand(phi - sympy.Rational(1, tree.density))


@settings(max_examples=25, deadline=None)
@given(tableaux())
def test_batched_weights_match_the_definition(method: bf.ButcherTableau) -> None:
    main = Conditions(method)
    pairs = [(main, list(method.b))]
    if method.b_hat is not None:
        pairs.append((Conditions(method, "b_hat", main), list(method.b_hat)))
    for conditions, weights in pairs:
        table = conditions.table
        assert table._matrices is not None  # the flint-matrix path is the one under test
        family = conditions.family
        trees = list(family.up_to(ORDER))
        verdicts = conditions.judge_all(trees)  # batched: every order at once
        floats = conditions.residual_floats(trees)
        for tree, judged, value in zip(trees, verdicts, floats, strict=True):
            expected = _definition(method, family, weights, tree)
            assert table.to_sympy(table.residual(tree)) == expected, family.bracket(tree)
            assert judged.met == (expected == 0)
            if not judged.met:  # screened by balls or decided exactly: the same residual
                assert judged.residual == expected
            assert math.isclose(value, float(expected), rel_tol=1e-15, abs_tol=0.0)


def test_one_tree_at_a_time_matches_a_batch() -> None:
    """Asking tree by tree (the splittings' additive tables) and all at once give the same
    exact residuals."""
    method = bf.check("dormand-prince-8").method
    trees = list(Conditions(method).family.up_to(6))
    batched = Conditions(method).table
    batched.prepare(trees)
    single = Conditions(method).table
    for tree in reversed(trees):  # largest first: each asks for what it needs
        assert single.residual(tree) == batched.residual(tree)
