"""bf.design.stability_polynomial: optimal stability polynomials, exact, their steps proved.

Closed forms (first order on the negative real axis: h = 2s², the shifted Chebyshev polynomial;
s = p, the Taylor polynomial: √3 and 2√2 on the imaginary axis) and the values RK-Opt's own
tests assert (polyopt/test_polyopt.m: h = s − 1 on the imaginary axis at order 1, h = s on the
disk |z + 1| ≤ 1 at order 1 and s − 1 at order 2). The exact proof is checked against an
independent float evaluation (hypothesis) and against the Chebyshev polynomial's known interval.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.design import (
    Disk,
    Eigenvalues,
    ImaginaryInterval,
    RealInterval,
    parse_spectrum,
    stability_polynomial,
)


def shifted_chebyshev(s: int) -> list[Fraction]:
    """T_s(1 + z/s²), ascending coefficients (sympy's Chebyshev, not ours)."""
    z = sympy.Symbol("z")
    poly = sympy.Poly(sympy.chebyshevt(s, 1 + z / s**2), z)
    return [Fraction(str(c)) for c in reversed(poly.all_coeffs())]


def taylor(p: int) -> list[Fraction]:
    return [Fraction(1, math.factorial(k)) for k in range(p + 1)]


@pytest.mark.parametrize("s", [2, 3, 5])
def test_the_proof_accepts_the_shifted_chebyshev_polynomial_exactly_up_to_two_s_squared(s: int):
    a, spectrum = shifted_chebyshev(s), RealInterval()
    assert spectrum.stable(a, Fraction(2 * s * s))
    assert not spectrum.stable(a, Fraction(2 * s * s) * (1 + Fraction(1, 10**9)))


@pytest.mark.parametrize("p,bound", [(3, math.sqrt(3)), (4, math.sqrt(8))])
def test_the_proof_finds_the_taylor_polynomials_imaginary_interval(p: int, bound: float):
    below = Fraction(bound).limit_denominator(10**12) - Fraction(1, 10**10)
    assert ImaginaryInterval().stable(taylor(p), below)
    assert not ImaginaryInterval().stable(taylor(p), below + Fraction(1, 10**9))


@pytest.fixture(scope="module")
def real_first_order() -> bf.design.StabilityPolynomial:
    return stability_polynomial(3, 1, "real:-1,0")


def test_first_order_on_the_real_axis_reaches_two_s_squared(real_first_order):
    found = real_first_order
    assert 18 * (1 - 1e-4) <= found.step <= 18  # never above the optimum: it is a proof
    assert found.coefficients[:2] == (1, 1)
    assert found.every_smaller
    assert RealInterval().stable(list(found.coefficients), found.step)


def test_the_designed_polynomial_is_near_the_chebyshev_one(real_first_order):
    ours = np.array([float(c) for c in real_first_order.coefficients])
    theirs = np.array([float(c) for c in shifted_chebyshev(3)])
    assert np.abs(ours - theirs).max() < 1e-3


@pytest.mark.parametrize(
    "s,p,spectrum,best",
    [
        (5, 1, "imag:1", 4.0),  # RK-Opt: s − 1 on the imaginary axis
        (4, 1, "disk:-1,1", 4.0),  # RK-Opt: s on the disk at order 1
        (5, 2, "disk:-1,1", 4.0),  # RK-Opt: s − 1 on the disk at order 2
        (3, 3, "imag:1", math.sqrt(3)),  # no freedom: the Taylor polynomial's interval
        (4, 4, "real:-1,0", 2.785293563405282),  # RK4's real stability interval
    ],
)
def test_published_optima_are_met_and_never_exceeded(s, p, spectrum, best):
    found = stability_polynomial(s, p, spectrum)
    assert best * (1 - 1e-4) <= float(found.step) <= best * (1 + 1e-12)
    assert all(found.coefficients[k] == Fraction(1, math.factorial(k)) for k in range(p + 1))


def test_an_eigenvalue_set_is_proved_at_its_step():
    found = stability_polynomial(4, 2, "eigenvalues:-1,-2+1j,-0.5+3j")
    assert not found.every_smaller
    values = [complex(-1), complex(-2, 1), complex(-0.5, 3)]
    assert all(abs(found(float(found.step) * z)) <= 1 + 1e-12 for z in values)
    assert 0.999 < found.ratio <= 1.0 + 1e-9


coefficient = st.fractions(min_value=-1, max_value=1, max_denominator=64)


@settings(max_examples=40, deadline=None)
@given(
    extra=st.lists(coefficient, min_size=1, max_size=3),
    h=st.fractions(min_value=Fraction(1, 8), max_value=6, max_denominator=16),
    kind=st.sampled_from(["real:-1,0", "imag:1", "disk:-1,1"]),
)
def test_the_exact_proof_agrees_with_a_dense_float_evaluation(extra, h, kind):
    a = [Fraction(1), Fraction(1), *[c / 4 for c in extra]]
    spectrum = parse_spectrum(kind)
    z = float(h) * spectrum.samples(4001)
    if kind.startswith("disk"):  # the whole boundary circle, both halves
        z = np.concatenate([z, z.conj()])
    worst = np.abs(np.polyval([float(c) for c in reversed(a)], z)).max()
    proved = spectrum.stable(a, h)
    if worst > 1 + 1e-9:
        assert not proved
    if proved:
        assert worst <= 1 + 1e-12


@pytest.mark.parametrize(
    "call,fragment",
    [
        (lambda: stability_polynomial(3, 4, "real:-1,0"), "matches e^z to order 3 at most"),
        (lambda: RealInterval(0, 0), "empty"),
        (lambda: RealInterval(-math.inf, 0), "unbounded"),
        (lambda: RealInterval(-1, 0.5), "right half-plane"),
        (lambda: Disk(-1, 2), "right half-plane"),
        (lambda: Disk(-1, 0), "empty"),
        (lambda: ImaginaryInterval(0), "empty"),
        (lambda: Eigenvalues(()), "empty"),
        (lambda: Eigenvalues((0,)), "point 0"),
        (lambda: Eigenvalues((1 + 1j,)), "right half-plane"),
        (lambda: parse_spectrum("ring:1"), "unknown spectrum"),
        (lambda: stability_polynomial(1, 1, "imag:1"), "no stable step"),
        (lambda: stability_polynomial(0, 1, "real:-1,0"), "stages must be"),
    ],
)
def test_bad_input_is_one_clear_line(call, fragment):
    with pytest.raises(bf.DesignError) as info:
        call()
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)
