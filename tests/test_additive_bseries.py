"""`bf.bseries` on additive Runge-Kutta methods: their B-series over trees coloured by field.

Checked against a computation that shares nothing with the trees: the Taylor expansion in h of
one step of the method applied to y' = f(y) + g(y) for polynomial fields (sympy, the stage
equations solved by fixed-point iteration on truncated power series), for the IMEX methods of
Ascher, Ruuth and Spiteri (Appl. Numer. Math. 25, 1997, typed in `solvers/ars-*.toml`) and
random additive methods; and against the composition of sub-steps in the Butcher group: a
splitting written call by call as the additive method it computes has the splitting's series.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.bseries import (
    BSeries,
    evaluate,
    exact_flow,
    series_order,
    splitting_series,
    substitute,
)

Y = sympy.symbols("y0:2")
H = sympy.Symbol("h")
POINT = {Y[0]: sympy.Rational(1, 3), Y[1]: sympy.Rational(-2, 7)}  # where both steps are expanded
# two polynomial fields on R², neither a multiple of the other
FIELDS = {
    "f": [Y[1] ** 2 + Y[0], Y[0] * Y[1]],
    "g": [-Y[0] + Y[1] ** 2 / 2, Y[0] ** 2 - Y[1]],
}


def _truncated(expr: sympy.Expr, degree: int) -> sympy.Expr:
    """`expr`, a polynomial in h, without its terms of degree > `degree`."""
    poly = sympy.Poly(sympy.expand(expr), H)
    return sum(
        (c * H**k for (k,), c in poly.terms() if k <= degree),
        sympy.Integer(0),
    )


def taylor_step(
    A: Sequence[Sequence[Any]], b: Sequence[Any], calls: Sequence[str], order: int
) -> list[sympy.Expr]:
    """One step y ↦ y + h Σ bᵢ f_{Xᵢ}(Yᵢ), Yᵢ = y + h Σ aᵢⱼ f_{Xⱼ}(Yⱼ) from y = `POINT`, to
    h^order: each pass of the fixed-point iteration on the stage derivatives fixes one more
    power of h."""
    s = len(b)
    y = [POINT[v] for v in Y]
    K = [[sympy.Integer(0)] * 2 for _ in range(s)]
    for _ in range(order):
        stages = [
            [y[m] + H * sum(A[i][j] * K[j][m] for j in range(s)) for m in range(2)]
            for i in range(s)
        ]
        K = [
            [
                _truncated(x.xreplace(dict(zip(Y, stages[i], strict=True))), order - 1)
                for x in FIELDS[calls[i]]
            ]
            for i in range(s)
        ]
    return [_truncated(y[m] + H * sum(b[i] * K[i][m] for i in range(s)), order) for m in range(2)]


def series_step(series: BSeries) -> list[sympy.Expr]:
    """y + h Σ_t h^(|t|−1) a(t)/σ(t) F(t)(y) for the two fields at y = `POINT`
    (`modified.evaluate`)."""
    fields = {X: FIELDS[X] for X in series.family.colours}
    return [(Y[m] + H * x).xreplace(POINT) for m, x in enumerate(evaluate(series, fields, Y, H))]


def _same(left: Sequence[sympy.Expr], right: Sequence[sympy.Expr]) -> bool:
    return all(sympy.expand(sympy.radsimp(x - y)) == 0 for x, y in zip(left, right, strict=True))


@pytest.mark.parametrize(("name", "order"), [("ars-222", 3), ("ars-443", 4)])
def test_ars_methods_series_is_the_taylor_expansion_of_their_step(name: str, order: int) -> None:
    method: Any = bf.catalog[name]
    series = bf.bseries(method, order)
    assert _same(series_step(series), taylor_step(method.A, method.b, method.fields, order))


ENTRY = st.fractions(min_value=-2, max_value=2, max_denominator=3)


@st.composite
def additive(draw: st.DrawFn) -> bf.AdditiveRungeKutta:
    """A random additive method of 2 or 3 calls of f and g, explicit or diagonally implicit."""
    s = draw(st.integers(2, 3))
    implicit = draw(st.booleans())
    A = [[draw(ENTRY) if j < i or (implicit and j == i) else 0 for j in range(s)] for i in range(s)]
    b = draw(st.lists(ENTRY, min_size=s, max_size=s))
    calls = draw(st.lists(st.sampled_from("fg"), min_size=s, max_size=s))
    assume(set(calls) == {"f", "g"})
    return bf.AdditiveRungeKutta([[str(x) for x in row] for row in A], [str(x) for x in b], calls)


@settings(max_examples=12, deadline=None)
@given(additive())
def test_random_additive_series_is_the_taylor_expansion_of_the_step(
    method: bf.AdditiveRungeKutta,
) -> None:
    series = bf.bseries(method, 3)
    assert _same(series_step(series), taylor_step(method.A, method.b, method.fields, 3))


def as_additive(split: bf.Splitting) -> bf.AdditiveRungeKutta:
    """The splitting call by call: sub-step k (operator X_k, coefficient c_k, tableau (a, w))
    has calls k·s + i with c_k·a within its block and c_m·w in the block of every earlier
    sub-step m, and weights c_k·w."""
    sub = split.substep
    assert sub is not None
    s, n = sub.stages, len(split.steps)
    A: list[list[Any]] = [[0] * (n * s) for _ in range(n * s)]
    b: list[Any] = [0] * (n * s)
    for k, (_, c) in enumerate(split.steps):
        for i in range(s):
            for m, (_, c_m) in enumerate(split.steps[:k]):
                for j in range(s):
                    A[k * s + i][m * s + j] = c_m * sub.b[j]
            for j in range(s):
                A[k * s + i][k * s + j] = c * sub.A[i][j]
        for j in range(s):
            b[k * s + j] = c * sub.b[j]
    calls = [op for op, _ in split.steps for _ in range(s)]
    return bf.AdditiveRungeKutta(
        [[str(x) for x in row] for row in A], [str(x) for x in b], calls, name=split.name
    )


def _by_bracket(series: BSeries) -> dict[str, sympy.Expr]:
    return {series.family.bracket(t): series[t] for t in series}


COEFFICIENT = st.fractions(min_value=-2, max_value=2, max_denominator=4).filter(lambda x: x != 0)
STEPS = st.lists(st.tuples(st.sampled_from("AB"), COEFFICIENT), min_size=2, max_size=4)


@settings(max_examples=12, deadline=None)
@given(STEPS, st.sampled_from(["euler", "heun", "ralston-3"]))
def test_a_splitting_as_an_additive_method_has_the_composed_series(
    steps: list[tuple[str, Fraction]], sub: str
) -> None:
    assume(steps[0][0] == "A" and {op for op, _ in steps} == {"A", "B"})
    split = bf.Splitting([(op, str(c)) for op, c in steps], sub)
    composed = splitting_series(split, 4)
    assert _by_bracket(bf.bseries(as_additive(split), 4)) == _by_bracket(composed)


def test_the_series_order_is_the_coloured_order_proof() -> None:
    orders = [
        (series_order(bf.bseries(n, 4))[0], bf.check(n).order) for n in ("ars-222", "ars-443")
    ]
    assert orders == [(2, 2), (3, 3)]


def test_the_modified_field_of_an_additive_method_gives_it_back() -> None:
    """The substitution law on coloured trees: the exact flow of the modified field is the
    method (b ⋆ e = a)."""
    a = bf.bseries("ars-222", 4)
    assert substitute(bf.modified_equation(a, 4), exact_flow(4)) == a
