"""A linear multistep method's stability region, read in float64 from its boundary locus.

The locus is z(θ) = ρ(e^{iθ}) / σ(e^{iθ}); the A(α) angle and the real stability interval are
read from it on a grid of angles, refined where it matters, and checked by root tests of
ρ(ζ) − zσ(ζ) at points of the region.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import combinations

import numpy as np

from ...methods import LinearMultistep


def locus(rho_c: np.ndarray, sigma_c: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """The boundary locus z(θ) = ρ(e^{iθ}) / σ(e^{iθ}).

    **Arguments:**

    - `rho_c`, `sigma_c`: the coefficients of ρ and σ, highest power first, `(k + 1,)`.
    - `theta`: the angles, any shape.

    **Returns:** complex z(θ), the shape of `theta` (inf or nan where σ(e^{iθ}) = 0).
    """
    w = np.exp(1j * theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.polyval(rho_c, w) / np.polyval(sigma_c, w))


def _stable(rho_c: np.ndarray, sigma_c: np.ndarray, z: complex) -> bool:
    """Every root of ρ(ζ) − zσ(ζ) in the closed unit disc, those on the circle simple."""
    coeffs = rho_c - z * sigma_c
    if abs(coeffs[0]) <= 1e-12 * np.abs(coeffs).max():
        return False  # the degree drops: a root has gone to infinity
    roots = np.roots(coeffs)
    if np.any(np.abs(roots) > 1 + 1e-9):
        return False
    edge = roots[np.abs(roots) > 1 - 1e-9]
    return all(abs(a - b) > 1e-6 for a, b in combinations(edge, 2))


def _angle(z: np.ndarray, tiny: float) -> np.ndarray:
    """|arg(−z)| in degrees; 180 at infinity and near 0, where cancellation in ρ(e^{iθ}) makes
    the angle noise (by the order conditions it tends to 90° at z = 0 anyway)."""
    angle = np.degrees(np.arctan2(np.abs(z.imag), -z.real))
    return np.where(np.isfinite(z) & (np.abs(z) > tiny), angle, 180.0)


def _zoom(g: Callable[[np.ndarray], np.ndarray], lo: float, hi: float) -> float:
    """Where g is least on [lo, hi] (unimodal there), by nested grids: 32^6 times finer."""
    for _ in range(6):
        ts = np.linspace(lo, hi, 65)
        i = int(np.argmin(g(ts)))
        lo, hi = ts[max(i - 1, 0)], ts[min(i + 1, 64)]
    return 0.5 * (lo + hi)


def a_alpha_angle(
    rho_c: np.ndarray, sigma_c: np.ndarray, tiny: float, snap: bool = True
) -> float | None:
    """The A(α) angle of a linear multistep method, read from its boundary locus.

    **Arguments:**

    - `rho_c`, `sigma_c`: the coefficients of ρ and σ, highest power first, `(k + 1,)`.
    - `tiny`: points of the locus this close to 0 are noise.
    - `snap`: round a reading within float64 noise of 90° up to 90 (only where A-stability is
      possible).

    **Returns:** the angle in degrees; `None` when the negative real axis is not in the
    stability region.
    """

    def angle(ts: np.ndarray) -> np.ndarray:
        return _angle(locus(rho_c, sigma_c, ts), tiny)

    theta = np.linspace(0.0, np.pi, 4097)  # real coefficients: the locus is symmetric
    ang = angle(theta)
    best = min(90.0, float(ang.min()))  # the ends θ = 0, π are real points of the locus
    interior = np.flatnonzero((ang[1:-1] <= ang[:-2]) & (ang[1:-1] <= ang[2:])) + 1
    for i in sorted(interior, key=lambda i: ang[i])[:8]:
        best = min(best, float(angle(np.array([_zoom(angle, theta[i - 1], theta[i + 1])]))[0]))
    if snap and best > 90.0 - 1e-7:
        best = 90.0  # float64 noise on A-stable loci
    # Off the locus the sector is all stable or all not: test points in it decide which.
    probes = [-1e-3, -1.0, -1e3, -1e6] if best > 1e-6 else list(-np.logspace(-3, 6, 64))
    if not all(_stable(rho_c, sigma_c, z) for z in probes if -z > 2 * tiny):
        return None
    return best if best > 1e-6 else 0.0


def real_interval(rho_c: np.ndarray, sigma_c: np.ndarray, tiny: float) -> tuple[float, bool]:
    """The real stability interval of a linear multistep method, from its boundary locus.

    **Arguments:**

    - `rho_c`, `sigma_c`: the coefficients of ρ and σ, highest power first, `(k + 1,)`.
    - `tiny`: crossings of the real axis this close to 0 are noise.

    **Returns:** `(r, skipped)`: the largest r with [−r, 0] in the stability region
    (`math.inf` when unbounded, 0.0 when none), and whether the locus crossed the real axis
    within `tiny` of 0 (other than at θ = 0, where every consistent method's locus passes
    through 0) beyond float64 noise (1e-6): where `tiny` is a numeric declaration's reach, r
    may end there instead.
    """

    def height(ts: np.ndarray) -> np.ndarray:
        return np.abs(locus(rho_c, sigma_c, ts).imag)

    theta = np.linspace(0.0, np.pi, 4097)
    z = locus(rho_c, sigma_c, theta)
    crossings = [z[0].real, z[-1].real, *z[1:-1][z[1:-1].imag == 0].real]
    for i in np.flatnonzero(z.imag[:-1] * z.imag[1:] < 0):
        point = complex(locus(rho_c, sigma_c, np.array([_zoom(height, theta[i], theta[i + 1])]))[0])
        if np.isfinite(point) and abs(point.imag) <= 1e-9 * (1 + abs(point.real)):
            crossings.append(point.real)  # a sign change through infinity is no crossing
    first = min((-x for x in crossings if np.isfinite(x) and x < -tiny), default=math.inf)
    skipped = any(-tiny <= x < -1e-6 for x in crossings[1:])
    return (first if _stable(rho_c, sigma_c, -min(first / 2, 1.0)) else 0.0), skipped


def float_coefficients(method: LinearMultistep) -> tuple[np.ndarray, np.ndarray]:
    """The coefficients of ρ and σ in float64, highest power first (numpy's convention).

    **Arguments:** `method`: a k-step method without free symbols.

    **Returns:** `(rho_c, sigma_c)`, each `(k + 1,)`.
    """
    rho, sigma = ([float(x) for x in v[::-1]] for v in (method.alpha, method.beta))
    return np.array(rho), np.array(sigma)
