"""Plots of the gallery, drawn with matplotlib into SVG text (deterministic, no fonts fetched).

- `stability_svg`: the region |R(z)| ≤ 1 of a Runge-Kutta method, from its exact R(z).
- `multistep_stability_svg`: the region of a linear multistep method (every root of
  ρ(ζ) − zσ(ζ) in the unit disc), with its boundary locus z(θ) = ρ(e^{iθ})/σ(e^{iθ}).
- `order_star_svg`: the order star {z : |R(z)| > |e^z|} of a Runge-Kutta method (Wanner,
  Hairer and Nørsett 1978): p + 1 sectors meet at 0 for a method of order p.
- `convergence_svg`: global error against step size h = 1/N, log-log, beside the slope the proof
  predicts.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..analysis.convergence import Convergence
from ..analysis.runge_kutta.stability import StabilityFunction

GRID = 241  # points per axis of the region plots


def _figure(width: float = 5.2, height: float = 4.2) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "none",  # text stays text: small files, the browser's own fonts
            "svg.hashsalt": "butcherflow",  # stable ids: regenerating changes nothing
            "font.size": 9,
            "font.family": "sans-serif",
        }
    )
    fig, ax = plt.subplots(figsize=(width, height))
    return fig, ax


def _svg(fig: Any, bottom: float = 0.12) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    # fixed margins rather than tight_layout: one draw instead of two
    fig.subplots_adjust(left=0.14, right=0.97, bottom=bottom, top=0.92)
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()


def _extent(*ends: float | None) -> float:
    finite = [e for e in ends if e is not None and math.isfinite(e) and e > 0]
    return max(finite) if finite else 0.0


def _legend_below(fig: Any, ax: Any) -> str:
    """The legend under the axes, outside them (inside, it covers the region near the origin,
    where the intervals are), and the region plot as SVG."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    return _svg(fig, bottom=0.2)


def _region(ax: Any, x: np.ndarray, y: np.ndarray, inside: np.ndarray, label: str) -> None:
    ax.contourf(x, y, inside.astype(float), levels=[0.5, 1.5], colors=["#9ecae1"])
    ax.contour(x, y, inside.astype(float), levels=[0.5], colors=["#08519c"], linewidths=1.0)
    ax.axhline(0, color="#444", linewidth=0.6)
    ax.axvline(0, color="#444", linewidth=0.6)
    ax.set_xlabel("Re z  (z = hλ)")
    ax.set_ylabel("Im z")
    ax.set_aspect("equal")
    ax.plot([], [], color="#9ecae1", linewidth=8, label=label)


def stability_svg(stability: StabilityFunction, title: str) -> str:
    """The stability region {z : |R(z)| ≤ 1} of a Runge-Kutta method, with its intervals.

    **Arguments:**

    - `stability`: the method's `StabilityFunction` (no free symbols).
    - `title`: the plot's title.

    **Returns:** an SVG document.
    """
    real, imag = stability.real_interval, stability.imaginary_interval
    size = _extent(real, imag) or 5.0
    unbounded = real == math.inf or imag == math.inf
    left, right = -1.25 * size, (1.25 * size if unbounded else max(0.4 * size, 1.0))
    span = 1.25 * size
    x = np.linspace(left, right, GRID)
    y = np.linspace(-span, span, GRID)
    z = x[None, :] + 1j * y[:, None]
    with np.errstate(all="ignore"):
        values = np.abs(stability.evaluate(z))
    inside = np.nan_to_num(values, nan=np.inf) <= 1.0
    fig, ax = _figure(height=4.6)
    _region(ax, x, y, inside, "|R(z)| ≤ 1")
    if real is not None and real > 0:
        end = left if real == math.inf else -real
        ax.plot([end, 0], [0, 0], color="#d62728", linewidth=2.5, label="real interval")
    if imag is not None and imag > 0:
        end = span if imag == math.inf else imag
        ax.plot([0, 0], [-end, end], color="#2ca02c", linewidth=2.5, label="imaginary interval")
    ax.set_xlim(left, right)
    ax.set_ylim(-span, span)
    ax.set_title(title)
    return _legend_below(fig, ax)


def order_star_svg(stability: StabilityFunction, order: int, title: str) -> str:
    """The order star A₊ = {z : |R(z)e^(−z)| > 1} of a Runge-Kutta method.

    Around 0 the star has p + 1 sectors inside and p + 1 outside for order p (Wanner, Hairer
    and Nørsett, BIT 18, 1978); an A-stable method's star leaves the imaginary axis outside.

    **Arguments:** `stability`: the method's `StabilityFunction`; `order`: its proved order
    (named in the legend); `title`: the plot's title.

    **Returns:** an SVG document.
    """
    span = 4.0
    x = np.linspace(-span, span, GRID)
    y = np.linspace(-span, span, GRID)
    z = x[None, :] + 1j * y[:, None]
    with np.errstate(all="ignore"):
        ratio = np.abs(stability.evaluate(z) * np.exp(-z))
    inside = np.nan_to_num(ratio, nan=np.inf) > 1.0
    fig, ax = _figure()
    _region(ax, x, y, inside, f"|R(z)e^(−z)| > 1 (order {order}: {order + 1} sectors at 0)")
    ax.set_xlim(-span, span)
    ax.set_ylim(-span, span)
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
    return _svg(fig)


