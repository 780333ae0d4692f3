"""The threshold factor: the radius of absolute monotonicity of an explicit method's stability
polynomial R(z), exact, against published values, NodePy's bisection
(`linear_absolute_monotonicity_radius`) in the same run, a float check of the derivatives on
both sides of the end, and the bound SSP coefficient ≤ threshold factor (Kraaijevanger 1991)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from catalog_sweep import sweep

import butcherflow as bf
from butcherflow.analysis.runge_kutta.monotonicity import ssp_coefficient, threshold_factor

EXPLICIT = [
    n
    for n in bf.catalog
    if isinstance(bf.catalog[n], bf.ButcherTableau)
    and bf.catalog[n].is_explicit
    and not bf.catalog[n].symbols
]


# NodePy's stability_function expands R symbolically: 18 s for Feagin's 17 stages (twice per
# call), minutes beyond; larger methods are checked against the SSP bound alone
NODEPY_STAGES = 13


def euler_repeated(s: int) -> bf.ButcherTableau:
    """s Euler steps of size h/s as one s-stage method: R(z) = (1 + z/s)^s."""
    A = [[f"1/{s}" if j < i else 0 for j in range(s)] for i in range(s)]
    return bf.ButcherTableau(A, [f"1/{s}"] * s, name=f"euler-{s}")


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        (bf.catalog["rk4"], 1),  # R(z) = Σ z^k/k!, R‴(x) = 1 + x (Kraaijevanger 1986)
        (bf.catalog["heun"], 1),
        (euler_repeated(3), 3),  # (1 + z/s)^s: s, the largest for first order (Kraaijevanger)
        (bf.catalog["ssprk-10-4"], 6),  # attains the optimal (10, 4) value (Ketcheson 2008)
    ],
    ids=["rk4", "heun", "euler-3", "ssprk-10-4"],
)
def test_published_threshold_factors(method: bf.ButcherTableau, expected: int) -> None:
    found = threshold_factor(method)
    assert found is not None and found.exact == expected


def test_an_implicit_method_is_not_examined() -> None:
    assert threshold_factor(bf.catalog["gauss-legendre-2"]) is None


def _derivatives(method: bf.ButcherTableau, x: float) -> list[float]:
    A = np.array([[float(a) for a in row] for row in method.A])
    b = np.array([float(w) for w in method.b])
    c, v = [1.0], np.ones(len(b))
    for _ in range(len(b)):
        c.append(float(b @ v))
        v = A @ v
    return [
        sum(c[j] * math.perm(j, k) * x ** (j - k) for j in range(k, len(c))) for k in range(len(c))
    ]


@pytest.mark.parametrize("name", sweep(EXPLICIT))
def test_threshold_factor_bounds_the_ssp_coefficient_and_matches_nodepy(name: str) -> None:
    method = bf.catalog[name]
    assert isinstance(method, bf.ButcherTableau)
    found = threshold_factor(method)
    assert found is not None
    assert found.value >= ssp_coefficient(method).value
    if method.stages > NODEPY_STAGES:
        return
    rk = pytest.importorskip("nodepy.runge_kutta_method")
    A = np.array([[float(x) for x in row] for row in method.A])
    b = np.array([float(x) for x in method.b])
    theirs = rk.ExplicitRungeKuttaMethod(A, b).linear_absolute_monotonicity_radius()
    # NodePy bisects with its derivatives judged in float64 (tolerance 3e-16): where the optimum
    # makes them touch zero at the end (SSPRK(10,4): R⁽ᵏ⁾(−6) = 0) it stops short, 5.99986
    assert found.value == pytest.approx(theirs, rel=1e-4, abs=1e-8)


@pytest.mark.parametrize("name", ["dormand-prince-5", "rk4"])
def test_the_derivatives_change_sign_at_the_threshold(name: str) -> None:
    method = bf.catalog[name]
    assert isinstance(method, bf.ButcherTableau)
    found = threshold_factor(method)
    assert found is not None and 0 < found.value < math.inf
    inside = [_derivatives(method, -x) for x in np.linspace(0, found.value * 0.999, 50)]
    assert min(min(d) for d in inside) >= -1e-12
    assert min(_derivatives(method, -found.value * 1.01)) < 0
