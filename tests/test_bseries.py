"""B-series, the Butcher group, modified equations and geometric properties, checked against
published values (typed from the papers and BSeries.jl's documentation, not from its code),
NodePy's SSP coefficients in the same run, and algebraic identities (hypothesis)."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from sympy.polys.domains import QQ

import butcherflow as bf
from butcherflow.analysis.bseries import (
    BSeries,
    energy_order,
    energy_preservation,
    evaluate,
    evaluate_numpy,
    exact_flow,
    inverse,
    symmetry_order,
    symplecticity_order,
    tree,
)
from butcherflow.analysis.exact.trees import PLAIN
from butcherflow.analysis.runge_kutta.monotonicity import ssp_coefficient
from butcherflow.errors import AnalysisError

MIDPOINT = {  # explicit midpoint, modified equation b(t) (BSeries.jl docs/tests, level sequences)
    (1,): 1, (1, 2): 0, (1, 2, 2): "-1/12", (1, 2, 3): "-1/6", (1, 2, 2, 2): 0,
    (1, 2, 2, 3): 0, (1, 2, 3, 3): "1/8", (1, 2, 3, 4): "1/8",
    (1, 2, 2, 2, 2): "7/240", (1, 2, 2, 2, 3): "1/40", (1, 2, 2, 3, 3): "3/80",
    (1, 2, 2, 3, 4): "7/240", (1, 2, 3, 2, 3): "1/30", (1, 2, 3, 3, 3): "-7/240",
    (1, 2, 3, 3, 4): "-1/40", (1, 2, 3, 4, 4): "-19/240", (1, 2, 3, 4, 5): "-1/20",
}  # fmt: skip

AVF = {  # Celledoni, McLachlan, Owren, Quispel (2010), Example 1: b(t)/σ(t) of the AVF method
    (1, 2): 0, (1, 2, 3): "1/12", (1, 2, 2): 0, (1, 2, 3, 4): 0, (1, 2, 3, 3): 0,
    (1, 2, 2, 2): 0, (1, 2, 3, 4, 5): "9/720", (1, 2, 3, 4, 4): "4/720",
    (1, 2, 3, 4, 3): "2/720", (1, 2, 3, 4, 2): "-4/720", (1, 2, 3, 3, 3): "-1/720",
    (1, 2, 3, 3, 2): "-4/720", (1, 2, 3, 2, 3): "2/720", (1, 2, 3, 2, 2): "-1/720",
    (1, 2, 2, 2, 2): 0,
}  # fmt: skip


def avf(order: int) -> BSeries:
    """The average vector field method's B-series (Celledoni et al. 2010): a(τ) = 1 and
    a([t₁…t_m]) = Π a(t_k) / (m + 1)."""
    values = {}
    for t in PLAIN.up_to(order):
        v = QQ(1)
        for c in t.children:
            v *= values[c]
        values[t.index] = v / (len(t.children) + 1) if t.children else QQ(1)
    return BSeries(PLAIN, order, QQ, QQ.one, values, "AVF")


def tableau(A: list[list[str]], b: list[str], name: str = "t") -> bf.ButcherTableau:
    return bf.ButcherTableau(A=A, b=b, name=name)


def test_modified_equation_of_explicit_midpoint_matches_bseries_jl() -> None:
    m = bf.modified_equation("midpoint", 5)
    got = {levels: m[tree(list(levels))] for levels in MIDPOINT}
    assert got == {k: sympy.Rational(v) for k, v in MIDPOINT.items()}


def test_modified_equation_of_avf_matches_celledoni_example_1() -> None:
    m = bf.modified_equation(avf(5), 5)
    got = {k: m[tree(list(k))] / tree(list(k)).symmetry for k in AVF}
    assert got == {k: sympy.Rational(v) for k, v in AVF.items()}


def test_euler_modified_field_on_lotka_volterra_is_f_minus_half_h_fprime_f() -> None:
    # Hairer, Lubich and Wanner IX.1: f̃ = f − h/2 f'f + O(h²), here with sympy's Jacobian
    p, q, h = sympy.symbols("p q h")
    f = sympy.Matrix([(2 - q) * p, (p - 1) * q])
    expected = f - h / 2 * f.jacobian([p, q]) * f
    got = evaluate(bf.modified_equation("euler", 2), list(f), [p, q], h)
    assert [sympy.expand(g - e) for g, e in zip(got, expected, strict=True)] == [0, 0]


def test_numpy_modified_field_follows_the_midpoint_steps_to_h5() -> None:
    # one midpoint step is the exact flow of its modified field to O(h^(order+1))
    p, q, hs = sympy.symbols("p q h")
    f = [(2 - q) * p, (p - 1) * q]
    field = evaluate_numpy(bf.modified_equation("midpoint", 4), f, [p, q], hs)
    rhs = sympy.lambdify([(p, q)], f, modules="numpy")

    def step(y: np.ndarray, h: float) -> np.ndarray:
        return y + h * np.asarray(rhs(y + h / 2 * np.asarray(rhs(y))))

    def flow(y: np.ndarray, h: float, n: int = 200) -> np.ndarray:
        dt = h / n
        for _ in range(n):  # RK4 on the modified field
            k1 = field(y, h)
            k2 = field(y + dt / 2 * k1, h)
            k3 = field(y + dt / 2 * k2, h)
            k4 = field(y + dt * k3, h)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    y0 = np.array([1.5, 2.25])
    errors = [np.linalg.norm(step(y0, h) - flow(y0, h)) for h in (0.1, 0.05)]
    assert 20 < errors[0] / errors[1] < 45  # O(h^5): ratio 32


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        # Celledoni, McLachlan, McLaren, Owren, Quispel, Wright (2009), ESAIM M2AN 43
        ((["0,0,0", "1/3,0,0", "-5/48,15/16,0"], "1/10,1/2,2/5"), 4),
        ((["0,0", "2/3,0"], "1/4,3/4"), 3),
        ("rk4", 4),
        ("implicit-midpoint", 2),
    ],
)
def test_energy_preservation_orders_published(method: object, expected: int) -> None:
    if isinstance(method, tuple):
        rows, b = method
        method = tableau([r.split(",") for r in rows], b.split(","))
    found = energy_order(bf.bseries(method, 8))  # type: ignore[arg-type]
    assert (found.order, found.holds) == (expected, False)


def test_avf_is_energy_preserving_and_not_symplectic() -> None:
    series = avf(7)
    assert (energy_order(series).holds, symplecticity_order(series).holds) == (True, False)


@pytest.mark.parametrize("name", ["gauss-legendre-2", "gauss-legendre-3", "implicit-midpoint"])
def test_gauss_methods_symplectic_and_symmetric(name: str) -> None:
    rows = dict(bf.check(name).geometry_rows())
    assert (rows["symplectic"][:3], rows["symmetric"][:3]) == ("yes", "yes")


@pytest.mark.parametrize(
    "name", ["rk4", "ssprk-10-4", "radau-iia-3", "radau-iia-5", "radau-ia-3", "lobatto-iiia-4"]
)
def test_explicit_radau_and_lobatto_iiia_alone_are_not_symplectic(name: str) -> None:
    assert bf.check(name).geometry.symplectic is False  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["lobatto-iiia-4", "lobatto-iiib-4", "trapezoid"])
def test_lobatto_and_trapezoid_symmetric(name: str) -> None:
    assert bf.check(name).geometry.symmetric is True  # type: ignore[attr-defined]


def test_rk4_not_symmetric_at_order_6() -> None:
    found = symmetry_order(bf.bseries("rk4", 6))
    assert (found.order, found.holds) == (5, False)


@st.composite
def series_strategy(draw: st.DrawFn, order: int = 5) -> BSeries:
    values = {
        t.index: QQ(draw(st.integers(-9, 9)), draw(st.integers(1, 5))) for t in PLAIN.up_to(order)
    }
    return BSeries(PLAIN, order, QQ, QQ.one, values, "random")


@settings(max_examples=25, deadline=None)
@given(series_strategy(), series_strategy(), series_strategy())
def test_composition_is_associative(a: BSeries, b: BSeries, c: BSeries) -> None:
    assert bf.compose(bf.compose(a, b), c) == bf.compose(a, bf.compose(b, c))


@settings(max_examples=25, deadline=None)
@given(series_strategy())
def test_inverse_composes_to_identity(a: BSeries) -> None:
    identity = bf.compose(a, inverse(a))
    assert all(identity[t] == 0 for t in identity)


def test_two_half_euler_steps_compose_to_the_known_series() -> None:
    half = bf.bseries(tableau([["0"]], ["1/2"]), 3)
    twice = bf.compose(half, half)
    assert [twice[tree(x)] for x in ([1], [1, 2], [1, 2, 2], [1, 2, 3])] == [
        1, sympy.Rational(1, 4), sympy.Rational(1, 8), 0]  # fmt: skip


def test_modified_equation_substituted_into_exact_flow_gives_the_method() -> None:
    a = bf.bseries("rk4", 6)
    assert bf.substitute(bf.modified_equation(a, 6), exact_flow(6)) == a


def test_modifying_integrator_makes_the_method_exact() -> None:
    a = bf.bseries("heun", 5)
    assert bf.substitute(bf.modifying_integrator(a, 5), a) == exact_flow(5)


rationals = st.fractions(min_value=-2, max_value=2, max_denominator=6)


@settings(max_examples=20, deadline=None)
@given(st.lists(rationals, min_size=3, max_size=3))
def test_modified_equation_of_an_order_p_method_is_f_to_order_p(entries: list[Fraction]) -> None:
    a21, a31, a32 = entries
    method = tableau(
        [["0", "0", "0"], [str(a21), "0", "0"], [str(a31), str(a32), "0"]],
        ["1/4", "1/4", "1/2"],
    )
    p = bf.check(method).order
    field = bf.modified_equation(method, p + 1)
    assert all(field[t] == (1 if t.order == 1 else 0) for t in PLAIN.up_to(p))


nonzero = st.fractions(min_value=Fraction(1, 4), max_value=2, max_denominator=5)


@settings(max_examples=15, deadline=None)
@given(st.lists(nonzero, min_size=3, max_size=3), st.lists(rationals, min_size=3, max_size=3))
def test_random_symplectic_member_and_its_perturbation(
    b: list[Fraction], upper: list[Fraction]
) -> None:
    # M = 0: a_ii = b_i/2, a_ij free above the diagonal, a_ji = b_i − b_i a_ij / b_j below it
    A = [[Fraction(0)] * 3 for _ in range(3)]
    for i in range(3):
        A[i][i] = b[i] / 2
    for (i, j), x in zip(((0, 1), (0, 2), (1, 2)), upper, strict=True):
        A[i][j] = x
        A[j][i] = b[i] - b[i] * x / b[j]
    method = tableau([[str(x) for x in row] for row in A], [str(x) for x in b])
    symplectic = symplecticity_order(bf.bseries(method, 6)).holds
    A[2][0] += Fraction(1, 7)
    perturbed = tableau([[str(x) for x in row] for row in A], [str(x) for x in b])
    assert (symplectic, symplecticity_order(bf.bseries(perturbed, 6)).holds) == (True, False)


@settings(max_examples=12, deadline=None)
@given(st.integers(2, 7), st.sampled_from(["gauss-legendre-2", "gauss-legendre-3"]))
def test_numeric_digits_never_gain_symplecticity(digits: int, name: str) -> None:
    # digits too coarse to pin M = 0 down may only be called symplectic when the method they
    # spell has M = 0 exactly (the rule for every condition: a zero residual of the digits)
    exact = bf.catalog[name]
    A = [[f"{float(x):.{digits}f}" for x in row] for row in exact.A]
    b = [f"{float(x):.{digits}f}" for x in exact.b]
    s = len(b)
    Af, bf_ = [[Fraction(x) for x in row] for row in A], [Fraction(x) for x in b]
    spelled = all(
        bf_[i] * Af[i][j] + bf_[j] * Af[j][i] - bf_[i] * bf_[j] == 0
        for i in range(s)
        for j in range(s)
    )
    verdict = bf.check(bf.ButcherTableau(A=A, b=b, name="rounded")).geometry.symplectic  # type: ignore[attr-defined]
    assert verdict is not True or spelled


def ssprk_s2(s: int) -> bf.ButcherTableau:
    """Optimal SSPRK(s,2) in Butcher form: a_ij = 1/(s−1) below the diagonal, b_j = 1/s."""
    A = [[f"1/{s - 1}" if j < i else "0" for j in range(s)] for i in range(s)]
    return tableau(A, [f"1/{s}"] * s, f"ssprk({s},2)")


def ssprk33() -> bf.ButcherTableau:
    return tableau([["0", "0", "0"], ["1", "0", "0"], ["1/4", "1/4", "0"]], ["1/6", "1/6", "2/3"])


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        (lambda: bf.catalog["heun"], 1),  # SSPRK(2,2)
        (ssprk33, 1),
        (lambda: bf.catalog["ssprk-10-4"], 6),
        (lambda: bf.catalog["ssprk-16-3"], 12),  # (n², 3) family: n² − n
        (lambda: bf.catalog["ssprk-9-3"], 6),
        *[((lambda s=s: ssprk_s2(s)), s - 1) for s in range(3, 7)],
        (lambda: bf.catalog["rk4"], 0),
        (lambda: bf.catalog["implicit-midpoint"], 2),
    ],
)
def test_published_ssp_coefficients(method: object, expected: int) -> None:
    found = ssp_coefficient(method())  # type: ignore[operator]
    assert found.exact == expected


def test_backward_euler_unconditionally_monotone() -> None:
    assert ssp_coefficient(bf.catalog["backward-euler"]).value == math.inf


def _nodepy_radius(method: bf.ButcherTableau) -> float:
    rk = pytest.importorskip("nodepy.runge_kutta_method")
    kind = rk.ExplicitRungeKuttaMethod if method.is_explicit else rk.RungeKuttaMethod
    A = np.array([[float(x) for x in row] for row in method.A])
    b = np.array([float(x) for x in method.b])
    return float(kind(A, b).absolute_monotonicity_radius())


FAST_SSP = [
    "heun",
    "ssprk-10-4",
    "ssprk-3",
    "ssprk-9-3",
    "implicit-midpoint",
    "sdirk-2",
    "ssprk-5-4",
]


@pytest.mark.parametrize("name", FAST_SSP)
def test_ssp_coefficient_matches_nodepy(name: str) -> None:
    method = bf.catalog[name]
    assert ssp_coefficient(method).value == pytest.approx(_nodepy_radius(method), abs=2e-3)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        n
        for n in bf.catalog
        if isinstance(bf.catalog[n], bf.ButcherTableau) and not bf.catalog[n].symbols
    ],
)
def test_ssp_coefficient_matches_nodepy_whole_catalog(name: str) -> None:
    method = bf.catalog[name]
    ours = ssp_coefficient(method).value
    theirs = _nodepy_radius(method)
    if ours == math.inf:
        assert theirs > 50  # NodePy's bisection stops at its upper bound
    else:
        # NodePy bisects in float64 with a 3e-16 tolerance on the entries: with many stages
        # its rounding moves the radius by up to a few parts in a thousand (SSPRK(16,3):
        # 11.956 against the published and exact 12)
        assert ours == pytest.approx(theirs, rel=1e-2, abs=2e-3)


def test_multistep_has_no_bseries_one_line() -> None:
    with pytest.raises(AnalysisError, match=r"multistep.*GeneralLinear") as info:
        bf.bseries("adams-bashforth-2", 4)
    assert "\n" not in str(info.value)


def test_order_beyond_time_budget_says_what_was_reached() -> None:
    with pytest.raises(AnalysisError, match=r"reached order \d+ \(\d+ trees\)") as info:
        bf.bseries("rk4", 14, time_budget=0.0)
    assert "\n" not in str(info.value)


def test_energy_of_a_non_hamiltonian_problem_is_refused() -> None:
    p, q = sympy.symbols("p q")
    with pytest.raises(AnalysisError, match="not one") as info:
        energy_preservation(bf.bseries("rk4", 5), [(2 - q) * p, (p - 1) * q], [q, p])
    assert "\n" not in str(info.value)


def test_energy_of_the_pendulum_is_its_order_for_rk4() -> None:
    q, p = sympy.symbols("q p")
    found = energy_preservation(bf.bseries("rk4", 6), [p, -sympy.sin(q)], [q, p])
    assert found.order == 4


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    [
        n
        for n in bf.catalog
        if isinstance(bf.catalog[n], bf.ButcherTableau)
        and not bf.catalog[n].symbols
        and not bf.catalog[n].numeric
        and (bf.catalog[n].order or 0) <= 8
    ],
)
def test_bseries_modified_equation_symplecticity_to_order_8(name: str) -> None:
    """The time target (< 2 s each) is `butcherflow bench bseries`'s (docs/benchmarks.md)."""
    series = bf.bseries(name, 8)
    modified = bf.modified_equation(series, 8)
    order = bf.catalog[name].order or 0
    # an order-p method's modified field is f plus terms of p + 1 nodes and more; the method
    # is symplectic at least to its order (the exact flow is)
    assert all(modified[t] == 0 for k in range(2, order + 1) for t in series.trees(k))
    assert symplecticity_order(series).order >= order


