"""Linear and algebraic stability (`analysis/stability.py`): published values, exact verdicts in
algebraic fields, the degree ≤ s rule for numeric tableaux, algebraic stability beyond 8 stages.

Tableaux are written inline unless a test compares with NodePy on a catalog entry.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.polys.domains import QQ

import butcherflow as bf
from butcherflow.analysis.exact import rational_roots, real_roots
from butcherflow.analysis.runge_kutta import algebraic_stability
from butcherflow.analysis.runge_kutta import stability as stab
from butcherflow.analysis.runge_kutta.stability import algebraically_stable, stability_function

z = sympy.Symbol("z")
RK4_A = [[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]]
RK4 = bf.ButcherTableau(RK4_A, ["1/6", "1/3", "1/3", "1/6"], name="rk4")
DOPRI5 = bf.ButcherTableau(
    [
        [0, 0, 0, 0, 0, 0, 0],
        ["1/5", 0, 0, 0, 0, 0, 0],
        ["3/40", "9/40", 0, 0, 0, 0, 0],
        ["44/45", "-56/15", "32/9", 0, 0, 0, 0],
        ["19372/6561", "-25360/2187", "64448/6561", "-212/729", 0, 0, 0],
        ["9017/3168", "-355/33", "46732/5247", "49/176", "-5103/18656", 0, 0],
        ["35/384", 0, "500/1113", "125/192", "-2187/6784", "11/84", 0],
    ],
    ["35/384", 0, "500/1113", "125/192", "-2187/6784", "11/84", 0],
    name="dopri5",
)
# Butcher (1964), "On Runge-Kutta processes of high order", the 7-stage sixth-order method in
# QQ<√5> (c = 0, (5 ∓ √5)/10, ..., 1).
R5 = "sqrt(5)"
BUTCHER6 = bf.ButcherTableau(
    [
        [0] * 7,
        [f"1/2 - {R5}/10", 0, 0, 0, 0, 0, 0],
        [f"-{R5}/10", f"1/2 + {R5}/5", 0, 0, 0, 0, 0],
        [f"7*{R5}/20 - 3/4", f"{R5}/4 - 1/4", f"3/2 - 7*{R5}/10", 0, 0, 0, 0],
        [f"1/12 - {R5}/60", 0, "1/6", f"7*{R5}/60 + 1/4", 0, 0, 0],
        [f"{R5}/60 + 1/12", 0, f"3/4 - 5*{R5}/12", "1/6", f"3*{R5}/10 - 1/2", 0, 0],
        ["1/6", 0, f"25*{R5}/12 - 55/12", f"-7*{R5}/12 - 25/12", f"5 - 2*{R5}", f"5/2 + {R5}/2", 0],
    ],
    ["1/12", 0, 0, 0, "5/12", "5/12", "1/12"],
    name="butcher-6",
)
S3 = "sqrt(3)"
GAUSS2_A = [["1/4", f"1/4 - {S3}/6"], [f"1/4 + {S3}/6", "1/4"]]
GAUSS2 = bf.ButcherTableau(GAUSS2_A, ["1/2", "1/2"], name="gauss-legendre-2")
S6 = "sqrt(6)"
RADAU_IIA3 = bf.ButcherTableau(
    [
        [f"11/45 - 7*{S6}/360", f"37/225 - 169*{S6}/1800", f"-2/225 + {S6}/75"],
        [f"37/225 + 169*{S6}/1800", f"11/45 + 7*{S6}/360", f"-2/225 - {S6}/75"],
        [f"4/9 - {S6}/36", f"4/9 + {S6}/36", "1/9"],
    ],
    [f"4/9 - {S6}/36", f"4/9 + {S6}/36", "1/9"],
    name="radau-iia-3",
)
LOBATTO_IIIA3 = bf.ButcherTableau(
    [[0, 0, 0], ["5/24", "1/3", "-1/24"], ["1/6", "2/3", "1/6"]],
    ["1/6", "2/3", "1/6"],
    name="lobatto-iiia-3",
)
LOBATTO_IIIC3 = bf.ButcherTableau(
    [["1/6", "-1/3", "1/6"], ["1/6", "5/12", "-1/12"], ["1/6", "2/3", "1/6"]],
    ["1/6", "2/3", "1/6"],
    name="lobatto-iiic-3",
)


def theta_method(theta: str) -> bf.ButcherTableau:
    """y₁ = y₀ + h((1 − θ)f₀ + θf₁) as a 2-stage tableau: R = (1 + (1 − θ)z)/(1 − θz)."""
    rest = f"1 - {theta}"
    return bf.ButcherTableau([[0, 0], [rest, theta]], [rest, theta], name="theta")


def composed(A: list[list[str]], b: list[str], steps: int) -> bf.ButcherTableau:
    """`steps` steps of size h/steps of (A, b), as one tableau of steps·s stages."""
    s = len(b)
    a = [[sympy.sympify(x) / steps for x in row] for row in A]
    w = [sympy.sympify(x) / steps for x in b]
    big = [[sympy.Integer(0)] * (steps * s) for _ in range(steps * s)]
    for k in range(steps):
        for i in range(s):
            for j in range(s):
                big[k * s + i][k * s + j] = a[i][j]
            for earlier in range(k):
                for j in range(s):
                    big[k * s + i][earlier * s + j] = w[j]
    return bf.ButcherTableau(big, w * steps, name="composed")


# -- published values -------------------------------------------------------------------------


def test_rk4_intervals_and_function() -> None:
    f = stability_function(RK4, 4)
    assert sympy.expand(f.expression - sum(z**k / math.factorial(k) for k in range(5))) == 0
    assert f.real_interval == pytest.approx(2.785293563405282, abs=1e-12)
    assert f.imaginary_interval == pytest.approx(math.sqrt(8), abs=1e-12)
    assert (f.a_stable, f.l_stable, f.assumed_order, f.notes) == (False, False, 0, [])


def test_dopri5_intervals() -> None:
    """Hairer-Nørsett-Wanner I, Fig. II.10.3: DOPRI5 reaches −3.3066 on the real axis."""
    f = stability_function(DOPRI5, 5)
    assert f.real_interval == pytest.approx(3.3065678926349, abs=1e-10)
    assert f.imaginary_interval == pytest.approx(0.99718900863, abs=1e-9)
    assert f.numerator.degree() == 6  # 7 stages, FSAL: the last stage does not enter R


def test_butcher_6_in_its_field() -> None:
    """QQ<√5> throughout: R has an irrational z⁷ coefficient; the interval ends are exact."""
    f = stability_function(BUTCHER6, 6)
    assert str(f.numerator.get_domain()) == "QQ<sqrt(5)>"
    top = f.numerator.all_coeffs()[0]
    assert sympy.simplify(top - (-1 - sympy.sqrt(5)) / 7200) == 0
    # |R(x)| = 1 at the end, |R(x)| < 1 just inside, > 1 just outside (60-digit evaluation)
    r = f.real_interval
    assert r is not None
    R = sympy.lambdify(z, f.expression, "mpmath")
    with mpmath.workdps(60):
        assert abs(abs(R(-mpmath.mpf(r))) - 1) < 1e-12
        assert abs(R(-mpmath.mpf(r) * (1 - 1e-9))) < 1 < abs(R(-mpmath.mpf(r) * (1 + 1e-9)))
    assert f.imaginary_interval == 0  # |R(iy)|² − 1 starts with +c·y⁸


def nodepy_method(rkm: Any, method: bf.ButcherTableau) -> Any:
    A = np.array([[float(x) for x in row] for row in method.A])
    return rkm.ExplicitRungeKuttaMethod(A, np.array([float(x) for x in method.b]))


@pytest.mark.parametrize("name", ["butcher-6", "lawson-6", "cooper-verner-8", "dormand-prince-5"])
def test_intervals_agree_with_nodepy(name: str) -> None:
    """NodePy's float-mode intervals of the same coefficients (its exact mode refuses radicals)."""
    rkm = pytest.importorskip("nodepy.runge_kutta_method")
    method = bf.catalog[name]
    assert isinstance(method, bf.ButcherTableau)
    theirs = nodepy_method(rkm, method)
    ours = stability_function(method, bf.check(method).order)
    assert ours.real_interval == pytest.approx(theirs.real_stability_interval(mode="float"))
    imaginary = theirs.imaginary_stability_interval(mode="float")
    assert ours.imaginary_interval == pytest.approx(imaginary, abs=1e-6)


