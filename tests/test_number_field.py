"""The flint number-field arithmetic of the order conditions agrees with sympy's, exactly."""

from __future__ import annotations

import math

import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.polys.domains import QQ

import butcherflow as bf
from butcherflow.analysis.exact.number_field import NumberField
from butcherflow.analysis.exact.trees import PLAIN
from butcherflow.analysis.exact.weights import smallest_domain
from butcherflow.analysis.runge_kutta.order import Conditions

# QQ<√6>, a degree-4 field from two radicals, and a nested radical whose generator is not an
# algebraic integer (minimal polynomial 7x⁴ − 70x² + 135).
FIELDS = [
    smallest_domain([sympy.sqrt(6)])[0],
    smallest_domain([sympy.sqrt(2), sympy.sqrt(3)])[0],
    smallest_domain([sympy.sqrt(5 + 2 * sympy.sqrt(70) / 7)])[0],
]
rationals = st.fractions(max_denominator=10**6).filter(lambda q: abs(q) < 10**6)


@st.composite
def elements(draw: st.DrawFn, field: object) -> object:
    degree = field.mod.degree()  # type: ignore[attr-defined]
    coefficients = draw(st.lists(rationals, min_size=degree, max_size=degree))
    return field.dtype.from_list(  # type: ignore[attr-defined]
        [QQ(c.numerator, c.denominator) for c in coefficients], field.mod.to_list(), QQ
    )


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_products_sums_and_conversions_agree_with_sympy(data: st.DataObject) -> None:
    field = data.draw(st.sampled_from(FIELDS))
    x, y, z = (data.draw(elements(field)) for _ in range(3))
    K = NumberField(field)
    fx, fy, fz = K.convert(x), K.convert(y), K.convert(z)
    assert K.element(fx) == x
    assert K.element(K.reduce(fx * fy)) == x * y
    assert K.element(K.reduce(fx * fy * fz + fx - fz)) == x * y * z + x - z
    value = float(sympy.N(field.to_sympy(x * y - z), 40))
    assert math.isclose(K.to_float(K.reduce(fx * fy - fz)), value, rel_tol=1e-14, abs_tol=1e-300)


def _sympy_residual(A: sympy.Matrix, b: sympy.Matrix, tree_index: int) -> sympy.Expr:
    """Φ(t) − 1/γ(t) straight from the definition, in sympy expressions."""

    def g(index: int) -> sympy.Matrix:
        out = sympy.ones(A.rows, 1)
        for child in PLAIN.trees[index].children:
            out = out.multiply_elementwise(A * g(child))
        return out

    tree = PLAIN.trees[tree_index]
    return (b.T * g(tree_index))[0] - sympy.Rational(1, tree.density)


def test_weights_in_a_number_field_match_the_definition() -> None:
    """Every residual up to order 7 of Gauss-Legendre 3 (QQ<√15>) and of a Lobatto-type
    tableau with nested radicals, computed in flint, equals the sympy value of its definition."""
    gl3 = bf.check("gauss-legendre-3").method
    nested = bf.ButcherTableau(
        A=[[0, 0], ["sqrt(5 - 2*sqrt(70)/7)", 0]],
        b=["1 - sqrt(2)", "sqrt(2)"],
        name="nested",
    )
    for method in (gl3, nested):
        conditions = Conditions(method)
        table = conditions.table
        assert str(table.domain).startswith("QQ<")
        A, b = sympy.Matrix(method.A), sympy.Matrix(method.b)
        for tree in PLAIN.up_to(7):
            expected = sympy.nsimplify(sympy.expand(_sympy_residual(A, b, tree.index)))
            got = table.to_sympy(table.residual(tree))
            assert sympy.simplify(got - expected) == 0, (method.name, tree)
            judged = conditions.judge(tree)
            assert judged.met == (expected == 0)
            if not judged.met:  # screened by balls or decided exactly: the same exact residual
                assert sympy.simplify(judged.residual - expected) == 0