@pytest.mark.parametrize(
    ("fn", "total"),
    [(bf.modified_equation, "19063/26880"), (bf.modifying_integrator, "5460293/241920")],
)
def test_midpoint_to_order_9_sums_match_bseries_jl_benchmark_page(fn: object, total: str) -> None:
    # BSeries.jl's benchmarks page: Python BSeries, explicit midpoint, all trees up to order 9
    series = fn("midpoint", 9)  # type: ignore[operator]
    assert sum((v for _, v in series.items()), sympy.Integer(0)) == sympy.Rational(total)


def test_bench_bseries_writes_its_section(tmp_path: Path) -> None:
    from butcherflow.bench.bseries import run_bseries

    output = tmp_path / "benchmarks.md"
    rows = run_bseries(output=output, repeats=1, names=["heun", "gauss-legendre-2"])
    text = output.read_text()
    assert (
        [r.ssp for r in rows],
        "<!-- bench:bseries:start -->" in text,
        "| modified equation | 19063/26880 | 19063/26880 (same)" in text,
    ) == (["1", "0"], True, True)


SPLITTINGS = [n for n in bf.catalog if isinstance(bf.catalog[n], bf.Splitting)]
SLOW_SPLITTINGS = {"suzuki-4", "yoshida-4", "yoshida-4-rk4", "yoshida-6"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_SPLITTINGS else n for n in SPLITTINGS],
)
def test_coloured_tree_order_agrees_with_free_algebra_and_additive_proofs(name: str) -> None:
    from butcherflow.analysis.bseries import series_order, splitting_series

    method = bf.catalog[name]
    report = bf.check(method)
    exact = {op: "exact" for op in method.operators}  # type: ignore[attr-defined]
    by_trees = series_order(splitting_series(method, report.order + 1, exact))[0]  # type: ignore[arg-type]
    substep = report.substep_order  # type: ignore[attr-defined]
    with_substep = (
        series_order(splitting_series(method, substep + 1))[0]  # type: ignore[arg-type]
        if substep is not None
        else None
    )
    assert (by_trees, with_substep) == (report.order, substep)


