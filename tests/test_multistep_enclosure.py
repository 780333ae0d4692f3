"""The real stability interval of numeric linear multistep declarations, enclosed over every
method within the precision of the coefficients (`analysis/multistep_enclosure.py`).

Every end is checked against an independent reading: numpy's roots of π(ζ) = ρ(ζ) − zσ(ζ) for
an exact neighbour (Fractions inside the rounding), scanned along the axis and bisected.
"""

from __future__ import annotations

import math
from fractions import Fraction

import flint
import mpmath
import numpy as np
import pytest
from axis_scan import first_unstable
from hypothesis import example, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.enclosure.schur import schur
from butcherflow.analysis.multistep.report import MultistepReport, analyse_multistep
from butcherflow.analysis.report import show

ROW = "real stability interval [-r, 0]: r"
AB3 = [Fraction(5, 12), Fraction(-4, 3), Fraction(23, 12), Fraction(0)]
AB3_TYPED = ["0.417", "-1.33", "1.92", 0]  # β to three digits: ±5e-4, ±5e-3, ±5e-3


def numpy_end(alpha: list[Fraction], beta: list[Fraction], top: float = 4.0) -> float:
    """Where π first has a root outside |ζ| = 1 + 1e-9 going left from z = 0: a scan of
    numpy's roots at steps of top/4000, then bisection (independent of the Schur chain)."""

    def unstable(x: float) -> bool:
        coefficients = [float(a) + x * float(b) for a, b in zip(alpha, beta, strict=True)]
        return bool(np.abs(np.roots(coefficients[::-1])).max() > 1 + 1e-9)

    return first_unstable(unstable, top)


def typed(beta: list[object], alpha: list[object] | None = None) -> MultistepReport:
    return analyse_multistep(bf.LinearMultistep(alpha or [0, 0, -1, 1], beta))


@pytest.fixture(scope="module")
def ab3_typed() -> MultistepReport:
    return typed(AB3_TYPED)


def test_a_three_digit_end_is_a_band_holding_its_neighbours_ends(
    ab3_typed: MultistepReport,
) -> None:
    # The digits read 0.545405; β₁ = −1.334 (inside the rounding of "-1.33") ends at 0.544811.
    digits = [Fraction(417, 1000), Fraction(-133, 100), Fraction(192, 100), Fraction(0)]
    neighbour = [Fraction(417, 1000), Fraction(-1334, 1000), Fraction(192, 100), Fraction(0)]
    alpha = [Fraction(x) for x in (0, 0, -1, 1)]
    assert numpy_end(alpha, digits) == pytest.approx(0.545405, abs=1e-6)
    assert numpy_end(alpha, neighbour) == pytest.approx(0.544811, abs=1e-6)
    assert ab3_typed.real_interval == pytest.approx(0.545405, abs=1e-6)
    assert ab3_typed.real_enclosure is not None
    lo, hi = ab3_typed.real_enclosure
    assert lo < 0.544811 < 0.545405 < hi and hi - lo < 0.01
    text = dict(ab3_typed.rows())[ROW]
    assert text == f"0.545405 (end between {lo:.6g} and {hi:.6g} within the precision)"
    assert any("enclosed over every method within the precision" in n for n in ab3_typed.notes)
    assert not any("digits spell" in n and "interval" in n for n in ab3_typed.notes)
    assert ab3_typed.to_dict()["real_interval_enclosure"] == [lo, hi]
    exact = analyse_multistep(bf.catalog["adams-bashforth-3"])
    assert exact.real_enclosure is None and exact.to_dict()["real_interval_enclosure"] is None
    assert not any("digits spell" in n or "enclosed" in n for n in exact.notes)