def test_butcher_6_intervals_agree_with_nodepy_inline() -> None:
    rkm = pytest.importorskip("nodepy.runge_kutta_method")
    theirs = nodepy_method(rkm, BUTCHER6)
    ours = stability_function(BUTCHER6, 6)
    assert ours.real_interval == pytest.approx(theirs.real_stability_interval(mode="float"))
    assert ours.real_interval == pytest.approx(2.865620537277, abs=1e-9)


# -- implicit methods: A-, L- and algebraic stability ------------------------------------------


@pytest.mark.parametrize(
    ("method", "l_stable", "alg"),
    [
        (GAUSS2, False, True),
        (RADAU_IIA3, True, True),
        (LOBATTO_IIIA3, False, False),
        (LOBATTO_IIIC3, True, True),
        (theta_method("1"), True, True),
        (theta_method("3/4"), False, False),  # Lobatto-IIIA-like first stage: M₁₁ = −b₁²
        (theta_method("1/2"), False, False),  # the trapezoidal rule
    ],
    ids=lambda x: x.name if isinstance(x, bf.ButcherTableau) else str(x),
)
def test_a_stable_methods(method: bf.ButcherTableau, l_stable: bool, alg: bool) -> None:
    f = stability_function(method)
    assert f.a_stable is True
    assert f.l_stable is l_stable
    assert f.real_interval == f.imaginary_interval == math.inf
    assert algebraically_stable(method) is alg


