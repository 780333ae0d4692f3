"""General linear methods: declarations, conversions from Runge-Kutta and multistep methods whose
analyses must agree, preconsistency, zero-stability of V, and order relative to a starting
procedure (issue: general linear methods across depth)."""

from __future__ import annotations

from typing import Any

import pytest
import sympy
from catalog_sweep import sweep

import butcherflow as bf
from butcherflow.analysis.general_linear.report import analyse_general_linear
from butcherflow.analysis.general_linear.stability import power_bound, zero_stability
from butcherflow.analysis.report import raised_by
from butcherflow.methods.general_linear import GeneralLinear

CONVERTIBLE = [
    name
    for name in bf.catalog
    if bf.catalog[name].family in ("runge-kutta", "multistep")
    and not bf.catalog[name].symbols
    and getattr(bf.catalog[name], "stages", 1) <= 7
]


@pytest.mark.parametrize("name", sweep(CONVERTIBLE))
def test_conversions_keep_the_order_of_every_convertible_catalog_entry(name: str) -> None:
    method = bf.catalog[name]
    glm = GeneralLinear.from_method(method)
    report = analyse_general_linear(glm, max_order=bf.check(method).order + 1)
    assert report.preconsistent
    assert report.order == bf.check(method).order
    own = bf.check(method)
    interval = own.stability.real_interval if method.family == "runge-kutta" else own.real_interval
    assert report.real_interval == pytest.approx(interval, rel=1e-9)


def test_the_real_interval_of_a_glm_is_not_cut_off_where_a_grid_ended() -> None:
    """30 Euler sub-steps of h/30 are stable on [-60, 0]. The interval was read on a grid up to
    50 and a stable end reported as unbounded: 'inf'."""
    n = 30
    A = [[sympy.Rational(1, n) if j < i else 0 for j in range(n)] for i in range(n)]
    glm = GeneralLinear(A, [[1]] * n, [[sympy.Rational(1, n)] * n], [[1]])
    assert analyse_general_linear(glm, max_order=1).real_interval == pytest.approx(60.0, rel=1e-12)


def test_a_hyper_connection_at_initialisation_is_euler_on_every_stream() -> None:
    n = 4
    identity = [[1 if i == j else 0 for j in range(n)] for i in range(n)]
    hc = GeneralLinear([[0]], [["1/4"] * n], [[1]] * n, identity, name="hc-4")
    report = analyse_general_linear(hc)
    assert report.preconsistent and report.consistent and report.order == 1
    assert report.zero_stable is True
    assert any("doubly stochastic" in note for note in report.notes)
    assert report.real_interval == pytest.approx(2.0, abs=0.02)


def test_the_ode_transformer_codes_rk2_is_not_preconsistent() -> None:
    # Stages store L(y) = y + F(y): y_next = 5/2 y + F1 + 1/2 F(2y + F1) (DESIGN.md's note).
    code_rk2 = GeneralLinear([[0, 0], [1, 0]], [[1], [2]], [[1, "1/2"]], [["5/2"]])
    report = analyse_general_linear(code_rk2)
    assert not report.preconsistent and report.order == 0
    assert any("not preconsistent" in note for note in report.notes)


def test_a_numeric_glm_far_from_preconsistent_is_still_refused() -> None:
    """The rounding lets digits through, not a miss far beyond it: V u − u = 1.5 ± 0.05."""
    code_rk2 = GeneralLinear([[0, 0], [1, 0]], [[1], [2]], [[1, "0.5"]], [["2.5"]])
    report = analyse_general_linear(code_rk2)
    assert report.preconsistent is False and report.order == 0 and report.consistent is False
    assert report.preconsistency_undetermined == []
    assert any("not preconsistent: V u ≠ u" in note for note in report.notes)


def test_floats_whose_rows_sum_to_one_within_an_ulp_are_preconsistent() -> None:
    """0.1 + 0.9 is 1 + 2.8e-17 in binary: numerically zero at double precision, as an order
    condition would be judged (it was "not preconsistent; order 0")."""
    glm = GeneralLinear(
        [[0]], [[0.5, 0.5]], [[1], [1]], [[0.1, 0.9], [0.9, 0.1]], start=["y(x)", "y(x)"]
    )
    report = analyse_general_linear(glm)
    assert report.preconsistent is True and report.order == 1 and report.consistent


