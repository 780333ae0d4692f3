"""Internal stability functions Q_j(z) = z bᵀ(I − zA)⁻¹e_j of implicit tableaux, and the picture
of the SSP coefficient, against facts derived by hand from the published tableaux (below)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy

import butcherflow as bf
from butcherflow.analysis.runge_kutta.internal_stability import Z, internal_stability
from butcherflow.analysis.runge_kutta.monotonicity import monotonicity_margin, ssp_coefficient

s3, s2 = sympy.sqrt(3), sympy.sqrt(2)


def _same(found: list[sympy.Expr], expected: list[sympy.Expr]) -> bool:
    return len(found) == len(expected) and all(
        sympy.simplify(f - e) == 0 for f, e in zip(found, expected, strict=True)
    )


# Q_j by hand from each tableau (Hairer and Wanner II, IV.5 and IV.6):
# - implicit midpoint A = [[1/2]], b = [1]: Q = z/(1 − z/2).
# - Gauss-Legendre 2: det(I − zA) = 1 − z/2 + z²/12 and bᵀadj(I − zA) = ½[1 + √3z/6, 1 − √3z/6],
#   so Q_{1,2} = z(6 ± √3z)/(z² − 6z + 12).
# - Alexander's SDIRK, γ = 1 − √2/2, A = [[γ, 0], [1 − γ, γ]], b = [1 − γ, γ]:
#   Q_1 = (1 − γ)z/(1 − γz)², Q_2 = γz/(1 − γz).
# - Radau IIA 3, A = [[5/12, −1/12], [3/4, 1/4]], b = [3/4, 1/4]: det(I − zA) = 1 − 2z/3 + z²/6
#   and bᵀadj(I − zA) = [3/4, 1/4 − z/6], so Q_1 = 9z/(2(z² − 4z + 6)), Q_2 = z(3 − 2z)/(2(…)).
# - trapezoid (Lobatto IIIA 2), A = [[0, 0], [1/2, 1/2]]: stage 1 is yₙ; Q_2 = z/(2 − z).
# - Lobatto IIIB 3: the last column of A is zero, so stage 3 feeds nothing back: Q_3 = z/6.
G = 1 - s2 / 2
D2 = Z**2 - 6 * Z + 12
HAND = {
    "implicit-midpoint": [Z / (1 - Z / 2)],
    "gauss-legendre-2": [Z * (6 + s3 * Z) / D2, Z * (6 - s3 * Z) / D2],
    "sdirk-2": [(1 - G) * Z / (1 - G * Z) ** 2, G * Z / (1 - G * Z)],
    "radau-iia-3": [9 * Z / (2 * (Z**2 - 4 * Z + 6)), Z * (3 - 2 * Z) / (2 * (Z**2 - 4 * Z + 6))],
    "trapezoid": [Z / (2 - Z)],
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_internal_stability_functions_match_hand_derivations(name: str) -> None:
    assert _same(internal_stability(bf.catalog[name], None).polynomials, HAND[name])


# The suprema over (−∞, 0] (A-stable: the real interval is unbounded), by hand from the above:
# Q(−∞) = −bᵀA⁻¹e_j: 2 for the midpoint, ±√3 for Gauss 2 (its critical points 3 − √3 ± √6 give
# |Q_1| ≈ 0.228 only), −δ_js for a stiffly accurate method (SDIRK-2, Radau IIA: their interior
# maxima (1 − γ)/(4γ) ≈ 0.604 and 9√6/(24 + 8√6) ≈ 0.506 stay below), −1 for the trapezoid, and
# for Radau IA 3 (A = [[1/4, −1/4], [1/4, 5/12]], b = [1/4, 3/4]) bᵀA⁻¹ = [−1/2, 3/2].
SUPREMA = {
    "implicit-midpoint": 2.0,
    "gauss-legendre-2": math.sqrt(3),
    "sdirk-2": 1.0,
    "radau-iia-3": 1.0,
    "radau-ia-3": 1.5,
    "trapezoid": 1.0,
}


@pytest.mark.parametrize("name", sorted(SUPREMA))
def test_implicit_amplification_is_the_stiff_limit(name: str) -> None:
    found = internal_stability(bf.catalog[name], math.inf)
    assert (found.amplification, found.note) == (
        pytest.approx(SUPREMA[name], rel=1e-12),
        "a supremum, approached as x → −∞",
    )


def test_the_report_row_names_the_negative_axis() -> None:
    row = dict(bf.check("gauss-legendre-2").geometry_rows())["internal amplification"]
    assert row == "1.73205 over (−∞, 0] (a supremum, approached as x → −∞)"


def test_lobatto_iiib_stage_three_grows_without_bound() -> None:
    found = internal_stability(bf.catalog["lobatto-iiib-4"], math.inf)
    q3 = found.polynomials[found.stages.index(3)]
    assert (sympy.simplify(q3 - Z / 6), found.amplification) == (0, None)
    assert found.how.startswith("unbounded: Q_") and "grows without bound" in found.how


def test_a_pole_inside_the_interval_is_said_in_words() -> None:
    # A = [[-1]], b = [1]: Q = z/(1 + z), a pole at z = −1
    method = bf.ButcherTableau(A=[[-1]], b=[1], name="negative-diagonal")
    found = internal_stability(method, math.inf)
    assert (found.amplification, found.how) == (
        None,
        "unbounded: Q_1 has a pole at x = -1, inside the interval",
    )


def test_bounded_interval_of_an_implicit_method_is_used() -> None:
    # Q = z/(1 − z/2) on [−1, 0]: |Q| increases with |x|, so its maximum is |Q(−1)| = 2/3
    found = internal_stability(bf.catalog["implicit-midpoint"], 1.0)
    assert (found.amplification, found.note) == (pytest.approx(2 / 3, rel=1e-12), "")


def test_explicit_midpoint_amplification() -> None:
    # A = [[0, 0], [1/2, 0]], b = [0, 1]: Q_2 = z, and the real stability interval is [−2, 0]
    found = bf.check("midpoint").geometry.internal  # type: ignore[attr-defined]
    assert (found.stages, found.amplification) == ((2,), pytest.approx(2.0, rel=1e-12))


def test_explicit_amplification_is_within_nodepys_over_the_complex_region() -> None:
    # NodePy maximises over the whole region |R(z)| ≤ 1, which holds the real interval
    rk = pytest.importorskip("nodepy.runge_kutta_method")
    method = bf.catalog["rk4"]
    A = np.array([[float(x) for x in row] for row in method.A])
    theirs = rk.ExplicitRungeKuttaMethod(A, np.array([float(x) for x in method.b]))
    complex_max, _ = theirs.maximum_internal_amplification(N=200, use_butcher=True)
    ours = bf.check(method).geometry.internal.amplification  # type: ignore[attr-defined]
    assert 0.5 * complex_max < ours <= complex_max * (1 + 1e-6)


def test_monotonicity_margin_changes_sign_at_the_ssp_coefficient() -> None:
    # SSPRK(3,3) has SSP coefficient 1 (Shu and Osher 1988; Gottlieb, Ketcheson and Shu 2011)
    method = bf.catalog["ssprk-3"]
    radius = ssp_coefficient(method).value
    margin = monotonicity_margin(method, np.array([0.5, 0.999, 1.001, 1.5]) * radius)
    assert (radius, list(margin >= -1e-15)) == (1.0, [True, True, False, False])
