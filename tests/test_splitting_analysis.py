"""Order of splittings: exact sub-flows in the free algebra, declared sub-steps by coloured trees.

Known results (Lie-Trotter 1, Strang 2, Yoshida and Suzuki 4, the Macaron layers), the ordering
convention, numeric and parametrised declarations, the report, and three hypothesis properties:
palindromic compositions have even order, the reversed (adjoint) composition has the same order,
and the free-algebra proof agrees with the independent coloured-tree proof of the same splitting
with RK4 (and Euler) sub-steps.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
import sympy
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.exact.weights import smallest_domain
from butcherflow.analysis.splitting.report import (
    SplittingReport,
    additive_tableau,
    analyse_splitting,
)

SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
Steps = list[tuple[str, Any]]

HEUN = bf.ButcherTableau([[0, 0], [1, 0]], ["1/2", "1/2"], name="heun")
RK4 = bf.ButcherTableau(
    [[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]],
    ["1/6", "1/3", "1/3", "1/6"],
    name="rk4",
)
HALF = "1/2"
STRANG: Steps = [("A", HALF), ("B", 1), ("A", HALF)]


def triple_jump(base: Steps, root: int) -> Steps:
    """Yoshida's triple jump x₁, x₀, x₁ of a symmetric base method, x₁ = 1/(2 − 2^(1/root))."""
    r = sympy.root(2, root)
    x1, x0 = 1 / (2 - r), -r / (2 - r)
    return [(op, x * sympy.sympify(c)) for x in (x1, x0, x1) for op, c in base]


def suzuki(p: sympy.Expr) -> Steps:
    """Suzuki's fractal: five Strang steps of weights p, p, 1 − 4p, p, p."""
    weights = [p, p, 1 - 4 * p, p, p]
    return [(op, w * sympy.sympify(c)) for w in weights for op, c in STRANG]


def analyse(steps: Steps, substep: Any = "exact", **kwargs: Any) -> SplittingReport:
    return analyse_splitting(bf.Splitting(steps, substep=substep), **kwargs)


# -- known orders --------------------------------------------------------------------------------


def test_lie_trotter_is_order_one() -> None:
    report = analyse([("A", 1), ("B", 1)], substep="euler")
    assert (report.order, report.substep_order) == (1, 1)
    assert report.coefficient_sums == {"A": 1, "B": 1}


def test_word_convention_first_step_leftmost() -> None:
    # exp(hA) exp(hB): the word AB has coefficient 1 and BA none, so AB − 1/2 and BA − 1/2.
    report = analyse([("A", 1), ("B", 1)])
    assert report.failing_words == [("AB", sympy.Rational(1, 2)), ("BA", sympy.Rational(-1, 2))]


@pytest.mark.parametrize(
    ("substep", "effective"), [("exact", 2), ("euler", 1), (HEUN, 2), (RK4, 2)]
)
def test_strang(substep: Any, effective: int) -> None:
    report = analyse(STRANG, substep=substep)
    assert report.order == 2
    assert report.substep_order == effective
    assert {w for w, _ in report.failing_words} == {"AAB", "ABA", "ABB", "BAA", "BAB", "BBA"}
    if substep == "euler":  # what a Macaron layer computes
        assert report.failing_trees and all(t.startswith("[") for t, _ in report.failing_trees)
        assert any("lower the order from 2" in note for note in report.notes)


def test_yoshida_is_order_four_with_cube_roots() -> None:
    report = analyse(triple_jump(STRANG, 3))
    assert (report.order, report.substep_order) == (4, 4)
    assert "2**(1/3)" in report.domain
    assert report.coefficient_sums == {"A": 1, "B": 1}
    assert report.failing_words and not report.order_is_lower_bound


def test_yoshida_with_rk4_substeps_is_substep_order_four() -> None:
    report = analyse(triple_jump(STRANG, 3), substep=RK4)
    assert (report.order, report.substep_order) == (4, 4)
    assert report.failing_trees


def test_suzuki_fractal_is_order_four() -> None:
    report = analyse(suzuki(1 / (4 - sympy.root(4, 3))))
    assert (report.order, report.substep_order) == (4, 4)


def test_fifth_roots_triple_jump_of_yoshida_is_order_six() -> None:
    report = analyse(triple_jump(triple_jump(STRANG, 3), 5))
    assert report.order == 6
    assert report.domain == "QQ<2**(1/15)>"  # 2^(1/3) and 2^(1/5) generate the same field


