"""Order, error constant, root condition and A(α) of linear multistep methods.

Adams and BDF coefficients are generated here from their defining formulas (integrals and
derivatives of Lagrange interpolants), not read from the catalog, so the tests are not circular.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.exact.root_condition import ZETA, root_condition
from butcherflow.analysis.multistep.report import MultistepReport, analyse_multistep
from butcherflow.errors import AnalysisError, OrderClaimError

t = sympy.Symbol("t")


def lagrange(nodes: list[int], j: int) -> sympy.Expr:
    return sympy.prod([(t - m) / sympy.Integer(nodes[j] - m) for m in nodes if m != nodes[j]])


def adams_bashforth(k: int) -> bf.LinearMultistep:
    """y_{n+k} − y_{n+k−1} = h ∫_{k−1}^{k} p(t) dt, p interpolating f at t = 0..k−1."""
    nodes = list(range(k))
    beta = [sympy.integrate(lagrange(nodes, j), (t, k - 1, k)) for j in nodes]
    return bf.LinearMultistep([0] * (k - 1) + [-1, 1], [*beta, 0], name=f"ab-{k}")


def adams_moulton(k: int) -> bf.LinearMultistep:
    """As Adams-Bashforth, with p interpolating f at t = 0..k (implicit, order k + 1)."""
    nodes = list(range(k + 1))
    beta = [sympy.integrate(lagrange(nodes, j), (t, k - 1, k)) for j in nodes]
    return bf.LinearMultistep([0] * (k - 1) + [-1, 1], beta, name=f"am-{k}")


def bdf(k: int, zero_stable: bool | None = None) -> bf.LinearMultistep:
    """Σⱼ p_j'(k) y_{n+j} = h f_{n+k}: the derivative of the interpolant of y at t = 0..k."""
    nodes = list(range(k + 1))
    alpha = [sympy.diff(lagrange(nodes, j), t).subs(t, k) for j in nodes]
    return bf.LinearMultistep(alpha, [0] * k + [1], name=f"bdf-{k}", zero_stable=zero_stable)


def check(
    alpha: Sequence[Any], beta: Sequence[Any], max_order: int | None = None
) -> MultistepReport:
    return analyse_multistep(bf.LinearMultistep(alpha, beta, name="m"), max_order=max_order)


AB_ERROR = ["1/2", "5/12", "3/8", "251/720", "95/288"]
AM_ERROR = ["-1/12", "-1/24", "-19/720", "-3/160"]


@pytest.mark.parametrize("k", range(1, 6))
def test_adams_bashforth(k: int) -> None:
    report = analyse_multistep(adams_bashforth(k))
    assert report.order == k and report.consistent and report.explicit
    assert report.error_constant == sympy.Rational(AB_ERROR[k - 1])
    assert report.zero_stable is True


@pytest.mark.parametrize("k", range(1, 5))
def test_adams_moulton(k: int) -> None:
    report = analyse_multistep(adams_moulton(k))
    assert report.order == k + 1 and not report.explicit
    assert report.error_constant == sympy.Rational(AM_ERROR[k - 1])


@pytest.mark.parametrize("k", range(1, 7))
def test_bdf_is_order_k_and_zero_stable(k: int) -> None:
    report = analyse_multistep(bdf(k))
    assert report.order == k
    assert report.error_constant == sympy.Rational(-1, k + 1)
    assert report.zero_stable is True
    assert any("exactly" in note for note in report.notes)


def test_bdf7_is_not_zero_stable() -> None:
    report = analyse_multistep(bdf(7))
    assert report.order == 7 and report.zero_stable is False
    assert max(modulus for _, _, modulus in report.roots) > 1
    claimed = analyse_multistep(bdf(7, zero_stable=True))
    assert "zero_stable" in claimed.mismatches
    with pytest.raises(OrderClaimError, match="zero_stable"):
        claimed.raise_for_claims()