@pytest.mark.parametrize(("sub", "expected"), [("heun", 2), ("euler", 1), ("exact", 2)])
def test_strang_with_a_different_sub_integrator_per_operator(sub: str, expected: int) -> None:
    from butcherflow.analysis.bseries import series_order, splitting_series

    series = splitting_series(bf.catalog["strang"], 4, {"A": "exact", "B": sub})  # type: ignore[arg-type]
    assert series_order(series)[0] == expected


def test_lobatto_iiia_iiib_pair_is_symplectic_and_iiia_with_itself_is_not() -> None:
    from butcherflow.analysis.bseries.verdicts import partitioned_symplectic

    iiia, iiib = bf.catalog["lobatto-iiia-4"], bf.catalog["lobatto-iiib-4"]
    pair = [partitioned_symplectic(x, y)[0] for x, y in ((iiia, iiib), (iiib, iiia), (iiia, iiia))]
    assert pair == [True, True, False]


def test_symplectic_euler_pair_is_symplectic() -> None:
    from butcherflow.analysis.bseries.verdicts import partitioned_symplectic

    assert partitioned_symplectic(bf.catalog["backward-euler"], bf.catalog["euler"])[0] is True


def test_symplecticity_of_continuous_dynamics_says_it_is_not_decided_here() -> None:
    from butcherflow.analysis.bseries.verdicts import symplectic

    with pytest.raises(AnalysisError, match=r"not for a continuous declaration") as info:
        symplectic("neural-ode-rk4")
    assert "\n" not in str(info.value)