def test_gauss_2_is_the_pade_approximant() -> None:
    f = stability_function(GAUSS2)
    expected = (1 + z / 2 + z**2 / 12) / (1 - z / 2 + z**2 / 12)
    assert sympy.simplify(f.expression - expected) == 0


def test_not_a_stable_below_theta_one_half() -> None:
    f = stability_function(theta_method("1/4"))
    assert f.a_stable is False and f.imaginary_interval == 0
    assert f.real_interval == pytest.approx(4.0)  # R(x) = −1 at x = −2/(1 − 2θ)


def test_a_pole_on_the_left_is_not_a_stable_even_with_unit_modulus_on_the_axis() -> None:
    """R(z) = (1 − z/2)/(1 + z/2): |R(iy)| = 1 for every y, but a pole at z = −2."""
    trapezoid_backwards = bf.ButcherTableau(
        [[0, 0], ["-1/2", "-1/2"]], ["-1/2", "-1/2"], name="backwards"
    )
    f = stability_function(trapezoid_backwards)
    assert sympy.simplify(f.expression - (1 - z / 2) / (1 + z / 2)) == 0
    assert f.imaginary_interval == math.inf
    assert f.a_stable is False and f.l_stable is False
    assert f.real_interval == 0  # R(x) > 1 just left of 0


def test_common_factors_cancel() -> None:
    """A stage nothing uses (b₂ = 0, column 2 of A zero) leaves a factor of N and D."""
    method = bf.ButcherTableau([["1/2", 0], [0, "1/3"]], [1, 0], name="unused-stage")
    f = stability_function(method)
    assert f.denominator.degree() == 1
    assert sympy.simplify(f.expression - (1 + z / 2) / (1 - z / 2)) == 0


# -- algebraic stability: exact, no cap on the stages --------------------------------------------