def test_a_claim_above_what_the_digits_establish_is_not_proved() -> None:
    """Adams-Bashforth 3 typed to 4 digits: C_1 misses by 7e-4 within a bound of 1e-3, so
    order 0 is established and the claim of 3 is unproved (it held: a lower bound was taken to
    contradict nothing), as for a Runge-Kutta tableau; capped by the caller, it still holds."""
    ab3 = bf.LinearMultistep([0, 0, -1, 1], ["0.4167", "-1.333", "1.917", 0], order=3, name="ab3-4")
    report = analyse_multistep(ab3)
    assert report.order == 0 and report.undetermined and report.mismatches == {"order": (3, 0)}
    assert report.mismatch_message() == (
        "ab3-4: order is claimed 3 but proved 0 (established 0; 1 condition(s) of order 1 "
        "undetermined at the precision of the entries)"
    )
    with pytest.raises(OrderClaimError, match="undetermined"):
        report.raise_for_claims()
    exact = bf.LinearMultistep([0, 0, -1, 1], ["5/12", "-4/3", "23/12", 0], order=4)
    assert analyse_multistep(exact, max_order=2).claim_holds  # capped below the claim


def test_consistency_is_part_of_the_order() -> None:
    shifted = check([0, 1], [1, 0])  # y_{n+1} = h f_n: C_0 = 1
    assert shifted.order == 0 and not shifted.consistent and shifted.error_constant is None
    doubled = check([-1, 1], [1, "1/2"])  # C_0 = 0 and C_2 = 0, but C_1 = -1/2
    assert doubled.conditions(2) == [0, sympy.Rational(-1, 2), 0]
    assert doubled.order == 0


def test_trapezoid_and_leapfrog() -> None:
    trapezoid = check([-1, 1], ["1/2", "1/2"])
    assert (trapezoid.order, trapezoid.error_constant) == (2, sympy.Rational(-1, 12))
    assert trapezoid.a_alpha == 90.0 and trapezoid.real_interval == math.inf
    leapfrog = check([-1, 0, 1], [0, 2, 0])
    assert leapfrog.order == 2 and leapfrog.zero_stable is True
    assert (sympy.Integer(-1), 1, 1.0) in leapfrog.roots
    assert leapfrog.a_alpha is None and leapfrog.real_interval == 0.0


def test_symbolic_families() -> None:
    lm = check(["k - 1", "-k", 1], [0, 1, 0])  # the ODE Transformer's learnable-k block
    k = sympy.Symbol("k", real=True)
    assert lm.order == 0 and lm.zero_stable is None and lm.a_alpha is None
    assert lm.conditions(1) == [0, 1 - k]
    assert any("k = 1" in note and "to 1" in note for note in lm.notes)
    with pytest.raises(AnalysisError):
        lm.boundary_locus()
    theta = check([-1, 1], ["1 - g", "g"])  # the θ-method: ρ is exact, so zero-stability is known
    g = sympy.Symbol("g", real=True)
    assert theta.order == 1 and theta.zero_stable is True
    assert sympy.simplify(theta.error_constant - (sympy.Rational(1, 2) - g)) == 0
    assert any("g = 1/2" in note and "to 2" in note for note in theta.notes)


def test_radicals_are_exact() -> None:
    disguised = check([-1, 1], ["(sqrt(2) + 1)*(sqrt(2) - 1)/2", "1/2"])  # the trapezoid
    assert disguised.order == 2
    skewed = check([-1, 1], ["1 - sqrt(2)/2", "sqrt(2)/2"])
    assert skewed.order == 1
    assert sympy.simplify(skewed.error_constant - (1 - sympy.sqrt(2)) / 2) == 0


def test_numeric_declarations_are_judged_at_their_precision() -> None:
    # Four decimals cannot decide consistency: σ(1) = 1.0001 is within their rounding of 1.
    ab3 = check([0, 0, -1, 1], ["0.4167", "-1.3333", "1.9167", 0])
    assert ab3.order == 0 and [c for c, *_ in ab3.undetermined] == ["C_1"]
    assert any("numeric declaration" in note for note in ab3.notes)
    # Twenty decimals do; as floats too (each known to 2^-44 of its size).
    long = check(
        [0, 0, -1, 1],
        ["0.41666666666666666667", "-1.3333333333333333333", "1.9166666666666666667", 0],
    )
    assert long.order == 3 and long.order_upper == 3
    floats = check([0, 0, -1, 1], [5 / 12, -4 / 3, 23 / 12, 0])
    assert floats.order == 3 and floats.zero_stable is True
    bdf2 = check(["0.33333", "-1.33334", 1], [0, 0, "0.66667"])  # as given, a root at 1.00001
    assert bdf2.order == 0 and bdf2.undetermined