@settings(max_examples=25, deadline=None)
@given(st.tuples(*(st.integers(-1000, 1000) for _ in range(3))))
def test_exact_neighbours_inside_the_rounding_end_inside_the_band(
    ab3_typed: MultistepReport, moves: tuple[int, int, int]
) -> None:
    radii = [Fraction(5, 10**4), Fraction(5, 10**3), Fraction(5, 10**3)]
    digits = [Fraction(417, 1000), Fraction(-133, 100), Fraction(192, 100)]
    beta = [d + r * Fraction(m, 1000) for d, r, m in zip(digits, radii, moves, strict=True)]
    assert ab3_typed.real_enclosure is not None
    lo, hi = ab3_typed.real_enclosure
    end = numpy_end([Fraction(x) for x in (0, 0, -1, 1)], [*beta, Fraction(0)])
    assert lo - 1e-9 <= end <= hi + 1e-9


@pytest.mark.parametrize(
    "name",
    [*(f"adams-bashforth-{k}" for k in (2, 3, 4)), *(f"bdf-{k}" for k in range(2, 7))],
)
def test_double_precision_keeps_the_exact_interval_to_the_printed_digits(name: str) -> None:
    method = bf.catalog[name]
    exact = analyse_multistep(method)
    floats = bf.LinearMultistep([float(x) for x in method.alpha], [float(x) for x in method.beta])
    report = analyse_multistep(floats)
    assert report.real_enclosure is not None
    assert show(dict(report.rows())[ROW]) == show(dict(exact.rows())[ROW])
    assert exact.real_enclosure is None  # exact declarations keep their reading
    lo, hi = report.real_enclosure
    assert lo <= exact.real_interval <= hi
    if exact.real_interval == math.inf:
        assert report.a_alpha == pytest.approx(exact.a_alpha, abs=0.01)
        assert any(
            "A(α): it is the A(α) angle of the method the digits spell" in n for n in report.notes
        )
    else:
        assert hi - lo <= 1e-6 * exact.real_interval
        assert report.real_interval == pytest.approx(exact.real_interval, rel=1e-12)


def test_a_float_trapezoid_is_unbounded_counting_roots_within_the_resolution() -> None:
    # σ = (ζ + 1)/2 has its root on the circle: a neighbour with β₀ = 1/2 + 2^-45 ends near
    # z = −10^13, so the whole axis holds only counting |ζ| ≤ 1 + 1.5e-8 as stable.
    report = typed([0.5, 0.5], [-1.0, 1.0])
    assert report.real_enclosure == (math.inf, math.inf) and report.real_interval == math.inf
    assert any(
        "counting a root less than 1.5e-8 outside |ζ| = 1 as stable" in n for n in report.notes
    )
    # the row itself says so: 'inf' alone claimed every neighbour, that one included
    assert dict(report.rows())[ROW] == (
        "inf (counting a root less than 1.5e-8 outside |ζ| = 1 as stable)"
    )


def test_one_digit_adams_bashforth_2_holds_the_exact_range_of_its_neighbours() -> None:
    # Each β known to ±0.05: the end 2/(β₁ − β₀) (a root at −1) ranges over [2/2.1, 2/1.9].
    report = typed(["-0.5", "1.5", "0"], [0, -1, 1])
    assert report.real_enclosure is not None
    lo, hi = report.real_enclosure
    assert lo <= 2 / 2.1 and hi >= 2 / 1.9 and hi < 1.2


@pytest.mark.parametrize("beta", [["0.4", "-1.3", "1.9", 0], ["0.42", "-1.33", "1.92", 0]])
def test_a_coarse_declaration_never_excludes_an_exact_neighbour(beta: list[object]) -> None:
    # Exact AB3 (5/12, −4/3, 23/12) lies inside both roundings: its end 6/11 must be in the band.
    report = typed(beta)
    if report.real_enclosure is None:
        assert report.real_interval is None
        assert any("real stability interval undetermined" in n for n in report.notes)
    else:
        lo, hi = report.real_enclosure
        assert lo <= 6 / 11 <= hi
        assert numpy_end([Fraction(x) for x in (0, 0, -1, 1)], AB3) == pytest.approx(6 / 11)


