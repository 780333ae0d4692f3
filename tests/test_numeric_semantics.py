"""Properties of numeric declarations: one method in three encodings keeps its order, a nudge loses
it, and no verdict ever crosses a barrier (issue: order proofs that hold on any tableau).

Every method here is built from exact parameters, then written exactly (Fractions), as Python
floats and as 30-digit decimal strings. The semantics under test (methods/entries/rounding.py): a
float is its binary value known to 2^-44 of its size, a decimal its digits known to half a unit in
the last one; a condition is met, fails or is undetermined (methods/entries/precision.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import pytest
import sympy
from catalog_sweep import sweep
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import butcherflow as bf
from butcherflow.analysis.budget import Deadline
from butcherflow.analysis.multistep.report import dahlquist_barrier
from butcherflow.analysis.runge_kutta.order import Conditions, explicit_barrier, order_bound
from butcherflow.analysis.search import Search
from butcherflow.methods.base import CoefficientMethod
from butcherflow.methods.entries.numbers import parse_number
from butcherflow.methods.entries.rounding import float_rounding
from butcherflow.methods.files import from_dict
from butcherflow.methods.general_linear import GeneralLinear

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
Matrix = list[list[Fraction]]


def as_decimal(x: Fraction, digits: int = 30) -> str:
    """x correctly rounded to `digits` decimals (so the string's promise holds)."""
    scaled = x * 10**digits
    n = (scaled.numerator * 2 + scaled.denominator) // (2 * scaled.denominator)
    sign = "-" if n < 0 else ""
    text = str(abs(n)).rjust(digits + 1, "0")
    return f"{sign}{text[:-digits]}.{text[-digits:]}"


ENCODINGS: dict[str, Callable[[Fraction], Any]] = {
    "exact": lambda x: x,
    "float": float,
    "decimal": as_decimal,
}


def encode(values: Sequence[Any], how: str) -> list[Any]:
    return [
        encode(v, how) if isinstance(v, (list, tuple)) else (0 if v == 0 else ENCODINGS[how](v))
        for v in values
    ]


def rk_order(A: Matrix, b: list[Fraction], how: str) -> bf.analysis.RungeKuttaReport:
    report = bf.check(bf.ButcherTableau(encode(A, how), encode(b, how)))
    assert isinstance(report, bf.analysis.RungeKuttaReport)
    return report


# -- families with known order -------------------------------------------------------------------

nonzero = st.fractions(min_value=Fraction(1, 10), max_value=Fraction(9, 10), max_denominator=50)


def two_stage(c2: Fraction) -> tuple[Matrix, list[Fraction]]:
    """The explicit 2-stage order-2 family: b2 = 1/(2 c2)."""
    b2 = 1 / (2 * c2)
    return [[Fraction(0), Fraction(0)], [c2, Fraction(0)]], [1 - b2, b2]


def three_stage(c2: Fraction, c3: Fraction) -> tuple[Matrix, list[Fraction]]:
    """The explicit 3-stage order-3 family with c2 ≠ c3, c2 ≠ 2/3 (Hairer-Nørsett-Wanner II.1)."""
    b2 = (3 * c3 - 2) / (6 * c2 * (c3 - c2))
    b3 = (2 - 3 * c2) / (6 * c3 * (c3 - c2))
    a32 = c3 * (c3 - c2) / (c2 * (2 - 3 * c2))
    zero = Fraction(0)
    A = [[zero] * 3, [c2, zero, zero], [c3 - a32, a32, zero]]
    return A, [1 - b2 - b3, b2, b3]


def four_stage(c2: Fraction, c3: Fraction) -> tuple[Matrix, list[Fraction]]:
    """The explicit 4-stage order-4 family with c4 = 1 (Kutta's general case, solved exactly)."""
    c = [Fraction(0), c2, c3, Fraction(1)]
    a21, a32, a42, a43 = sympy.symbols("a21 a32 a42 a43")
    b = sympy.symbols("b1:5")
    A = [[0, 0, 0, 0], [a21, 0, 0, 0], [c3 - a32, a32, 0, 0], [1 - a42 - a43, a42, a43, 0]]
    cs = [sympy.Rational(x.numerator, x.denominator) for x in c]
    eqs = [
        sum(b) - 1,
        sum(bi * ci for bi, ci in zip(b, cs, strict=False)) - sympy.Rational(1, 2),
        sum(bi * ci**2 for bi, ci in zip(b, cs, strict=False)) - sympy.Rational(1, 3),
        sum(bi * ci**3 for bi, ci in zip(b, cs, strict=False)) - sympy.Rational(1, 4),
        a21 - cs[1],
        b[2] * a32 * cs[1] + b[3] * (a42 * cs[1] + a43 * cs[2]) - sympy.Rational(1, 6),
        b[2] * cs[2] * a32 * cs[1]
        + b[3] * cs[3] * (a42 * cs[1] + a43 * cs[2])
        - sympy.Rational(1, 8),
        b[2] * a32 * cs[1] ** 2
        + b[3] * (a42 * cs[1] ** 2 + a43 * cs[2] ** 2)
        - sympy.Rational(1, 12),
        b[3] * a43 * a32 * cs[1] - sympy.Rational(1, 24),
    ]
    solution = sympy.solve(eqs, [a21, a32, a42, a43, *b], dict=True)
    assume(len(solution) == 1)
    s = solution[0]

    def frac(x: Any) -> Fraction:
        value = sympy.nsimplify(sympy.sympify(x).subs(s))
        assume(value.is_Rational)
        return Fraction(int(value.p), int(value.q))

    return [[frac(x) for x in row] for row in A], [frac(x) for x in b]


@SETTINGS
@given(c2=nonzero)
def test_two_stage_family_keeps_order_two_in_every_encoding(c2: Fraction) -> None:
    A, b = two_stage(c2)
    for how in ENCODINGS:
        report = rk_order(A, b, how)
        assert (report.order, report.order_upper) == (2, 2), how


@SETTINGS
@given(c2=nonzero, c3=nonzero)
def test_three_stage_family_keeps_order_three_in_every_encoding(c2: Fraction, c3: Fraction) -> None:
    assume(c2 != c3 and c2 != Fraction(2, 3) and c3 != Fraction(2, 3))
    A, b = three_stage(c2, c3)
    assume(all(abs(x) < 50 for x in b + [a for row in A for a in row]))
    for how in ENCODINGS:
        report = rk_order(A, b, how)
        assert (report.order, report.order_upper) == (3, 3), how


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    c2=st.sampled_from([Fraction(1, 3), Fraction(1, 4), Fraction(2, 5), Fraction(1, 5)]),
    c3=st.sampled_from([Fraction(2, 3), Fraction(3, 4), Fraction(3, 5), Fraction(4, 5)]),
)
def test_four_stage_family_keeps_order_four_in_every_encoding(c2: Fraction, c3: Fraction) -> None:
    A, b = four_stage(c2, c3)
    for how in ENCODINGS:
        report = rk_order(A, b, how)
        assert (report.order, report.order_upper) == (4, 4), how