def test_algebraic_stability_beyond_eight_stages() -> None:
    """Five Gauss 2 steps (10 stages, QQ<√3>) are algebraically stable (M = 0 exactly); five
    Radau IIA steps (15 stages) too (M ⪰ 0, not 0); explicit Dormand-Prince 8 (13) is not."""
    assert algebraically_stable(composed(GAUSS2_A, ["1/2", "1/2"], 5)) is True
    radau_A = [[str(x) for x in row] for row in RADAU_IIA3.A]
    assert algebraically_stable(composed(radau_A, [str(x) for x in RADAU_IIA3.b], 5)) is True
    assert algebraically_stable(bf.catalog["dormand-prince-8"]) is False  # type: ignore[arg-type]


def test_gauss_5_is_algebraically_stable() -> None:
    gauss5 = bf.catalog["gauss-legendre-5"]
    assert isinstance(gauss5, bf.ButcherTableau) and gauss5.stages == 5
    assert algebraically_stable(gauss5) is True


def test_negative_weight_is_not_algebraically_stable() -> None:
    method = bf.ButcherTableau([["1/2", 0], [0, "1/2"]], ["3/2", "-1/2"], name="neg")
    assert algebraically_stable(method) is False


def test_families() -> None:
    """A family's R(z) may not depend on its parameter (every 2-stage order-2 method has
    1 + z + z²/2); when it does, no interval is claimed. Algebraic stability: no verdict."""
    rk2 = bf.ButcherTableau([[0, 0], ["g", 0]], ["1 - 1/(2*g)", "1/(2*g)"], name="rk2")
    f = stability_function(rk2)
    assert not f.symbolic and sympy.expand(f.expression - (1 + z + z**2 / 2)) == 0
    assert (f.real_interval, f.imaginary_interval, f.a_stable) == (2.0, 0.0, False)
    theta = bf.ButcherTableau([[0, 0], ["1 - t", "t"]], ["1 - t", "t"], name="theta")
    g = stability_function(theta)
    assert g.symbolic and g.real_interval is None and g.a_stable is None
    assert algebraically_stable(rk2) is None and algebraically_stable(theta) is None


def psd_by_minors(M: sympy.Matrix) -> bool:
    from itertools import combinations

    n = M.shape[0]
    return all(
        M.extract(list(idx), list(idx)).det() >= 0
        for size in range(1, n + 1)
        for idx in combinations(range(n), size)
    )


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(-3, 3), min_size=n, max_size=n), min_size=n, max_size=n
        )
    ),
    st.integers(0, 2),
)
def test_positive_semidefinite_agrees_with_principal_minors(
    rows: list[list[int]], rank: int
) -> None:
    """LDLᵀ with exact signs against the definition (every principal minor ≥ 0), on Gram
    matrices (PSD, often singular) and on symmetric matrices (often not)."""
    X = sympy.Matrix(rows)
    gram = X[:, :rank] * X[:, :rank].T if rank else X * X.T
    field = real_roots.RealField(QQ)
    for M in (gram, X + X.T):
        entries = [[QQ.convert(x) for x in M.row(i)] for i in range(M.shape[0])]
        assert algebraic_stability._positive_semidefinite(entries, field) == psd_by_minors(M)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=3, max_size=3))
def test_signs_in_an_algebraic_field_are_exact(coeffs: list[int]) -> None:
    """a + b·√2 + c·√3 in QQ<√2 + √3>: the sign agrees with 80-digit arithmetic, also for
    elements within 1e-18 of 0 (a Pell approximation of √2 plus a tiny rational)."""
    K = QQ.algebraic_field(sympy.sqrt(2) + sympy.sqrt(3))
    field = real_roots.RealField(K)
    a, b, c = coeffs
    close = 886731088897 * sympy.sqrt(2) - 1254027132096  # ≈ 8.0e-13
    for expr in (a + b * sympy.sqrt(2) + c * sympy.sqrt(3), close + sympy.Rational(a, 10**14)):
        expected = int(sympy.sign(sympy.N(expr, 80)))
        assert field.sign(K.from_sympy(sympy.expand(expr))) == expected


# -- numeric tableaux: R from the entries, degree ≤ s, pinned terms said out loud ------------------


