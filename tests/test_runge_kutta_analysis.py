"""`bf.check` on Butcher tableaux: orders, error terms, stability, families, reports.

Every tableau is written inline (no catalog), so these tests do not move with the catalog.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal, localcontext

import pytest
import sympy

import butcherflow as bf
from butcherflow.analysis import RungeKuttaReport

z = sympy.Symbol("z")


def check(method: bf.ButcherTableau, **kwargs: object) -> RungeKuttaReport:
    report = bf.check(method, **kwargs)  # type: ignore[arg-type]
    assert isinstance(report, RungeKuttaReport)
    return report


def same(x: sympy.Expr, y: sympy.Expr) -> bool:
    return bool(sympy.simplify(sympy.sympify(x) - sympy.sympify(y)) == 0)


def symbol(method: bf.ButcherTableau, name: str) -> sympy.Symbol:
    return {str(s): s for s in method.symbols}[name]


EULER = bf.ButcherTableau([[0]], [1], name="euler")
BACKWARD_EULER = bf.ButcherTableau([[1]], [1], name="backward-euler")
MIDPOINT = bf.ButcherTableau([[0, 0], ["1/2", 0]], [0, 1], name="midpoint")
HEUN = bf.ButcherTableau([[0, 0], [1, 0]], ["1/2", "1/2"], name="heun")
KUTTA3 = bf.ButcherTableau(
    [[0, 0, 0], ["1/2", 0, 0], [-1, 2, 0]], ["1/6", "2/3", "1/6"], name="kutta-3"
)
RK4 = bf.ButcherTableau(
    A=[[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]],
    b=["1/6", "1/3", "1/3", "1/6"],
    name="rk4",
)
TRAPEZOID = bf.ButcherTableau([[0, 0], ["1/2", "1/2"]], ["1/2", "1/2"], name="trapezoid")
S3 = "sqrt(3)"
GAUSS2 = bf.ButcherTableau(
    [["1/4", f"1/4 - {S3}/6"], [f"1/4 + {S3}/6", "1/4"]],
    ["1/2", "1/2"],
    name="gauss-legendre-2",
)
S15 = "sqrt(15)"
GAUSS3 = bf.ButcherTableau(
    [
        ["5/36", f"2/9 - {S15}/15", f"5/36 - {S15}/30"],
        [f"5/36 + {S15}/24", "2/9", f"5/36 - {S15}/24"],
        [f"5/36 + {S15}/30", f"2/9 + {S15}/15", "5/36"],
    ],
    ["5/18", "4/9", "5/18"],
    name="gauss-legendre-3",
)
S6 = "sqrt(6)"
RADAU_IIA3 = bf.ButcherTableau(
    [
        [f"(88 - 7*{S6})/360", f"(296 - 169*{S6})/1800", f"(-2 + 3*{S6})/225"],
        [f"(296 + 169*{S6})/1800", f"(88 + 7*{S6})/360", f"(-2 - 3*{S6})/225"],
        [f"(16 - {S6})/36", f"(16 + {S6})/36", "1/9"],
    ],
    [f"(16 - {S6})/36", f"(16 + {S6})/36", "1/9"],
    name="radau-iia-3",
)
# Crouzeix's two-stage, third-order SDIRK, γ = (3 + √3)/6.
GAMMA = f"(3 + {S3})/6"
SDIRK3 = bf.ButcherTableau([[GAMMA, 0], [f"1 - 2*{GAMMA}", GAMMA]], ["1/2", "1/2"], name="sdirk-3")


# -- explicit classics ------------------------------------------------------------------------


def test_rk4_order_and_error_terms() -> None:
    report = check(RK4)
    assert report.order == 4
    assert report.exact is True
    assert report.domain == "QQ"
    assert report.tolerance is None
    failing = dict(report.failing)
    assert len(failing) == 9  # every tree of order 5 fails
    assert failing["[τ, τ, τ, τ]"] == sympy.Rational(1, 120)  # Σ b c⁴ − 1/5
    assert failing["[[[[τ]]]]"] == sympy.Rational(-1, 120)  # bA³c = 0 for 4 explicit stages
    # ‖τ⁽⁵⁾‖₂ of classical RK4 is 1.45e-2 (Dormand & Prince's tables)
    assert report.principal_error_norm == pytest.approx(0.0145046, rel=1e-4)
    assert report.stage_order == 1
    assert report.embedded_order is None
    assert report.algebraically_stable is False


def test_rk4_stability() -> None:
    stab = check(RK4).stability
    expected = 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24
    assert sympy.expand(stab.expression - expected) == 0
    assert check(RK4).stability_function == stab.expression
    # 1 + x + x²/2 + x³/6 + x⁴/24 = 1 at x = −2.785293563405...
    assert stab.real_interval == pytest.approx(2.785293563405282, abs=1e-9)
    assert stab.imaginary_interval == pytest.approx(2 * math.sqrt(2), abs=1e-9)
    assert stab.a_stable is False
    assert stab.l_stable is False


def test_principal_error_norm_of_dormand_prince_5() -> None:
    """‖τ⁽⁶⁾‖₂ = 3.99e-4 (Dormand & Prince, 1980)."""
    report = bf.check("dormand-prince-5")
    assert isinstance(report, RungeKuttaReport)
    assert (report.order, report.embedded_order) == (5, 4)
    assert report.principal_error_norm == pytest.approx(3.99e-4, rel=2e-3)


def test_euler() -> None:
    report = check(EULER)
    assert report.order == 1
    assert sympy.expand(report.stability.expression - (1 + z)) == 0
    assert report.stability.real_interval == pytest.approx(2.0, abs=1e-12)
    assert report.stability.imaginary_interval == 0
    assert dict(report.failing) == {"[τ]": sympy.Rational(-1, 2)}
    assert report.stage_order == 1


def test_midpoint_error_terms() -> None:
    report = check(MIDPOINT)
    assert report.order == 2
    # Σ b c² − 1/3 = 1/4 − 1/3 and b A c − 1/6 = 0 − 1/6
    assert dict(report.failing) == {
        "[τ, τ]": sympy.Rational(-1, 12),
        "[[τ]]": sympy.Rational(-1, 6),
    }
    assert report.principal_error_norm == pytest.approx(math.hypot(1 / 12 / 2, 1 / 6), rel=1e-12)


@pytest.mark.parametrize("method", [HEUN, MIDPOINT], ids=lambda m: m.name)
def test_second_order_two_stage_stability(method: bf.ButcherTableau) -> None:
    stab = check(method).stability
    assert sympy.expand(stab.expression - (1 + z + z**2 / 2)) == 0
    assert stab.real_interval == pytest.approx(2.0, abs=1e-12)
    assert stab.imaginary_interval == 0  # |R(iy)|² = 1 + y⁴/4


def test_kutta3() -> None:
    report = check(KUTTA3)
    assert report.order == 3
    stab = report.stability
    assert sympy.expand(stab.expression - (1 + z + z**2 / 2 + z**3 / 6)) == 0
    assert stab.real_interval == pytest.approx(2.5127453266183286, abs=1e-9)
    assert stab.imaginary_interval == pytest.approx(math.sqrt(3), abs=1e-9)


# -- implicit methods -------------------------------------------------------------------------


def test_gauss_legendre_2() -> None:
    report = check(GAUSS2)
    assert report.order == 4
    assert report.exact is True
    assert "sqrt(3)" in report.domain
    stab = report.stability
    assert same(stab.expression, (1 + z / 2 + z**2 / 12) / (1 - z / 2 + z**2 / 12))
    assert stab.a_stable is True
    assert stab.l_stable is False
    assert stab.real_interval == math.inf
    assert stab.imaginary_interval == math.inf
    assert report.algebraically_stable is True
    assert report.stage_order == 2
    assert not GAUSS2.is_explicit and not GAUSS2.is_diagonally_implicit


def test_gauss_legendre_3() -> None:
    report = check(GAUSS3)
    assert report.order == 6
    assert "sqrt(15)" in report.domain
    assert report.stability.a_stable is True
    assert report.stability.l_stable is False
    assert report.stage_order == 3
    assert report.algebraically_stable is True


def test_radau_iia_3() -> None:
    report = check(RADAU_IIA3)
    assert report.order == 5
    assert "sqrt(6)" in report.domain
    stab = report.stability
    expected = (1 + 2 * z / 5 + z**2 / 20) / (1 - 3 * z / 5 + 3 * z**2 / 20 - z**3 / 60)
    assert same(stab.expression, expected)
    assert stab.a_stable is True
    assert stab.l_stable is True
    assert report.stage_order == 3
    assert report.algebraically_stable is True


def test_backward_euler() -> None:
    report = check(BACKWARD_EULER)
    assert report.order == 1
    assert same(report.stability.expression, 1 / (1 - z))
    assert report.stability.a_stable is True
    assert report.stability.l_stable is True
    assert report.algebraically_stable is True
    assert BACKWARD_EULER.is_diagonally_implicit


def test_trapezoid() -> None:
    report = check(TRAPEZOID)
    assert report.order == 2
    assert same(report.stability.expression, (1 + z / 2) / (1 - z / 2))
    assert report.stability.a_stable is True
    assert report.stability.l_stable is False
    # M = BA + AᵀB − bbᵀ = diag(−1/4, 1/4): not algebraically stable
    assert report.algebraically_stable is False
    assert report.stage_order == 2


def test_sdirk3() -> None:
    report = check(SDIRK3)
    assert report.order == 3
    assert SDIRK3.is_diagonally_implicit
    assert report.stability.a_stable is True
    assert report.stability.l_stable is False


# Hairer & Wanner's L-stable SDIRK of order 4 (γ = 1/4), with its third-order embedded weights:
# R(z) has a five-fold pole at z = 4.
SDIRK4 = bf.ButcherTableau(
    [
        ["1/4", 0, 0, 0, 0],
        ["1/2", "1/4", 0, 0, 0],
        ["17/50", "-1/25", "1/4", 0, 0],
        ["371/1360", "-137/2720", "15/544", "1/4", 0],
        ["25/24", "-49/48", "125/16", "-85/12", "1/4"],
    ],
    ["25/24", "-49/48", "125/16", "-85/12", "1/4"],
    b_hat=["59/48", "-17/96", "225/32", "-85/12", 0],
    name="sdirk-4",
)


def test_sdirk4_with_a_multiple_pole() -> None:
    report = check(SDIRK4)
    assert report.order == 4
    assert report.embedded_order == 3
    assert same(sympy.denom(sympy.together(report.stability.expression)).subs(z, 4), 0)
    assert report.stability.a_stable is True
    assert report.stability.l_stable is True


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_backward_euler_composed_k_times(k: int) -> None:
    """k backward-Euler steps of size h/k: R(z) = (1 − z/k)^(−k), a k-fold pole."""
    w = sympy.Rational(1, k)
    method = bf.ButcherTableau([[w if j <= i else 0 for j in range(k)] for i in range(k)], [w] * k)
    report = check(method)
    assert report.order == 1
    assert same(report.stability.expression, (1 - z / k) ** (-k))
    assert report.stability.a_stable is True
    assert report.stability.l_stable is True


def test_a_left_half_plane_pole_is_not_a_stable() -> None:
    """R(z) = (1 − z)/(1 + z): |R(iy)| = 1 on the whole axis, but a pole at z = −1."""
    report = check(bf.ButcherTableau([[-1]], [-2]))
    assert same(report.stability.expression, (1 - z) / (1 + z))
    assert report.stability.imaginary_interval == math.inf
    assert report.stability.real_interval == 0
    assert report.stability.a_stable is False
    assert report.stability.l_stable is False


def test_explicit_methods_are_never_a_stable() -> None:
    for method in (EULER, HEUN, KUTTA3, RK4):
        stab = check(method).stability
        assert stab.a_stable is False
        assert stab.real_interval < math.inf


# -- parametrised families --------------------------------------------------------------------

FAMILY = bf.ButcherTableau([[0, 0], ["a", 0]], ["b1", "b2"], name="two-stage")


def test_two_stage_family_conditions_give_the_classical_solution() -> None:
    report = check(FAMILY)
    assert report.order == 0  # generically: b1 + b2 = 1 is a condition, not an identity
    a, b1, b2 = (symbol(FAMILY, n) for n in ("a", "b1", "b2"))
    conditions = report.conditions(order=2)
    assert len(conditions) == 2
    assert {s for c in conditions for s in c.free_symbols} == {a, b1, b2}
    solutions = sympy.solve(conditions, [b1, b2], dict=True)
    assert len(solutions) == 1
    solution = solutions[0]
    assert same(solution[b1], 1 - 1 / (2 * a))
    assert same(solution[b2], 1 / (2 * a))
    # the order-1 conditions alone are b1 + b2 = 1
    [first] = report.conditions(order=1)
    assert same(first, b1 + b2 - 1) or same(first, 1 - b1 - b2)


@pytest.mark.parametrize(
    ("a", "weights", "name"),
    [
        ("1", ("1/2", "1/2"), "heun"),
        ("1/2", ("0", "1"), "midpoint"),
        ("2/3", ("1/4", "3/4"), "ralston"),
    ],
)
def test_heun_midpoint_ralston_are_members(a: str, weights: tuple[str, str], name: str) -> None:
    a_, b1, b2 = (symbol(FAMILY, n) for n in ("a", "b1", "b2"))
    [solution] = sympy.solve(check(FAMILY).conditions(order=2), [b1, b2], dict=True)
    value = sympy.Rational(a)
    w1, w2 = (sympy.simplify(solution[b].subs(a_, value)) for b in (b1, b2))
    assert (w1, w2) == tuple(sympy.Rational(w) for w in weights)
    member = FAMILY.subs({"a": a, "b1": w1, "b2": w2})
    assert not member.symbols
    report = check(member)
    assert report.order == 2
    assert report.exact is True


def test_family_stability_properties_are_undecided() -> None:
    report = check(FAMILY)
    assert report.stability.a_stable is None
    assert report.stability.real_interval is None
    assert report.algebraically_stable is None
    assert report.principal_error_norm is None


# -- coefficient policies of compiled layers --------------------------------------------------


def test_unit_weights_are_inconsistent() -> None:
    """The ODE Transformer's γᵢ = 1: Σb = s, order 0, consistent only for the field s·f."""
    report = check(bf.ButcherTableau([[0, 0], [1, 0]], [1, 1]))
    assert report.order == 0
    assert any("Σb = 2" in note for note in report.notes)
    assert dict(report.failing) == {"τ": 1}
    rk4_unit = check(RK4.with_weights([1, 1, 1, 1]))
    assert rk4_unit.order == 0
    assert any("Σb = 4" in note for note in rk4_unit.notes)


