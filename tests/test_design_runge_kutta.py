"""bf.design's Runge-Kutta tableaux: SSP, low error, realisations of a stability polynomial.

Every designed method is re-proved by bf.check and its objective recomputed from the
declaration (the exact SSP coefficient by the analysis stage); a perturbed design loses its
order (hypothesis). Published values: RK-Opt's tests (SSP(3,2): C = 2, SSP(4,3): C = 2 with
b = (1/6, 1/6, 1/6, 1/2), SDIRK SSP(2,2): C = 4, the least-error RK(2,2) with error norm 1/6 and
b = (1/4, 3/4)), the optimal second-order methods (C = s − 1) and SSP(3,3) (C = 1); SSP(5,4)
against the Spiteri-Ruuth method of the catalog; SSP(10,4) with C = 6 (Ketcheson 2008, slow).
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.runge_kutta.monotonicity import ssp_coefficient
from butcherflow.design import low_error_tableau, realise, ssp_tableau, stability_polynomial


@pytest.fixture(scope="module")
def designs() -> dict[str, bf.design.DesignedMethod]:
    return {
        "ssp-3-2": ssp_tableau(3, 2),
        "ssp-4-3": ssp_tableau(4, 3),
        "ssp-3-3": ssp_tableau(3, 3),
        "ssp-5-2": ssp_tableau(5, 2),
        "ssp-dirk-2-2": ssp_tableau(2, 2, implicit=True),
        "low-error-2-2": low_error_tableau(2, 2),
    }


@pytest.mark.parametrize(
    "key,coefficient",
    [("ssp-3-2", 2), ("ssp-4-3", 2), ("ssp-3-3", 1), ("ssp-5-2", 4), ("ssp-dirk-2-2", 4)],
)
def test_ssp_designs_meet_the_published_coefficient_exactly(designs, key, coefficient):
    found = designs[key]
    assert found.exact
    assert ssp_coefficient(found.method).exact == coefficient  # the analysis stage, again


def test_ssp_4_3_has_rk_opts_weights(designs):
    assert [str(x) for x in designs["ssp-4-3"].method.b] == ["1/6", "1/6", "1/6", "1/2"]


def test_the_least_error_second_order_method_is_ralstons(designs):
    found = designs["low-error-2-2"]
    assert found.proved == "1/6"
    assert [str(x) for x in found.method.b] == ["1/4", "3/4"]


def test_every_designed_method_is_reproved_by_check(designs):
    for found in designs.values():
        assert bf.check(found.method).order == found.order


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_perturbed_design_loses_its_order(designs, data):
    found = designs[data.draw(st.sampled_from(sorted(designs)))]
    m = found.method
    c = [sum(row) for row in m.A]
    pairs = [(j, k) for j in range(len(c)) for k in range(len(c)) if c[j] != c[k]]
    j, k = data.draw(st.sampled_from(pairs))
    delta = sympy.Rational(1, data.draw(st.integers(10, 10**9)))
    b = list(m.b)
    b[j], b[k] = b[j] + delta, b[k] - delta  # Σ b stays 1; b·c moves by δ(c_j − c_k)
    perturbed = bf.ButcherTableau(A=[list(r) for r in m.A], b=b, name="perturbed")
    assert bf.check(perturbed).order < found.order


def test_ssp_5_4_meets_the_spiteri_ruuth_coefficient():
    found = ssp_tableau(5, 4)
    assert found.exact and bf.check(found.method).order == 4
    assert found.proved_value == pytest.approx(1.508180049, abs=1e-9)  # Spiteri & Ruuth (2002)
    # the catalog's 30 printed digits of the same method hold a radius of only about 1.5065:
    # the SSP coefficient moves with digits far below the order conditions' resolution
    assert ssp_coefficient(bf.catalog["ssprk-5-4"]).value < found.proved_value - 1e-3


@pytest.mark.slow
def test_ssp_10_4_finds_ketchesons_coefficient_six():
    found = ssp_tableau(10, 4)
    assert found.exact and ssp_coefficient(found.method).exact == 6


def test_a_designed_polynomial_is_realised_with_its_nonlinear_order():
    polynomial = stability_polynomial(4, 2, "real:-1,0")
    found = realise(polynomial, 2)
    assert bf.check(found.method).order == 2
    A = sympy.Matrix([list(r) for r in found.method.A])
    b = sympy.Matrix([list(found.method.b)])
    e = sympy.ones(4, 1)
    realised = [1] + [(b * A ** (k - 1) * e)[0] for k in range(1, 5)]
    assert [Fraction(str(x)) for x in realised] == list(polynomial.coefficients)
    assert "design polynomial --stages 4 --order 2" in found.command()


@pytest.mark.parametrize(
    "call,fragment",
    [
        (lambda: ssp_tableau(6, 5), "order 4 at most"),
        (lambda: ssp_tableau(4, 4), "no four-stage fourth-order"),
        (lambda: ssp_tableau(3, 5, implicit=True), "has order 4 at most"),
        (lambda: ssp_tableau(4, 5), "needs at least 6 stages"),
        (
            lambda: low_error_tableau(3, 2),
            "principal error at order 3 is 0: the smallest error norm of order-2 methods is 0",
        ),
        (lambda: low_error_tableau(12, 9), "above order 8"),
        (lambda: realise(["1", "1", "1/3"], 2), "linear order 1"),
        (lambda: realise(["1", "1", "x"], 1), "not an exact rational"),
        (lambda: realise(["1", "1", "1e400"], 1), "not an exact rational a float can hold"),
        (lambda: realise(["2", "1"], 1), "starts with a_0 = 1"),
        (lambda: ssp_tableau(3, 2, starts=0), "starts must be an integer >= 1"),
    ],
)
def test_bad_input_is_one_clear_line(call, fragment):
    with pytest.raises(bf.DesignError) as info:
        call()
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_a_design_with_no_feasible_start_says_so():
    with pytest.raises(bf.DesignError, match="from none of 1 starts"):
        ssp_tableau(5, 4, starts=1, seed=3)  # RK-Opt's smart start alone is infeasible here


def test_the_error_norm_is_rk_opts_errcoeff():
    found = low_error_tableau(2, 2)
    # errcoeff.m at p = 2: tau = (b'Ac - 1/6, (b'c² - 1/3)/2); Ralston's c₂ = 2/3
    tau = [
        sympy.Rational(0) - sympy.Rational(1, 6),
        (sympy.Rational(3, 4) * sympy.Rational(4, 9) - sympy.Rational(1, 3)) / 2,
    ]
    assert found.proved_value == pytest.approx(float(sympy.sqrt(sum(t**2 for t in tau))))
    assert math.isclose(found.value, 1 / 6, rel_tol=1e-9)