def exact_coefficients(method: bf.ButcherTableau) -> list[sympy.Expr]:
    """1, bᵀ1, bᵀA1, ... computed with sympy matrices from the parsed (exact) entries."""
    A, b = sympy.Matrix(method.A), sympy.Matrix([method.b])
    vec, out = sympy.ones(method.stages, 1), [sympy.Integer(1)]
    for _ in range(method.stages):
        out.append((b * vec)[0])
        vec = A * vec
    return out


def test_rk4_in_floats_has_a_degree_4_function_from_its_entries() -> None:
    floats = bf.ButcherTableau(
        [[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]],
        [1 / 6, 1 / 3, 1 / 3, 1 / 6],
        name="rk4-floats",
    )
    for order in (None, 4, 8):  # a false high order must not add terms
        f = stability_function(floats, order)
        assert f.numerator.degree() == 4 and f.denominator.degree() == 0
        expected = exact_coefficients(floats)
        assert f.numerator.all_coeffs()[::-1] == expected
        shown = sympy.Poly(f.expression, z).all_coeffs()[::-1]  # printed with 17 digits
        assert [float(x) for x in shown] == pytest.approx([float(x) for x in expected], rel=1e-16)
    assert stability_function(floats, 4).imaginary_interval == pytest.approx(math.sqrt(8))


def test_numeric_intervals_take_the_low_terms_from_the_order_and_say_so() -> None:
    """RK4 with 16/17-digit decimal weights: Σb = 0.99999999999999996 and bᵀc = 1/2 − 4e-17
    make the y² term of |R(iy)|² − 1 equal to +1.6e-33, which alone collapses the imaginary
    interval to {0}; with the order-4 terms as order 4 makes them it is [−√8 i, √8 i]."""
    weights = ["0.1666666666666667", "0.3333333333333333", "0.3333333333333333"]
    method = bf.ButcherTableau(RK4_A, [*weights, "0.16666666666666666"], name="rk4-digits")
    raw = stability_function(method)
    assert raw.imaginary_interval == 0 and raw.assumed_order == 0 and raw.notes == []
    pinned = stability_function(method, 4)
    assert pinned.imaginary_interval == pytest.approx(math.sqrt(8), abs=1e-12)
    assert pinned.real_interval == pytest.approx(2.785293563405282, abs=1e-12)
    assert pinned.assumed_order == 4
    assert "degree ≤ 4" in pinned.notes[0] and "digits" in pinned.notes[0]
    assert pinned.expression == raw.expression  # the shown R(z) is the entries' own
    exact = stability_function(RK4, 4)
    assert exact.assumed_order == 0 and exact.notes == []  # exact tableaux: nothing assumed


def test_gauss_2_in_floats() -> None:
    """Exact M = 0: the digits cannot tell algebraic stability (None), but order 4 = 2s fixes
    |R(iy)| = 1 and the poles are robustly on the right: A-stable."""
    r3 = math.sqrt(3)
    floats = bf.ButcherTableau(
        [[0.25, 0.25 - r3 / 6], [0.25 + r3 / 6, 0.25]], [0.5, 0.5], name="gauss-2-floats"
    )
    f = stability_function(floats, 4)
    assert f.a_stable is True and f.real_interval == f.imaginary_interval == math.inf
    assert algebraically_stable(floats) is None
    rk4 = bf.ButcherTableau(RK4_A, [1 / 6, 1 / 3, 1 / 3, 1 / 6], name="rk4-floats")
    assert algebraically_stable(rk4) is False  # M₁₁ = −b₁² beyond any rounding


DYADIC = st.integers(-(2**20), 2**20).map(lambda k: k / 2**19)  # floats in [−2, 2]