def test_a_claim_above_what_the_digits_establish_is_not_proved() -> None:
    """Ralston's method as a GLM typed to 4 digits: order 1 established, b·c = 1/2 open. The
    claim of 2 agreed with "1+" and `check` exited 0; it is unproved, as for the tableau."""
    glm = GeneralLinear(
        [[0, 0], ["0.6667", 0]], [[1], [1]], [["0.25", "0.75"]], [[1]], order=2, name="r4"
    )
    report = analyse_general_linear(glm)
    assert report.order == 1 and report.undetermined and report.mismatches == {"order": (2, 1)}
    tableau = bf.ButcherTableau([[0, 0], ["0.6667", 0]], ["0.25", "0.75"], order=2, name="r4")
    assert report.mismatch_message() == bf.check(tableau).mismatch_message()
    assert "CLAIM" in str(report)
    assert analyse_general_linear(glm, max_order=1).claim_holds  # capped below the claim


@pytest.mark.parametrize(
    ("V", "stable"),
    [
        ([[1, 0], [0, 1]], True),  # a double eigenvalue 1, semisimple
        ([[1, 1], [0, 1]], False),  # a Jordan block on the circle: ‖Vⁿ‖ grows like n
        ([[0, -1], [1, 0]], True),  # ±i, simple
        ([["1/2", "1/2"], ["1/2", "1/2"]], True),  # doubly stochastic
        ([[2, 0], [0, "1/2"]], False),
        ([["1/2", 0], [0, "-1/3"]], True),
        # within 1e-10 of the circle: decided exactly, not by a float tolerance
        ([[1, 0], [0, "1 + 1/10**10"]], False),  # just outside
        ([[1, 0], [0, "-1 - 1/10**10"]], False),
        ([[1, 0, 0], [0, "1 - 1/10**10", 1], [0, 0, "1 - 1/10**10"]], True),  # Jordan, inside
        ([["1 - 1/10**12", 1], [0, "1 - 1/10**12"]], True),
    ],
)
def test_zero_stability_is_power_boundedness_of_v(V: list, stable: bool) -> None:
    values = [[sympy.sympify(x) for x in row] for row in V]
    assert zero_stability(values, 0.0)[0] is stable


def _block(x: Any) -> list[list[Any]]:
    """A double eigenvalue 1 (semisimple) beside a Jordan block at 1/2 (inside): power-bounded."""
    half = sympy.Rational(1, 2)
    return [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, half, x], [0, 0, 0, half]]


def test_zero_stability_of_a_numeric_v_tests_only_the_eigenvalues_on_the_circle() -> None:
    """A numeric V's characteristic polynomial was split square-free only: (ζ − 1)(ζ − 1/2)
    squared, whose rank test also asked the Jordan block at 1/2 (inside) to be semisimple, and a
    V that the exact encoding proves zero-stable was 'not semisimple' at 6 digits. A defective
    eigenvalue merely within the precision of the circle is undetermined, not a failure."""
    assert zero_stability(_block(1), 0.0)[0] is True
    assert zero_stability(_block(1), 5e-7)[0] is True  # the same V as typed to 6 digits
    glm = GeneralLinear(
        [[0]],
        [[1, 0, 0, 0]],
        [[1], [0], [0], [0]],
        _block("1.000000"),
        start=["y(x)", "y(x)", "h*f(x)", "h*f(x)"],
    )
    assert analyse_general_linear(glm).zero_stable is True
    stable, how = zero_stability(_block(1), 0.05)  # 1/2 within the first-order reach of |ζ| = 1
    assert stable is None and "undetermined" in how
    # a Jordan block at 1 itself: [[1, 1], [0, 1 - 1e-7]] lies within the precision and is
    # power-bounded, so the digits cannot refute it
    assert zero_stability([[1, 1], [0, 1]], 5e-7)[0] is None