def test_exact_alpha_decide_zero_stability_whatever_digits_beta_carries() -> None:
    # ρ is α's alone: Milne-Simpson's and Nyström's ρ = ζ² − 1 are exact with float β, so the
    # root −1 is on the circle for certain (it was undetermined, β's rounding counted for ρ).
    milne = check([-1, 0, 1], [1 / 3, 4 / 3, 1 / 3])
    assert milne.order == 4 and milne.zero_stable is True and milne.weakly_stable
    nystrom = check([-1, 0, 1], [0, "2.000000000000000", 0])
    assert nystrom.zero_stable is True and nystrom.weakly_stable
    # α given as digits still leaves the root on the circle undetermined.
    assert check(["-1.0", 0, 1], [0, 2, 0]).zero_stable is None


def test_real_interval_of_a_six_digit_method_is_read_past_the_rounding_noise() -> None:
    # Adams-Bashforth 7 to six digits: its interval [-0.0465, 0] is far wider than the
    # rounding moves a crossing (4e-4), but lay within the 1000x margin kept for the angle,
    # so the first crossing read was -1.45 and the interval came out 0.
    ab7 = adams_bashforth(7)
    six = [f"{float(b):.6g}" if b else 0 for b in ab7.beta]
    report = analyse_multistep(bf.LinearMultistep(ab7.alpha, six, name="ab-7"))
    exact = analyse_multistep(ab7).real_interval
    assert exact == pytest.approx(0.04651, abs=1e-5)
    assert report.real_interval == pytest.approx(exact, rel=1e-2)


def test_a_finite_real_interval_is_no_a_zero_stability() -> None:
    # The trapezoid with β₀ = 1/2 + 1e-9: stable on [-2e9, 0] only, so not A(0)-stable (the
    # probes stopped at -1e6 and read A(0)).
    report = check([-1, 1], ["500000001/1000000000", "1/2"])
    assert report.real_interval == pytest.approx(2e9, rel=1e-6)
    assert report.a_alpha is None


@pytest.mark.parametrize(
    ("rho", "stable"),
    [
        ((t - 1) * (5 * t**2 - 6 * t + 5), True),  # roots (3 ± 4i)/5: on the circle, not cyclotomic
        ((t - 1) * (t**2 - 3 * t + 1), False),  # palindromic, a root outside
        ((t - 1) * (t**4 - t**3 - t**2 - t + 1), False),  # Salem: two roots on the circle
        ((t - 1) * (t + 1) ** 2, False),  # double root on the circle
        ((t - 1) * (2 * t + 1) ** 2, True),  # double root inside
        ((t - 1) * (t**2 + 1) ** 2, False),
        ((t - 1) * (3 * t**3 + t + 1), True),
    ],
)
def test_root_condition_exact(rho: sympy.Expr, stable: bool) -> None:
    alpha = sympy.Poly(rho, t).all_coeffs()[::-1]
    report = check(alpha, [0] * (len(alpha) - 1) + [1])
    assert report.zero_stable is stable


HALF = sympy.Rational(1, 2)


@pytest.mark.parametrize(
    ("rho", "rounding", "stable"),
    [
        # a double root at 1/2, within reach of the circle only at one-digit precision
        ((t - 1) * (t - HALF) ** 2, 0.0, True),
        ((t - 1) * (t - HALF) ** 2, 0.05, None),
        ((t - 1) * (t - HALF) ** 2, 1e-9, True),
        # a double root the digits put on the circle: (ζ − 1)(ζ − 1 + ε)(ζ − 1/2) lies within
        # the precision and is zero-stable, so the digits cannot refute it
        ((t - 1) ** 2 * (t - HALF), 0.05, None),
        ((t - 1) ** 2 * (t - HALF), 0.0, False),
        ((t - 1) * (t - 2), 0.05, False),  # a root outside
    ],
)
def test_root_condition_of_digits_is_undetermined_only_where_they_cannot_tell(
    rho: sympy.Expr, rounding: float, stable: bool | None
) -> None:
    assert root_condition(sympy.Poly(sympy.expand(rho.subs(t, ZETA)), ZETA), rounding)[0] is stable


