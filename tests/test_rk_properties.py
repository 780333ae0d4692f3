"""Property tests (hypothesis) of the Runge-Kutta order analysis.

- tableaux built from random parameters to satisfy the order-p conditions are order ≥ p;
- perturbing one coefficient that enters a condition of order ≤ p lowers the order;
- permuting the stages consistently (P A Pᵀ, P b) is the same method: same order, same R(z);
- composing a method with itself (two half steps as one tableau) keeps its order.

The conditions used to build methods are written out here by hand (not taken from the library).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis import RungeKuttaReport

z = sympy.Symbol("z")
Matrix = list[list[Any]]

SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
FEW = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

rationals = st.fractions(min_value=-2, max_value=2, max_denominator=8)
nonzero = rationals.filter(lambda x: x != 0)


def order_of(A: Matrix, b: list[Any], **kwargs: Any) -> int:
    report = bf.check(bf.ButcherTableau(A, b), **kwargs)
    assert isinstance(report, RungeKuttaReport)
    return report.order


def report_of(A: Matrix, b: list[Any]) -> RungeKuttaReport:
    report = bf.check(bf.ButcherTableau(A, b))
    assert isinstance(report, RungeKuttaReport)
    return report


# -- methods of known order (inline, independent of the catalog) -------------------------------

HALF, THIRD, SIXTH = Fraction(1, 2), Fraction(1, 3), Fraction(1, 6)
KNOWN: dict[str, tuple[Matrix, list[Any], int]] = {
    "euler": ([[0]], [1], 1),
    "heun": ([[0, 0], [1, 0]], [HALF, HALF], 2),
    "kutta-3": ([[0, 0, 0], [HALF, 0, 0], [-1, 2, 0]], [SIXTH, 4 * SIXTH, SIXTH], 3),
    "rk4": (
        [[0, 0, 0, 0], [HALF, 0, 0, 0], [0, HALF, 0, 0], [0, 0, 1, 0]],
        [SIXTH, THIRD, THIRD, SIXTH],
        4,
    ),
    "gauss-legendre-2": (
        [
            [sympy.Rational(1, 4), sympy.Rational(1, 4) - sympy.sqrt(3) / 6],
            [sympy.Rational(1, 4) + sympy.sqrt(3) / 6, sympy.Rational(1, 4)],
        ],
        [HALF, HALF],
        4,
    ),
}
EXPLICIT = ["heun", "kutta-3", "rk4"]


# -- (1) tableaux built to satisfy the conditions ----------------------------------------------


def two_stage(c2: Fraction) -> tuple[Matrix, list[Any]]:
    """The classical second-order family: b2 c2 = 1/2, b1 + b2 = 1."""
    return [[0, 0], [c2, 0]], [1 - 1 / (2 * c2), 1 / (2 * c2)]


@SETTINGS
@given(c2=nonzero)
def test_two_stage_family_members_are_second_order(c2: Fraction) -> None:
    A, b = two_stage(c2)
    assert order_of(A, b) == 2  # at least 2 by construction, at most 2 with two explicit stages


@st.composite
def explicit_lower(draw: st.DrawFn, s: int) -> Matrix:
    return [[draw(rationals) if j < i else Fraction(0) for j in range(s)] for i in range(s)]


@SETTINGS
@given(data=st.data(), s=st.integers(2, 5))
def test_random_consistent_tableaux_are_first_order(data: st.DataObject, s: int) -> None:
    A = data.draw(explicit_lower(s))
    b = data.draw(st.lists(rationals, min_size=s - 1, max_size=s - 1))
    b.append(1 - sum(b))
    assert order_of(A, b) >= 1


@SETTINGS
@given(data=st.data(), s=st.integers(3, 5))
def test_random_tableaux_solving_the_second_order_conditions(data: st.DataObject, s: int) -> None:
    A = data.draw(explicit_lower(s))
    c = [sum(row) for row in A]
    assume(c[1] != 0)
    rest = data.draw(st.lists(rationals, min_size=s - 2, max_size=s - 2))
    b_rest_sum = sum(rest)
    b_rest_c = sum(w * ci for w, ci in zip(rest, c[2:], strict=True))
    b2 = (Fraction(1, 2) - b_rest_c) / c[1]  # c[0] = 0 for an explicit method
    b = [1 - b_rest_sum - b2, b2, *rest]
    assert sum(b) == 1 and sum(w * ci for w, ci in zip(b, c, strict=True)) == Fraction(1, 2)
    assert order_of(A, b) >= 2


def kutta_family(c2: Fraction, c3: Fraction) -> tuple[Matrix, list[Any]] | None:
    """Three stages, third order: solve the four conditions for b1, b2, b3, a32 (sympy)."""
    b1, b2, b3, a32 = sympy.symbols("b1 b2 b3 a32")
    C2, C3 = sympy.Rational(c2), sympy.Rational(c3)
    equations = [
        b1 + b2 + b3 - 1,
        b2 * C2 + b3 * C3 - sympy.Rational(1, 2),
        b2 * C2**2 + b3 * C3**2 - sympy.Rational(1, 3),
        b3 * a32 * C2 - sympy.Rational(1, 6),
    ]
    solutions = sympy.solve(equations, [b1, b2, b3, a32], dict=True)
    if len(solutions) != 1 or len(solutions[0]) != 4:
        return None  # degenerate draw: no solution, or a free parameter left
    sol = solutions[0]
    A = [[0, 0, 0], [C2, 0, 0], [C3 - sol[a32], sol[a32], 0]]
    return A, [sol[b1], sol[b2], sol[b3]]


@FEW
@given(c2=nonzero, c3=nonzero)
def test_kutta_third_order_family(c2: Fraction, c3: Fraction) -> None:
    built = kutta_family(c2, c3)
    assume(built is not None)
    assert built is not None
    A, b = built
    assert order_of(A, b) == 3  # three explicit stages reach at most order 3


def four_stage(c2: Fraction, c3: Fraction) -> tuple[Matrix, list[Any]] | None:
    """Four stages, fourth order, c4 = 1: B(4), D(1) and Σ bᵢcᵢaᵢⱼcⱼ = 1/8 (Butcher)."""
    c = [Fraction(0), c2, c3, Fraction(1)]
    if len(set(c)) < 4:
        return None
    # B(4): the Vandermonde system Σ bᵢ cᵢ^k = 1/(k + 1), k = 0..3
    V = sympy.Matrix([[sympy.Rational(ci) ** k for ci in c] for k in range(4)])
    rhs = sympy.Matrix([sympy.Rational(1, k + 1) for k in range(4)])
    b = [sympy.Rational(x) for x in V.LUsolve(rhs)]
    C = [sympy.Rational(x) for x in c]
    if b[2] == 0 or b[3] == 0 or C[3] == C[2] or C[1] == 0:
        return None
    a43 = b[2] * (1 - C[2]) / b[3]  # D(1), j = 3
    # D(1), j = 2:        b3 a32 + b4 a42 = b2 (1 − c2)
    # Σ b c A c = 1/8:    b3 c3 c2 a32 + b4 c2 a42 = 1/8 − b4 a43 c3
    M = sympy.Matrix([[b[2], b[3]], [b[2] * C[2] * C[1], b[3] * C[1]]])
    if M.det() == 0:
        return None
    a32, a42 = M.LUsolve(
        sympy.Matrix([b[1] * (1 - C[1]), sympy.Rational(1, 8) - b[3] * a43 * C[2]])
    )
    A = [
        [0, 0, 0, 0],
        [C[1], 0, 0, 0],
        [C[2] - a32, a32, 0, 0],
        [C[3] - a42 - a43, a42, a43, 0],
    ]
    return A, b


@FEW
@given(c2=nonzero, c3=nonzero)
def test_four_stage_fourth_order_family(c2: Fraction, c3: Fraction) -> None:
    built = four_stage(c2, c3)
    assume(built is not None)
    assert built is not None
    A, b = built
    assert order_of(A, b) == 4


# -- (2) perturbations -------------------------------------------------------------------------


@SETTINGS
@given(name=st.sampled_from(sorted(KNOWN)), data=st.data(), delta=nonzero)
def test_perturbing_a_weight_breaks_consistency(
    name: str, data: st.DataObject, delta: Fraction
) -> None:
    A, b, p = KNOWN[name]
    i = data.draw(st.integers(0, len(b) - 1))
    b = list(b)
    b[i] = b[i] + delta
    # b enters Σ b = 1, the order-1 condition: the order drops to 0
    assert order_of(A, b) == 0 < p


@SETTINGS
@given(name=st.sampled_from([n for n in sorted(KNOWN) if KNOWN[n][2] >= 2]), data=st.data())
def test_perturbing_a_stage_coefficient_lowers_the_order(name: str, data: st.DataObject) -> None:
    A, b, p = KNOWN[name]
    s = len(b)
    implicit = name == "gauss-legendre-2"
    cells = [(i, j) for i in range(s) for j in range(s) if implicit or j < i]
    i, j = data.draw(st.sampled_from(cells))
    delta = data.draw(nonzero)
    A = [list(row) for row in A]
    A[i][j] = A[i][j] + delta
    # every bᵢ ≠ 0, and aᵢⱼ enters Σ bᵢ cᵢ = Σ bᵢ aᵢⱼ = 1/2: the order drops to 1
    assert all(w != 0 for w in b)
    assert order_of(A, b) == 1 < p


# -- (3) consistent permutations of the stages -------------------------------------------------


def permuted(A: Matrix, b: list[Any], perm: list[int]) -> tuple[Matrix, list[Any]]:
    return [[A[pi][pj] for pj in perm] for pi in perm], [b[pi] for pi in perm]


@SETTINGS
@given(name=st.sampled_from(sorted(KNOWN)), data=st.data())
def test_permuting_stages_keeps_the_method(name: str, data: st.DataObject) -> None:
    A, b, p = KNOWN[name]
    perm = data.draw(st.permutations(range(len(b))))
    A2, b2 = permuted(A, b, perm)
    report = report_of(A2, b2)
    assert report.order == p
    original = report_of(A, b).stability.expression
    assert sympy.simplify(report.stability.expression - original) == 0


@FEW
@given(c2=nonzero, c3=nonzero, data=st.data())
def test_permuting_a_random_third_order_method(
    c2: Fraction, c3: Fraction, data: st.DataObject
) -> None:
    built = kutta_family(c2, c3)
    assume(built is not None)
    assert built is not None
    perm = data.draw(st.permutations(range(3)))
    assert order_of(*permuted(*built, perm)) == 3


# -- (4) composition with itself ---------------------------------------------------------------


def composed(A: Matrix, b: list[Any]) -> tuple[Matrix, list[Any]]:
    """Two half steps as one 2s-stage tableau: [[A/2, 0], [1bᵀ/2, A/2]], (b/2, b/2)."""
    s = len(b)
    half = sympy.Rational(1, 2)
    top = [[half * sympy.sympify(x) for x in row] + [0] * s for row in A]
    bottom = [
        [half * sympy.sympify(w) for w in b] + [half * sympy.sympify(x) for x in row] for row in A
    ]
    weights = [half * sympy.sympify(w) for w in b]
    return top + bottom, weights + weights


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_composition_of_known_methods_keeps_the_order(name: str) -> None:
    A, b, p = KNOWN[name]
    A2, b2 = composed(A, b)
    report = report_of(A2, b2)
    assert report.order == p
    # the stability function of two half steps is R(z/2)²
    R = report_of(A, b).stability.expression
    assert sympy.simplify(report.stability.expression - R.subs(z, z / 2) ** 2) == 0


@FEW
@given(c2=nonzero, c3=nonzero)
def test_composition_of_random_third_order_methods(c2: Fraction, c3: Fraction) -> None:
    built = kutta_family(c2, c3)
    assume(built is not None)
    assert built is not None
    assert order_of(*composed(*built)) == 3


@SETTINGS
@given(c2=nonzero)
def test_composition_of_random_second_order_methods(c2: Fraction) -> None:
    assert order_of(*composed(*two_stage(c2))) == 2