GATED = bf.ButcherTableau([[0, 0], [1, 0]], ["g", "1 - g"], name="rk2-gated")


def test_gated_family_is_first_order_for_every_gate() -> None:
    report = check(GATED)
    assert report.order == 1
    g = symbol(GATED, "g")
    [condition] = report.conditions(order=2)  # Σ b c = 1 − g must be 1/2
    assert sympy.solve(condition, g) == [sympy.Rational(1, 2)]
    assert any("g = 1/2" in note for note in report.notes)


@pytest.mark.parametrize(
    ("g", "order"), [("1/2", 2), ("1/3", 1), ("0", 1), ("1", 1), ("-2/7", 1), ("5/3", 1)]
)
def test_gated_members(g: str, order: int) -> None:
    assert check(GATED.subs({"g": g})).order == order


# -- numeric tableaux ------------------------------------------------------------------------


def decimal(p: int, q: int, digits: int) -> str:
    """p/q rounded to `digits` decimals, as a decimal string."""
    with localcontext() as context:
        context.prec = digits + 10
        return str((Decimal(p) / Decimal(q)).quantize(Decimal(1).scaleb(-digits)))


def decimal_rk4(digits: int, **changes: str) -> bf.ButcherTableau:
    """RK4 with every non-zero entry written with `digits` decimals (changes by entry name)."""
    e = {
        "a21": decimal(1, 2, digits),
        "a32": decimal(1, 2, digits),
        "a43": decimal(1, 1, digits),
        "b1": decimal(1, 6, digits),
        "b2": decimal(1, 3, digits),
        "b3": decimal(1, 3, digits),
        "b4": decimal(1, 6, digits),
    }
    e.update(changes)
    return bf.ButcherTableau(
        [[0, 0, 0, 0], [e["a21"], 0, 0, 0], [0, e["a32"], 0, 0], [0, 0, e["a43"], 0]],
        [e["b1"], e["b2"], e["b3"], e["b4"]],
    )