@settings(max_examples=25, deadline=None)
@given(
    st.integers(2, 6).flatmap(
        lambda s: st.tuples(
            st.just(s),
            st.lists(DYADIC, min_size=s * s, max_size=s * s),
            st.lists(DYADIC, min_size=s, max_size=s),
            st.integers(0, 8),
        )
    )
)
def test_explicit_float_tableaux_have_degree_at_most_s(
    case: tuple[int, list[float], list[float], int],
) -> None:
    """Whatever order is claimed, R(z) of an explicit s-stage float tableau is bᵀAᵏ⁻¹1 from its
    entries, of degree ≤ s."""
    s, flat, b, order = case
    A = [[flat[i * s + j] if j < i else 0 for j in range(s)] for i in range(s)]
    method = bf.ButcherTableau(A, b, name="random")
    f = stability_function(method, order)
    assert f.numerator.degree() <= s and f.denominator.degree() == 0
    coeffs = f.numerator.all_coeffs()[::-1]
    expected = exact_coefficients(method)
    assert coeffs == expected[: len(coeffs)] and not any(expected[len(coeffs) :])


def test_fraction_entries_stay_exact() -> None:
    method = bf.ButcherTableau(
        [[0, 0], [Fraction(2, 3), 0]], [Fraction(1, 4), Fraction(3, 4)], name="fractions"
    )
    f = stability_function(method)
    assert f.numerator.all_coeffs() == [sympy.Rational(1, 2), 1, 1]
    assert f.assumed_order == 0


big_rationals = st.fractions(max_denominator=10**30).filter(lambda q: abs(q) < 10**6)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(-(10**40), 10**40), min_size=1, max_size=12),
    big_rationals,
    st.booleans(),
)
def test_integer_signs_in_flint_are_exact(coeffs: list[int], u: Fraction, at_a_root: bool) -> None:
    """`_integer_sign` (flint) is the sign of g(u) evaluated in exact rationals, including 0 at
    a root (g multiplied by (q·x − p))."""
    if at_a_root:  # (q·x − p)·g(x) has the root u = p/q
        q, p = u.denominator, u.numerator
        coeffs = [q * c - p * d for c, d in zip([*coeffs, 0], [0, *coeffs], strict=True)]
    value = sum(
        (Fraction(c) * u ** (len(coeffs) - 1 - k) for k, c in enumerate(coeffs)), Fraction(0)
    )
    expected = (value > 0) - (value < 0)
    poly = rational_roots.integer_poly(coeffs)
    assert rational_roots.integer_sign(poly, QQ(u.numerator, u.denominator)) == expected
    if at_a_root:
        assert expected == 0


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.data())
def test_explicit_numerator_in_flint_is_the_definition(s: int, data: st.DataObject) -> None:
    """Over QQ the coefficients bᵀAᵏ⁻¹1 come from flint matrices; they equal sympy's."""
    A = [[data.draw(big_rationals) if j < i else Fraction(0) for j in range(s)] for i in range(s)]
    b = [data.draw(big_rationals) for _ in range(s)]
    got = stab._explicit_numerator(
        [[QQ(x.numerator, x.denominator) for x in row] for row in A],
        [QQ(x.numerator, x.denominator) for x in b],
        QQ,
    )
    M, weights = sympy.Matrix(A), sympy.Matrix([b])
    expected = 1 + sum(
        (z**k * (weights * M ** (k - 1) * sympy.ones(s, 1))[0] for k in range(1, s + 1)),
        sympy.S.Zero,
    )
    assert sympy.expand(sympy.Poly(got, z).as_expr() - expected) == 0


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 5), st.data())
def test_explicit_numerator_in_a_number_field_is_the_definition(
    s: int, data: st.DataObject
) -> None:
    """Over QQ<√6> the coefficients bᵀAᵏ⁻¹1 come from flint polynomials in the generator."""
    K = QQ.algebraic_field(sympy.sqrt(6))

    def draw() -> sympy.Expr:
        p, q = data.draw(big_rationals), data.draw(big_rationals)
        return sympy.Rational(p.numerator, p.denominator) + sympy.Rational(
            q.numerator, q.denominator
        ) * sympy.sqrt(6)

    A = [[draw() if j < i else sympy.S.Zero for j in range(s)] for i in range(s)]
    b = [draw() for _ in range(s)]
    got = stab._explicit_numerator(
        [[K.from_sympy(x) for x in row] for row in A], [K.from_sympy(x) for x in b], K
    )
    M, weights = sympy.Matrix(A), sympy.Matrix([b])
    expected = 1 + sum(
        (z**k * (weights * M ** (k - 1) * sympy.ones(s, 1))[0] for k in range(1, s + 1)),
        sympy.S.Zero,
    )
    as_expr = sum((K.to_sympy(c) * z**k for k, c in enumerate(got[::-1])), sympy.S.Zero)
    assert sympy.expand(as_expr - expected) == 0