def test_three_operator_strang_and_macaron_decoder() -> None:
    three = [("A", HALF), ("B", HALF), ("C", 1), ("B", HALF), ("A", HALF)]
    report = analyse(three, substep="euler")
    assert (report.order, report.substep_order) == (2, 1)
    decoder = analyse([("A", HALF), ("B", 1), ("C", 1), ("A", HALF)], substep="euler")
    assert (decoder.order, decoder.substep_order) == (1, 1)
    assert all(len(w) == 2 for w, _ in decoder.failing_words)


def test_inconsistent_sums_are_order_zero() -> None:
    report = analyse([("A", HALF), ("B", 1), ("A", 1)], substep="euler")
    assert (report.order, report.substep_order) == (0, 0)
    assert report.coefficient_sums == {"A": sympy.Rational(3, 2), "B": 1}
    assert report.failing_words == [("A", sympy.Rational(1, 2))]
    assert any("ΣA = 3/2" in note for note in report.notes)


def test_claims_above_what_the_digits_establish_are_not_proved() -> None:
    """A triple jump typed to 4 digits establishes order 2 and leaves order 3 open; Strang with
    Ralston sub-steps typed to 4 digits establishes sub-step order 1 and leaves 2 open. Claims
    of 4 and 2 were taken as agreeing with the lower bounds (claim_holds); they are unproved,
    as for a Runge-Kutta tableau. A search the caller caps below the claim still refutes
    nothing."""
    jump = [
        ("A", "0.6756"), ("B", "1.3512"), ("A", "-0.1756"), ("B", "-1.7024"),
        ("A", "-0.1756"), ("B", "1.3512"), ("A", "0.6756"),
    ]  # fmt: skip
    report = analyse_splitting(bf.Splitting(jump, "exact", order=4))
    assert report.order == 2 and report.undetermined_words
    assert report.mismatches == {"order": (4, 2)}
    assert "(established 2; " in report.mismatch_message()
    assert analyse_splitting(bf.Splitting(jump, "exact", order=4), max_order=2).claim_holds
    ralston = bf.ButcherTableau([[0, 0], ["0.6667", 0]], ["0.25", "0.75"], name="ralston-4")
    strang = bf.Splitting(STRANG, ralston, order=2, substep_order=2)
    report = analyse_splitting(strang)
    assert report.substep_order == 1 and report.undetermined_trees
    assert report.mismatches == {"substep_order": (2, 1)}
    assert "substep_order is claimed 2 but proved 1 (established 1; " in report.mismatch_message()


# Yoshida (1990), Table 2, solution D: w1..w7 of the 15-step symmetric composition of Strang
# steps, order 8 (w0 = 1 - 2(w1 + ... + w7)).
YOSHIDA_8D = [
    "0.102799849391985", "-1.96061023297549", "1.93813913762276", "-0.158240635368243",
    "-1.44485223686048", "0.253693336566229", "0.914844246229740",
]  # fmt: skip


def strang_composition(weights: list[sympy.Expr]) -> Steps:
    """Strang steps of the given weights, adjacent half steps of A merged."""
    steps: Steps = []
    for i, w in enumerate(weights):
        steps += [("A", (w + (weights[i - 1] if i else 0)) / 2), ("B", w)]
    return [*steps, ("A", weights[-1] / 2)]


def test_a_published_composition_in_doubles_is_judged_at_the_size_of_its_terms() -> None:
    """Yoshida's eighth-order composition (solution D) typed as doubles read 'order 4+' with 27
    words of order 5 undetermined: their residuals are ~5e-16, but the word coefficients are sums
    of terms ~1e4 times 1/5!, and the doubles' rounding (2^-44 of each term) moved them by 1.3e-10,
    above 1.5e-8 * 1/5!. A word is judged at the size of its terms (as a multistep C_q is): the
    doubles prove order 8 (order 9 fails); typed to four digits, order 5 stays open."""
    w = [sympy.Rational(x) for x in YOSHIDA_8D]
    weights = [*w[::-1], 1 - 2 * sum(w), *w]
    steps = strang_composition(weights)
    doubles = analyse([(op, float(c)) for op, c in steps], max_order=9)
    assert (doubles.order, doubles.order_upper) == (8, 8) and not doubles.undetermined_words
    assert "size of its terms" in dict(doubles.rows())["tolerance"]
    four = analyse([(op, f"{float(c):.4g}") for op, c in steps], max_order=9)
    assert four.order < 8 and four.undetermined_words and four.order_upper is None