def test_decimal_helper_writes_the_digits_asked_for() -> None:
    m = decimal_rk4(20)
    assert decimal(1, 6, 20) == "0.16666666666666666667"
    assert decimal(1, 1, 20) == "1.00000000000000000000"
    assert m.numeric
    assert m.b[0] == sympy.Rational(16666666666666666667, 10**20)
    assert m.rounding == pytest.approx(5e-21)


@pytest.mark.parametrize("digits", [10, 20])
def test_numeric_rk4_is_fourth_order_within_a_reported_tolerance(digits: int) -> None:
    report = check(decimal_rk4(digits))
    assert report.order == 4
    assert report.exact is False
    assert report.tolerance is not None
    assert 0 < report.tolerance < 10.0 ** (3 - digits)
    assert any("numeric tableau" in note and "ball arithmetic" in note for note in report.notes)
    assert json.loads(report.to_json())["tolerance"] == report.tolerance
    assert report.order_upper == 4 and not report.undetermined


@pytest.mark.parametrize("digits", [1, 3, 5])
def test_coarse_decimals_leave_conditions_undetermined_never_met(digits: int) -> None:
    # With few digits the rounding could hide a miss: conditions within it are undetermined.
    report = check(decimal_rk4(digits))
    assert report.order < 4 and report.undetermined
    assert report.order_is_lower_bound
    assert not report.claim_holds or report.method.order is None
    _tree, residual, bound = report.undetermined[0]
    assert abs(residual) <= bound