# -- numeric tableaux: verdicts the digits cannot decide are undetermined, never "no" -------------


def rounded(method: bf.ButcherTableau, digits: int) -> bf.ButcherTableau:
    """`method` with every nonzero entry as a decimal string of `digits` significant digits."""

    def text(x: sympy.Expr) -> str:
        return "0.0" if x == 0 else format(float(sympy.N(x, 40)), f".{digits}g")

    return bf.ButcherTableau(
        [[text(x) for x in row] for row in method.A],
        [text(x) for x in method.b],
        name=f"{method.name}-{digits}",
    )


@pytest.mark.parametrize("method", [RADAU_IIA3, LOBATTO_IIIC3], ids=lambda m: m.name)
def test_coarse_digits_leave_a_and_l_stability_undetermined(method: bf.ButcherTableau) -> None:
    """At eight digits only order ≤ 1 is decided. With the terms of degree ≤ 1 of |R(iy)|² − 1
    from the order, the y² term is rounding and made the report say 'A-stable no, imaginary
    interval none' for these A- and L-stable methods; with the terms of order 4 or 5 they are
    A-stable. The digits cannot tell: undetermined, in the rows, the JSON and a note."""
    report = bf.check(rounded(method, 8))
    assert report.order_is_lower_bound and report.order <= 1
    s = report.stability
    assert s.undetermined and s.a_stable is None and s.l_stable is None
    assert s.imaginary_interval is None and s.real_interval in (None, math.inf)
    rows = dict(report.rows())
    assert rows["A-stable"] == rows["L-stable"] == "undetermined"
    assert rows["imaginary stability interval"] == "undetermined"
    assert report.to_dict()["a_stable"] is None
    assert any("interval, A-stability undetermined" in note for note in report.notes)
    decided = bf.check(rounded(method, 16)).stability  # 16 digits decide the order: as exact
    assert decided.a_stable is True and decided.l_stable is True and not decided.undetermined


def kvaerno_3(gamma: Any) -> tuple[list[list[Any]], list[Any]]:
    """Kværnø (2004)'s ESDIRK 3(2), stiffly accurate, every entry a formula in γ (as diffrax's
    `kvaerno3.py` writes it); L-stable for γ the root 0.4358665215... of 6γ³ − 18γ² + 9γ − 1."""
    g = gamma
    a41, a42 = (6 * g - 1) / (12 * g), -1 / ((24 * g - 12) * g)
    a43 = (-6 * g**2 + 6 * g - 1) / (6 * g - 3)
    A = [
        [0, 0, 0, 0],
        [g, g, 0, 0],
        [(-4 * g**2 + 6 * g - 1) / (4 * g), (-2 * g + 1) / (4 * g), g, 0],
        [a41, a42, a43, g],
    ]
    return A, [a41, a42, a43, g]


def test_l_stability_judges_r_at_infinity_at_the_precision_of_the_entries() -> None:
    """Kværnø's γ is published as 0.43586652150: R(∞) = 5.6e-11 for that rational, so the
    report said 'L-stable no' even with the declared precision of the digits (1e-11), where
    R(∞) = 0 is met. The rule of every other condition: met, fails or undetermined."""
    published = Fraction("0.43586652150")
    exact = stability_function(bf.ButcherTableau(*kvaerno_3(published)))  # that rational itself
    assert exact.a_stable is True and exact.l_stable is False
    coarse = bf.check(bf.ButcherTableau(*kvaerno_3(Fraction("0.4359")), precision=1e-4))
    # A-stable for every method within ±1e-4 of each entry whose last row of A stays b (the
    # stiffly accurate structure, `stability_enclosure._tied_to_b`)
    assert coarse.stability.a_stable is True and coarse.stability.l_stable is None
    assert dict(coarse.rows())["L-stable"] == "undetermined"
    assert any(note.startswith("L-stability is undetermined: R(∞) =") for note in coarse.notes)