@SETTINGS
@given(c2=nonzero, c3=nonzero, which=st.integers(0, 5), sign=st.sampled_from([1, -1]))
def test_a_nudge_of_1e4_loses_the_order(c2: Fraction, c3: Fraction, which: int, sign: int) -> None:
    assume(c2 != c3 and c2 != Fraction(2, 3) and c3 != Fraction(2, 3))
    A, b = three_stage(c2, c3)
    entries = [(1, 0), (2, 0), (2, 1)]
    nudge = sign * Fraction(1, 10**4)
    if which < 3:
        i, j = entries[which]
        A[i][j] += nudge
    else:
        b[which - 3] += nudge
    for how in ENCODINGS:
        report = rk_order(A, b, how)
        assert report.order < 3 and report.order_upper is not None, how
        assert report.order_upper < 3, how


# -- barriers ------------------------------------------------------------------------------------

floats = st.floats(min_value=-2, max_value=2, allow_nan=False).map(lambda x: round(x, 3))


@SETTINGS
@given(s=st.integers(2, 6), data=st.data())
def test_no_verdict_crosses_butchers_barriers(s: int, data: st.DataObject) -> None:
    lower = data.draw(st.lists(floats, min_size=s * (s - 1) // 2, max_size=s * (s - 1) // 2))
    b = data.draw(st.lists(floats, min_size=s, max_size=s))
    A = [[0.0] * s for _ in range(s)]
    k = 0
    for i in range(s):
        for j in range(i):
            A[i][j] = lower[k]
            k += 1
    for encode_as in (float, str):
        report = bf.check(
            bf.ButcherTableau([[encode_as(x) for x in r] for r in A], [encode_as(x) for x in b])
        )
        assert report.order <= explicit_barrier(s)
        assert sympy.degree(report.stability.numerator, report.stability.numerator.gens[0]) <= s


@SETTINGS
@given(k=st.integers(1, 4), data=st.data())
def test_no_verdict_crosses_dahlquists_barriers(k: int, data: st.DataObject) -> None:
    coefficient = st.fractions(min_value=-3, max_value=3, max_denominator=12)
    alpha = [*data.draw(st.lists(coefficient, min_size=k, max_size=k)), Fraction(1)]
    beta = data.draw(st.lists(coefficient, min_size=k + 1, max_size=k + 1))
    alpha[0] = -sum(alpha[1:])  # consistent: rho(1) = 0
    for how in ENCODINGS:
        report = bf.check(bf.LinearMultistep(encode(alpha, how), encode(beta, how)))
        if report.zero_stable:
            assert report.order <= dahlquist_barrier(k, beta[-1] == 0)
        if report.a_alpha == 90.0:
            assert report.order <= 2  # Dahlquist's second barrier
        assert report.order <= 2 * k


# -- multistep and splitting families ------------------------------------------------------------

MULTISTEP = [n for n in bf.catalog.names(family="multistep") if not bf.catalog[n].symbols]


@pytest.mark.parametrize("name", MULTISTEP)
@pytest.mark.parametrize("how", ["float", "decimal"])
def test_adams_and_bdf_keep_their_order_numerically(name: str, how: str) -> None:
    exact = bf.catalog[name]
    order = bf.check(exact).order
    alpha = [Fraction(int(x.p), int(x.q)) for x in exact.alpha]
    beta = [Fraction(int(x.p), int(x.q)) for x in exact.beta]
    report = bf.check(bf.LinearMultistep(encode(alpha, how), encode(beta, how)))
    assert (report.order, report.order_upper) == (order, order)
    nudged = list(beta)
    nudged[-2] += Fraction(1, 10**4)
    worse = bf.check(bf.LinearMultistep(encode(alpha, how), encode(nudged, how)))
    assert worse.order < max(order, 1) or order == 0


@SETTINGS
@given(x=st.fractions(min_value=Fraction(1, 5), max_value=Fraction(7, 5), max_denominator=40))
def test_symmetric_compositions_keep_order_two_and_lose_it_when_nudged(x: Fraction) -> None:
    assume(x != Fraction(1, 2))
    gamma = [x, 1 - 2 * x, x]  # a symmetric triple jump of Strang: order 2 for every x
    for how in ENCODINGS:
        steps = []
        for g in gamma:
            steps += [("A", encode([g / 2], how)[0]), ("B", encode([g], how)[0])]
            steps += [("A", encode([g / 2], how)[0])]
        merged = bf.Splitting(steps, substep="exact")
        report = bf.check(merged)
        assert (report.order, report.order_upper) == (2, 2), how
        nudged = list(steps)
        op, _value = nudged[1]
        nudged[1] = (op, encode([gamma[0] + Fraction(1, 10**4)], how)[0])
        assert bf.check(bf.Splitting(nudged, substep="exact")).order == 0, how


def order_only(tableau: bf.ButcherTableau) -> Search[Any]:
    """The order search alone (no stability analysis), as `bf.check` runs it."""
    return Conditions(tableau).search(order_bound(tableau), deadline=Deadline.never())


# -- the catalog, nudged -------------------------------------------------------------------------

RUNGE_KUTTA = [
    n
    for n in bf.catalog.names(family="runge-kutta")
    if not bf.catalog[n].symbols and bf.catalog[n].stages <= 7
]


@pytest.mark.parametrize("name", sweep(RUNGE_KUTTA))
def test_nudging_any_entry_by_1e6_never_raises_the_order(name: str) -> None:
    method = bf.catalog[name]
    assert isinstance(method, bf.ButcherTableau)
    base = order_only(method).order
    s = method.stages
    keys = [f"A[{i}][{j}]" for i in range(s) for j in range(s)] + [f"b[{i}]" for i in range(s)]
    for key in keys:
        A = [list(row) for row in method.numbers.A]
        b = list(method.numbers.b)
        nudge = sympy.Rational(1, 10**6)
        if key.startswith("A"):
            i, j = (int(x) for x in key[2:-1].split("]["))
            A[i][j] = A[i][j].value + nudge
        else:
            i = int(key[2:-1])
            b[i] = b[i].value + nudge
        found = order_only(bf.ButcherTableau(A, b))
        assert found.order <= base, key
        if key.startswith("b"):
            assert found.order == 0, key  # Σb moves off 1 by far more than any rounding


# -- tables stored as fractions of their decimals: a declared precision --------------------------


def fraction_encoded(name: str) -> tuple[list[list[str]], list[str], list[str]]:
    """A many-digit catalog tableau as other libraries store it: every entry (c too, rounded to
    the same 60 digits) as an exact fraction p/10^k of its published decimal."""
    method = bf.catalog[name]
    assert isinstance(method, bf.ButcherTableau)
    s = method.stages

    def frac(x: sympy.Expr) -> str:
        value = Fraction(int(x.p), int(x.q))
        return str(value)

    A = [[frac(method.A[i][j]) for j in range(s)] for i in range(s)]
    b = [frac(x) for x in method.b]
    c = [str(Fraction(as_decimal(Fraction(int(x.p), int(x.q)), 60))) for x in method.c]
    return A, b, c


def test_fraction_encoded_tables_need_a_declared_precision(declaration_error) -> None:
    A, b, c = fraction_encoded("feagin-10")
    with declaration_error(
        "differs from the row sum", "at the level of the digits", "precision = 1e-"
    ):
        bf.ButcherTableau(A, b, c=c)
    report = bf.check(bf.ButcherTableau(A, b, c=c, precision="1e-59"))
    assert (report.order, report.order_upper) == (10, 10)
    assert "declared precision" in report.rows()[5][1]


def test_precision_is_a_toml_key(tmp_path) -> None:
    A, b, c = fraction_encoded("feagin-10")
    import tomli_w

    table = {
        "name": "feagin-10-fractions",
        "family": "runge-kutta",
        "order": 10,
        "A": A,
        "b": b,
        "c": c,
        "precision": 1e-59,
    }
    path = tmp_path / "feagin-10-fractions.toml"
    path.write_text(tomli_w.dumps(table), encoding="utf-8")
    method = bf.load(path)
    assert bf.check(method).claim_holds
    assert bf.load(path).to_table()["precision"] == 1e-59


@pytest.mark.parametrize("bad", [0, -1e-10, 2, "tiny", True])
def test_bad_precisions_are_refused(bad: Any, declaration_error) -> None:
    with declaration_error("key 'precision'", "positive number below 1"):
        bf.ButcherTableau([[0]], [1], precision=bad)


def test_mixed_exact_and_float_entries_are_judged_together() -> None:
    # RK4 with exact weights and float stages (as NodePy ships Calvo-Montijano-Randez 6(5)).
    report = bf.check(
        bf.ButcherTableau(
            [[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1.0, 0]],
            ["1/6", "1/3", "1/3", "1/6"],
        )
    )
    assert (report.order, report.order_upper) == (4, 4) and not report.exact


def test_an_order_search_stops_at_its_time_budget() -> None:
    report = bf.check("feagin-10", time_budget=0.0)
    assert report.stopped == "time budget" and report.order_is_lower_bound
    assert any("time budget" in note for note in report.notes)
    assert not report.claim_holds  # claimed 10, established less: the claim is not proved


# -- members of parametrised families (subs) -----------------------------------------------------


def verdict(method: bf.Method) -> tuple[Any, ...]:
    """Everything `bf.check` says of a method (but its timing), and the rounding of its digits."""
    lines = [line for line in str(bf.check(method)).splitlines() if "proved in" not in line]
    assert isinstance(method, CoefficientMethod)
    return (method.numeric, method.rounding, *lines)


# Each family keeps a numeric entry beside a symbol: the member is the method declared directly.
MEMBERS = {
    "runge-kutta": (
        bf.ButcherTableau([[0, 0], ["a", 0]], ["0.3333", "0.6667"]),
        bf.ButcherTableau([[0, 0], ["3/4", 0]], ["0.3333", "0.6667"]),
    ),
    "multistep": (
        bf.LinearMultistep([-1, 1], ["0.5000", "a"]),
        bf.LinearMultistep([-1, 1], ["0.5000", "1/2"]),
    ),
    "splitting": (
        bf.Splitting([("A", "a"), ("B", 1), ("A", "0.5000")], substep="exact"),
        bf.Splitting([("A", "1/2"), ("B", 1), ("A", "0.5000")], substep="exact"),
    ),
    "general-linear": (
        GeneralLinear([["a"]], [[1]], [["1.0000"]], [[1]]),
        GeneralLinear([["1/2"]], [[1]], [["1.0000"]], [[1]]),
    ),
}


@pytest.mark.parametrize("family", MEMBERS)
def test_a_member_keeps_the_rounding_of_its_numeric_entries(family: str) -> None:
    parametrised, direct = MEMBERS[family]
    member = parametrised.subs({"a": "3/4" if family == "runge-kutta" else "1/2"})
    assert member.numeric and member.rounding == parametrised.rounding > 0
    assert verdict(member) == verdict(direct)


@pytest.mark.parametrize(
    ("value", "direct"),
    [
        ("0.6667", ["1 - 1/(2*(0.6667))", "1/(2*(0.6667))"]),
        ("2/3", ["1 - 1/(2*(2/3))", "1/(2*(2/3))"]),
        (Fraction(2, 3), ["1/4", "3/4"]),
        ("sqrt(2)/2", ["1 - 1/sqrt(2)", "1/sqrt(2)"]),
    ],
)
def test_a_substituted_entry_carries_the_rounding_of_its_value(value: Any, direct: Any) -> None:
    family = bf.ButcherTableau([[0, 0], ["a", 0]], ["1 - 1/(2*a)", "1/(2*a)"], b_hat=[1, 0])
    member = family.subs({"a": value})
    assert verdict(member) == verdict(bf.ButcherTableau([[0, 0], [value, 0]], direct, b_hat=[1, 0]))
    assert member.numbers.b_hat[0] is family.numbers.b_hat[0]  # no symbol: untouched
    again = from_dict(member.to_table())  # the member's file reads back as the member
    assert isinstance(again, bf.ButcherTableau)
    assert again.numbers == member.numbers


def test_a_float_value_keeps_its_binary_rounding() -> None:
    family = bf.ButcherTableau([[0, 0], ["a", 0]], ["1 - 1/(2*a)", "1/(2*a)"])
    member = family.subs({"a": 0.75})
    alone = member.numbers.A[1][0]
    assert (alone.value, alone.rounding, alone.raw) == (
        sympy.Rational(3, 4),
        float_rounding(0.75),
        0.75,
    )
    # 1/(2a) moves by |d(1/(2a))/da| * r = (8/9) r at a = 3/4, to first order.
    weight = member.numbers.b[1]
    assert weight.value == sympy.Rational(2, 3)
    assert float_rounding(0.75) * Fraction(8, 9) < weight.rounding < float_rounding(0.75)
    # A float has no text inside an expression: the file states a decimal covering the entry.
    written = parse_number(weight.raw, "b[1]")
    assert written.rounding >= weight.rounding and written.numeric
    assert abs(written.value - weight.value) + weight.rounding <= written.rounding
    assert bf.check(member).order == 2 and not bf.check(member).exact


def test_a_declared_precision_survives_subs() -> None:
    family = bf.ButcherTableau([[0, 0], ["a", 0]], ["1/4", "3/4"], precision=1e-12)
    member = family.subs({"a": "2/3"})
    assert member.precision == family.precision
    assert member.rounding == Fraction(1e-12)


def test_a_decimal_next_to_a_symbol_left_is_refused(declaration_error) -> None:
    family = bf.ButcherTableau([[0, 0], ["a*b", 0]], ["1/4", "3/4"])
    with declaration_error("key 'A[1][0]'", "must be exact"):
        family.subs({"a": "0.5"})
    with declaration_error("key 'A[1][0]'", "must be exact"):
        family.subs({"a": 0.5})
    assert family.subs({"a": "1/2"}).symbols == family.symbols - {sympy.Symbol("a", real=True)}


@SETTINGS
@given(
    a=st.fractions(min_value=Fraction(-3), max_value=Fraction(3), max_denominator=50),
    digits=st.integers(min_value=2, max_value=12),
)
def test_subs_then_check_is_declare_then_check(a: Fraction, digits: int) -> None:
    assume(a != 0)
    family = bf.ButcherTableau([[0, 0], ["a", 0]], ["1 - 1/(2*a)", "1/(2*a)"])
    exact = [1 - 1 / (2 * a), 1 / (2 * a)]
    assert verdict(family.subs({"a": a})) == verdict(bf.ButcherTableau([[0, 0], [a, 0]], exact))
    text = as_decimal(a, digits)
    assume(Fraction(text) != 0)
    direct = [f"1 - 1/(2*({text}))", f"1/(2*({text}))"]
    assert verdict(family.subs({"a": text})) == verdict(
        bf.ButcherTableau([[0, 0], [text, 0]], direct)
    )


# -- a declared precision in every family that has coefficients -------------------------------

# Adams-Bashforth 4 (beta = -9/24, 37/24, -59/24, 55/24) as 30-digit decimals whose last
# digits are off by a few 1e-28 (a computation to ~27 digits printed to 30).
AB4_BETA = [
    "-0.374999999999999999999999999700",
    "1.541666666666666666666666666467",
    "-2.458333333333333333333333333233",
    "2.291666666666666666666666667067",
    0,
]


def test_the_digits_of_a_multistep_method_prove_its_order_at_their_precision() -> None:
    alpha = [0, 0, 0, -1, 1]
    report = bf.check(bf.LinearMultistep(alpha, AB4_BETA))
    assert (report.order, report.order_upper) == (0, 0)
    report = bf.check(bf.LinearMultistep(alpha, AB4_BETA, precision=1e-25))
    assert (report.order, report.order_upper) == (4, 4) and not report.undetermined
    assert report.zero_stable is True
    assert dict(report.rows())["tolerance"].startswith("declared precision ±1e-25")
    assert report.to_dict()["precision"] == 1e-25
    coarse = bf.check(bf.LinearMultistep(alpha, AB4_BETA, precision="1e-6"))
    assert coarse.order < 4 and coarse.undetermined and coarse.order_upper is None


@pytest.mark.parametrize("bad", [0, -1e-10, 2, "tiny", True])
def test_bad_precisions_are_refused_in_multistep_methods(bad: Any, declaration_error) -> None:
    with declaration_error("key 'precision'", "positive number below 1"):
        bf.LinearMultistep([-1, 1], [1, 0], precision=bad)


def test_a_declared_precision_survives_subs_of_a_multistep_family() -> None:
    lmm = bf.LinearMultistep([0, "-k", "k"], ["-1/2", "3/2", 0], precision=1e-12)
    member = lmm.subs({"k": 1})
    assert member.precision == lmm.precision and member.rounding == Fraction(1e-12)


# Yoshida's triple jump (order 4) as 30-digit decimals of its irrational weights
# w1 = 1/(2 - 2^(1/3)), w0 = -2^(1/3)/(2 - 2^(1/3)), as a library that computed them to ~26
# digits would print them: the second A weight is off by 3.6e-28, far beyond its own printed
# precision (5e-31), so the digits alone are inconsistent (order 0, failing).
YOSHIDA_4_A = [
    "0.675603595979828817023843904486",
    "-0.175603595979828817023843904123",
    "-0.175603595979828817023843904486",
    "0.675603595979828817023843904486",
]
YOSHIDA_4_B = ["1.35120719195965763404768780897", "-1.70241438391931526809537561794"]
YOSHIDA_4_B.append(YOSHIDA_4_B[0])


def yoshida_4_digits(precision: Any) -> bf.Splitting:
    steps = [("A", YOSHIDA_4_A[0])]
    for a, b in zip(YOSHIDA_4_A[1:], YOSHIDA_4_B, strict=True):
        steps += [("B", b), ("A", a)]
    return bf.Splitting(steps, substep="exact", precision=precision)


def test_the_digits_of_an_irrational_splitting_prove_its_order_at_their_precision() -> None:
    report = bf.check(yoshida_4_digits(None), max_order=5)
    assert (report.order, report.order_upper) == (0, 0)  # the digits as written: inconsistent
    report = bf.check(yoshida_4_digits(1e-25), max_order=5)
    assert (report.order, report.order_upper) == (4, 4) and not report.undetermined_words
    rows = dict(report.rows())
    assert rows["tolerance"].startswith("declared precision ±1e-25")
    assert report.to_dict()["precision"] == 1e-25
    assert any("declared precision ±1e-25" in note for note in report.notes)


def test_a_coarse_precision_leaves_the_splittings_order_undetermined_never_met() -> None:
    report = bf.check(yoshida_4_digits("1e-6"), max_order=5)
    assert report.order < 4 and report.undetermined_words
    assert report.order_upper is None  # nothing fails: within 1e-6 a method of order 4 exists
    # An undetermined consistency condition is not an inconsistent splitting.
    assert not any("inconsistent" in note for note in report.notes)
    assert not any("the search stopped there" in note for note in report.notes)


@pytest.mark.parametrize("family", ["multistep", "splitting"])
def test_precision_is_a_toml_key_of_multistep_methods_and_splittings(tmp_path, family) -> None:
    import tomli_w

    table: dict[str, Any] = {"name": "digits", "family": family, "order": 4}
    if family == "multistep":
        table |= {"alpha": [0, 0, 0, -1, 1], "beta": AB4_BETA}
    else:
        steps = [list(step) for step in yoshida_4_digits(None).to_table()["steps"]]
        table |= {"substep": "exact", "steps": steps}
    path = tmp_path / "digits.toml"
    path.write_text(tomli_w.dumps(table | {"precision": 1e-25}), encoding="utf-8")
    method = bf.load(path)
    assert bf.check(method).claim_holds
    assert method.to_table()["precision"] == 1e-25
    assert from_dict(method.to_table()).to_table() == method.to_table()


@pytest.mark.parametrize("bad", [0, -1e-10, 2, "tiny", True])
def test_bad_precisions_are_refused_in_splittings(bad: Any, declaration_error) -> None:
    with declaration_error("key 'precision'", "positive number below 1"):
        bf.Splitting([("A", 1), ("B", 1)], precision=bad)


def test_a_declared_precision_survives_subs_of_a_splitting_family() -> None:
    split = bf.Splitting([("A", "g"), ("B", 1), ("A", "1 - g")], precision=1e-12)
    member = split.subs({"g": "1/2"})
    assert member.precision == split.precision and member.rounding == Fraction(1e-12)
    assert bf.check(member).order == 2


def test_a_splitting_whose_digits_leave_consistency_open_is_not_called_inconsistent() -> None:
    # Σ A = 0.9999 with each third known to ±5e-5: consistency is undetermined, not failed.
    steps = [("A", "0.3333"), ("B", "1/2"), ("A", "0.3333"), ("B", "1/2"), ("A", "0.3333")]
    report = bf.check(bf.Splitting(steps, substep="exact"))
    assert report.order == 0 and report.undetermined_words
    assert not any("inconsistent" in note for note in report.notes)
    assert not any("the search stopped there" in note for note in report.notes)
    assert bf.check(bf.Splitting([("A", "0.3333"), ("B", 1)], substep="exact")).order_upper == 0
