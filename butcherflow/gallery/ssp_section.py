"""The "SSP coefficient" and "Internal stability" parts of a Runge-Kutta page: the figures of
`ssp_plots.py` drawn from the report's geometry rows, or a sentence saying why there is none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..methods import ButcherTableau
from .ssp_plots import internal_svg, ssp_svg
from .text import Attempt, save_figure

SSP_TEXT = (
    "Left: the smallest entry m of K(I + rK)⁻¹ and (I + rK)⁻¹e, K = [[A, 0], [bᵀ, 0]], against "
    "r (scaled to its largest positive value, drawn as a signed cube root so that a margin "
    "close to 0 stays visible); it stays non-negative exactly for r ≤ R, the SSP "
    "coefficient (Kraaijevanger's radius of absolute monotonicity, BIT 31, 1991), found exactly "
    "by the report. Any convex functional (a norm, total variation, positivity) that forward "
    "Euler keeps from growing with step h is kept by the method with step R·h. Right: the "
    "stability function on the real axis, with the SSP interval [−R, 0] and the real stability "
    "interval."
)
INTERNAL_TEXT = (
    "A perturbation r_j of stage j (rounding, or the residual an implicit stage solver leaves) "
    "reaches the step as Q_j(hλ)·r_j, Q_j(z) = z bᵀ(I − zA)⁻¹e_j (Ketcheson, Lóczi and "
    "Parsani, SIAM J. Numer. Anal. 52, 2014). The dashed line is the maximal internal "
    "amplification the report proves over the real stability interval (the whole negative "
    "axis when that is unbounded)."
)


def ssp_figures(method: ButcherTableau, report: Any, attempt: Attempt, assets: Path) -> list[str]:
    """A Runge-Kutta page's SSP and internal stability subsections
    (`families.RungeKuttaPage.monotonicity`).

    **Arguments:** `method`: the tableau; `report`: its report (`report.geometry` holds the
    rows drawn); `attempt`: the page's (a failure is recorded, not raised); `assets`: the
    page's figure folder.

    **Returns:** markdown lines.
    """
    name = method.name
    md = ["### SSP coefficient", ""]
    if method.symbols:
        family = (
            "No SSP plot: the declaration is a family, and its SSP coefficient and internal "
            "stability depend on its symbols (check a member with the symbols set)."
        )
        return [*md, family, ""]
    geometry = report.geometry
    radius = geometry.ssp_value
    if radius is None:
        md += [f"No SSP plot: the SSP coefficient was not found ({geometry.ssp}).", ""]
    else:
        title = name
        svg = attempt.run(
            "the SSP plot",
            lambda: ssp_svg(method, radius, _short(geometry.ssp), report.stability, title),
        )
        if svg is not None:
            md += [save_figure(assets, "ssp.svg", svg, f"SSP coefficient of {name}"), ""]
            md += [_zero(method) if radius == 0 else SSP_TEXT, ""]
    md += ["### Internal stability", ""]
    internal = geometry.internal
    if internal is None or internal.amplification is None:
        why = "not computed" if internal is None else internal.how
        md += [f"No internal stability plot: {why}.", ""]
        return md
    title = f"{name}: internal stability"
    svg = attempt.run("the internal stability plot", lambda: internal_svg(internal, title))
    if svg is not None:
        alt = f"Internal stability of {name}"
        md += [save_figure(assets, "internal-stability.svg", svg, alt), "", INTERNAL_TEXT, ""]
    return md


def _short(text: str) -> str:
    """The coefficient without the report's explanation in brackets."""
    return text.split(" (")[0]


def _zero(method: ButcherTableau) -> str:
    """Why the SSP coefficient is 0, in a sentence."""
    negative = any(float(x) < 0 for x in (*method.b, *(a for row in method.A for a in row)))
    why = (
        "a coefficient of A or b is negative, so K(I + rK)⁻¹ = K + O(r) has a negative entry"
        if negative
        else "an entry of K(I + rK)⁻¹ = K − rK² + … is zero in K but positive in K², so it is "
        "negative for every small r > 0 (RK4: a₃₁ = 0 while (A²)₃₁ = 1/4)"
    )
    return (
        f"The SSP coefficient is 0: {why}; the method keeps no convex functional monotone for "
        f"any positive step. {SSP_TEXT}"
    )
