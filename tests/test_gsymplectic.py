"""G-symplecticity of general linear methods (`analysis/general_linear/symplectic.py`), against
methods and witnesses typed from the papers that published them."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.bseries.verdicts import symplectic
from butcherflow.analysis.budget import NOT_DECIDED
from butcherflow.analysis.general_linear.symplectic import g_symplectic


def g4123(a33: str = "1/2") -> bf.GeneralLinear:
    """Butcher and Imran's fourth-order G-symplectic method G4123 (BIT 55, 2015), as printed
    in Butcher, *B-Series* (Springer 2021), §7.5: s = 3, r = 2, from the ansatz (7.5 a) with
    g = −1, x₁ = 1, x₂ = −1, x₃ = −1/5 and b = (1/3, −3/8, 25/24), based on D = diag(b) and
    G = diag(1, g). The second input starts as ζ with ζ(τ) = 1/4 (Table 19), its first term."""
    return bf.GeneralLinear(
        A=[[0, 0, 0], ["2/3", 0, 0], ["2/5", "-3/10", a33]],
        U=[[1, 1], [1, -1], [1, "-1/5"]],
        B=[["1/3", "-3/8", "25/24"], ["1/3", "3/8", "-5/24"]],
        V=[[1, 0], [0, -1]],
        start=["y(x)", "1/4*h*f(x)"],
        name="g4123",
    )


def gauss_pair(sign: int) -> bf.GeneralLinear:
    """The methods P (sign = 1) and N (sign = −1) of Butcher, Habib, Hill and Norton (SIAM J.
    Numer. Anal. 52, 2014), as printed in Butcher, *B-Series* (2021), §7.4 "Two methods based
    on Gaussian quadrature": they differ only in the sign of √3; P is G-symplectic with
    G = diag(1, (3 + 2√3)/3) and D = diag(1/2, 1/2)."""
    r3 = "sqrt(3)" if sign > 0 else "(-sqrt(3))"
    diagonal = f"(3 + {r3})/6"
    u = f"(3 + 2*{r3})/3"
    return bf.GeneralLinear(
        A=[[diagonal, 0], [f"-{r3}/3", diagonal]],
        U=[[1, f"-{u}"], [1, u]],
        B=[["1/2", "1/2"], ["1/2", "-1/2"]],
        V=[[1, 0], [0, -1]],
        name="P" if sign > 0 else "N",
    )


def glm(name: str) -> bf.GeneralLinear:
    return bf.GeneralLinear.from_method(bf.catalog[name])


def test_g4123_has_the_published_g_and_d() -> None:
    found = g_symplectic(g4123())
    b = tuple(sympy.Rational(x) for x in ("1/3", "-3/8", "25/24"))
    assert (found.holds, found.G, found.D) == (True, ((1, 0), (0, -1)), b)


@pytest.mark.parametrize("sign", [1, -1])
def test_butcher_habib_hill_norton_p_and_n_have_the_published_g(sign: int) -> None:
    found = g_symplectic(gauss_pair(sign))
    assert found.G is not None and found.D is not None
    published = (1 + sign * 2 * sympy.sqrt(3) / 3, (sympy.Rational(1, 2),) * 2)
    assert (sympy.simplify(found.G[1][1] - published[0]), found.D) == (0, published[1])


@pytest.mark.parametrize("name", ["gauss-legendre-2", "gauss-legendre-3", "implicit-midpoint"])
def test_symplectic_runge_kutta_is_g_symplectic_with_r_1(name: str) -> None:
    # written as a GLM, a tableau has G = g and D = g·diag(b): G-symplectic iff M = 0
    found = g_symplectic(glm(name))
    expected = (((1,),), tuple(bf.catalog[name].b))
    assert expected == (found.G, found.D)


def test_explicit_runge_kutta_fails_at_the_stage_equation() -> None:
    found = g_symplectic(glm("rk4"))
    assert (found.holds, found.failing) == (False, "DA + AᵀD = BᵀGB")


@pytest.mark.parametrize("name", ["adams-bashforth-2", "bdf-2"])
def test_multistep_forms_fail_at_g_equals_vt_g_v(name: str) -> None:
    # V has the eigenvalue 0 (the oldest derivative is dropped): det G = det(V)² det G = 0
    found = g_symplectic(glm(name))
    assert (found.holds, found.failing) == (False, "G = VᵀGV")


def test_a_perturbed_entry_loses_it() -> None:
    assert g_symplectic(g4123(a33="51/100")).holds is False


@pytest.mark.parametrize("digits", [3, 5])
def test_digits_that_cannot_decide_are_undetermined(digits: int) -> None:
    # Gauss-Legendre 3 typed to a few decimals: the digits' own method is not G-symplectic, and
    # the precision holds G-symplectic methods and others alike
    exact = bf.catalog["gauss-legendre-3"]
    A = [[f"{float(x):.{digits}f}" for x in row] for row in exact.A]
    b = [f"{float(x):.{digits}f}" for x in exact.b]
    method = bf.GeneralLinear(A=A, U=[[1]] * 3, B=[b], V=[[1]], name="rounded")
    assert g_symplectic(method).holds is None


def test_floats_of_gauss_are_g_symplectic_within_their_precision() -> None:
    exact = bf.catalog["gauss-legendre-3"]
    A = [[float(x) for x in row] for row in exact.A]
    method = bf.GeneralLinear(
        A=A, U=[[1]] * 3, B=[[float(x) for x in exact.b]], V=[[1]], name="floats"
    )
    assert g_symplectic(method).holds is True


def test_floats_of_p_are_g_symplectic_within_their_precision() -> None:
    # the digits' own method is not G-symplectic (√3 rounded); a witness found in floats
    # among the exact solutions of G = VᵀGV and DU = BᵀGV meets every equation at the precision
    exact = gauss_pair(1)
    method = bf.GeneralLinear(
        *([[float(x) for x in row] for row in m] for m in (exact.A, exact.U, exact.B, exact.V)),
        name="floats",
    )
    assert g_symplectic(method).holds is True


def test_floats_of_an_explicit_method_fail_for_every_method_within_the_precision() -> None:
    rk4 = bf.catalog["rk4"]
    A = [[float(x) for x in row] for row in rk4.A]
    method = bf.GeneralLinear(
        A=A, U=[[1.0]] * 4, B=[[float(x) for x in rk4.b]], V=[[1.0]], name="floats"
    )
    assert g_symplectic(method).holds is False


def test_the_report_has_a_g_symplectic_row_with_the_proof() -> None:
    row = dict(bf.check(g4123()).geometry_rows())["G-symplectic"]
    assert row.startswith("yes (G = [[1, 0], [0, -1]], D = diag(1/3, -3/8, 25/24)")


def test_the_row_respects_the_time_budget() -> None:
    row = dict(bf.check(g4123(), time_budget=0.0).geometry_rows())["G-symplectic"]
    assert row == NOT_DECIDED


def test_symplectic_answers_a_general_linear_method() -> None:
    assert symplectic(gauss_pair(1))[0] is True


def test_a_nonsingular_g_hidden_from_the_first_trials_is_found() -> None:
    # G(t₀, t₁) = diag(t₁ − t₀, t₁ − 2t₀, t₁ − 4t₀): singular at the weights (1, 1), (1, 2) and
    # (1, 4) tried first, nonsingular at t = (0, 1): the polynomial det G(t) finds it
    from sympy import QQ

    from butcherflow.analysis.budget import Deadline
    from butcherflow.analysis.general_linear.symplectic_equations import _nonsingular

    # the unknowns of a symmetric 3×3 G, row by row above the diagonal: 00 01 02 11 12 22
    first = [QQ(x) for x in (-1, 0, 0, -2, 0, -4)]
    second = [QQ(x) for x in (1, 0, 0, 1, 0, 1)]
    assert _nonsingular(QQ, [first, second], 3, Deadline.never()) == second


def test_floats_of_a_multistep_form_fail_at_g_equals_vt_g_v() -> None:
    # det V = 0 for every method within the precision, and det G = det(V)² det G
    ab2 = bf.LinearMultistep(alpha=[0, -1, 1], beta=[-0.5, 1.5, 0], name="ab2-floats")
    found = g_symplectic(bf.GeneralLinear.from_method(ab2))
    assert (found.holds, found.failing) == (False, "G = VᵀGV")


def ansatz(b: list[Fraction], x: list[Fraction], g: Fraction, bump: Fraction) -> bf.GeneralLinear:
    """Butcher's ansatz (7.5 a) of *B-Series* (2021), §7.5: for any b, x and g it is
    G-symplectic with D = diag(b), G = diag(1, g); `bump` is added to a₃₁."""
    A = [
        [b[j] * (1 + g * x[i] * x[j]) / (2 if i == j else 1) if j <= i else 0 for j in range(3)]
        for i in range(3)
    ]
    A[2][0] += bump
    return bf.GeneralLinear(
        A=[[str(v) for v in row] for row in A],
        U=[["1", str(-g * x[i])] for i in range(3)],
        B=[[str(v) for v in b], [str(b[i] * x[i]) for i in range(3)]],
        V=[[1, 0], [0, -1]],
        name="ansatz",
    )


def rationals(nonzero: bool = False) -> st.SearchStrategy[Fraction]:
    found = st.builds(Fraction, st.integers(-6, 6), st.integers(1, 5))
    return found.filter(bool) if nonzero else found


@settings(max_examples=15, deadline=None)
@given(
    st.lists(rationals(nonzero=True), min_size=3, max_size=3),
    st.lists(rationals(), min_size=3, max_size=3),
    rationals(nonzero=True),
)
def test_random_member_of_the_ansatz_and_its_perturbation(
    b: list[Fraction], x: list[Fraction], g: Fraction
) -> None:
    found = g_symplectic(ansatz(b, x, g, Fraction(0))).holds
    bumped = g_symplectic(ansatz(b, x, g, Fraction(1, 7))).holds
    assert (found, bumped) == (True, False)


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 7), st.sampled_from(["gauss-legendre-2", "gauss-legendre-3"]))
def test_numeric_digits_never_gain_g_symplecticity(digits: int, name: str) -> None:
    # digits too coarse to decide may only be called G-symplectic when the method they spell
    # is exactly (M = BA + AᵀB − bbᵀ = 0 for its digits, r = 1)
    exact = bf.catalog[name]
    A = [[f"{float(v):.{digits}f}" for v in row] for row in exact.A]
    b = [f"{float(v):.{digits}f}" for v in exact.b]
    s = len(b)
    Af, bf_ = [[Fraction(v) for v in row] for row in A], [Fraction(v) for v in b]
    spelled = all(
        bf_[i] * Af[i][j] + bf_[j] * Af[j][i] - bf_[i] * bf_[j] == 0
        for i in range(s)
        for j in range(s)
    )
    method = bf.GeneralLinear(A=A, U=[[1]] * s, B=[b], V=[[1]], name="rounded")
    assert g_symplectic(method).holds is not True or spelled
