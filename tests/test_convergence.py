"""Empirical convergence beside every proof: the log-log slope of the global error at halving steps
must match the order `bf.check` proves (within 0.3). A disagreement is a bug in one of the two.

- Runge-Kutta (and continuous declarations, through their solver tableau): the non-autonomous
  y' = −y + cos t on [0, 1], y(0) = 1, exact y = (cos t + sin t)/2 + e^{−t}/2 (the nodes c matter).
  f is affine in y, so implicit stages are solved exactly by one linear solve per step size.
- Multistep: the same problem, started from exact values.
- Splittings: y' = (L_A + L_B [+ L_C]) y with non-commuting 3×3 matrices; sub-flows exact
  (matrix exponentials by mpmath, no scipy) or advanced by the declared Runge-Kutta sub-step.

Orders ≤ 4 run in float64; higher orders in mpmath at 60 digits, so that rounding does not flatten
the slope. The step counts keep every error far above the arithmetic's noise.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import mpmath
import numpy as np
import pytest
import sympy
from closeness import SLOPE

import butcherflow as bf
from butcherflow.analysis.convergence import (
    arithmetic_for,
    convergence,
    generic_member,
    measure,
    slopes,
)
from butcherflow.analysis.global_error import FLOAT64, lmm_error, rk_error, splitting_error
from butcherflow.methods.general_linear import GeneralLinear

SLOW: set[str] = set()  # catalog entries whose check + integration take more than 5 s


def root_condition_numerically(method: bf.LinearMultistep) -> bool:
    """Zero stability checked with numpy: roots of ρ in the closed unit disc, simple on the
    circle (independent of the exact analysis)."""
    rho = [float(x) for x in reversed(method.alpha)]  # highest degree first
    roots = np.roots(rho)
    if np.any(np.abs(roots) > 1 + 1e-9):
        return False
    on_circle = roots[np.abs(np.abs(roots) - 1) <= 1e-9]
    return all(
        np.sum(np.abs(on_circle - r) < 1e-6) == 1 for r in on_circle
    )  # no repeated root on |ζ| = 1


def assert_slope(label: str, order: int, counts: list[int], errors: list[Any]) -> None:
    measured = slopes(counts, errors)
    shown = ", ".join(f"N={n}: {float(e):.3e}" for n, e in zip(counts, errors, strict=True))
    if order == 0:
        # inconsistent: the error settles at a non-zero value instead of going to 0
        assert float(errors[-1]) > 1e-3, f"{label}: order 0 but the error vanishes ({shown})"
        assert abs(measured[-1]) <= SLOPE, f"{label}: order 0, slopes {measured} ({shown})"
        return
    floor = 1e-13 if arithmetic_for(order) is FLOAT64 else 1e-50
    assert float(errors[-1]) > floor, f"{label}: errors reach the rounding floor ({shown})"
    assert abs(measured[-1] - order) <= SLOPE, (
        f"{label}: proved order {order}, measured slopes {[round(x, 3) for x in measured]} "
        f"({shown})"
    )


def catalog_params() -> list[Any]:
    return [
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
        for name in sorted(bf.catalog)
    ]


@cache
def proof(name: str) -> tuple[bf.Method, bf.Report]:
    """The catalog entry (a generic member for families) and its report, once per module."""
    method = generic_member(bf.catalog[name])
    return method, bf.check(method)


@pytest.mark.parametrize("name", catalog_params())
def test_empirical_order_matches_the_proof(name: str) -> None:
    method, report = proof(name)
    expected_curves = 1
    if isinstance(method, bf.ContinuousDynamics):
        assert report.order == bf.check(method.solver_tableau()).order
    elif isinstance(method, bf.LinearMultistep):
        zero_stable = report.zero_stable  # type: ignore[attr-defined]
        assert zero_stable == root_condition_numerically(method), (
            f"{name}: the proof says zero_stable={zero_stable}, numpy's roots of ρ disagree"
        )
        expected_curves = 1 if zero_stable else 0  # divergent however small h is: no slope
    elif isinstance(method, bf.Splitting):
        expected_curves = 1 if method.substep is None else 2  # exact sub-flows, then sub-steps
    curves = convergence(method, report)
    assert len(curves) == expected_curves
    for curve in curves:
        assert_slope(curve.label, curve.order, list(curve.counts), list(curve.errors))


# -- a few inline methods, so the measurement itself is tested without the catalog -------------


def test_measurement_of_known_orders() -> None:
    rk4 = bf.ButcherTableau(
        [[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]],
        ["1/6", "1/3", "1/3", "1/6"],
    )
    counts, errors = measure(4, lambda n, ar: rk_error(rk4, n, ar))
    assert abs(slopes(counts, errors)[-1] - 4) <= SLOPE
    # c matters: midpoint with c = (0, 1) is first order on this non-autonomous problem
    shifted = bf.ButcherTableau([[0, 0], ["1/2", 0]], [0, 1], c=[0, 1], row_sum_c=False)
    assert bf.check(shifted).order == 1
    counts, errors = measure(1, lambda n, ar: rk_error(shifted, n, ar))
    assert abs(slopes(counts, errors)[-1] - 1) <= SLOPE
    gauss = bf.ButcherTableau(
        [["1/4", "1/4 - sqrt(3)/6"], ["1/4 + sqrt(3)/6", "1/4"]], ["1/2", "1/2"]
    )
    counts, errors = measure(4, lambda n, ar: rk_error(gauss, n, ar))
    assert abs(slopes(counts, errors)[-1] - 4) <= SLOPE


def test_a_parametrised_general_linear_method_is_measured_on_its_generic_member() -> None:
    family = GeneralLinear(
        [[0, 0], ["a", 0]], [[1], [1]], [["1 - 1/(2*a)", "1/(2*a)"]], [[1]], name="rk2-family"
    )
    member = generic_member(family)  # a = 1/3: a second-order explicit Runge-Kutta method
    assert isinstance(member, GeneralLinear) and ((0, 0), (sympy.Rational(1, 3), 0)) == member.A
    [curve] = convergence(member, bf.check(member))
    assert curve.order == 2 and abs(curve.slope - 2) <= SLOPE


def test_measurement_of_splittings() -> None:
    lie = bf.Splitting([("A", 1), ("B", 1)], substep="exact")
    strang = bf.Splitting([("A", "1/2"), ("B", 1), ("A", "1/2")], substep="exact")
    for method, order in ((lie, 1), (strang, 2)):
        counts, errors = measure(order, lambda n, ar, m=method: splitting_error(m, n, ar))
        assert abs(slopes(counts, errors)[-1] - order) <= SLOPE
    macaron = bf.Splitting([("A", "1/2"), ("B", 1), ("A", "1/2")], substep="euler")
    counts, errors = measure(1, lambda n, ar: splitting_error(macaron, n, ar))
    assert abs(slopes(counts, errors)[-1] - 1) <= SLOPE


def test_order_zero_multistep_does_not_converge() -> None:
    """y_{n+1} = h f_n is inconsistent (order 0): its error stays away from 0."""
    method = bf.LinearMultistep([0, 1], [1, 0])
    assert bf.check(method).order == 0
    counts, errors = measure(0, lambda n, ar: lmm_error(method, n, ar))
    assert float(errors[-1]) > 0.1
    assert abs(slopes(counts, errors)[-1]) <= SLOPE


# -- stability intervals beside sampling -------------------------------------------------------

z = sympy.Symbol("z")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
        for n in sorted(bf.catalog)
        if bf.catalog[n].family == "runge-kutta"
    ],
)
def test_stability_intervals_match_sampling(name: str) -> None:
    """|R| ≤ 1 at 20001 points of each proved interval (float64), and |R| > 1 somewhere in the
    0.05 beyond a finite end (mpmath, 50 digits: tangencies such as 1 + c·y¹⁰ are resolved)."""
    _, report = proof(name)
    stability = report.stability  # type: ignore[attr-defined]
    in_numpy = sympy.lambdify(z, stability.expression, "numpy")
    in_mpmath = sympy.lambdify(z, stability.expression, "mpmath")
    for end, direction in ((stability.real_interval, -1), (stability.imaginary_interval, 1j)):
        reach = 1000.0 if end == math.inf else end
        points = (direction * np.linspace(0.0, reach, 20001)).astype(complex)
        inside = np.abs(np.asarray(in_numpy(points), dtype=complex) * np.ones_like(points))
        # float64 cancels in a high-degree R far from 0 (SSP(16,3) at z = -25: 1 + 2.5e-9):
        # points it puts above 1 are evaluated again at 50 digits before they count
        with mpmath.workdps(50):
            worst = max(
                [abs(in_mpmath(mpmath.mpc(points[k]))) for k in np.flatnonzero(inside > 1 + 1e-9)],
                default=mpmath.mpf(inside.max()),
            )
        assert worst <= 1 + 1e-9, f"{name}: |R| = {worst} inside {direction}·[0, {end}]"
        if end == math.inf:
            continue
        with mpmath.workdps(50):
            beyond = [
                abs(in_mpmath(mpmath.mpc(direction) * (mpmath.mpf(end) + mpmath.mpf(k) / 800)))
                for k in range(1, 41)
            ]
        # A numeric tableau's proved interval takes R's low-degree terms from its order (the
        # report says so); sampled from the rounded entries, those terms are ~1e-16 off, which
        # can hold |R| a hair below 1 beyond the end (Prince-Dormand 8 in floats: 1 - 1.7e-22).
        slack = mpmath.mpf("1e-12") if report.method.numeric else 0
        assert max(beyond) > 1 - slack, (
            f"{name}: |R| ≤ 1 on {direction}·(0, {end} + 0.05] too: the interval is longer than "
            f"{end} (max |R| − 1 there: {mpmath.nstr(max(beyond) - 1, 5)})"
        )
    if stability.a_stable:
        assert stability.real_interval == stability.imaginary_interval == math.inf