def test_numeric_alpha_encloses_the_methods_with_rho_1_zero() -> None:
    # BDF2 to eight digits: ρ(1) = α₀ + α₁ + α₂ = 0 is met within the precision, and the note
    # says the enclosure is over the methods that meet it. With α₁ to seven digits ρ(1) = 3e-8
    # is undetermined: neighbours with ρ(1) < 0 have a root outside near z = 0.
    report = typed([0, 0, "0.66666667"], ["0.33333333", "-1.33333333", 1])
    assert report.real_enclosure == (math.inf, math.inf)
    assert any("with ρ(1) = 0 (C_0, which the digits meet)" in n for n in report.notes)
    seven = typed([0, 0, "0.66666667"], ["0.33333333", "-1.3333333", 1])
    assert seven.real_interval is None and seven.a_alpha is None
    assert dict(seven.rows())[ROW] == "undetermined (see notes)"
    assert any("C_0 = ρ(1) = 0" in n and "undetermined" in n for n in seven.notes)


def test_schur_decides_boxes_and_leaves_the_circle_open() -> None:
    ball = flint.arb
    assert schur([ball(Fraction(1, 4).__float__()), ball(0), ball(1)]) is True  # ±i/2
    assert schur([ball(-2), ball(1)]) is False  # the root 2
    assert schur([ball(-1), ball(0), ball(1)]) is None  # ±1, on the circle
    # ζ² − 1.01 has a root outside, ζ² − 0.99 none: a box holding both is undecided
    assert schur([ball(-1.01), ball(0), ball(1)]) is False
    assert schur([ball(-1, 0.02), ball(0), ball(1)]) is None
    # (ζ − 0.5)(ζ − 3): |constant| = 1.5 > |lead| = 1 at the first step
    assert schur([ball(1.5), ball(-3.5), ball(1)]) is False
    # (ζ − 0.9)(ζ + 0.2)(ζ − 1.5): |c| = 0.27 < 1, a root outside found at a later step
    coefficients = np.polynomial.polynomial.polyfromroots([0.9, -0.2, 1.5])
    assert schur([ball(float(c)) for c in coefficients]) is False


root = st.tuples(st.floats(0.0, 2.0), st.floats(0.0, math.pi)).filter(
    lambda r: abs(r[0] - 1) > 1e-3
)


@settings(max_examples=60, deadline=None)
@example(roots=[(0.875, 3.0), (0.875, 3.0)], digits=0)  # a double pair: left open
@given(st.lists(root, min_size=1, max_size=4), st.integers(0, 3))
def test_schur_agrees_with_numpy_roots_over_a_box(
    roots: list[tuple[float, float]], digits: int
) -> None:
    # Real polynomials from roots r·e^{±iθ}, in balls of radius 10^-(6 + digits): a verdict
    # holds for the centre and for sampled corners of the box.
    zeros = [r * np.exp(1j * t) for r, t in roots]
    zeros += [z.conjugate() for z in zeros if abs(z.imag) > 1e-12]
    centre = np.real(np.polynomial.polynomial.polyfromroots(zeros))
    radius = 10.0 ** -(6 + digits)
    verdict = schur([flint.arb(float(c), radius) for c in centre])
    draw = np.random.default_rng(len(zeros))
    for moved in [centre, *(centre + radius * draw.choice([-1, 1], centre.size) for _ in range(8))]:
        largest = np.abs(np.roots(moved[::-1])).max()
        if verdict is True:
            assert largest < 1
        elif verdict is False:
            assert largest > 1
    # Soundness only: how often a box is left open is the next test's (hypothesis finds boxes
    # the Schur steps in balls cannot decide: a double pair at -0.875 at radius 1e-6).


def test_schur_decides_boxes_of_well_separated_roots_away_from_the_circle() -> None:
    # 500 seeded polynomials of degree 1-8 whose roots are 0.1 from the circle and from each
    # other, in balls of radius 1e-8: every one decided, the way numpy's roots say.
    draw = np.random.default_rng(2026)
    decided = 0
    while decided < 500:
        zeros = [r * np.exp(1j * t) for r, t in draw.uniform((0, 0), (2, math.pi), (4, 2))]
        zeros = zeros[: draw.integers(1, 5)]
        zeros += [z.conjugate() for z in zeros if abs(z.imag) > 1e-12]
        apart = all(abs(z - w) > 0.1 for i, z in enumerate(zeros) for w in zeros[:i])
        if not apart or any(abs(abs(z) - 1) <= 0.1 for z in zeros):
            continue
        centre = np.real(np.polynomial.polynomial.polyfromroots(zeros))
        verdict = schur([flint.arb(float(c), 1e-8) for c in centre])
        assert verdict is bool(max(abs(z) for z in zeros) < 1), zeros
        decided += 1