def test_a_defective_eigenvalue_that_numeric_digits_put_on_the_circle_is_undetermined() -> None:
    """V = [[1.0, 1.0], [0, 1.0]] in floats read 'zero-stable: False' (a Jordan block at 1), while
    [[1, 1], [0, 1 - 2⁻⁵²]], within a float's rounding of it, is power-bounded (eigenvalues 1 and
    1 - 2⁻⁵², simple). Exact, the Jordan block fails."""

    def glm(V: Any) -> GeneralLinear:
        return GeneralLinear([[0]], [[1, 0]], [[1], [0]], V)

    assert analyse_general_linear(glm([[1, 1], [0, 1]])).zero_stable is False
    assert analyse_general_linear(glm([[1.0, 1.0], [0, 1.0]])).zero_stable is None
    assert analyse_general_linear(glm([[1, 1], [0, "1 - 2**-52"]])).zero_stable is True


def test_zero_stability_the_digits_cannot_decide_reads_undetermined_in_its_row() -> None:
    """V = diag(1.0, -1.0) in floats (-1 on the circle only to within the rounding) leaves
    power-boundedness undetermined; the row printed '—'."""
    V = [[1.0, 0], [0, -1.0]]
    report = analyse_general_linear(GeneralLinear([[0]], [[1, 0]], [[1], [0]], V))
    assert report.zero_stable is None
    assert dict(report.rows())["zero-stable (V power-bounded)"] == "undetermined (see notes)"


def test_a_numeric_doubly_stochastic_v_is_judged_by_its_eigenvalues() -> None:
    """V = [[0, 1.0], [1.0, 0]] in floats was zero-stable by the doubly-stochastic shortcut,
    while [[0, 1 + 2⁻⁵⁰], [1, 0]], within a float's rounding of it, has the eigenvalue
    √(1 + 2⁻⁵⁰) > 1: its eigenvalue -1 is on the circle only to within the rounding, as for
    V = diag(1.0, -1.0), so undetermined. Exact, and for numeric V whose eigenvalues other than
    1 lie inside, the verdict is unchanged."""

    def zs(V: Any) -> bool | None:
        return analyse_general_linear(GeneralLinear([[0]], [[1, 0]], [[1], [0]], V)).zero_stable

    assert zs([[0, 1.0], [1.0, 0]]) is None
    assert zs([[0, "1 + 2**-50"], [1, 0]]) is False
    assert zs([[0, 1], [1, 0]]) is True
    assert zs([[0.5, 0.5], [0.5, 0.5]]) is True
    assert zs([[1.0, 0], [0, 1.0]]) is True


def test_a_repeated_eigenvalue_one_that_preconsistency_does_not_pin_is_undetermined() -> None:
    """V = [[1, 0], [0, 1.0]] with the start (y(x), h f(x)) (u = (1, 0)) read 'zero-stable:
    yes' (eigenvalue 1 twice, semisimple), while V[1][1] = 1 + 2⁻⁴⁵, inside the float's
    rounding, keeps V u = u and has the eigenvalue 1 + 2⁻⁴⁵ > 1; typed '1.0' (±0.05) the
    neighbour 1.04 grows as 1.04ⁿ. V u = u pins one copy of the eigenvalue 1 only: the other is
    undetermined. With u = (1, 1) (every input y(x)) the exact zeros leave V itself the only
    preconsistent neighbour, and the identity in floats stays zero-stable."""

    def zs(V: Any, start: list[str] | None = None) -> bool | None:
        glm = GeneralLinear([[0]], [[1, 0]], [[1], [0]], V, start=start)
        return analyse_general_linear(glm).zero_stable

    assert zs([[1, 0], [0, "1 + 2**-45"]], ["y(x)", "h*f(x)"]) is False  # the neighbour
    assert zs([[1, 0], [0, 1.0]], ["y(x)", "h*f(x)"]) is None
    assert zs([[1, 0], [0, "1.0"]], ["y(x)", "h*f(x)"]) is None
    assert zs([[1.0, 0], [0, 1.0]], ["y(x)", "h*f(x)"]) is None
    assert zs([[1, 0], [0, 1]], ["y(x)", "h*f(x)"]) is True  # exact
    assert zs([[1.0, 0], [0, 1.0]]) is True  # u = (1, 1): V' u = u forces V' = I