def _multistep_inside(alpha: Sequence[float], beta: Sequence[float], z: np.ndarray) -> np.ndarray:
    """Every root of Σ (αⱼ − zβⱼ) ζʲ in the closed unit disc (batched companion eigenvalues)."""
    a = np.asarray(alpha, dtype=float)
    b = np.asarray(beta, dtype=float)
    flat = z.ravel()
    coeffs = a[None, :] - flat[:, None] * b[None, :]  # lowest power first
    k = len(a) - 1
    lead = coeffs[:, k]
    ok = np.abs(lead) > 1e-12 * np.abs(coeffs).max(axis=1)
    companion = np.zeros((flat.size, k, k), dtype=complex)
    safe = np.where(ok, lead, 1.0)
    companion[:, 0, :] = -coeffs[:, k - 1 :: -1] / safe[:, None]
    if k > 1:
        companion[:, np.arange(1, k), np.arange(k - 1)] = 1.0
    roots = np.linalg.eigvals(companion)
    inside = ok & (np.abs(roots).max(axis=1) <= 1 + 1e-9)
    return np.asarray(inside.reshape(z.shape))


def multistep_stability_svg(
    alpha: Sequence[float], beta: Sequence[float], locus: np.ndarray, title: str
) -> str:
    """The stability region of a linear multistep method and its boundary locus.

    **Arguments:**

    - `alpha`, `beta`: the coefficients as floats, oldest first.
    - `locus`: z(θ) on the unit circle (`MultistepReport.boundary_locus()`), complex `(n,)`.
    - `title`: the plot's title.

    **Returns:** an SVG document.
    """
    finite = locus[np.isfinite(locus)]
    size = float(np.abs(finite).max()) if finite.size else 2.0
    size = min(max(size, 1.0), 20.0)
    span = 1.25 * size
    x = np.linspace(-span, span, GRID)
    y = np.linspace(-span, span, GRID)
    z = x[None, :] + 1j * y[:, None]
    inside = _multistep_inside(alpha, beta, z)
    fig, ax = _figure(height=4.6)
    _region(ax, x, y, inside, "all roots of ρ(ζ) − zσ(ζ) in |ζ| ≤ 1")
    shown = np.where(np.abs(locus) <= 4 * span, locus, np.nan)
    ax.plot(shown.real, shown.imag, color="#e6550d", linewidth=1.0, label="boundary locus ρ/σ")
    ax.set_xlim(-span, span)
    ax.set_ylim(-span, span)
    ax.set_title(title)
    return _legend_below(fig, ax)


def _decades(ax: Any, axis: str, low: float, high: float) -> None:
    """Ticks at the powers of ten of a log10-valued axis, labelled 10⁻³ (cheaper than log
    scales, which make matplotlib lay out every minor tick)."""
    first, last = math.floor(low), math.ceil(high)
    step = max(1, (last - first) // 8)
    ticks = list(range(first, last + 1, step))
    labels = [power_of_ten(k) for k in ticks]
    if axis == "x":
        ax.set_xticks(ticks, labels)
    else:
        ax.set_yticks(ticks, labels)


def power_of_ten(exponent: int) -> str:
    """`10⁻³`."""
    return "10" + str(exponent).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def convergence_svg(curves: Sequence[Convergence], title: str) -> str:
    """Global error at t = 1 against the step size, log-log, with the proved slope beside.

    **Arguments:**

    - `curves`: the measurements (`butcherflow.analysis.convergence.convergence`).
    - `title`: the plot's title.

    **Returns:** an SVG document.
    """
    fig, ax = _figure(5.6, 4.2)
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    xs: list[float] = []
    ys: list[float] = []
    for curve, colour in zip(curves, colours, strict=False):
        h = 1.0 / np.asarray(curve.counts, dtype=float)
        errors = np.asarray(curve.errors, dtype=float)
        keep = errors > 0  # an exact zero has no logarithm
        x, y = np.log10(h[keep]), np.log10(errors[keep])
        if x.size == 0:
            continue
        slope = f"{curve.slope:.2f}" if math.isfinite(curve.slope) else "—"
        ax.plot(x, y, "o-", color=colour, markersize=4, label=f"{curve.label}: slope {slope}")
        # the proved order as a dashed line through the finest point
        reference = y[-1] + curve.order * (x - x[-1])
        ax.plot(
            x,
            reference,
            "--",
            color=colour,
            linewidth=0.9,
            alpha=0.7,
            label=f"proved order {curve.order}: error ∝ h{power_of_ten(curve.order)[2:]}",
        )
        xs += list(x)
        ys += list(y) + list(reference)
    if xs:
        _decades(ax, "x", min(xs), max(xs))
        _decades(ax, "y", min(ys), max(ys))
    ax.set_xlabel("step size h = 1/N")
    ax.set_ylabel("global error at t = 1")
    ax.grid(True, linewidth=0.4, alpha=0.6)
    ax.set_title(title)
    ax.legend(fontsize=7.5, loc="best", framealpha=0.9)
    return _svg(fig)