def test_an_esdirk_is_a_stable_within_its_precision_only_with_its_last_row_typed_as_b() -> None:
    # Typed digit for digit as b, A's last row is the stiffly accurate structure: every method
    # within the precision keeps it, and N has no z⁴ term over D's degree 3. Typed otherwise,
    # the rows are free to differ: the neighbour below (last row moved by 1.2e-12 along A·1 and
    # A·c unchanged, so order 3 exactly) has |R| -> ∞, not A-stable, intervals of 3e12, while
    # the digits' own method is A-stable: undetermined. (With the two free, "A-stable: yes" was
    # printed, a coefficient of N within 1.5e-8 of 0 having been taken as 0.)
    published = Fraction("0.43586652150")
    A, b = kvaerno_3(published)
    tied = bf.check(bf.ButcherTableau(A, b, precision=1e-11))
    assert tied.order == 3 and tied.stability.a_stable is True
    assert tied.stability.l_stable is True
    assert bf.check(bf.ButcherTableau(*kvaerno_3(0.43586652150))).stability.l_stable is True
    d = Fraction(1, 10**12)
    moved = [list(row) for row in A]
    moved[3][0] -= d - d / (2 * published)
    moved[3][1] -= d / (2 * published)
    moved[3][2] += d
    neighbour = bf.check(bf.ButcherTableau(moved, b))
    assert neighbour.order == 3 and neighbour.stability.a_stable is False
    assert 1e12 < neighbour.stability.real_interval < math.inf
    untied = bf.check(bf.ButcherTableau(moved, b, precision=1e-11))  # A itself within it
    assert untied.order == 3 and untied.stability.a_stable is None
    assert untied.stability.real_interval is None


def test_an_implicit_tableau_without_iterations_says_how_it_compiles() -> None:
    """The layer row read 'stages solved by iterations= fixed-point sweeps'."""
    how = GAUSS2.layer.how
    assert "iterations= asks for (none declared)" in how and "by iterations=" not in how
    declared = bf.ButcherTableau(GAUSS2_A, ["1/2", "1/2"], iterations=3)
    assert "stages solved by 3 fixed-point sweeps" in declared.layer.how


# An irreducible factor met by the hypothesis test above (a six-stage float tableau, order 6
# claimed): flint's root boxes for it overlap at every precision (roots of sizes 1 and 2·10⁵
# beside a close complex pair), and the precision doubling overflowed; exact isolation answers.
STUBBORN = [  # ascending coefficients
    -37912425000680587211250489966121355634802234344197680051551951912960,
    37912425000680587211250489966121355634802234344197680051551951912960,
    -25274950000453724807500326644080903756534822896131786701034634608640,
    12637475000226862403750163322040451878267411448065893350517317304320,
    -5054990000090744961500065328816180751306964579226357340206926921728,
    1684996666696914987166688442938726917102321526408785780068975640576,
    4730117325769090715964383608661693977685173807003981578240000,
    817004246468537010538668053860696846445137349824217088000,
    -24148664626132742173618286160998501746648484413440000,
    250799101802372265805814135630135830153003008000,
    -1139670039606449999740608626167198482432000,
    1929657654911817369267189104627290125,
]


def test_roots_that_balls_cannot_isolate_are_isolated_exactly() -> None:
    import flint

    from butcherflow.analysis.budget import Deadline

    roots = rational_roots.positive_roots(flint.fmpz_poly(STUBBORN), Deadline.never())
    ((lo, hi, _sign),) = roots  # one positive root: 1.77671674586641165954 (sympy.real_roots)
    assert float(lo) <= 1.7767167458664116 <= float(hi)