def test_a_none_the_digits_read_is_bounded_for_every_method_within_the_precision() -> None:
    """ρ = (ζ − 1)(ζ² + 1) with β = (5, 7, 7, 5)/12 (order 4, weakly stable) typed as floats
    read 'r: 0.0', the digits' method's 'none'; yet α₀ = −1 + 2⁻⁴⁵, α₁ = 1 − 2⁻⁴⁵ (inside the
    floats' rounding, ρ(1) = 0) puts the roots ±i inside the circle, and that neighbour is
    stable on [−1.7e-13, 0). The row now bounds every method's end: 0 up to a point where each
    one certainly has a root outside the circle, which the neighbour's end lies below."""
    floats = [5 / 12, 7 / 12, 7 / 12, 5 / 12]
    report = analyse_multistep(bf.LinearMultistep([-1.0, 1.0, -1.0, 1.0], floats))
    e = Fraction(1, 2**45)
    alpha = [Fraction(-1) + e, Fraction(1) - e, Fraction(-1), Fraction(1)]
    beta = [Fraction(x) for x in floats]

    def largest_root(x: float) -> float:  # of π at z = −x, to 40 digits (mpmath)
        with mpmath.workdps(40):
            pi = [a + Fraction(x) * b for a, b in zip(alpha, beta, strict=True)][::-1]
            roots = mpmath.polyroots([mpmath.mpf(c.numerator) / c.denominator for c in pi])
            return float(max(abs(r) for r in roots))

    assert all(largest_root(x) < 1 for x in (1e-14, 1e-13, 1.5e-13))  # the neighbour's r > 0
    assert report.real_interval == 0.0 and report.real_enclosure is not None
    lo, hi = report.real_enclosure
    assert lo == 0.0 and 1.5e-13 < hi <= 1e-10 and largest_root(hi) > 1
    assert dict(report.rows())[ROW] == f"0 (end between 0 and {hi:.6g} within the precision)"
    # leapfrog: |π(0)| = |π's lead| for every z, so no Schur step decides: the digits' reading
    leapfrog = analyse_multistep(bf.LinearMultistep([-1.0, 0, 1.0], [0, 2.0, 0]))
    assert leapfrog.real_interval == 0.0 and leapfrog.real_enclosure is None
    assert any("the method the digits spell" in n for n in leapfrog.notes)


def test_an_exact_method_read_as_none_is_bounded_not_claimed() -> None:
    # ρ = (ζ − 1)(ζ² + 1) moved by 10⁻⁷, β = (5, 7, 7, 5)/12: its interval ends near 6e-7,
    # inside the 1e-6 the float64 locus ignores, and the report printed 'r: 0.0'
    e = Fraction(1, 10**7)
    tiny = bf.LinearMultistep([-1 + e, 1 - e, -1, 1], [Fraction(n, 12) for n in (5, 7, 7, 5)])
    report = bf.check(tiny)
    assert report.real_enclosure == (0.0, 1e-6)
    assert "end between 0 and 1e-06)" in str(report)
    rho = np.array([1.0, -1.0, 1 - float(e), -1 + float(e)])
    sigma = np.array([5, 7, 7, 5]) / 12
    assert np.abs(np.roots(rho + 3e-7 * sigma)).max() <= 1  # stable at z = −3e-7: not "none"
    thirds = [Fraction(1, 3), Fraction(4, 3), Fraction(1, 3)]
    milne = bf.check(bf.LinearMultistep([-1, 0, 1], thirds))
    assert milne.real_interval == 0.0 and milne.real_enclosure == (0.0, 1e-12)
    leapfrog = bf.check(bf.LinearMultistep([-1, 0, 1], [0, 2, 0]))
    assert leapfrog.real_enclosure is None
    assert any("would not be seen" in note for note in leapfrog.notes)