def test_an_exact_v_decides_zero_stability_whatever_digits_the_other_matrices_carry() -> None:
    """Power-boundedness is V's alone. It was judged at the rounding of the whole method, so an
    exact V with a defective eigenvalue pair (3 ± 4i)/5 on the circle (not a root of unity)
    read 'undetermined' as soon as B held a float; V's own digits decide it: not zero-stable."""
    # the companion matrix of (ζ² − 6ζ/5 + 1)² = ζ⁴ − 12ζ³/5 + 86ζ²/25 − 12ζ/5 + 1
    V = [[0, 0, 0, -1], [1, 0, 0, "12/5"], [0, 1, 0, "-86/25"], [0, 0, 1, "12/5"]]
    for b in ("1/2", 0.5):
        glm = GeneralLinear([[0]], [[1, 0, 0, 0]], [[b], [0], [0], [0]], V)
        assert glm.numbers.V.rounding == 0
        assert analyse_general_linear(glm).zero_stable is False
    typed = [[x if x in (0, 1) else float(sympy.Rational(x)) for x in row] for row in V]
    glm = GeneralLinear([[0]], [[1, 0, 0, 0]], [[0.5], [0], [0], [0]], typed)
    assert analyse_general_linear(glm).zero_stable is None  # V's own floats: within precision


def test_an_undetermined_preconsistency_keeps_the_order_established_at_0() -> None:
    """Runge-Kutta 4 carried in two copies whose V rows sum to 0.99995 (within the digits of 1):
    with y(x) inputs V enters no order condition, so every one of them held and the report said
    'order 4' (the claim of 4 passed) while preconsistency, which every order needs, was
    undetermined and the digits' own method does not converge. The order established is 0."""
    b = ["1/6", "1/3", "1/3", "1/6"]
    A = [[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]]
    V = [["0.3333", "0.66665"], ["0.3333", "0.66665"]]
    report = analyse_general_linear(GeneralLinear(A, [[1, 0]] * 4, [b, b], V, order=4))
    assert report.preconsistent is None
    assert report.order == 0 and report.order_is_lower_bound
    assert [c for c, _, _ in report.undetermined] == ["(V u − u)[0]", "(V u − u)[1]"]
    assert report.mismatches == {"order": (4, 0)} and report.consistent is None
    exact = [[sympy.Rational(1, 3), sympy.Rational(2, 3)]] * 2  # preconsistent: order 4
    assert analyse_general_linear(GeneralLinear(A, [[1, 0]] * 4, [b, b], exact)).order == 4


def test_power_bound_of_a_trained_v() -> None:
    radius, worst = power_bound([[1.0, 1.0], [0.0, 1.0]], depth=6)
    assert radius == pytest.approx(1.0) and worst > 6
    radius, worst = power_bound([[0.5, 0.5], [0.5, 0.5]], depth=6)
    assert worst == pytest.approx(1.0)


def test_numeric_entries_are_judged_at_their_precision() -> None:
    glm = GeneralLinear.from_method(bf.catalog["tsitouras-5"])
    assert glm.numeric
    assert analyse_general_linear(glm, max_order=6).order == 5


@pytest.mark.parametrize(
    ("kwargs", "key", "words"),
    [
        ({"A": [[0, 0]], "U": [[1]], "B": [[1]], "V": [[1]]}, "A[0]", "needs 1"),
        ({"A": [[0]], "U": [[1, 1]], "B": [[1]], "V": [[1]]}, "U[0]", "needs 1"),
        ({"A": [[0]], "U": [[1]], "B": [[1], [1]], "V": [[1]]}, "B", "rows but needs 1"),
        ({"A": [[0]], "U": [[1]], "B": [[1]], "V": [[1, 0]]}, "V[0]", "has 2 entries but needs 1"),
        ({"A": [[0]], "U": [[1]], "B": [[1]], "V": [["nan"]]}, "V[0][0]", "not finite"),
        (
            {"A": [[0]], "U": [[1]], "B": [[1]], "V": [[1]], "start": ["y(2*x)"]},
            "start[0]",
            "shifts",
        ),
        (
            {"A": [[0]], "U": [[1]], "B": [[1]], "V": [[1]], "start": ["y(x)", "y(x)"]},
            "start",
            "one",
        ),
    ],
)
def test_bad_declarations_name_the_key(
    kwargs: dict, key: str, words: str, declaration_error
) -> None:
    with declaration_error(f"key '{key}'", words):
        GeneralLinear(**kwargs)