@pytest.mark.parametrize(
    ("entry", "value"),
    [
        ("a32", "0.50100000000000000000"),
        ("b2", "0.33433333333333333333"),
        ("a43", "1.00100000000000000000"),
    ],
)
def test_numeric_rk4_perturbed_at_the_third_digit_is_not_fourth_order(
    entry: str, value: str
) -> None:
    report = check(decimal_rk4(20, **{entry: value}))
    assert report.exact is False
    assert report.order < 4
    assert report.failing


@pytest.mark.parametrize("digits", [10, 20])
def test_numeric_kutta3_keeps_its_stability_intervals(digits: int) -> None:
    """Rounding the weights must not change the intervals beyond what the rounding can explain:
    exact Kutta 3 has |R(iy)|² = 1 − y⁴/12 + y⁶/36 (interval √3), and the decimal version too,
    up to noise of the size of the digits' rounding."""
    method = bf.ButcherTableau(
        [[0, 0, 0], [decimal(1, 2, digits), 0, 0], [-1, 2, 0]],
        [decimal(1, 6, digits), decimal(2, 3, digits), decimal(1, 6, digits)],
    )
    report = check(method)
    assert report.order == 3
    assert report.stability.real_interval == pytest.approx(2.5127453266183286, abs=1e-6)
    assert report.stability.imaginary_interval == pytest.approx(math.sqrt(3), abs=1e-6)


