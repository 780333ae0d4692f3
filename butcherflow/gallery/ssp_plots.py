"""The SSP and internal stability plots of a Runge-Kutta page (matplotlib into SVG text, like
the stability regions in `plots.py`).

- `ssp_svg`: Kraaijevanger's absolute monotonicity picture, as RK-Opt and NodePy report it:
  left, the smallest entry of K(I + rK)⁻¹ and (I + rK)⁻¹e against r, non-negative exactly on
  [0, R] with R the SSP coefficient (marked where `ssp_coefficient` found it, exactly); right,
  the stability function on the real axis R(x), with the SSP interval [−R, 0] (a step of R times
  forward Euler's monotone step) and the real stability interval.
- `internal_svg`: |Q_j(x)| of every counted stage over the real stability interval (its first
  40 units when unbounded), with the maximal internal amplification the report proves.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

from ..analysis.runge_kutta.internal_stability import InternalStability, Z
from ..analysis.runge_kutta.monotonicity import monotonicity_margin
from ..analysis.runge_kutta.stability import StabilityFunction
from ..methods import ButcherTableau
from .plots import _figure, _svg

POINTS = 400  # samples per curve
UNBOUNDED_SHOWN = 40.0  # how much of an unbounded interval (−∞, 0] the plots show
MONOTONE_SHOWN = 10.0  # r shown when the method is absolutely monotonic for every r


def ssp_svg(
    tableau: ButcherTableau, radius: float, shown: str, stability: StabilityFunction, title: str
) -> str:
    """The absolute monotonicity margin against r and R(x) on the real axis, side by side.

    **Arguments:** `tableau`: a method without symbols; `radius`: its SSP coefficient as a float
    (math.inf: unbounded); `shown`: the coefficient as the report writes it; `stability`: its
    `StabilityFunction`; `title`: the left panel's title, before the coefficient.

    **Returns:** an SVG document.
    """
    fig, ax = _figure(9.6, 3.9)  # the gallery's settings; one figure with two panels
    ax.remove()
    left, right = fig.subplots(1, 2)
    _margin_panel(left, tableau, radius, shown, title)
    _real_axis_panel(right, radius, stability)
    fig.subplots_adjust(wspace=0.28)
    return _svg(fig, bottom=0.14)


def _margin_panel(ax: Any, tableau: ButcherTableau, radius: float, shown: str, title: str) -> None:
    end = MONOTONE_SHOWN if radius == math.inf else (1.6 * radius if radius > 0 else 1.0)
    r = np.linspace(0.0, end, POINTS)
    margin = monotonicity_margin(tableau, r)
    positive = margin[margin > 0]
    scale = float(positive.max() if positive.size else np.nanmax(np.abs(margin))) or 1.0
    # the cube root keeps the sign and shows a margin that nears 0 long before R (SSPRK(10,4))
    shown_margin = np.cbrt(np.clip(margin / scale, -1.0, 1.0))
    ax.fill_between(r, 0, shown_margin, where=margin >= 0, color="#c7e9c0", label="≥ 0")
    ax.plot(r, shown_margin, color="#08519c", linewidth=1.2, label="sign(m)·|m|^⅓, m scaled")
    ax.axhline(0, color="#444", linewidth=0.6)
    if 0 < radius < math.inf:
        ax.axvline(radius, color="#d62728", linestyle="--", linewidth=1.2, label=f"R = {shown}")
    ax.set_xlim(0, end)
    ax.set_xlabel("r")
    ax.set_ylabel("m = min of K(I + rK)⁻¹, (I + rK)⁻¹e")
    what = (
        "SSP coefficient ∞: non-negative for every r"
        if radius == math.inf
        else f"SSP coefficient {shown}"
    )
    ax.set_title(f"{title}: {what}", fontsize=9)
    ax.legend(loc="upper right", fontsize=7.5, framealpha=0.9)


def _real_axis_panel(ax: Any, radius: float, stability: StabilityFunction) -> None:
    real = stability.real_interval
    finite = [v for v in (radius, real) if v is not None and 0 < v < math.inf]
    end = 1.3 * max(finite) if finite else UNBOUNDED_SHOWN
    if real == math.inf or radius == math.inf:
        end = max(end, UNBOUNDED_SHOWN)
    x = np.linspace(-end, 0.0, POINTS)
    with np.errstate(all="ignore"):
        values = np.real(stability.evaluate(x.astype(complex)))
    ax.axhspan(-1, 1, color="#f0f0f0")
    ax.plot(x, np.clip(values, -3, 3), color="#08519c", linewidth=1.2, label="R(x)")
    if radius > 0:
        start = -min(radius, end)
        ax.axvspan(start, 0, color="#c7e9c0", alpha=0.8, label="SSP: [−R, 0]")
    if real is not None and real > 0:
        ax.plot([-min(real, end), 0], [-1.05, -1.05], color="#d62728", linewidth=2.5)
        ax.plot([], [], color="#d62728", linewidth=2.5, label="real stability interval")
    ax.axhline(0, color="#444", linewidth=0.6)
    ax.set_xlim(-end, 0)
    ax.set_ylim(-1.5, 1.5)
    ax.set_xlabel("x = hλ (real)")
    ax.set_ylabel("R(x)")
    ax.set_title("the stability function on the real axis", fontsize=9)
    ax.legend(loc="upper left", fontsize=7.5, framealpha=0.9)


def internal_svg(internal: InternalStability, title: str) -> str:
    """|Q_j(x)| of every counted stage over the real stability interval, and the maximum.

    **Arguments:** `internal`: an `InternalStability` with its amplification; `title`: the plot's
    title.

    **Returns:** an SVG document.
    """
    assert internal.amplification is not None and internal.interval is not None
    end = UNBOUNDED_SHOWN if internal.interval == math.inf else internal.interval
    x = np.linspace(-end, 0.0, POINTS)
    fig, ax = _figure(5.6, 4.0)
    for stage, q in zip(internal.stages, internal.polynomials, strict=True):
        f = sympy.lambdify(Z, q, "numpy")
        with np.errstate(all="ignore"):
            values = np.abs(np.broadcast_to(f(x), x.shape))
        ax.plot(x, values, linewidth=1.1, label=f"|Q_{stage}(x)|")
    top = internal.amplification
    where = "sup as x → −∞" if internal.note else "max"
    ax.axhline(top, color="#d62728", linestyle="--", linewidth=1.0, label=f"{where} = {top:.4g}")
    ax.set_xlim(-end, 0)
    ax.set_ylim(0, 1.15 * top if top > 0 else 1.0)
    over = "(−∞, 0], first 40 shown" if internal.interval == math.inf else "[−R, 0]"
    ax.set_xlabel(f"x = hλ over the real stability interval {over}")
    ax.set_ylabel("amplification of a stage perturbation")
    ax.grid(True, linewidth=0.4, alpha=0.6)
    ax.set_title(title)
    ax.legend(fontsize=7.5, loc="best", framealpha=0.9)
    return _svg(fig)
