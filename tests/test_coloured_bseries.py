"""Coloured (additive) B-series of splittings, one colour per operator.

The modified equation is checked against the Baker-Campbell-Hausdorff series (typed from
Hairer, Lubich and Wanner, Geometric Numerical Integration, III.4-5, and Yoshida, Phys. Lett.
A 150, 1990) and against mpmath's matrix logarithm of the composed flows of linear fields; the
coloured symplecticity conditions (Araújo, Murua and Sanz-Serna, SIAM J. Numer. Anal. 34, 1997)
against known cases and a float64 torch Jacobian of the step on Hamiltonian operator fields.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath
import pytest
import sympy
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.bseries import (
    BSeries,
    evaluate,
    evaluate_numpy,
    exact_flow,
    series_order,
    splitting_series,
    substitute,
)
from butcherflow.analysis.bseries.splitting_geometry import (
    coloured_tree_count,
    splitting_symplectic,
)
from butcherflow.errors import AnalysisError

EXACT = {"A": "exact", "B": "exact"}
CATALOG: Any = bf.catalog  # splittings by name
HALF = sympy.Rational(1, 2)


def by_bracket(series: BSeries, order: int) -> dict[str, sympy.Expr]:
    return {series.family.bracket(t): series[t] for t in series.trees(order)}


def test_lie_trotter_modified_field_is_f_plus_half_h_lie_bracket() -> None:
    """Lie-Trotter (A for h, then B for h) with exact flows follows f_A + f_B +
    (h/2)(f_B′f_A − f_A′f_B) + O(h²): the (h/2)[A, B] of the BCH formula in the Lie-derivative
    convention (for linear fields f_X = Xy: log(e^{hB}e^{hA})/h = A + B + (h/2)(BA − AB) + …)."""
    m = bf.modified_equation(splitting_series(CATALOG["lie-trotter"], 2, EXACT), 2)
    expected = {"[τ_A]_A": 0, "[τ_A]_B": HALF, "[τ_B]_A": -HALF, "[τ_B]_B": 0}
    assert by_bracket(m, 2) == expected


def test_strang_modified_field_is_yoshidas_bch_term() -> None:
    """Strang A(h/2) B(h) A(h/2) with exact flows on linear fields f_X = Xy for generic 2×2
    matrices: the field is (A + B + h²(1/12 [B,[B,A]] − 1/24 [A,[A,B]]))y + O(h⁴), no h¹
    term (the symmetric BCH formula of Yoshida 1990, section 2; palindromic, so the same in
    either composition convention)."""
    a = sympy.Matrix(2, 2, sympy.symbols("a0:4"))
    b = sympy.Matrix(2, 2, sympy.symbols("b0:4"))
    y = sympy.symbols("y0:2")
    h = sympy.Symbol("h")
    Y = sympy.Matrix(y)
    m = bf.modified_equation(splitting_series(CATALOG["strang"], 3, EXACT), 3)
    field = evaluate(m, {"A": list(a * Y), "B": list(b * Y)}, y, h)

    def comm(x: sympy.Matrix, z: sympy.Matrix) -> sympy.Matrix:
        return x * z - z * x

    bch = a + b + h**2 * (comm(b, comm(b, a)) / 12 - comm(a, comm(a, b)) / 24)
    assert [sympy.expand(f - e) for f, e in zip(field, bch * Y, strict=True)] == [0, 0]


A = [[0.3, -1.0, 0.2], [0.5, 0.1, -0.4], [0.0, 0.7, -0.2]]
B = [[-0.1, 0.4, 0.0], [0.2, 0.3, 0.6], [-0.5, 0.0, 0.1]]


def logm_field(steps: list[tuple[str, float]], h: float) -> mpmath.matrix:
    """log(Π exp(c h X)) / h for the linear fields y' = Ay, y' = By, the flows applied in the
    order of `steps` (the later one multiplies on the left), by mpmath (30 digits)."""
    with mpmath.workdps(30):
        product = mpmath.eye(3)
        for op, c in steps:
            product = mpmath.expm(mpmath.matrix(A if op == "A" else B) * (c * h)) * product
        return mpmath.logm(product) / h


@pytest.mark.parametrize(
    ("name", "order", "power"),
    [("lie-trotter", 4, 4), ("strang", 5, 6)],  # Strang's h⁵ term vanishes: it is symmetric
)
def test_modified_field_of_linear_splittings_matches_the_matrix_logarithm(
    name: str, order: int, power: int
) -> None:
    """The evaluated modified field (trees ≤ `order`) against log of the product of matrix
    exponentials / h: the difference falls like h^power when h halves."""
    y = sympy.symbols("y0:3")
    h = sympy.Symbol("h")
    Y = sympy.Matrix(y)
    exact = {op: sympy.Matrix(M).applyfunc(sympy.nsimplify) for op, M in (("A", A), ("B", B))}
    fields = {op: list(M * Y) for op, M in exact.items()}
    m = bf.modified_equation(splitting_series(CATALOG[name], order, EXACT), order)
    field = evaluate_numpy(m, fields, y, h)
    steps = [(op, float(c)) for op, c in bf.catalog[name].steps]  # type: ignore[attr-defined]
    errors = []
    for step in (0.1, 0.05):
        reference = logm_field(steps, step)
        columns = [field([float(i == j) for i in range(3)], step) for j in range(3)]
        errors.append(
            max(abs(columns[j][i] - float(reference[i, j])) for i in range(3) for j in range(3))
        )
    assert round(math.log2(errors[0] / errors[1])) == power


COEFFICIENT = st.fractions(min_value=-2, max_value=2, max_denominator=4).filter(lambda x: x != 0)
STEPS = st.lists(st.tuples(st.sampled_from("AB"), COEFFICIENT), min_size=2, max_size=4)


def random_splitting(steps: list[tuple[str, Fraction]], sub: str) -> BSeries:
    assume({op for op, _ in steps} == {"A", "B"})
    split = bf.Splitting([(op, str(c)) for op, c in steps], sub, operators=["A", "B"])
    return splitting_series(split, 4)


@settings(max_examples=15, deadline=None)
@given(STEPS, st.sampled_from(["exact", "euler", "heun"]))
def test_modified_field_substituted_into_the_exact_flow_gives_the_splitting(
    steps: list[tuple[str, Fraction]], sub: str
) -> None:
    """The substitution law on coloured trees: the exact flow of the modified field is the
    splitting (b ⋆ e = a), for random compositions and sub-steps."""
    a = random_splitting(steps, sub)
    assert substitute(bf.modified_equation(a, 4), exact_flow(4)) == a


@settings(max_examples=15, deadline=None)
@given(STEPS)
def test_modified_field_of_an_order_p_splitting_is_f_to_order_p(
    steps: list[tuple[str, Fraction]],
) -> None:
    """A palindrome with coefficient sums 1 has order ≥ 2; its modified field has no term
    between h¹ and h^(p−1)."""
    palindrome = steps + steps[::-1]
    sums = {op: sum((c for o, c in palindrome if o == op), Fraction(0)) for op in "AB"}
    assume(all(s != 0 for s in sums.values()))
    scaled = [(op, c / sums[op]) for op, c in palindrome]
    a = random_splitting(scaled, "exact")
    p, _ = series_order(a)
    m = bf.modified_equation(a, 4)
    corrections = [m.family.bracket(t) for t in m if 2 <= t.order <= p and m[t] != 0]
    assert (p >= 2, corrections) == (True, [])


def test_evaluate_needs_one_field_per_operator() -> None:
    m = bf.modified_equation(splitting_series(CATALOG["strang"], 2, EXACT), 2)
    y, h = sympy.symbols("y0:1"), sympy.Symbol("h")
    messages = []
    for f in ([y[0]], {"A": [y[0]], "C": [y[0]]}):
        with pytest.raises(AnalysisError) as info:
            evaluate(m, f, y, h)  # type: ignore[arg-type]
        messages.append(str(info.value))
    assert ["operator" in s and "\n" not in s for s in messages] == [True, True]


def test_coloured_tree_counts_are_the_generated_ones() -> None:
    """The count behind the examined order agrees with the trees the family generates."""
    families = [
        bf.bseries("strang-heun", 4).family,
        splitting_series(CATALOG["strang-3"], 3).family,
    ]
    counts = [(len(f.colours), n) for f, n in zip(families, (4, 3), strict=True)]
    generated = [
        sum(len(f.of_order(k)) for k in range(1, n + 1))
        for f, n in zip(families, (4, 3), strict=True)
    ]
    assert [coloured_tree_count(k, n) for k, n in counts] == generated


# --- symplecticity ----------------------------------------------------------------------------


def test_exact_flows_and_symplectic_substeps_are_symplectic() -> None:
    strang = bf.catalog["strang"]
    midpoint = {"A": "implicit-midpoint", "B": "implicit-midpoint"}
    verdicts = [
        splitting_symplectic(bf.catalog["strang-3"])[0],  # type: ignore[arg-type]
        splitting_symplectic(strang, EXACT)[0],  # type: ignore[arg-type]
        splitting_symplectic(strang, midpoint)[0],  # type: ignore[arg-type]
    ]
    assert verdicts == [True, True, True]


@pytest.mark.parametrize(
    ("name", "order", "failing"),
    [
        # Euler: 2a([τ]) − a(τ)² = 2·0 − 1 at the pair τ_A, τ_A
        ("lie-trotter", 1, "= -1 for u = τ_A, v = τ_A"),
        ("strang", 1, "for u = τ_A, v = τ_A"),
        ("strang-heun", 3, "at 4"),
        ("strang-rk4", 4, "at 5"),
    ],
)
def test_explicit_substeps_fail_a_coloured_condition(name: str, order: int, failing: str) -> None:
    verdict, why = splitting_symplectic(bf.catalog[name])  # type: ignore[arg-type]
    assert (verdict, f"symplectic to order {order} only" in why, failing in why) == (
        False,
        True,
        True,
    )


def test_a_numeric_splitting_never_gains_symplecticity_its_digits_cannot_decide() -> None:
    """Strang with RK4 sub-steps fails at order 5 by 1/768; coefficients known to ±0.01 leave
    that condition undetermined, never met."""
    coarse = bf.Splitting([("A", "0.5"), ("B", 1), ("A", "0.5")], "rk4", precision=0.01)
    verdict, why = splitting_symplectic(coarse)
    assert (verdict, "undetermined at 5" in why) == (None, True)


def test_the_splitting_report_row_respects_its_time_budget() -> None:
    rows = dict(bf.check("strang-rk4", time_budget=0.0).geometry_rows())  # type: ignore[attr-defined]
    assert rows["symplectic"].startswith("undetermined (not decided within the time budget")


# Two Hamiltonian operator fields on (q₁, q₂, p₁, p₂), neither separable.
def field_a(y: torch.Tensor) -> torch.Tensor:
    q1, q2, p1, p2 = y  # H_A = |p|²/2 + q₁q₂p₁p₂/3
    return torch.stack(
        [p1 + q1 * q2 * p2 / 3, p2 + q1 * q2 * p1 / 3, -q2 * p1 * p2 / 3, -q1 * p1 * p2 / 3]
    )


def field_b(y: torch.Tensor) -> torch.Tensor:
    q1, q2, p1, p2 = y  # H_B = (1 − cos q₁) + q₂²/2 + q₁p₂²/4
    return torch.stack([0 * p1, q1 * p2 / 2, -torch.sin(q1) - p2**2 / 4, -q2])


def rk_step(
    f: Callable[[torch.Tensor], torch.Tensor], y: torch.Tensor, h: float, sub: Any
) -> torch.Tensor:
    A = [[float(x) for x in row] for row in sub.A]
    b = [float(x) for x in sub.b]
    k: list[torch.Tensor] = []
    for i in range(len(b)):
        k.append(f(y + h * sum((A[i][j] * k[j] for j in range(i)), torch.zeros_like(y))))
    return y + h * sum((b[i] * k[i] for i in range(len(b))), torch.zeros_like(y))


def symplecticity_defect(name: str, h: float) -> float:
    """max |Ψ′ᵀJΨ′ − J| of one step of the catalog splitting on (field_a, field_b)."""
    split: Any = bf.catalog[name]

    def step(y: torch.Tensor) -> torch.Tensor:
        for op, c in split.steps:
            y = rk_step(field_a if op == "A" else field_b, y, float(c) * h, split.substep)
        return y

    y0 = torch.tensor([0.3, -0.2, 0.7, 0.4], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(step, y0)
    eye, zero = torch.eye(2, dtype=torch.float64), torch.zeros(2, 2, dtype=torch.float64)
    J = torch.cat([torch.cat([zero, eye], 1), torch.cat([-eye, zero], 1)], 0)
    return float((jac.T @ J @ jac - J).abs().max())


@pytest.mark.parametrize(
    ("name", "order"), [("lie-trotter", 1), ("strang-heun", 3), ("strang-rk4", 4)]
)
def test_symplecticity_order_matches_the_step_jacobian(name: str, order: int) -> None:
    """Symplectic to order q: Ψ′ᵀJΨ′ − J = O(h^(q+1)) on Hamiltonian operator fields, which the
    Jacobian of the step (torch autograd, float64) shows as a ratio 2^(q+1) when h halves."""
    _, why = splitting_symplectic(bf.catalog[name])  # type: ignore[arg-type]
    ratio = symplecticity_defect(name, 0.04) / symplecticity_defect(name, 0.02)
    assert (f"symplectic to order {order} only" in why, round(math.log2(ratio))) == (
        True,
        order + 1,
    )
