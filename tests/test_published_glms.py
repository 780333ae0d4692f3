"""General linear methods from the literature, typed here, against their published orders.

The GLM analysis (`analysis/general_linear.py`) proves an order relative to a stated starting
procedure; these cases test it on methods whose orders were established by others:

- Adams predictor-corrector pairs in P(EC)^m E and P(EC)^m modes. Lambert (1991), "Numerical
  Methods for Ordinary Differential Systems", §4.2: with predictor order p* and corrector order
  p, the pair has order p if p* >= p, order p* + m if p* < p and m < p - p*, and order p
  otherwise, in either mode. The Adams coefficients are derived here (the integral of the
  interpolant of f over one step) and checked against NodePy's. AB1 + AM2 in PECE mode is
  Heun's method (Lambert 1991, §4.2; its stability polynomial is 1 + z + z²/2).
- Jackiewicz & Tracogna (1995), "A general class of two-step Runge-Kutta methods for ordinary
  differential equations", SIAM J. Numer. Anal. 32(5): their one-stage order-3 family in c and
  λ, and their two-stage order-4 method, compared with NodePy's order in the same run
  (NodePy's `loadTSRK`, which transcribes them; zero-stable iff -1 < θ <= 1).
- A type-1 DIMSIM with p = q = r = s = 2 (Butcher (1993), "Diagonally implicit multi-stage
  integration methods", Appl. Numer. Math. 11; the example of Butcher's book "Numerical
  Methods for Ordinary Differential Equations", chapter 5, §54). Its order is verified below
  from its stage and output conditions on exp independently of the citation.

How the starting procedures carry the published order (the analysis does not search for one):

- PECE: the inputs y_n, h f_n, h f_(n-1), ... are exact values in Lambert's localizing
  assumption, so the start is 'y(x)', 'h*f(x)', 'h*f(x - h)', ...
- P(EC)^m without the final evaluation carries h f at the last *predicted/corrected* value, not
  at y_(n+1). Stated as exact 'h*f(x)', that output is off by h times the error of the last
  predicted value: O(h^(min(p* + m, p + 1) + 1)), one order above Lambert's order of the pair, so
  the order relative to the exact start is Lambert's order in this mode too (asserted below).
- TSRK: the inputs y_n, y_(n-1) and h f(Y_j^(n-1)) are stated exactly as 'h*f(x + (c_j - 1)h)';
  this is the method's own start up to O(h^(q+2)) (q the stage order), so the order relative
  to it is the published one when q >= p - 1 (true for these methods: the assertion against
  NodePy would fail otherwise).
- DIMSIM: the Nordsieck-like input y - h y' + h²/2 y'' equals y(x - h) + O(h³), and order 2 is
  unchanged by an O(h³) change of the starting procedure; a second encoding by h f values
  gives the same verdict.

Each case also integrates (`analysis/convergence.py`, float64 up to order 4) and asserts the
measured slope against the proved order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sympy
from closeness import SLOPE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from butcherflow.analysis.convergence import convergence
from butcherflow.analysis.general_linear.report import analyse_general_linear
from butcherflow.methods.general_linear import GeneralLinear

T = sympy.Symbol("t")


# -- Adams predictor-corrector pairs -----------------------------------------------------------


def adams(order: int, implicit: bool) -> tuple[sympy.Expr, list[sympy.Expr]]:
    """The Adams method of an order: (weight of h f_(n+1), weights of h f_n, h f_(n-1), ...),
    each the integral over [0, 1] of a Lagrange basis polynomial on the nodes (units of h)."""
    nodes = ([1] if implicit else []) + [-j for j in range(order - int(implicit))]
    weights = []
    for i, a in enumerate(nodes):
        basis = sympy.Integer(1)
        for j, b in enumerate(nodes):
            if j != i:
                basis *= (T - b) / sympy.Integer(a - b)
        weights.append(sympy.integrate(sympy.expand(basis), (T, 0, 1)))
    return (weights[0], weights[1:]) if implicit else (sympy.Integer(0), weights)


def predictor_corrector(p_star: int, p: int, m: int, final_eval: bool) -> GeneralLinear:
    """AB(p*) predictor, AM(p) corrector, m corrections, with or without the final evaluation.

    Inputs y_n, h f_n, ..., h f_(n-K+1). Stage 0 predicts; stage i corrects stage i-1; in
    P(EC)^m E a last stage is the corrected value, whose h f the step carries on; in P(EC)^m the
    h f of the last evaluated stage (stage m-1) is carried instead.
    """
    _, pred = adams(p_star, implicit=False)
    new, corr = adams(p, implicit=True)
    K = max(len(pred), len(corr), 1)
    r, s = 1 + K, m + 1 if final_eval else m

    def row(w: list[sympy.Expr]) -> list[Any]:
        return [1, *w] + [0] * (K - len(w))

    A: list[list[Any]] = [[0] * s for _ in range(s)]
    for i in range(1, s):
        A[i][i - 1] = new
    U = [row(pred)] + [row(corr) for _ in range(1, s)]
    B: list[list[Any]] = [[0] * s for _ in range(r)]
    V: list[list[Any]] = [[0] * r for _ in range(r)]
    B[0][m - 1], V[0] = new, row(corr)  # y_(n+1)
    B[1][s - 1] = 1  # the h f carried on
    for j in range(2, r):
        V[j][j - 1] = 1  # older h f values shift down
    mode = f"P(EC)^{m}" + ("E" if final_eval else "")
    return GeneralLinear(
        A,
        U,
        B,
        V,
        start=["y(x)"] + [f"h*f(x - {j}*h)" for j in range(K)],
        name=f"ab{p_star}-am{p}-{mode}",
    )


def lambert_order(p_star: int, p: int, m: int) -> int:
    """Lambert (1991) §4.2: the order of an ABM pair in P(EC)^m E^(1-t) mode."""
    if p_star >= p:
        return p
    return p_star + m if m < p - p_star else p


PAIRS = [
    # (p*, p, m): including the pairs where the order drops below the corrector's
    (1, 2, 1),  # Heun's method
    (1, 3, 1),  # order drops to 2
    (1, 3, 2),
    (2, 3, 1),
    (3, 3, 1),
    (2, 1, 1),  # a predictor better than the corrector: the corrector's order 1
    (1, 4, 1),  # drops to 2
    (1, 4, 2),  # drops to 3
    (1, 4, 3),
    (2, 4, 1),  # drops to 3
    (2, 4, 2),
    (3, 4, 1),  # m = p - p*: order p, another error constant
    (4, 4, 1),  # the classic ABM4 PECE
    (3, 5, 1),  # drops to 4
    (3, 5, 2),
    (4, 5, 1),
]
CASES = [(*pair, final) for pair in PAIRS for final in (True, False)]


def assert_measured(method: GeneralLinear, order: int) -> None:
    report = analyse_general_linear(method)
    curves = convergence(method, report)
    assert len(curves) == 1, f"{method.name}: no convergence curve (zero-stable?)"
    curve = curves[0]
    assert abs(curve.slope - order) <= SLOPE, (
        f"{method.name}: proved order {order}, measured slopes {curve.slopes} "
        f"(errors {curve.errors})"
    )


@pytest.mark.parametrize(("p_star", "p", "m", "final_eval"), CASES)
def test_adams_pairs_have_lamberts_order(p_star: int, p: int, m: int, final_eval: bool) -> None:
    method = predictor_corrector(p_star, p, m, final_eval)
    report = analyse_general_linear(method)
    expected = lambert_order(p_star, p, m)
    assert report.preconsistent and report.zero_stable is True
    assert report.order == expected and not report.order_is_lower_bound, (
        f"{method.name}: proved {report.order}, Lambert {expected}; failing {report.failing}"
    )
    assert_measured(method, expected)


W_ = sympy.Symbol("w")
Z_ = sympy.Symbol("z")


def stability_polynomial(report: Any) -> sympy.Expr:
    """det(w I - M(z)), expanded."""
    M = report.stability_matrix
    assert M is not None
    return sympy.expand(M.charpoly(W_).as_expr())


def test_heun_as_pece_has_heuns_stability_polynomial() -> None:
    report = analyse_general_linear(predictor_corrector(1, 2, 1, final_eval=True))
    # eigenvalues of M(z): 0 and Heun's R(z) = 1 + z + z²/2, stable on [-2, 0]
    assert stability_polynomial(report) == sympy.expand(W_ * (W_ - 1 - Z_ - Z_**2 / 2))
    assert report.real_interval == pytest.approx(2.0, abs=0.011)


def test_adams_weights_agree_with_nodepy() -> None:
    lmm = pytest.importorskip("nodepy.linear_multistep_method")
    for k in range(1, 5):
        # NodePy's k-step methods, oldest value first: AB k-step is order k, AM k-step k + 1
        ab, am = lmm.Adams_Bashforth(k), lmm.Adams_Moulton(k)
        _, pred = adams(k, implicit=False)
        new, corr = adams(k + 1, implicit=True)
        assert [sympy.Rational(x) for x in ab.beta[:-1][::-1]] == pred
        assert sympy.Rational(am.beta[-1]) == new
        assert [sympy.Rational(x) for x in am.beta[:-1][::-1]] == corr


def as_decimals(method: GeneralLinear, digits: int = 20, order: int | None = None) -> GeneralLinear:
    """The same method with every entry a decimal string of `digits` significant digits (a
    numeric declaration), claiming `order`."""

    def dec(rows: Any) -> list[list[str]]:
        return [[f"{sympy.N(x, digits)}" if x != 0 else "0" for x in row] for row in rows]

    return GeneralLinear(
        dec(method.A),
        dec(method.U),
        dec(method.B),
        dec(method.V),
        start=method.start_text(),
        name=f"{method.name}-decimal",
        order=order,
    )


def permuted(method: GeneralLinear, inputs: list[int], stages: list[int]) -> GeneralLinear:
    """The same method with its inputs and its stages renumbered (an equivalent GLM)."""
    A, U, B, V = method.A, method.U, method.B, method.V
    return GeneralLinear(
        [[A[i][j] for j in stages] for i in stages],
        [[U[i][j] for j in inputs] for i in stages],
        [[B[i][j] for j in stages] for i in inputs],
        [[V[i][j] for j in inputs] for i in inputs],
        start=[method.start_text()[i] for i in inputs],
        name=f"{method.name}-permuted",
    )


@pytest.mark.parametrize(("p_star", "p", "m"), [(1, 3, 1), (2, 4, 1), (4, 4, 1)])
def test_decimal_encoding_gives_the_same_order(p_star: int, p: int, m: int) -> None:
    exact = predictor_corrector(p_star, p, m, final_eval=True)
    decimal = as_decimals(exact)
    assert decimal.numeric
    report = analyse_general_linear(decimal)
    assert report.order == lambert_order(p_star, p, m)
    assert report.zero_stable is True


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CASES), st.randoms(use_true_random=False))
def test_renumbering_inputs_and_stages_keeps_the_order(case: tuple, rng: Any) -> None:
    method = predictor_corrector(*case)
    inputs, stages = list(range(method.values)), list(range(method.stages))
    rng.shuffle(inputs)
    rng.shuffle(stages)
    report = analyse_general_linear(permuted(method, inputs, stages))
    assert report.order == lambert_order(*case[:3])
    assert report.zero_stable is True


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(CASES),
    st.fractions(min_value=-4, max_value=4, max_denominator=6).filter(lambda x: x != 0),
)
def test_scaling_an_input_keeps_the_order(case: tuple, scale: Any) -> None:
    """Input 1 stated as scale·h f(x): U's and V's column divided by it, B's and V's row
    multiplied: the same method, the same order."""
    method = predictor_corrector(*case)
    k = sympy.Rational(scale.numerator, scale.denominator)
    r = method.values
    U = [[x / k if j == 1 else x for j, x in enumerate(row)] for row in method.U]
    B = [[x * k if i == 1 else x for x in row] for i, row in enumerate(method.B)]
    V = [
        [(x * k if i == 1 else x) / (k if j == 1 else 1) for j, x in enumerate(row)]
        for i, row in enumerate(method.V)
    ]
    start = method.start_text()
    start[1] = f"{k}*{start[1]}"
    scaled = GeneralLinear(method.A, U, B, V, start=start, name="scaled")
    assert scaled.values == r
    assert analyse_general_linear(scaled).order == lambert_order(*case[:3])


# -- two-step Runge-Kutta methods (Jackiewicz & Tracogna 1995) ---------------------------------


def tsrk(
    d: list[Any],
    theta: Any,
    Ahat: list[list[Any]],
    A: list[list[Any]],
    bhat: list[Any],
    b: list[Any],
) -> GeneralLinear:
    """A TSRK method (NodePy's form, Jackiewicz & Tracogna (1995) eq. (1.3)):
    Y_j^n = d_j y_(n-1) + (1 - d_j) y_n + h Σ_k (Ahat_jk f(Y_k^(n-1)) + A_jk f(Y_k^n)),
    y_(n+1) = θ y_(n-1) + (1 - θ) y_n + h Σ_j (bhat_j f(Y_j^(n-1)) + b_j f(Y_j^n)),
    as a GLM with inputs y_n, y_(n-1), h f(Y_j^(n-1)) stated exactly at x + (c_j - 1) h."""
    s = len(b)
    d, Ahat, A = [sympy.sympify(x) for x in d], sympy.Matrix(Ahat), sympy.Matrix(A)
    theta = sympy.sympify(theta)
    c = [sum(Ahat.row(j)) + sum(A.row(j)) - d[j] for j in range(s)]
    r = 2 + s
    U = [[1 - d[j], d[j], *Ahat.row(j)] for j in range(s)]
    B = [list(b), [0] * s] + [[int(k == j) for k in range(s)] for j in range(s)]
    V = [[1 - theta, theta, *bhat], [1] + [0] * (r - 1)] + [[0] * r for _ in range(s)]
    start = ["y(x)", "y(x - h)"] + [f"h*f(x + ({cj - 1})*h)" for cj in c]
    return GeneralLinear(A.tolist(), U, B, V, start=start, name="tsrk")


def jackiewicz_tracogna_3(c: Any, lam: Any) -> tuple:
    """The one-stage order-3 family of Jackiewicz & Tracogna (1995), as NodePy's loadTSRK."""
    theta = (6 * c**2 - 12 * c + 5) / (1 - 6 * c**2)
    d = (2 * c - c**2 - 2 * lam) / (2 * c - 1)
    ahat = (c + c**2 - lam - 2 * c * lam) / (2 * c - 1)
    bhat = 2 * (1 - 3 * c**2) / (1 - 6 * c**2)
    b = 2 * (2 - 6 * c + 3 * c**2) / (1 - 6 * c**2)
    return [d], theta, [[ahat]], [[lam]], [bhat], [b]


def nodepy_order(args: tuple, proved: int) -> int:
    """NodePy's order of the TSRK, or `proved` where NodePy is not installed (it is in the
    `bench` extra, which `make` does not install): the analysis's own assertion still runs."""
    try:
        import nodepy.twostep_runge_kutta_method as tsrk_module
    except ImportError:
        return proved
    d, theta, Ahat, A, bhat, b = args
    f = lambda x: np.array(x, dtype=float)  # noqa: E731
    method = tsrk_module.TwoStepRungeKuttaMethod(f(d), float(theta), f(A), f(b), f(Ahat), f(bhat))
    return int(method.order(tol=1e-10))


@settings(max_examples=20, deadline=None)
@given(
    st.fractions(min_value=-2, max_value=2, max_denominator=8).filter(lambda c: 2 * c != 1),
    st.fractions(min_value=-1, max_value=1, max_denominator=8),
)
def test_jackiewicz_tracogna_family_has_order_3_as_nodepy_says(c: Any, lam: Any) -> None:
    R = sympy.Rational
    args = jackiewicz_tracogna_3(R(c.numerator, c.denominator), R(lam.numerator, lam.denominator))
    report = analyse_general_linear(tsrk(*args))
    assert report.order == 3 == nodepy_order(args, report.order)
    theta = args[1]
    assert report.zero_stable is bool(-1 < theta <= 1)


@pytest.mark.parametrize(("c", "lam"), [(1, 0), (2, "1/2"), ("3/4", "1/3")])
def test_zero_stable_jackiewicz_tracogna_methods_converge_at_order_3(c: Any, lam: Any) -> None:
    method = tsrk(*jackiewicz_tracogna_3(sympy.sympify(c), sympy.sympify(lam)))
    assert analyse_general_linear(method).order == 3
    assert_measured(method, 3)


def test_a_tsrk_typed_to_four_digits_says_which_conditions_it_cannot_decide() -> None:
    """Order 3 exactly; typed to 4 digits its consistency condition misses by 1e-4 against a
    rounding bound of 1.5e-4: undetermined. The report said "0+" with no failing row and "the
    search stopped"; it must name the condition, its residual against the bound, and what would
    decide it, as the Runge-Kutta report does."""
    exact = tsrk(*jackiewicz_tracogna_3(sympy.Rational(3, 4), sympy.Rational(1, 3)))
    report = analyse_general_linear(as_decimals(exact, 4))
    assert report.order == 0 and report.order_is_lower_bound and report.consistent is None
    assert [c for c, _, _ in report.undetermined] == ["output 0, τ"]
    _, residual, bound = report.undetermined[0]
    assert 0 < abs(residual) <= bound < 1e-3
    rows = dict(report.rows())
    assert rows["undetermined at order 1"] == [f"output 0, τ: {residual:.3g} ± {bound:.3g}"]
    assert rows["consistent"] == "undetermined"
    assert "worst ±0.0005" in rows["tolerance"]  # the 1s typed "1.000"
    assert any(
        "1 condition(s) of order 1 undetermined" in n and "more digits" in n for n in report.notes
    )
    assert not any("search stopped" in n for n in report.notes)
    assert "undetermined at order 1" in str(report)
    # more digits decide it: 20 give the published order
    assert analyse_general_linear(as_decimals(exact, 20)).order == 3


R = sympy.Rational
JACKIEWICZ_TRACOGNA_4 = (
    [R(-113, 88), R(-103, 88)],
    R(-4483, 8011),
    [[R(1435, 352), R(-479, 352)], [R(1917, 352), R(-217, 352)]],
    [[1, 0], [0, 1]],  # NodePy's A (implicit stages; its printed tableau shows the same)
    [R(180991, 96132), R(-17777, 32044)],
    [R(-44709, 32044), R(48803, 96132)],
)


def test_jackiewicz_tracogna_order_4_method_as_nodepy_transcribes_it() -> None:
    args = JACKIEWICZ_TRACOGNA_4
    report = analyse_general_linear(tsrk(*args))
    assert report.order == 4 == nodepy_order(args, report.order)
    assert report.zero_stable is True
    assert_measured(tsrk(*args), 4)


def test_a_tsrk_typed_to_few_digits_is_preconsistent_within_them() -> None:
    """θ and 1 − θ typed separately miss V u = u by about 1e-4 at 4 digits: the digits cannot
    tell, so the method is not "not preconsistent; order 0" (it was, at 4, 10 and even 30
    digits): preconsistency is undetermined, with its residual and bound, and the order
    conditions are judged. 10 digits decide preconsistency, 20 the published order."""
    exact = tsrk(*JACKIEWICZ_TRACOGNA_4)
    four = analyse_general_linear(as_decimals(exact, 4))
    assert four.preconsistent is None
    assert four.order == 0 and four.order_is_lower_bound and four.undetermined
    [(label, residual, bound)] = four.preconsistency_undetermined
    assert label == "(V u − u)[0]" and 0 < abs(residual) <= bound < 1e-2
    rows = dict(four.rows())
    assert rows["preconsistent"] == "undetermined"
    assert rows["preconsistency undetermined"] == [f"{label}: {residual:.3g} ± {bound:.3g}"]
    assert not any("not preconsistent" in n for n in four.notes)
    assert any(
        "preconsistency holds only within the digits" in n
        and "1 condition(s) of preconsistency (V u = u, U u = 1) undetermined" in n
        and "more digits" in n
        for n in four.notes
    )
    ten = analyse_general_linear(as_decimals(exact, 10))
    assert ten.preconsistent is True and ten.preconsistency_undetermined == []
    assert ten.order >= 1 and ten.order_is_lower_bound and ten.undetermined
    for digits in (20, 30):
        report = analyse_general_linear(as_decimals(exact, digits))
        assert report.preconsistent is True
        assert report.order == 4 and not report.order_is_lower_bound


def test_a_claim_on_a_tsrk_typed_to_four_digits_is_not_proved() -> None:
    """Claimed order 3 on the 4-digit order-4 TSRK, which establishes "0+": the claim was taken
    to agree with the lower bound and `check` exited 0; it is unproved (as for a tableau)."""
    report = analyse_general_linear(as_decimals(tsrk(*JACKIEWICZ_TRACOGNA_4), 4, order=3))
    assert report.order == 0 and report.mismatches == {"order": (3, 0)}
    assert "order is claimed 3 but proved 0 (established 0; 2 condition(s) of order 1 " in (
        report.mismatch_message()
    )
    assert analyse_general_linear(
        as_decimals(tsrk(*JACKIEWICZ_TRACOGNA_4), 30, order=4)
    ).claim_holds


# -- a type-1 DIMSIM (Butcher 1993) ------------------------------------------------------------

DIMSIM = {
    "A": [[0, 0], [2, 0]],
    "U": [[1, 0], [0, 1]],
    "B": [["5/4", "1/4"], ["3/4", "-1/4"]],
    "V": [["1/2", "1/2"], ["1/2", "1/2"]],
}
C = [0, 1]
W = [[1, 0, 0], [1, -1, sympy.Rational(1, 2)]]  # y_i = Σ_k W_ik h^k y^(k)(x)


def test_dimsim_conditions_on_exp_hold_independently_of_the_analysis() -> None:
    """Stage order q = p = 2: exp(cz) = zA exp(cz) + U w(z) and exp(z) w(z) = zB exp(cz) + V w(z)
    up to O(z³), w(z) = W (1, z, z²)ᵀ; with q >= p - 1 these give order 2 (Butcher 1993)."""
    z = sympy.Symbol("z")
    A, U, B, V = (sympy.Matrix(DIMSIM[k]).applyfunc(sympy.sympify) for k in "AUBV")
    e = sympy.Matrix([sympy.exp(ci * z) for ci in C])
    w = sympy.Matrix(W) * sympy.Matrix([1, z, z**2])
    for residual in (e - z * A * e - U * w, sympy.exp(z) * w - z * B * e - V * w):
        for x in residual:
            assert sympy.series(x, z, 0, 3).removeO() == 0


@pytest.mark.parametrize(
    "start",
    [
        ["y(x)", "y(x - h)"],  # y - h y' + h²/2 y'' + O(h³)
        ["y(x)", "y(x) - 1/2*h*f(x) - 1/2*h*f(x - h)"],  # the same by h f values
    ],
)
def test_dimsim_has_order_2(start: list[str]) -> None:
    method = GeneralLinear(**DIMSIM, start=start, name="dimsim-2")
    report = analyse_general_linear(method)
    assert report.preconsistent and report.zero_stable is True
    assert report.order == 2 and not report.order_is_lower_bound
    # Runge-Kutta stability, the design rule of DIMSIMs: det(wI - M(z)) = w (w - R(z)),
    # R(z) = 1 + z + z²/2 for an explicit method of order 2 with two stages
    assert stability_polynomial(report) == sympy.expand(W_ * (W_ - 1 - Z_ - Z_**2 / 2))
    assert_measured(method, 2)


def test_a_coarse_start_proves_less_than_is_measured_and_the_report_says_why() -> None:
    """With the start y(x) - h f(x) for y(x - h), the DIMSIM is order 1 relative to that start
    (correct), but its starting error lies in a direction V damps and the measured slope is 2.
    The report printed "order 1" beside nothing; it must show the measured slope and say that the
    order is relative to the stated start and that no better start is searched for."""
    method = GeneralLinear(**DIMSIM, start=["y(x)", "y(x) - h*f(x)"], name="dimsim-coarse")
    report = analyse_general_linear(method)
    assert report.order == 1 and not report.order_is_lower_bound
    assert report.measured_order == pytest.approx(2.0, abs=SLOPE)
    assert dict(report.rows())["measured order (y' = −y + cos t)"].startswith("2.00 (N = ")
    note = next(n for n in report.notes if "measured slope" in n)
    assert "exceeds the proved order 1" in note
    assert "relative to the stated starting procedure" in note
    assert "does not search for a better one" in note
    assert "better starting procedure exists" in note and "V damps" in note
    assert report.to_dict()["measured_order"] == report.measured_order
    # the published start: proved 2, measured 2, nothing to explain
    exact = analyse_general_linear(GeneralLinear(**DIMSIM, start=["y(x)", "y(x - h)"]))
    assert exact.order == 2 and exact.measured_order == pytest.approx(2.0, abs=SLOPE)
    assert not any("measured slope" in n for n in exact.notes)
