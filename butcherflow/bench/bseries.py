"""`butcherflow bench bseries`: B-series, modified equation and symplecticity order of every
exact catalog tableau of order ≤ 8 to order 8 (target: under 2 s each), the SSP coefficient
beside NodePy's `absolute_monotonicity_radius` in the same run, and the computations of
BSeries.jl's benchmark page (explicit midpoint to order 9) beside the times it publishes."""

from __future__ import annotations

import datetime
import importlib.util
import math
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np
import sympy

from ..analysis.bseries import bseries, modified_equation, modifying_integrator
from ..analysis.bseries.properties import symplecticity_order
from ..analysis.exact.weights import clear_cache
from ..analysis.runge_kutta.monotonicity import ssp_coefficient
from ..methods import ButcherTableau, catalog
from . import DEFAULT_OUTPUT, write_section
from .order import machine

TARGET = 2.0  # seconds for B-series + modified equation + symplecticity order to order 8
ORDER = 8
# BSeries.jl's benchmark page (docs, `benchmarks.md`, built by its CI): explicit midpoint to
# order 9, the sum of the coefficients as a check, and the seconds each package took
PUBLISHED = [
    ("modified equation", "19063/26880", "Python BSeries 14.5 s, pybs 5.75 s"),
    ("modifying integrator", "5460293/241920", "Python BSeries 13.1 s"),
]


@dataclass
class Row:
    name: str
    order: int | None
    seconds: float | None  # None: not timed (numeric entries, or order above 8)
    symplecticity: str
    ssp: str
    ssp_seconds: float
    nodepy_ssp: float | None = None
    nodepy_seconds: float | None = None


