"""One gallery page per catalog declaration: what the layer computes and how accurate it is.

Everything on the page is derived from the declaration when the page is built: the exact
coefficients, the proved report, the measured convergence, the region plot, and the block compiled
at transformer-base sizes with its diagram and generated code. A step that fails (an invalid
file, a family that does not compile) puts its reason on the page instead of stopping the build.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from ..analysis import Report, check
from ..analysis.convergence import has_symbols
from ..methods import Method, catalog
from ..methods.files import read_toml
from .families import page_for
from .figures import measured_convergence, why_no_convergence
from .plots import convergence_svg
from .solver_block import Built, block_section, build_block
from .text import (
    Attempt,
    Measured,
    cell,
    exact,
    fence,
    flops,
    save_figure,
    table,
    write_page,
)


@final
@dataclass(frozen=True)
class IndexRow:
    """What the gallery's index shows about one entry (cells as text, numbers for sorting)."""

    name: str
    kind: str  # "solver" or "model"
    page: str  # path relative to the gallery folder
    family: str
    title: str
    stages: str  # the declaration's stages, as its page states them
    calls: str  # field calls per block (per layer of a stack; a model: all its blocks)
    order: str
    substep_order: str
    interval: str
    params: int | None
    flops: int | None
    problem: str = ""  # why a part of the page could not be derived, if any


# -- tables ---------------------------------------------------------------------------------------


def _failing_table(items: Sequence[tuple[str, Any]], what: str, numeric: bool) -> str:
    shown = items[:12]
    rows = [(f"`{name}`", exact(res, numeric)) for name, res in shown]
    more = f"\n\n… and {len(items) - 12} more." if len(items) > 12 else ""
    return table((what, "error coefficient"), rows) + more


def report_table(report: Report) -> str:
    rows = [(cell(label), cell(value)) for label, value in report.all_rows()]
    return table(("property", "value"), rows)


# -- the page -------------------------------------------------------------------------------------


def _summary(method: Method | None, report: Report | None, built: Built | None) -> str:
    if method is None:
        return "This declaration could not be loaded; the reason is below."
    page = page_for(method)
    kind = page.what(method)
    parts = [kind[0].upper() + kind[1:]]
    if report is not None:
        parts[0] += page.order_phrase(method, report)
        if report.block_order_text != str(report.order):
            parts[0] += f"; the layer, as it trains, has order {report.block_order_text}"
    parts[0] += "."
    if built is not None:
        per = " per layer" if built.layers > 1 else ""
        calls = "a data-dependent number of" if built.calls is None else str(built.calls)
        cost = "" if built.flops is None else f", {flops(built.flops)}FLOPs per token{per}"
        parts.append(
            f"As a layer at transformer-base sizes: {calls} field call(s){per}, "
            f"{built.params:,} parameters{per}{cost}."
        )
    elif report is not None:
        reason = report.layer.how
        parts.append(reason[0].upper() + reason[1:] + ".")
    return " ".join(parts)


def page_source(entry: str) -> tuple[Path, str]:
    """(the file, how the page names it) of a catalog name or a declaration file's path."""
    if entry in catalog:
        return catalog.path(entry), f"solvers/{entry}.toml"
    return Path(entry), entry


def solver_page(entry: str, folder: Path, measured: Mapping[str, Sequence[Measured]]) -> IndexRow:
    """Write `folder/NAME.md` (and its figures under `folder/NAME/`) for one declaration.

    **Arguments:**

    - `entry`: a catalog name, or the path of a declaration file (`gallery --only FILE`); the
      page is named by the declaration's name (the file's stem when it does not load).
    - `folder`: the gallery's `solvers/` folder.
    - `measured`: benchmark rows by entry name (`read_benchmarks`).

    **Returns:** the entry's `IndexRow`.
    """
    attempt = Attempt([])
    path, shown = page_source(entry)
    source = path.read_text(encoding="utf-8")
    data = attempt.run("reading the file", lambda: read_toml(path)) or {}
    method = attempt.run("loading the declaration", lambda: catalog.resolve(entry))
    name = path.stem if method is None else method.name
    report = attempt.run("proving the order", lambda: check(method)) if method else None
    compiles = bool(report is not None and report.layer.compiles)
    built = None
    if method is not None and compiles:
        built = attempt.run("compiling the block", lambda: build_block(method))
    assets = folder / name
    assets.mkdir(parents=True, exist_ok=True)
    title = str(data.get("title", name)) if method is None else method.title
    family = str(data.get("family", "?")) if method is None else method.family

    md: list[str] = [f"# {name}: {title}", "", _summary(method, report, built), ""]
    if data.get("description"):
        md += [f"> {data['description']}", ""]
    reference = str(data.get("reference", "")) or "—"
    md += [f"**Reference:** {reference} · **family:** {family} · **file:** `{shown}`"]
    md.append("")

    page = None if method is None else page_for(method)
    if method is not None and page is not None:
        md += [f"## {page.computes_title(method)}", ""]
        md += page.computes(method, built is not None)
    if method is not None and page is not None and report is not None:
        md += ["## How accurate the integrator is", ""]
        md += page.accuracy(method, report)
        md += _figures(method, report, attempt, assets)

    md += ["## Declaration", "", fence(source, "toml"), ""]
    if method is not None and page is not None:
        md += page.coefficients(method)

    if report is not None:
        md += ["## Order report", "", report_table(report), ""]
        md += [f"- {note}" for note in report.notes]
        md.append("")
        failing = _failing(report)
        if failing:
            what, items, numeric = failing
            md += [
                f"### First failing conditions ({what})",
                "",
                _failing_table(items, what, numeric),
                "",
            ]

    md += block_section(report, built, attempt, assets, name)

    write_page(folder / f"{name}.md", md, measured.get(name, []), attempt.problems)
    return _row(name, family, title, method, report, built, attempt.problems)