def test_coefficient_sums_that_are_not_1_never_print_as_1() -> None:
    """Yoshida's triple jump typed as the decimals floats print (repr) has ΣB = 1 - 3e-16, which
    fails order 1 at those digits; the row read 'coefficient sums  A: 1, B: 1' beside it."""
    r = sympy.root(2, 3)
    x1, x0 = 1 / (2 - r), -r / (2 - r)
    weights = [x1, x0, x1]
    steps = [(op, repr(float(c))) for op, c in strang_composition(weights)]
    report = analyse(steps)
    assert report.order == 0 and report.failing_words
    sums = dict(report.rows())["coefficient sums"]
    assert "A: 1," not in sums and not sums.endswith("B: 1")
    assert "B: 0.9999999999999997" in sums
    assert dict(analyse([(op, float(sympy.Rational(c))) for op, c in STRANG]).rows())[
        "coefficient sums"
    ] == ("A: 1, B: 1")


def test_long_operator_names_are_joined_in_words() -> None:
    report = analyse([("ffn", HALF), ("san", 1), ("ffn", HALF)])
    assert ("ffn·san·ffn", sympy.Rational(1, 12)) in report.failing_words


# -- claims, caps, numeric and parametrised declarations ------------------------------------------


def test_claims_are_checked_and_a_low_claim_does_not_hide_the_order() -> None:
    yoshida = triple_jump(STRANG, 3)
    report = analyse_splitting(bf.Splitting(yoshida, "exact", order=2))
    assert report.order == 4 and not report.claim_holds
    good = analyse_splitting(bf.Splitting(STRANG, "euler", order=2, substep_order=1))
    assert good.claim_holds and good.claims["substep_order"] == (1, 1)
    bad = analyse_splitting(bf.Splitting(STRANG, "euler", order=2, substep_order=2))
    assert bad.mismatches == {"substep_order": (2, 1)}
    assert "substep_order" not in analyse(STRANG).claims


def test_max_order_caps_the_search() -> None:
    report = analyse(STRANG, substep=HEUN, max_order=1)
    assert report.order == 1 and report.order_is_lower_bound
    assert report.substep_order == 1 and report.substep_order_is_lower_bound
    assert report.failing_words == [] and "1+" in str(report)
    with pytest.raises(bf.AnalysisError):
        analyse(STRANG, max_order=0)


def test_numeric_yoshida_as_floats_is_fourth_order() -> None:
    # Yoshida's coefficients as doubles computed in double precision (a few ulps off).
    x1, x0 = 1 / (2 - 2 ** (1 / 3)), -(2 ** (1 / 3)) / (2 - 2 ** (1 / 3))
    half1, mid = x1 / 2, (x0 + x1) / 2
    steps = [("A", half1), ("B", x1), ("A", mid), ("B", x0), ("A", mid), ("B", x1), ("A", half1)]
    for substep in ("exact", RK4):
        report = analyse(steps, substep=substep)
        assert (report.order, report.substep_order) == (4, 4)
        assert not report.exact and report.tolerance is not None and report.tolerance < 1e-10
        assert any("numeric declaration" in note for note in report.notes)


def test_float_reprs_as_decimal_strings_promise_too_much() -> None:
    # The shortest reprs of those doubles, given as decimal strings, promise half a unit in the
    # 16th or 17th decimal; their sums miss 1 by 1.4e-16 and 3e-16, more than that promise.
    x1, x0 = "1.3512071919596578", "-1.7024143839193153"
    half1, mid = "0.6756035959798289", "-0.17560359597982883"
    steps = [("A", half1), ("B", x1), ("A", mid), ("B", x0), ("A", mid), ("B", x1), ("A", half1)]
    report = analyse(steps)
    assert report.order == 0 and report.order_upper == 0
    assert any("give them as floats" in note for note in report.notes)


def test_numeric_substep_is_noted() -> None:
    heun = bf.ButcherTableau([[0, 0], [1, 0]], ["0.5", "0.5"], name="heun-decimal")
    report = analyse(STRANG, substep=heun)
    assert (report.order, report.substep_order) == (2, 2) and not report.exact
    assert any("worst ±0.05" in note for note in report.notes)


def test_parametrised_splitting_conditions() -> None:
    g = sympy.Symbol("g", real=True)
    report = analyse([("A", "g"), ("B", 1), ("A", "1 - g")])
    assert report.order == 1
    conditions = report.conditions(2)
    assert conditions and all(c.free_symbols == {g} for c in conditions)
    assert sympy.solve(conditions, g, dict=True) == [{g: sympy.Rational(1, 2)}]
    assert any("g = 1/2" in note for note in report.notes)
    assert analyse(STRANG).conditions(2) == []


# -- the additive tableau and the report ----------------------------------------------------------