def test_no_real_interval_is_said_only_where_the_digits_can_tell() -> None:
    """Milne-Simpson's real stability interval is empty. Typed to 6 digits, the rounding moves
    the locus near z = 0 by ~1e-5, so a shorter interval is out of its reach: undetermined, not
    a claimed 0; exact and double-precision digits keep 0."""
    exact = analyse_multistep(bf.LinearMultistep([-1, 0, 1], ["1/3", "4/3", "1/3"]))
    floats = analyse_multistep(bf.LinearMultistep([-1, 0, 1], [1 / 3, 4 / 3, 1 / 3]))
    assert exact.real_interval == 0.0 and floats.real_interval == 0.0
    six = analyse_multistep(bf.LinearMultistep([-1, 0, 1], ["0.333333", "1.33333", "0.333333"]))
    assert six.real_interval is None
    assert any("real stability interval undetermined" in n for n in six.notes)
    assert dict(six.rows())["real stability interval [-r, 0]: r"] == "undetermined (see notes)"


def test_a_real_interval_end_within_the_reach_of_the_rounding_is_enclosed() -> None:
    """Adams-Bashforth 2 typed as "-0.5", "1.5" (one digit: each β known to ±0.05) is stable on
    [-1, 0] for these digits, but its locus crosses the real axis at -1, inside the reach of the
    rounding near 0 (1.5): the crossing was ignored and the interval read (-inf, 0]. Then it was
    undetermined; now the end is enclosed over the methods within the precision (the band is
    checked in test_multistep_enclosure.py)."""
    one_digit = analyse_multistep(bf.LinearMultistep([0, -1, 1], ["-0.5", "1.5", "0"]))
    assert one_digit.real_interval == pytest.approx(1.0) and one_digit.a_alpha is None
    assert one_digit.real_enclosure == pytest.approx((0.952368, 1.056616), abs=1e-6)
    for beta in (["-1/2", "3/2", 0], [-0.5, 1.5, 0], ["-0.500000", "1.50000", "0"]):
        assert analyse_multistep(bf.LinearMultistep([0, -1, 1], beta)).real_interval == (
            pytest.approx(1.0)
        )


def test_a_double_root_on_the_circle_split_by_float_digits_is_placed_not_a_crash() -> None:
    """(ζ² − 6ζ/5 + 1)² typed as floats: its roots (3 ± 4i)/5 split by about 5e-9, where
    mpmath's Durand-Kerner never converged and the analysis raised NoConvergence."""
    typed = [1, -2.4, 3.44, -2.4, 1]
    rho = sympy.Poly([sympy.Rational(x) for x in typed], ZETA)
    stable, roots, how, _ = root_condition(rho, 4 * 2.0**-52)
    assert stable is None and "undetermined" in how
    assert all(abs(abs(complex(r[0])) - 1) < 1e-8 for r in roots)
    exact = sympy.Poly(
        [1, sympy.Rational(-12, 5), sympy.Rational(86, 25), sympy.Rational(-12, 5), 1], ZETA
    )
    assert root_condition(exact, 0.0)[0] is False  # a double root on the circle


def test_zero_stability_the_digits_cannot_decide_reads_undetermined_in_its_row() -> None:
    """Milne-Simpson in floats leaves zero-stability undetermined (its root -1 is on the circle
    only to within the rounding); the row printed '—', as if there were nothing to say. A
    family's zero-stability (symbols in ρ) keeps '—' and its note."""
    report = check([-1.0, 0, 1.0], [1 / 3, 4 / 3, 1 / 3])
    assert report.zero_stable is None
    assert dict(report.rows())["zero-stable"] == "undetermined (see notes)"
    family = analyse_multistep(bf.LinearMultistep([0, "-1 - a", "a", 1], [0, 0, 0, 1]))
    assert family.zero_stable is None and dict(family.rows())["zero-stable"] is None


def test_coefficients_pasted_newest_first_are_named() -> None:
    """BDF2 as many tables print it, newest first (alpha = 3/2, -2, 1/2; beta = 1, 0, 0), was
    proved order 0, inconsistent and not zero-stable with no word on why: the lists are read
    oldest first. The report now says that, reversed, they are a method of order 2; the
    declaration's own verdicts stand. Adams-Bashforth 3 newest first (alpha ending in zeros) is
    refused saying the lists are oldest first."""
    report = check(["3/2", -2, "1/2"], [1, 0, 0])
    assert report.order == 0 and report.consistent is False
    assert any("newest first" in n and "order 2" in n for n in report.notes)
    assert not any("newest first" in n for n in check(["1/2", -2, "3/2"], [0, 0, 1]).notes)
    with pytest.raises(bf.DeclarationError, match="oldest first"):
        bf.LinearMultistep([1, -1, 0, 0], ["23/12", "-4/3", "5/12", 0])