# -- nodes that are not the row sums ----------------------------------------------------------


def test_row_sum_c_false_changes_the_non_autonomous_order() -> None:
    autonomous = check(MIDPOINT)
    assert autonomous.order == 2
    with pytest.raises(bf.DeclarationError, match="row_sum_c"):
        bf.ButcherTableau([[0, 0], ["1/2", 0]], [0, 1], c=[0, 1])
    shifted = bf.ButcherTableau([[0, 0], ["1/2", 0]], [0, 1], c=[0, 1], row_sum_c=False)
    report = check(shifted)
    assert report.order == 1  # Σ b c = 1 ≠ 1/2: the time variable sees the wrong node
    assert dict(report.failing) == {"[τ_t]_y": sympy.Rational(1, 2)}
    assert any("row_sum_c" in note and "non-autonomous" in note for note in report.notes)
    assert not any("row_sum_c" in note for note in autonomous.notes)


def test_row_sum_c_false_with_the_row_sums_is_the_plain_method() -> None:
    same_c = bf.ButcherTableau(
        [list(row) for row in RK4.A], list(RK4.b), c=[0, "1/2", "1/2", 1], row_sum_c=False
    )
    report = check(same_c)
    assert report.order == 4
    assert not any("row_sum_c" in note for note in report.notes)


# -- embedded pairs ---------------------------------------------------------------------------