def _median_time(fn: object, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        clear_cache()
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _nodepy_radius(method: ButcherTableau) -> tuple[float | None, float | None]:
    if importlib.util.find_spec("nodepy") is None:
        return None, None
    from nodepy.runge_kutta_method import ExplicitRungeKuttaMethod, RungeKuttaMethod

    kind = ExplicitRungeKuttaMethod if method.is_explicit else RungeKuttaMethod
    A = np.array([[float(x) for x in row] for row in method.A])
    b = np.array([float(x) for x in method.b])
    start = time.perf_counter()
    value = float(kind(A, b).absolute_monotonicity_radius())
    return value, time.perf_counter() - start


def time_method(name: str, repeats: int) -> Row:
    """Time one catalog tableau: series, modified equation, symplecticity order; SSP."""
    method = cast(ButcherTableau, catalog[name])  # one of `tableaux()`

    def work() -> str:
        series = bseries(method, ORDER)
        modified_equation(series, ORDER)
        found = symplecticity_order(series)
        return str(found.order) if not found.holds else f"≥ {found.examined}"

    timed = name in selected()
    symplectic = work() if timed else "—"
    seconds = _median_time(work, repeats) if timed else None
    start = time.perf_counter()
    ssp = ssp_coefficient(method)
    row = Row(name, method.order, seconds, symplectic, ssp.text(), time.perf_counter() - start)
    row.nodepy_ssp, row.nodepy_seconds = _nodepy_radius(method)
    return row


def tableaux() -> list[ButcherTableau]:
    """The catalog's Runge-Kutta tableaux, in catalog order."""
    return [cast(ButcherTableau, catalog[n]) for n in catalog.names(ButcherTableau.family)]


def with_ssp() -> list[str]:
    """Catalog tableaux without symbols (exact or numeric): their SSP coefficient is compared."""
    return [m.name for m in tableaux() if not m.symbols]


def selected() -> list[str]:
    """Exact catalog tableaux without symbols of claimed order ≤ 8 (timed to order 8)."""
    return [
        m.name for m in tableaux() if not m.symbols and not m.numeric and (m.order or 0) <= ORDER
    ]


def _published_rows(repeats: int) -> list[str]:
    lines = []
    for (what, total, theirs), fn in zip(
        PUBLISHED, (modified_equation, modifying_integrator), strict=True
    ):
        series = fn("midpoint", 9)
        ours = sum((v for _, v in series.items()), sympy.Integer(0))
        seconds = _median_time(lambda fn=fn: fn("midpoint", 9), repeats)
        check = "same" if str(ours) == total else f"**differs: {ours}**"
        lines.append(f"| {what} | {total} | {ours} ({check}) | {seconds:.3f} | {theirs} |")
    return lines


def run_bseries(
    output: str | Path = DEFAULT_OUTPUT,
    repeats: int = 3,
    names: Sequence[str] | None = None,
    command: str = "butcherflow bench bseries",
) -> list[Row]:
    """Run the benchmark, print it, and rewrite the `bseries` section of `output`."""
    rows = []
    for name in with_ssp() if names is None else names:
        row = time_method(name, repeats)
        rows.append(row)
        shown = "—" if row.seconds is None else f"{row.seconds:.3f}"
        print(f"{name:<28} {shown:>8} s  SSP {row.ssp:<24} NodePy {row.nodepy_ssp}")
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    table = [
        "| method | order | B-series + modified eq. + symplecticity to 8 (s) | target < 2 s "
        "| order of symplecticity | SSP coefficient | (s) | NodePy radius | NodePy (s) |",
        "|---|--:|--:|---|---|---|--:|--:|--:|",
    ]
    for r in rows:
        nodepy = "—" if r.nodepy_ssp is None else f"{r.nodepy_ssp:.6g}"
        nodepy_s = "—" if r.nodepy_seconds is None else f"{r.nodepy_seconds:.3f}"
        seconds = "—" if r.seconds is None else f"{r.seconds:.3f}"
        target = "—" if r.seconds is None else "met" if r.seconds < TARGET else "**not met**"
        table.append(
            f"| {r.name} | {r.order} | {seconds} | {target} | {r.symplecticity} | {r.ssp} "
            f"| {r.ssp_seconds:.3f} | {nodepy} | {nodepy_s} |"
        )
    timed = [r for r in rows if r.seconds is not None]
    missed = [r.name for r in timed if r.seconds is not None and r.seconds >= TARGET]
    differs = [r.name for r in rows if r.nodepy_ssp is not None and not _close(r.ssp, r.nodepy_ssp)]
    body = [
        "## B-series, modified equations and SSP coefficients",
        f"Command: `{command}`, run {date}.",
        f"Machine: {machine()}; load average {os.getloadavg()[0]:.1f} at the end.",
        "butcherflow: `bseries(method, 8)`, `modified_equation(series, 8)` and the order of "
        f"symplecticity, exact, median of {repeats} run(s) with the field cache cleared. SSP: "
        "Kraaijevanger's radius, exact (`ssp_coefficient`), beside NodePy's "
        "`absolute_monotonicity_radius()` (float64 bisection) on the same coefficients.",
        "Every catalog tableau without symbols is listed for its SSP coefficient (a numeric "
        "one's is that of its digits); the B-series columns time the exact ones of order ≤ 8.",
        f"Target < {TARGET:g} s: {len(timed) - len(missed)} of {len(timed)} met"
        + (f"; not met: {', '.join(missed)}." if missed else "."),
        "SSP coefficients that differ from NodePy's by more than 1e-3 (relative 1e-2): "
        + (", ".join(differs) if differs else "none")
        + ".",
        "\n".join(table),
        "### BSeries.jl's benchmark computations",
        "Explicit midpoint to order 9 (sum of all coefficients as the check). Their times are "
        "the ones BSeries.jl's documentation publishes for the Python packages on its CI "
        "machine, not measured here: compare orders of magnitude only.",
        "| computation | published sum | butcherflow sum | butcherflow (s) | published times |",
        "|---|---|---|--:|---|",
        *_published_rows(repeats),
    ]
    write_section(output, "bseries", "\n\n".join(body[:-4]) + "\n\n" + "\n".join(body[-4:]))
    return rows


def _close(ours: str, theirs: float) -> bool:
    head = ours.split(" ")[0]
    if head.startswith("∞"):
        return theirs == math.inf or theirs > 50
    try:
        value = float(sympy.sympify(head))
    except (sympy.SympifyError, TypeError):
        return False
    return abs(value - theirs) <= max(1e-3, 1e-2 * abs(value))