def test_additive_tableau_of_strang_with_heun() -> None:
    A, b = additive_tableau(bf.Splitting(STRANG).steps, HEUN.A, HEUN.b)
    h = sympy.Rational(1, 2)
    # Stages: A-block (rows 0-1), B-block (2-3), A-block (4-5).
    assert A["A"][1][0] == h and A["B"][3][2] == 1 and A["A"][5][4] == h
    assert A["A"][3][:2] == [h / 2, h / 2] and A["B"][5][2:4] == [h, h]
    assert A["B"][1] == [0] * 6 and A["A"][2][2:] == [0] * 4
    assert b["A"] == [h / 2, h / 2, 0, 0, h / 2, h / 2] and b["B"] == [0, 0, h, h, 0, 0]


def test_smallest_domain_converts_radicals_exactly() -> None:
    r = sympy.root(2, 3)
    domain, (x, y) = smallest_domain([1 / (2 - r), r**2 / 3])
    assert "2**(1/3)" in str(domain)
    assert sympy.simplify(domain.to_sympy(x * (2 - domain.from_sympy(r))) - 1) == 0
    assert sympy.simplify(domain.to_sympy(y) - r**2 / 3) == 0
    assert str(smallest_domain([1, 2])[0]) == "QQ"


def test_report_renders_as_text_markdown_and_json() -> None:
    method = bf.Splitting(STRANG, substep="euler", name="strang", order=2, substep_order=1)
    report = analyse_splitting(method)
    text = str(report)
    assert "order with the sub-step (euler)" in text and "failing trees at order 2" in text
    assert "| order (exact sub-flows) | 2 |" in report.to_markdown()
    data = json.loads(report.to_json())
    assert data["claims"]["substep_order"] == {"claimed": 1, "proved": 1}
    assert data["order"] == 2 and data["substep_order"] == 1 and data["substep"] == "euler"
    assert {"word": "ABA", "residual": "1/12"} in data["failing_words"]
    assert dict(report.rows())["coefficient sums"] == "A: 1, B: 1"


# -- properties -----------------------------------------------------------------------------------

coefficients = st.fractions(min_value=-2, max_value=2, max_denominator=6).filter(lambda x: x != 0)
raw_steps = st.lists(st.tuples(st.sampled_from("AB"), coefficients), min_size=1, max_size=3)


def normalised(steps: Steps) -> Steps:
    """Scale each operator's coefficients so that they sum to 1 (assumes non-zero sums)."""
    sums: dict[str, Fraction] = {}
    for op, c in steps:
        sums[op] = sums.get(op, Fraction(0)) + c
    assume(all(s != 0 for s in sums.values()))
    return [(op, c / sums[op]) for op, c in steps]


@st.composite
def palindromes(draw: st.DrawFn) -> Steps:
    half = draw(raw_steps)
    middle = draw(st.lists(st.tuples(st.sampled_from("AB"), coefficients), max_size=1))
    steps = half + middle + half[::-1]
    assume({op for op, _ in steps} == {"A", "B"})
    return normalised(steps)


@st.composite
def splittings(draw: st.DrawFn) -> Steps:
    steps = draw(raw_steps) + draw(raw_steps)
    assume({op for op, _ in steps} == {"A", "B"})
    kind = draw(st.sampled_from(["raw", "normalised", "palindrome"]))
    if kind == "raw":
        return steps
    return normalised(steps if kind == "normalised" else steps + steps[::-1])


@SETTINGS
@given(palindromes())
def test_palindromic_compositions_have_even_order(steps: Steps) -> None:
    report = analyse(steps, max_order=5)
    assert report.order >= 2
    assert report.order % 2 == 0 or report.order_is_lower_bound


@SETTINGS
@given(splittings())
def test_reversed_composition_has_the_same_order(steps: Steps) -> None:
    forward, backward = analyse(steps, max_order=4), analyse(steps[::-1], max_order=4)
    assert forward.order == backward.order
    # Reversal is an anti-automorphism fixing exp(hΣX): residuals move to the reversed words.
    assert dict(backward.failing_words) == {w[::-1]: r for w, r in forward.failing_words}


@SETTINGS
@given(splittings())
def test_free_algebra_order_agrees_with_coloured_trees(steps: Steps) -> None:
    exact = analyse(steps, max_order=4).order
    # RK4 sub-flows agree with the exact ones up to order 4: the trees must find the same order.
    assert analyse(steps, substep=RK4, max_order=4).substep_order == exact
    # A composition of Euler steps is never second order in its own colour (Σc² ≠ 0).
    assert analyse(steps, substep="euler", max_order=4).substep_order == min(exact, 1)