def _failing(report: Report) -> tuple[str, list[tuple[str, Any]], bool] | None:
    if not report.failing:
        return None
    return report.failing_what, list(report.failing), not report.exact


def _figures(method: Method, report: Report, attempt: Attempt, assets: Path) -> list[str]:
    md: list[str] = []
    name = method.name
    page = page_for(method)
    region = attempt.run("the stability plot", lambda: page.stability(method, report))
    if region is not None:
        md += [
            "### Stability region",
            "",
            save_figure(assets, "stability.svg", region, f"Stability region of {name}"),
            "",
            "The shaded set of z = hλ where the step applied to y' = λy does not grow. A "
            "layer's field is not linear, but its Jacobian's eigenvalues λ, times h, should "
            "stay inside for the step to be stable.",
            "",
        ]
    star = attempt.run("the order star", lambda: page.order_star(method, report))
    if star is not None:
        md += [
            "### Order star",
            "",
            save_figure(assets, "order-star.svg", star, f"Order star of {name}"),
            "",
            "The shaded set where the step grows faster than the exact flow, |R(z)| > |e^z| "
            "(Wanner, Hairer and Nørsett 1978): p + 1 shaded sectors meet at 0 for order p, "
            "and an A-stable method leaves the imaginary axis unshaded.",
            "",
        ]
    md += page.monotonicity(method, report, attempt, assets)
    curves = attempt.run(
        "the convergence measurement", lambda: measured_convergence(method, report)
    )
    if curves:
        plot = attempt.run(
            "the convergence plot", lambda: convergence_svg(curves, f"{name}: global error")
        )
        if plot is not None:
            image = save_figure(assets, "convergence.svg", plot, f"Convergence of {name}")
            md += ["### Convergence", "", image, ""]
        problem = page.problem(method)
        if has_symbols(method):
            problem += " The declaration is a family: measured at every symbol = 1/3."
        md += [problem, ""]
        rows = []
        for curve in curves:
            measured = [math.nan, *curve.slopes]
            for n, e, slope in zip(curve.counts, curve.errors, measured, strict=True):
                rows.append(
                    (curve.label, n, f"{e:.3e}", "" if math.isnan(slope) else f"{slope:.2f}")
                )
        md += [table(("integrated", "steps N", "error at t = 1", "slope"), rows, "lrrr"), ""]
    elif curves == []:
        md += [f"No convergence plot: {why_no_convergence(method, report)}.", ""]
    return md


def _row(
    name: str,
    family: str,
    title: str,
    method: Method | None,
    report: Report | None,
    built: Built | None,
    problems: list[str],
) -> IndexRow:
    stages = "—" if method is None else page_for(method).stages(method)
    calls = "—" if built is None or built.calls is None else str(built.calls)
    order = effective = interval = "—"
    if report is not None:
        order = str(report.order)
        effective = str(report.order if report.substep_order is None else report.substep_order)
        interval = _interval(report)
    return IndexRow(
        name=name,
        kind="solver",
        page=f"solvers/{name}.md",
        family=family,
        title=title,
        stages=stages,
        calls=calls,
        order=order,
        substep_order=effective,
        interval=interval,
        params=None if built is None else built.params,
        flops=None if built is None else built.flops,
        problem="; ".join(problems),
    )


def _interval(report: Report) -> str:
    """r of the real stability interval [−r, 0], as text ("∞" when unbounded)."""
    value = report.real_stability_interval
    if value is None:
        return "—"
    return "∞" if value == math.inf else f"{value:.4g}"