def test_bseries_answers_every_family_that_has_one() -> None:
    """Exact sub-flows (Yoshida's fourth-order composition), an additive method, a general
    linear method; continuous dynamics and multistep methods say why not, in one line."""
    orders = [
        bf.analysis.bseries.series_order(bf.bseries(n, 5))[0] for n in ("yoshida-4", "ars-443")
    ]
    refused = []
    for name in ("neural-ode-rk4", "leapfrog"):
        with pytest.raises(AnalysisError) as info:
            bf.bseries(name, 3)
        refused.append("\n" not in str(info.value) and "B-series" in str(info.value))
    assert (orders, bf.bseries("dlcl-4", 2).family.is_plain, refused) == (
        [4, 3],
        True,
        [True, True],
    )


@pytest.mark.parametrize(
    ("name", "symplectic", "symmetric"),
    [("yoshida-4", "yes", "yes"), ("ruth-3", "yes", "no"), ("lie-trotter", None, "no")],
)
def test_splitting_rows(name: str, symplectic: str | None, symmetric: str) -> None:
    rows = dict(bf.check(name).geometry_rows())
    got = (rows["symplectic"].split()[0], rows["symmetric"].split()[0])
    assert got[1] == symmetric and (symplectic is None or got[0] == symplectic)


def test_coarse_digits_leave_symmetry_and_energy_undetermined() -> None:
    exact = bf.catalog["gauss-legendre-3"]
    rounded = bf.ButcherTableau(
        A=[[f"{float(x):.5f}" for x in row] for row in exact.A],
        b=[f"{float(x):.5f}" for x in exact.b],
        name="gl3-5-digits",
    )
    geometry = bf.check(rounded).geometry  # type: ignore[attr-defined]
    assert (geometry.symmetric, "undetermined" in geometry.energy_text) == (None, True)