def test_starting_procedures_parse_shifts_and_derivatives() -> None:
    glm = GeneralLinear.from_method(bf.catalog["adams-bashforth-2"])
    assert glm.start_text() == ["y(x)", "y(x - 1*h)", "h*f(x)", "h*f(x - 1*h)"]
    assert glm.values == 4 and glm.stages == 1


def test_a_parametrised_family_says_where_its_order_is_higher() -> None:
    # A = [[a]] is the theta-method: order 1 for every a, order 2 at a = 1/2. The note said
    # "order 1 for every value of a", false at a = 1/2.
    family = analyse_general_linear(GeneralLinear([["a"]], [[1]], [[1]], [[1]]))
    assert family.order == 1
    note = next(n for n in family.notes if "parametrised" in n)
    assert "order 1 holds for every parameter value" in note
    assert "the order-2 conditions hold at a = 1/2" in note
    member = analyse_general_linear(GeneralLinear([["1/2"]], [[1]], [[1]], [[1]]))
    assert member.order == 2


def test_an_unsolved_family_is_not_said_to_have_no_higher_order_member(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """sympy.solve giving up (NotImplementedError) is not 'no parameter value satisfies'."""
    a = sympy.Symbol("a")
    assert raised_by([a - sympy.Rational(1, 2)], [a], 1) == (
        "the order-2 conditions hold at a = 1/2."
    )
    assert raised_by([a**2 + 1], [a], 1) == "no parameter value satisfies the order-2 conditions."

    def gives_up(*args: object, **kwargs: object) -> None:
        raise NotImplementedError

    monkeypatch.setattr(sympy, "solve", gives_up)
    assert raised_by([a - sympy.Rational(1, 2)], [a], 1) == (
        "sympy could not solve the order-2 conditions for the parameters."
    )


THETA = GeneralLinear([["a"]], [[1]], [[1]], [[1]], name="theta", order=1)


@pytest.mark.parametrize(("a", "order"), [("1/2", 2), ("1", 1), ("1/3", 1), (0, 1)])
def test_members_of_the_theta_method_family(a: str, order: int) -> None:
    member = THETA.subs({"a": a})
    assert not member.symbols and member.name == "theta" and member.order is None
    assert analyse_general_linear(member).order == order


def test_subs_keeps_start_and_precision_of_a_general_linear_method() -> None:
    family = GeneralLinear(
        [[0, 0], ["a", 0]],
        [[1, 0], [1, 0]],
        [["1/2", "1/2"], [0, 1]],
        [[1, 0], [0, 0]],
        start=["y(x)", "h*f(x)"],
        precision=1e-30,
    )
    member = family.subs({"a": 1})
    assert member.start == family.start and member.precision == family.precision
    assert member.to_table()["start"] == ["y(x)", "h*f(x)"]
    assert member.A == ((0, 0), (1, 0)) and member.numbers.B[0][0] is family.numbers.B[0][0]


def test_subs_refuses_a_name_that_is_no_symbol(declaration_error) -> None:
    with declaration_error("key 'b'", "no such symbol in 'theta'", "(got '1/2')", "['a']"):
        THETA.subs({"b": "1/2"})
    rk = GeneralLinear([[0]], [[1]], [[1]], [[1]], name="euler")
    with declaration_error("key 'a'", "no such symbol in 'euler'", "it has none"):
        rk.subs({"a": 1})


@pytest.mark.parametrize("excess", [sympy.Rational(1, 10**12), sympy.Rational(1, 10**40)])
def test_a_glm_interval_ends_where_an_eigenvalue_first_leaves_the_disc_however_little(
    excess: sympy.Rational,
) -> None:
    """R(x) = 1 + x + x²/2 + c·x³ with c = 1/16 − ε exceeds 1 by about 64ε near x = −4 (at
    c = 1/16 it only touches 1 there). Each piece between the exact breakpoints was tested in
    float64 with a tolerance of 1e-9, which read past the excursion: [-6.26, 0] for the
    [-3.99998, 0] the Runge-Kutta analysis finds; at ε = 1e-40 the two breakpoints around it
    were one float and the piece between them was never tested."""
    c = sympy.Rational(1, 16) - excess
    tableau = bf.ButcherTableau(
        A=[[0, 0, 0], [1, 0, 0], [0, 1, 0]], b=[sympy.Rational(1, 2), sympy.Rational(1, 2) - c, c]
    )
    rk = bf.check(tableau).stability.real_interval
    assert rk <= 4.0
    report = analyse_general_linear(GeneralLinear.from_method(tableau), max_order=1)
    assert report.real_interval == pytest.approx(rk, rel=1e-12)


def test_a_glm_interval_ends_where_eigenvalues_collide_on_the_circle_and_leave_it() -> None:
    """M(x) = V + x·b·uᵀ with det(wI − M(x)) = (w² + 1)(w² − w + 1) − x·w²/6 (and an Euler
    stream, 1 + x): its roots pair as w, 1/w for every x (a self-reciprocal factor, so its
    resultant with its reversal vanishes identically), with t = w + 1/w solving
    t² − t − x/6 = 0. They stay on the circle until the two values of t meet at x = −3/2 and
    turn complex, never passing ±1; only Euler's x = −2 was a breakpoint, so [-2, 0] was read."""
    companion = [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [-1, 1, -2, 1, 0]]
    glm = GeneralLinear(
        A=[[0, 0], [0, 0]],
        U=[[0, 0, "1/6", 0, 0], [0, 0, 0, 0, 1]],
        B=[[0, 0], [0, 0], [0, 0], [1, 0], [0, 1]],
        V=[*companion, [0, 0, 0, 0, 1]],
    )
    assert analyse_general_linear(glm, max_order=1).real_interval == pytest.approx(1.5, rel=1e-12)


@pytest.mark.parametrize("beta", [[1 / 3, 4 / 3, 1 / 3], ["0.3333333", "1.333333", "0.3333333"]])
def test_a_multistep_method_with_numeric_beta_keeps_its_zero_stability_as_a_glm(
    beta: list[Any],
) -> None:
    """Milne-Simpson with exact alpha is zero-stable (weakly) whatever digits beta carries: rho
    is alpha's alone. Its GLM said undetermined: the conversion declared beta's rounding as a
    precision for every entry, the exact alpha and the shift's ones in V included."""
    method = bf.LinearMultistep([-1, 0, 1], beta)
    assert bf.check(method).zero_stable is True
    glm = GeneralLinear.from_method(method)
    assert glm.numbers.V.rounding > 0  # V carries beta's digits (they multiply h·f inputs)
    assert analyse_general_linear(glm, max_order=1).zero_stable is True


@pytest.mark.parametrize(
    ("alpha", "beta", "enclosed"),
    [
        ([-1, 0, 1], ["1/3", "4/3", "1/3"], False),  # Milne-Simpson: no interval
        ([-1, 0, 1], [1 / 3, 4 / 3, 1 / 3], False),
        ([-1, 0, 1], ["0.333333", "1.33333", "0.333333"], False),  # undetermined at 6 digits
        ([0, -1, 1], ["-0.5", "1.5", "0"], True),  # AB2 to one digit: its end -1 within reach
        ([0, -1, 1], ["-0.500000", "1.50000", "0"], False),
        ([0, -1, 1], [-0.5, 1.5, 0], False),
    ],
)
def test_a_numeric_glm_leaves_its_interval_open_where_its_multistep_method_does(
    alpha: list, beta: list, enclosed: bool
) -> None:
    """The GLM interval is exact for the digits' method; where the digits' rounding reaches the
    end ("none" for Milne-Simpson at 6 digits, -1 for AB2 at one digit), it read a decided end
    while the multistep analysis of the same method said undetermined. The multistep end is
    now enclosed over the methods within the precision (`multistep_enclosure`), which decides
    AB2 at one digit (end between 0.952368 and 1.05662). The GLM's end is enclosed too
    (`glm_enclosure`), but over a larger box: its U and V each carry a copy of β, moved
    independently, and there no δ up to 10% holds every method's end, so it stays open."""
    method = bf.LinearMultistep(alpha, beta)
    glm = analyse_general_linear(GeneralLinear.from_method(method), max_order=2)
    report = bf.check(method)
    expected = None if enclosed else report.real_interval
    if enclosed:
        assert report.real_enclosure == pytest.approx((0.952368, 1.056616), abs=1e-6)
    assert glm.real_interval == (None if expected is None else pytest.approx(expected))
    if expected is None:
        assert dict(glm.rows())["real stability interval [-r, 0]: r"] == "undetermined (see notes)"