def test_embedded_orders() -> None:
    heun_euler = bf.ButcherTableau(
        [[0, 0], [1, 0]], ["1/2", "1/2"], b_hat=[1, 0], order=2, embedded_order=1
    )
    report = check(heun_euler)
    assert (report.order, report.embedded_order) == (2, 1)
    assert report.claim_holds
    bogacki_shampine = bf.ButcherTableau(
        [[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "3/4", 0, 0], ["2/9", "1/3", "4/9", 0]],
        ["2/9", "1/3", "4/9", 0],
        b_hat=["7/24", "1/4", "1/3", "1/8"],
        order=3,
        embedded_order=2,
    )
    report = check(bogacki_shampine)
    assert (report.order, report.embedded_order) == (3, 2)
    assert report.claim_holds
    assert check(bogacki_shampine.embedded()).order == 2


def test_wrong_embedded_claim_fails() -> None:
    wrong = bf.ButcherTableau(
        [[0, 0], [1, 0]], ["1/2", "1/2"], b_hat=[1, 0], order=2, embedded_order=2
    )
    report = check(wrong)
    assert report.claim_holds is False
    assert "embedded_order" in report.mismatch_message()
    with pytest.raises(bf.OrderClaimError):
        report.raise_for_claims()


# -- claims, search limits and reports --------------------------------------------------------


def claimed_rk4(order: int) -> bf.ButcherTableau:
    return bf.ButcherTableau(
        [list(row) for row in RK4.A], list(RK4.b), name="rk4-claimed", order=order
    )


def test_correct_claim_holds() -> None:
    report = check(claimed_rk4(4))
    assert report.claim_holds is True
    assert report.mismatches == {}
    report.raise_for_claims()  # does not raise


@pytest.mark.parametrize("claimed", [3, 5])
def test_wrong_claim_fails_loudly(claimed: int) -> None:
    report = check(claimed_rk4(claimed))
    assert report.order == 4  # a low claim does not stop the search at claimed + 1
    assert report.claim_holds is False
    message = report.mismatch_message()
    assert f"claimed {claimed}" in message and "proved 4" in message and "rk4-claimed" in message
    with pytest.raises(bf.OrderClaimError, match="proved 4"):
        report.raise_for_claims()
    assert "FAILS" in str(report)
    assert json.loads(report.to_json())["claim_holds"] is False


def test_max_order_gives_a_lower_bound() -> None:
    report = check(RK4, max_order=2)
    assert report.order == 2
    assert report.order_is_lower_bound is True
    assert any("order ≥ 2" in note for note in report.notes)
    assert "2+" in str(report)


def test_a_search_capped_below_the_claim_does_not_refute_it() -> None:
    """max_order = 2 proves order ≥ 2, which agrees with a claim of 4: no claim is disproved."""
    report = check(claimed_rk4(4), max_order=2)
    assert report.order == 2 and report.order_is_lower_bound
    assert report.claim_holds, report.mismatch_message()


def test_conditions_of_an_exact_method() -> None:
    report = check(RK4)
    assert report.conditions(order=4) == []
    residuals = report.conditions(order=5)
    assert len(residuals) == 9
    assert sympy.Rational(1, 120) in residuals


@pytest.mark.parametrize(
    "method", [RK4, GAUSS2, GATED, decimal_rk4(10)], ids=["rk4", "gauss2", "gated", "decimal"]
)
def test_report_renderings(method: bf.ButcherTableau) -> None:
    report = check(method)
    text = str(report)
    assert text.splitlines()[0].startswith(method.name)
    order_line = next(line for line in text.splitlines() if line.startswith("order "))
    assert order_line.split()[-1] == str(report.order)
    markdown = report.to_markdown()
    assert f"| order | {report.order} |" in markdown
    assert markdown.startswith("### ")
    data = json.loads(report.to_json())
    assert data["order"] == report.order
    assert data["name"] == method.name
    assert data["family"] == "runge-kutta"
    assert data["exact"] == report.exact
    assert data["stages"] == method.stages
    assert data["stability_function"] == str(report.stability.expression)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON (RFC 8259)")


def test_json_of_unbounded_intervals_is_strict_json() -> None:
    """Unbounded stability intervals must not be written as the non-standard `Infinity`."""
    text = check(GAUSS2).to_json()
    data = json.loads(text, parse_constant=_reject_constant)
    assert data["a_stable"] is True