def test_a_zero_stability_claim_the_digits_cannot_decide_says_so() -> None:
    """Milne-Simpson in floats claimed zero-stable: the claim is not proved (its root -1 is on
    the circle only to within the rounding), and the message read 'zero_stable is claimed True
    but proved None'."""
    method = bf.LinearMultistep([-1.0, 0, 1.0], [1 / 3, 4 / 3, 1 / 3], name="ms", zero_stable=True)
    report = analyse_multistep(method)
    assert not report.claim_holds
    message = report.mismatch_message()
    assert "zero_stable is claimed True but undetermined" in message and "None" not in message


def test_consistency_the_digits_cannot_decide_is_undetermined_not_refuted() -> None:
    """Adams-Bashforth 3 typed to five digits leaves C_1 undetermined (-7e-5 against a bound of
    1.05e-4: the exact AB3 lies within the rounding) and read 'consistent: no'. It is
    undetermined (None, the row says so); a C_1 that fails is still 'no'."""
    report = check([0, 0, -1, 1], ["0.41667", "-1.3333", "1.9167", 0])
    assert report.order == 0 and report.consistent is None
    assert dict(report.rows())["consistent"] == "undetermined"
    assert report.to_dict()["consistent"] is None
    assert check([0, 0, -1, 1], ["0.41667", "-1.3333", "1.9200", 0]).consistent is False
    assert check([0, 0, -1, 1], ["5/12", "-4/3", "23/12", 0]).consistent is True


def test_a_numeric_error_constant_is_enclosed_not_printed_as_exact() -> None:
    """beta typed "0.1", "0.3", "0.6" (each +-0.05) meets C_0..C_2 exactly, so order 2, and its
    error constant read '-11/60' as if exact; the order-2 methods within the precision,
    beta = (t - 1/2, 3/2 - 2t, t) for t in [0.575, 0.625], have C = 5/12 - t in
    [-0.2083, -0.1583]. It is now the digits' value with a radius that holds every method within
    the precision, and the row and the JSON say so; exact declarations keep no radius."""
    report = check([0, -1, 1], ["0.1", "0.3", "0.6"])
    assert report.order == 2 and report.error_constant == sympy.Rational(-11, 60)
    radius = report.error_constant_radius
    assert radius is not None
    for t in (Fraction(23, 40), Fraction(5, 8)):
        assert abs(Fraction(5, 12) - t - Fraction(-11, 60)) <= radius
    row = dict(report.rows())["error constant C_{p+1}/σ(1)"]
    assert row.startswith("-0.183333 ± ") and "within the precision" in row
    assert report.to_dict()["error_constant_radius"] == radius
    floats = check([0, 0, -1, 1], [5 / 12, -16 / 12, 23 / 12, 0])
    assert floats.error_constant_radius is not None and floats.error_constant_radius < 1e-11
    exact = check([0, 0, -1, 1], ["5/12", "-4/3", "23/12", 0])
    assert exact.error_constant_radius is None
    assert dict(exact.rows())["error constant C_{p+1}/σ(1)"] == sympy.Rational(3, 8)


@pytest.mark.parametrize(
    ("alpha", "beta"),
    [
        ([-1.0, 1.0], [0.5, 0.5]),  # the trapezoid in floats: -1/12 ± 2.84e-14
        ([1 / 3, -4 / 3, 1.0], [0, 0, 2 / 3]),  # BDF2 in floats
        (["0.3333333333", "-1.3333333333", 1], [0, 0, "2/3"]),
        ([0, -1, 1], ["0.1", "0.3", "0.6"]),
    ],
)
def test_the_printed_error_constant_ball_holds_the_enclosure(
    alpha: list[Any], beta: list[Any]
) -> None:
    """The trapezoid typed as floats printed '-0.0833333 ± 2.8e-14': the digits' own -1/12 is
    3.3e-8 from -0.0833333, so the printed ball held no method at all, and 2.8e-14 was the
    radius 2.8422e-14 rounded down. The printed centre ± radius must hold the digits' value
    ± the enclosure's radius."""
    report = check(alpha, beta)
    assert report.error_constant is not None and report.error_constant_radius is not None
    row = dict(report.rows())["error constant C_{p+1}/σ(1)"]
    centre, radius = (Fraction(x) for x in row.split(" (")[0].split(" ± "))
    value = Fraction(str(report.error_constant))
    assert centre - radius <= value - Fraction(report.error_constant_radius)
    assert value + Fraction(report.error_constant_radius) <= centre + radius
    assert radius <= 2 * Fraction(report.error_constant_radius) + abs(value) * Fraction(1, 10**5)


