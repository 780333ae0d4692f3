"""The real stability interval of numeric general linear declarations, enclosed over every method
within the precision of the entries (`analysis/glm_enclosure.py`).

Every band is checked against readings that do not share its machinery: the multistep and
Runge-Kutta enclosures of the same methods, and numpy's eigenvalues of M(z) = V + zB(I − zA)⁻¹U
for exact neighbours (Fractions inside the rounding), scanned along the axis and bisected.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import sympy
from axis_scan import first_unstable
from hypothesis import given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.enclosure.common import same_ends
from butcherflow.analysis.general_linear.report import GeneralLinearReport, analyse_general_linear
from butcherflow.analysis.multistep.report import analyse_multistep
from butcherflow.analysis.report import show
from butcherflow.methods.general_linear import GeneralLinear
from tests.test_published_glms import (
    DIMSIM,
    JACKIEWICZ_TRACOGNA_4,
    jackiewicz_tracogna_3,
    predictor_corrector,
    tsrk,
)

ROW = "real stability interval [-r, 0]: r"
KEYS = "AUBV"


def blocks(method: GeneralLinear) -> dict[str, list[list[Fraction]]]:
    """A, U, B, V of a rational declaration (its digits) as Fractions."""
    return {key: [[Fraction(str(x)) for x in row] for row in getattr(method, key)] for key in KEYS}


def numpy_end(parts: dict[str, list[list[Fraction]]], top: float = 4.0) -> float:
    """Where M(z) first has an eigenvalue outside |w| = 1 + 1e-9 going left from z = 0: a scan
    of numpy's eigenvalues at steps of top/4000, then bisection (independent of the Schur
    chain and of Φ)."""
    A, U, B, V = (np.array(parts[k], dtype=float) for k in KEYS)
    eye = np.eye(A.shape[0])

    def unstable(x: float) -> bool:
        M = V - x * B @ np.linalg.solve(eye + x * A, U)
        return bool(np.abs(np.linalg.eigvals(M)).max() > 1 + 1e-9)

    return first_unstable(unstable, top)


def floats(method: GeneralLinear) -> GeneralLinear:
    """The same method with every entry a Python float (exact zeros stay exact)."""

    def rows(key: str) -> list[list[Any]]:
        return [[float(x) if x != 0 else 0 for x in row] for row in getattr(method, key)]

    return GeneralLinear(*(rows(k) for k in KEYS), start=method.start_text(), name="floats")


def typed(method: GeneralLinear, digits: int) -> GeneralLinear:
    """Every entry that is not an integer typed as a decimal of `digits` significant digits;
    integers (the ones and zeros that make V u = u and U u = 1) stay exact."""

    def rows(key: str) -> list[list[Any]]:
        return [
            [x if sympy.sympify(x).is_Integer else f"{sympy.N(x, digits)}" for x in row]
            for row in getattr(method, key)
        ]

    return GeneralLinear(*(rows(k) for k in KEYS), start=method.start_text(), name="typed")


def neighbour(method: GeneralLinear, moves: list[Fraction]) -> dict[str, list[list[Fraction]]]:
    """The exact method at digits + rounding·move for each entry (moves in [−1, 1], in the
    order of `method.numbers`; exact entries stay)."""
    parts = blocks(method)
    for (name, number), move in zip(method.numbers.keyed(), moves, strict=False):
        i, j = (int(k) for k in re.findall(r"\d+", name))
        parts[name[0]][i][j] += number.rounding * move
    return parts


def band(report: GeneralLinearReport) -> tuple[float, float]:
    assert report.real_enclosure is not None, report.notes
    return report.real_enclosure


# -- multistep and Runge-Kutta methods as general linear methods -------------------------------


@pytest.mark.parametrize(
    "name",
    [*(f"adams-bashforth-{k}" for k in (2, 3, 4)), *(f"bdf-{k}" for k in range(2, 7))],
)
def test_a_float_multistep_method_as_a_glm_has_the_multistep_band(name: str) -> None:
    exact = bf.catalog[name]
    method = bf.LinearMultistep([float(x) for x in exact.alpha], [float(x) for x in exact.beta])
    multistep = analyse_multistep(method)
    glm = analyse_general_linear(GeneralLinear.from_method(method), max_order=1)
    lo, hi = band(glm)
    m_lo, m_hi = multistep.real_enclosure or (None, None)
    assert same_ends([lo, m_lo]) and same_ends([hi, m_hi])
    assert show(dict(glm.rows())[ROW]) == show(dict(multistep.rows())[ROW])
    assert lo <= analyse_multistep(exact).real_interval <= hi
    assert any("enclosed over every method within the precision" in n for n in glm.notes)


@pytest.mark.parametrize("name", ["heun", "rk4", "ssprk-3", "ralston-3", "gauss-legendre-4"])
def test_a_float_runge_kutta_method_as_a_glm_agrees_with_the_rk_band(name: str) -> None:
    exact = bf.catalog[name]
    method = bf.ButcherTableau(
        [[float(x) for x in row] for row in exact.A], [float(x) for x in exact.b]
    )
    rk = bf.check(method).stability
    glm = analyse_general_linear(GeneralLinear.from_method(method), max_order=1)
    lo, hi = band(glm)
    r_lo, r_hi = rk.real_enclosure or (None, None)
    assert same_ends([lo, r_lo]) and same_ends([hi, r_hi])
    end = bf.check(exact).stability.real_interval
    assert lo <= end <= hi and glm.real_interval == pytest.approx(end, rel=1e-12)


# -- coarse declarations and their exact neighbours --------------------------------------------

TSRK_3 = tsrk(*jackiewicz_tracogna_3(sympy.Rational(3, 4), sympy.Rational(1, 3)))


PUBLISHED = {
    "ab1-am2-PECE": predictor_corrector(1, 2, 1, True),
    "ab3-am4-PECE": predictor_corrector(3, 4, 1, True),
    "ab4-am4-PE(C)": predictor_corrector(4, 4, 1, False),
    "ab4-am5-PECE": predictor_corrector(4, 5, 1, True),
    "ab4-am4-PECE": predictor_corrector(4, 4, 1, True),
    "ab2-am4-P(EC)^2E": predictor_corrector(2, 4, 2, True),
    "tsrk-3": TSRK_3,
    "tsrk-4": tsrk(*JACKIEWICZ_TRACOGNA_4),
    "dimsim-2": GeneralLinear(**DIMSIM, start=["y(x)", "y(x - h)"]),
}


@pytest.fixture(scope="module")
def coarse() -> tuple[GeneralLinear, GeneralLinearReport]:
    # θ = 5/19 and 1 − θ typed "0.263", "0.737" (and d, 1 − d alike) still sum to 1 exactly:
    # the digits meet preconsistency, and every neighbour with V u = u is enclosed
    method = typed(TSRK_3, 3)
    return method, analyse_general_linear(method, max_order=1)


def test_a_three_digit_glm_has_a_band_holding_its_neighbours_ends(
    coarse: tuple[GeneralLinear, GeneralLinearReport],
) -> None:
    method, report = coarse
    lo, hi = band(report)
    assert report.preconsistent is True and hi - lo < 0.05 * report.real_interval
    assert numpy_end(blocks(method)) == pytest.approx(report.real_interval, abs=1e-6)
    assert lo <= numpy_end(blocks(TSRK_3)) <= hi  # the exact method lies inside the rounding
    text = dict(report.rows())[ROW]
    assert text == (
        f"{report.real_interval:.6g} (end between {lo:.6g} and {hi:.6g} within the precision)"
    )
    assert report.to_dict()["real_interval_enclosure"] == [lo, hi]
    assert any(
        "whose V has the eigenvalue 1" in n and "preconsistency, which the digits meet" in n
        for n in report.notes
    )
    assert not any("digits spell" in n for n in report.notes)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(-1000, 1000), min_size=20, max_size=20))
def test_exact_neighbours_of_a_coarse_glm_end_inside_its_band(
    coarse: tuple[GeneralLinear, GeneralLinearReport], moves: list[int]
) -> None:
    # Each entry moved independently inside its rounding (U's and V's θ, d apart: their sums
    # need not stay 1, and such a neighbour may lack V u = u, yet it is in the box): its end,
    # read from numpy's eigenvalues, lies in the band.
    method, report = coarse
    lo, hi = band(report)
    parts = neighbour(method, [Fraction(m, 1000) for m in moves])
    assert lo - 1e-7 <= numpy_end(parts) <= hi + 1e-7


@pytest.mark.parametrize(
    ("name", "digits"),
    [("tsrk-3", 4), ("ab1-am2-PECE", 3), ("ab4-am4-PECE", 3), ("ab4-am4-PECE", 4)],
)
def test_coarse_glms_hold_the_exact_method_and_the_corners_of_their_box(
    name: str, digits: int
) -> None:
    exact = PUBLISHED[name]
    method = typed(exact, digits)
    report = analyse_general_linear(method, max_order=1)
    lo, hi = band(report)
    assert lo <= numpy_end(blocks(exact)) + 1e-7 and numpy_end(blocks(exact)) <= hi + 1e-7
    for corner in (1, -1):  # every numeric entry at one end of its rounding, then alternating
        for sign in (1, -1):
            moves = [Fraction(corner * sign**k) for k in range(len(method.numbers.flat))]
            assert lo - 1e-7 <= numpy_end(neighbour(method, moves)) <= hi + 1e-7


def test_a_glm_whose_preconsistency_the_digits_leave_open_is_undetermined() -> None:
    # V u = u misses by 0.01 against a rounding of 0.055: neighbours need not have the
    # eigenvalue 1, and some have one outside the disc, so no end is shared. The digits' own
    # V has the eigenvalues 0.995 and -0.005: their method reads an end.
    V = [["0.49", "0.5"], ["0.5", "0.5"]]
    method = GeneralLinear(DIMSIM["A"], DIMSIM["U"], DIMSIM["B"], V, start=["y(x)", "y(x - h)"])
    report = analyse_general_linear(method, max_order=1)
    assert report.preconsistent is None
    assert report.real_interval is None and report.real_enclosure is None
    assert dict(report.rows())[ROW] == "undetermined (see notes)"
    assert any(
        "real stability interval undetermined: the digits do not meet preconsistency" in n
        for n in report.notes
    )


# -- published general linear methods in floats ------------------------------------------------


@pytest.mark.parametrize("name", list(PUBLISHED))
def test_published_glms_in_floats_keep_their_exact_rows(name: str) -> None:
    exact = analyse_general_linear(PUBLISHED[name], max_order=1)
    report = analyse_general_linear(floats(PUBLISHED[name]), max_order=1)
    assert show(dict(report.rows())[ROW]) == show(dict(exact.rows())[ROW])
    lo, hi = band(report)
    assert lo <= exact.real_interval <= hi
    # exact declarations are untouched: their reading, no enclosure
    assert exact.real_enclosure is None and exact.to_dict()["real_interval_enclosure"] is None
    assert not any("glm_enclosure" in n or "digits" in n for n in exact.notes)


@pytest.mark.parametrize(("case", "end"), [((2, 3, 1, True), 2.4), ((2, 4, 1, True), 8 / 3)])
def test_an_end_at_a_double_eigenvalue_on_the_circle_is_held_if_not_to_six_digits(
    case: tuple[int, int, int, bool], end: float
) -> None:
    # Two eigenvalues of M(z) meet at w = 1 at these ends: the last Schur step's margin
    # shrinks as the square of the distance to the end, and in floats the band stops about
    # 1e-4 short of it (before the ratio p₀/pₙ was enclosed in mean-value form, 1e-2). Still
    # every method within the precision ends inside it, the exact method among them.
    exact = predictor_corrector(*case)
    assert numpy_end(blocks(exact)) == pytest.approx(end, abs=1e-6)
    report = analyse_general_linear(floats(exact), max_order=1)
    lo, hi = band(report)
    assert lo <= end <= hi and hi - lo < 1e-3


def test_a_float_pece_pair_whose_end_is_an_exact_rational_root_is_read_at_once() -> None:
    # AB1 predicting, AM4 correcting twice, in floats: the interval's end 8/3 is an exact root
    # of the breakpoint polynomial, isolated as (8/3, 8/3) right after (5/2, 8/3); refining the
    # latter never moved its 8/3, and the exact reading looped for ever (> 300 s, killed)
    import signal

    def stuck(signum: int, frame: Any) -> None:
        raise TimeoutError("the exact reading of the digits' interval did not finish in 120 s")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(120)
    try:
        report = analyse_general_linear(floats(predictor_corrector(1, 4, 2, False)), max_order=1)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert report.real_interval == pytest.approx(8 / 3, rel=1e-12)
    assert report.real_enclosure is not None
    low, high = report.real_enclosure
    assert low <= 8 / 3 <= high