def test_internal_stability_polynomials_of_rk4_match_nodepy() -> None:
    from butcherflow.analysis.runge_kutta.internal_stability import internal_stability

    rk = pytest.importorskip("nodepy.runge_kutta_method")
    method = bf.catalog["rk4"]
    A = [[float(x) for x in row] for row in method.A]
    theirs = rk.ExplicitRungeKuttaMethod(np.array(A), np.array([float(x) for x in method.b]))
    polys = theirs.internal_stability_polynomials(use_butcher=True)
    z = sympy.Symbol("z")
    ours = internal_stability(method, None).polynomials
    expected = [[float(c) for c in np.poly1d(p).coeffs] for p in polys]  # stages 2..4, as ours
    got = [[float(c) for c in sympy.Poly(p, z).all_coeffs()] for p in ours]
    assert [np.allclose(g, e) for g, e in zip(got, expected, strict=True)] == [True] * 3


def test_order_star_of_rk4_has_five_sectors_at_zero() -> None:
    # Wanner, Hairer, Nørsett (1978): order p gives p + 1 sectors of |R(z)e^(−z)| > 1 at 0
    from butcherflow.gallery.plots import order_star_svg

    report = bf.check("rk4")
    angles = np.linspace(0, 2 * np.pi, 720, endpoint=False)
    z = 0.3 * np.exp(1j * angles)
    outside = np.abs(report.stability.evaluate(z) * np.exp(-z)) > 1  # type: ignore[attr-defined]
    changes = int(np.count_nonzero(outside != np.roll(outside, 1)))
    svg = order_star_svg(report.stability, 4, "rk4: order star")  # type: ignore[attr-defined]
    assert (changes, svg.startswith("<?xml"), "order star" in svg) == (10, True, True)


def test_general_linear_form_of_rk4_has_rk4s_bseries() -> None:
    rk4 = bf.catalog["rk4"]
    glm = bf.GeneralLinear(
        A=[list(r) for r in rk4.A],  # type: ignore[attr-defined]
        U=[[1]] * 4,
        B=[list(rk4.b)],  # type: ignore[attr-defined]
        V=[[1]],
        start=["y(x)"],
        name="rk4-as-glm",
    )
    assert bf.bseries(glm, 5) == bf.bseries(rk4, 5)


def test_modifying_integrator_of_a_splitting_is_refused() -> None:
    """Only the sum of the operators' corrections is fixed: there is no one answer."""
    with pytest.raises(AnalysisError, match="no unique modifying integrator") as info:
        bf.modifying_integrator(bf.bseries("strang", 3), 3)
    assert "\n" not in str(info.value)


def test_geometric_rows_are_bounded_by_the_report_budget() -> None:
    """The rows read after the proof get what the report left of its time budget: none here."""
    report = bf.check("gauss-legendre-2", time_budget=0.0)
    rows = dict(report.geometry_rows())
    assert "not decided within the time budget" in rows["symmetric"]
    assert rows["energy preservation order"] == "not decided within the time budget"