def test_a_repeated_root_that_numeric_digits_put_on_the_circle_is_undetermined() -> None:
    """ρ = (ζ − 1)(ζ + 1)² typed as floats (or one-decimal strings) read 'zero-stable: False',
    while (ζ − 1)(ζ² + (2 − 2⁻⁵²)ζ + 1), whose α moves two entries by 2⁻⁵² (inside a float's
    rounding), has two simple roots on the circle: weakly zero-stable, proved exactly. The digits
    cannot tell the two apart; only the exact declaration fails."""
    beta = [0, 0, 4, 0]
    assert check([-1, -1, 1, 1], beta).zero_stable is False
    for typed in ([-1.0, -1.0, 1.0, 1.0], ["-1.0", "-1.0", "1.0", "1.0"]):
        report = check(typed, beta)
        assert report.zero_stable is None
        assert any("undetermined" in note for note in report.notes)
    d = sympy.Rational(1, 2**52)
    assert check([-1, -1 + d, 1 - d, 1], beta).zero_stable is True


@pytest.mark.parametrize(("k", "angle"), [(3, 86.03), (4, 73.35), (5, 51.84), (6, 17.84)])
def test_bdf_a_alpha(k: int, angle: float) -> None:
    report = analyse_multistep(bdf(k))
    assert report.a_alpha is not None and abs(report.a_alpha - angle) < 0.05
    assert report.real_interval == math.inf


@pytest.mark.parametrize("k", [1, 2])
def test_a_stable_bdf(k: int) -> None:
    assert analyse_multistep(bdf(k)).a_alpha == 90.0


def test_explicit_methods_and_the_boundary_locus() -> None:
    euler = check([-1, 1], [1, 0])
    assert euler.a_alpha is None and euler.real_interval == pytest.approx(2.0)
    theta = 2 * np.pi * np.arange(64) / 64
    assert euler.boundary_locus(64).shape == (64,)
    np.testing.assert_allclose(euler.boundary_locus(64), np.exp(1j * theta) - 1, atol=1e-12)
    ab2 = analyse_multistep(adams_bashforth(2))
    assert ab2.real_interval == pytest.approx(1.0)


def test_order_search_cap() -> None:
    report = analyse_multistep(bdf(4), max_order=2)
    assert report.order == 2 and report.error_constant is None
    assert any("search stopped" in note for note in report.notes)
    with pytest.raises(AnalysisError):
        analyse_multistep(bdf(4), max_order=0)


@pytest.mark.parametrize(
    "method",
    [adams_bashforth(2), bdf(7), bf.LinearMultistep(["k - 1", "-k", 1], [0, 1, 0], name="lm")],
)
def test_rendering(method: bf.LinearMultistep) -> None:
    report = analyse_multistep(method)
    text = str(report)
    assert method.name in text and "order" in text and "zero-stable" in text
    assert report.to_markdown().startswith(f"### {method.name}")
    data = json.loads(report.to_json())
    assert data["order"] == report.order and data["family"] == "multistep"
    assert data["error_constant"] == (
        None if report.error_constant is None else str(report.error_constant)
    )
    assert len(data["roots"]) == method.steps


# Property tests -------------------------------------------------------------------------------

small = st.fractions(min_value=-3, max_value=3, max_denominator=6)


@st.composite
def methods(draw: st.DrawFn) -> tuple[list[Fraction], list[Fraction]]:
    """Random rational methods, biased towards consistency and towards high order."""
    k = draw(st.integers(1, 4))
    alpha = draw(st.lists(small, min_size=k + 1, max_size=k + 1))
    beta = draw(st.lists(small, min_size=k + 1, max_size=k + 1))
    assume(alpha[-1] != 0)
    m = draw(st.integers(0, k + 1))  # make the method exact on polynomials of degree ≤ m
    if m >= 1:
        alpha[0] = -sum(alpha[1:], Fraction(0))
        # Solve Σⱼ q j^(q−1) βⱼ = Σⱼ j^q αⱼ (q = 1..m) for β_0..β_{m−1}.
        rows = [[Fraction(q * j ** (q - 1)) for j in range(m)] for q in range(1, m + 1)]
        rhs = [
            sum(Fraction(j**q) * alpha[j] for j in range(k + 1))
            - sum(q * Fraction(j ** (q - 1)) * beta[j] for j in range(m, k + 1))
            for q in range(1, m + 1)
        ]
        solution = sympy.Matrix(rows).LUsolve(sympy.Matrix(rhs))
        beta[:m] = [Fraction(str(x)) for x in solution]
    return alpha, beta


def residual(
    alpha: list[Fraction], beta: list[Fraction], q: int, t0: Fraction, h: Fraction
) -> Fraction:
    """Σⱼ αⱼ y(t_j) − h Σⱼ βⱼ y'(t_j) for y = t^q on the grid t_j = t0 + j h."""
    grid = [t0 + j * h for j in range(len(alpha))]
    value = sum((a * x**q for a, x in zip(alpha, grid, strict=True)), Fraction(0))
    slope = sum((b * q * x ** (q - 1) for b, x in zip(beta, grid, strict=True) if q), Fraction(0))
    return value - h * slope


@settings(max_examples=60, deadline=None)
@given(methods(), small.filter(bool), small.filter(lambda x: x > 0))
def test_order_is_exactness_on_polynomials(
    method: tuple[list[Fraction], list[Fraction]], t0: Fraction, h: Fraction
) -> None:
    alpha, beta = method
    report = check(alpha, beta)
    exact = [residual(alpha, beta, q, t0, h) == 0 for q in range(2 * len(alpha) + 2)]
    degree = exact.index(False) - 1
    assert report.order == (degree if degree >= 1 else 0)
    if report.order >= 1:
        # The leading residual is (p+1)! C_{p+1} h^{p+1}, whatever the grid's origin.
        p = report.order
        leading = report.conditions(p + 1)[p + 1]
        assert residual(alpha, beta, p + 1, t0, h) == leading * math.factorial(p + 1) * h ** (p + 1)
        if sum(beta) == 0:  # ρ has a double root at 1: no normalised error constant
            assert report.error_constant is None and report.zero_stable is False
        else:
            assert report.error_constant == leading / sympy.Rational(sum(beta))


@settings(max_examples=40, deadline=None)
@given(methods(), small.filter(bool))
def test_scaling_keeps_order_and_error_constant(
    method: tuple[list[Fraction], list[Fraction]], c: Fraction
) -> None:
    alpha, beta = method
    plain, scaled = check(alpha, beta), check([c * a for a in alpha], [c * b for b in beta])
    assert (plain.order, plain.error_constant) == (scaled.order, scaled.error_constant)
    assert plain.zero_stable == scaled.zero_stable


# A root is (a, b²): the pair a ± b i (one real root when b² = 0); |root|² = a² + b².
circle_roots = st.sampled_from(
    [(Fraction(1), 0), (Fraction(-1), 0), (Fraction(0), 1), (Fraction(-1, 2), Fraction(3, 4))]
)
on_circle = (
    st.fractions(-1, 1, max_denominator=7).map(lambda a: (a, 1 - a * a)).filter(lambda r: r[1] > 0)
)
anywhere = st.tuples(small, st.one_of(st.just(Fraction(0)), st.fractions(0, 2, max_denominator=5)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(circle_roots, on_circle, anywhere), min_size=1, max_size=5))
def test_root_condition_matches_the_construction(roots: list[tuple[Fraction, Fraction]]) -> None:
    rho = sympy.prod([t - a if b2 == 0 else t**2 - 2 * a * t + a * a + b2 for a, b2 in roots])
    counts: dict[tuple[Fraction, Fraction], int] = {}
    for root in roots:
        counts[root] = counts.get(root, 0) + 1
    stable = all(a * a + b2 < 1 or (a * a + b2 == 1 and m == 1) for (a, b2), m in counts.items())
    alpha = sympy.Poly(rho, t).all_coeffs()[::-1]
    assert check(alpha, [0] * (len(alpha) - 1) + [1]).zero_stable is stable
