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
from ..analysis.convergence import Convergence, convergence, generic_member, has_symbols
from ..methods import (
    ButcherTableau,
    ContinuousDynamics,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
)
from ..methods.files import read_toml
from .explain import accuracy, computes, what
from .plots import convergence_svg, multistep_stability_svg, stability_svg
from .solver_block import Built, block_section, build_block
from .text import (
    NUMERIC_DIGITS,
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
    stages: str
    order: str
    substep_order: str
    interval: str
    params: int | None
    flops: int | None
    problem: str = ""  # why a part of the page could not be derived, if any


# -- tables ---------------------------------------------------------------------------------------


def butcher_table(m: ButcherTableau) -> str:
    """The tableau as HTML (c | A over the weights), exact entries."""

    def entry(key: str, value: Any) -> str:
        numeric = m.entries[key].numeric if key in m.entries else m.numeric
        return exact(value, numeric)

    rows = []
    for i, row in enumerate(m.A):
        cells = "".join(f"<td>{_html(entry(f'A[{i}][{j}]', a))}</td>" for j, a in enumerate(row))
        rows.append(f'<tr><th class="c">{_html(entry(f"c[{i}]", m.c[i]))}</th>{cells}</tr>')
    weights = "".join(f"<td>{_html(entry(f'b[{i}]', b))}</td>" for i, b in enumerate(m.b))
    rows.append(f'<tr class="b"><th class="c">b</th>{weights}</tr>')
    if m.b_hat is not None:
        hat = "".join(f"<td>{_html(entry(f'b_hat[{i}]', b))}</td>" for i, b in enumerate(m.b_hat))
        rows.append(f'<tr class="b"><th class="c">b̂</th>{hat}</tr>')
    return '<table class="butcher">\n' + "\n".join(rows) + "\n</table>"


def _html(text: str) -> str:
    from .text import esc

    return esc(text)


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
    kind = what(method)
    parts = [kind[0].upper() + kind[1:]]
    if report is not None:
        order = f" of proved order {report.order}"
        effective = getattr(report, "substep_order", None)
        if isinstance(method, Splitting) and effective is not None and method.substep:
            order += f" with exact sub-flows and {effective} with {method.substep_name} sub-steps"
        parts[0] += order
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
        reason = report.layer[1]
        parts.append(reason[0].upper() + reason[1:] + ".")
    return " ".join(parts)


def solver_page(name: str, folder: Path, measured: Mapping[str, Sequence[Measured]]) -> IndexRow:
    """Write `folder/NAME.md` (and its figures under `folder/NAME/`) for one catalog entry.

    **Arguments:**

    - `name`: the catalog name.
    - `folder`: the gallery's `solvers/` folder.
    - `measured`: benchmark rows by entry name (`read_benchmarks`).

    **Returns:** the entry's `IndexRow`.
    """
    attempt = Attempt([])
    path = catalog.path(name)
    source = path.read_text(encoding="utf-8")
    data = attempt.run("reading the file", lambda: read_toml(path)) or {}
    method = attempt.run("loading the declaration", lambda: catalog[name])
    report = attempt.run("proving the order", lambda: check(method)) if method else None
    compiles = bool(report is not None and report.layer[0])
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
    md += [f"**Reference:** {reference} · **family:** {family} · **file:** `solvers/{name}.toml`"]
    md.append("")

    if method is not None:
        md += computes(method, built is not None)
    if method is not None and report is not None:
        md += accuracy(method, report)
        md += _figures(method, report, attempt, assets)

    md += ["## Declaration", "", fence(source, "toml"), ""]
    if method is not None:
        md += _coefficients(method)

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


def _coefficients(method: Method) -> list[str]:
    """The coefficients as tables: the Butcher tableau, the splitting sequence, α and β."""
    md: list[str] = []
    if isinstance(method, ButcherTableau):
        md += ["## Butcher tableau", ""]
        if method.numeric:
            md += [
                f"A numeric declaration: entries are shown to {NUMERIC_DIGITS} digits (the "
                "declaration above holds every digit, and the proof judged each condition at the "
                "precision those digits carry).",
                "",
            ]
        md += [butcher_table(method), ""]
    elif isinstance(method, Splitting):
        md += ["## Splitting sequence", ""]
        steps = [(k + 1, op, exact(c, method.numeric)) for k, (op, c) in enumerate(method.steps)]
        md += [table(("step", "operator", "fraction of h"), steps, "rll"), ""]
        sub = "exact sub-flows" if method.substep is None else f"`{method.substep.name}`"
        if method.substep is not None and method.substep.name in catalog:
            sub = f"[{method.substep.name}]({method.substep.name}.md)"
        md += [f"Sub-step: {sub}.", ""]
    elif isinstance(method, LinearMultistep):
        md += ["## Coefficients α, β", ""]
        pairs = [
            (j, exact(a, method.numeric), exact(b, method.numeric))
            for j, (a, b) in enumerate(zip(method.alpha, method.beta, strict=True))
        ]
        md += [table(("j", "αⱼ", "βⱼ"), pairs, "rll"), ""]
    elif isinstance(method, ContinuousDynamics):
        solver = method.solver_tableau()
        link = f"[{solver.name}]({solver.name}.md)" if solver.name in catalog else solver.name
        md += ["## Solver", "", f"The dynamics are integrated by {link}:", ""]
        md += [butcher_table(solver), ""]

    return md


def _failing(report: Report) -> tuple[str, list[tuple[str, Any]], bool] | None:
    numeric = not bool(getattr(report, "exact", True))
    if getattr(report, "failing_trees", None):
        return (
            f"coloured trees at order {report.substep_order + 1}",  # type: ignore[attr-defined]
            list(report.failing_trees),  # type: ignore[attr-defined]
            numeric,
        )
    if getattr(report, "failing_words", None):
        return (
            f"words at order {report.order + 1}",
            list(report.failing_words),  # type: ignore[attr-defined]
            numeric,
        )
    if getattr(report, "failing", None):
        return (f"trees at order {report.order + 1}", list(report.failing), numeric)  # type: ignore[attr-defined]
    return None


def _figures(method: Method, report: Report, attempt: Attempt, assets: Path) -> list[str]:
    md: list[str] = []
    name = method.name
    region: str | None = None
    if isinstance(method, ButcherTableau) and not method.symbols:
        stability = report.stability  # type: ignore[attr-defined]
        region = attempt.run(
            "the stability plot", lambda: stability_svg(stability, f"{name}: |R(z)| ≤ 1")
        )
    elif isinstance(method, ContinuousDynamics):
        solver = attempt.run("the solver's report", lambda: check(method.solver_tableau()))
        if solver is not None:
            stability = solver.stability  # type: ignore[attr-defined]
            region = attempt.run(
                "the stability plot",
                lambda: stability_svg(stability, f"{name}: solver {solver.method.name}"),
            )
    elif isinstance(method, LinearMultistep) and not method.symbols:
        alpha = [float(a) for a in method.alpha]
        beta = [float(b) for b in method.beta]
        locus = report.boundary_locus  # type: ignore[attr-defined]
        region = attempt.run(
            "the stability plot",
            lambda: multistep_stability_svg(alpha, beta, locus(), f"{name}: stability region"),
        )
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
    member = generic_member(method)
    member_report = report if member is method else attempt.run("the member", lambda: check(member))
    curves: list[Convergence] | None = None
    if member_report is not None:
        curves = attempt.run(
            "the convergence measurement",
            lambda: convergence(member, member_report, coarser=2),
        )
    if curves:
        plot = attempt.run(
            "the convergence plot", lambda: convergence_svg(curves, f"{name}: global error")
        )
        if plot is not None:
            image = save_figure(assets, "convergence.svg", plot, f"Convergence of {name}")
            md += ["### Convergence", "", image, ""]
        problem = _problem_text(method)
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
    elif curves == [] and isinstance(method, LinearMultistep):
        md += ["No convergence plot: the method is not zero-stable, so it diverges.", ""]
    return md


def _problem_text(method: Method) -> str:
    if isinstance(method, Splitting):
        return (
            "Measured on y' = (L_A + L_B + …) y with non-commuting 3×3 matrices, integrated "
            "to t = 1 in N steps (exact sub-flows by matrix exponentials); the dashed lines "
            "have the proved slopes. Orders above 4 run in 60-digit arithmetic."
        )
    return (
        "Measured on the non-autonomous y' = −y + cos t, y(0) = 1, integrated to t = 1 in N "
        "steps against the exact solution; the dashed line has the proved slope. Orders above "
        "4 run in 60-digit arithmetic, so rounding does not flatten the slope."
    )


def _row(
    name: str,
    family: str,
    title: str,
    method: Method | None,
    report: Report | None,
    built: Built | None,
    problems: list[str],
) -> IndexRow:
    stages = "—"
    if built is not None and built.calls is not None:
        stages = str(built.calls)
    elif isinstance(method, ButcherTableau):
        stages = str(method.stages)
    elif isinstance(method, ContinuousDynamics):
        stages = str(method.solver_tableau().stages)
    order = effective = interval = "—"
    if report is not None:
        order = str(report.order)
        effective = str(getattr(report, "substep_order", report.order))
        interval = _interval(report)
    return IndexRow(
        name=name,
        kind="solver",
        page=f"solvers/{name}.md",
        family=family,
        title=title,
        stages=stages,
        order=order,
        substep_order=effective,
        interval=interval,
        params=None if built is None else built.params,
        flops=None if built is None else built.flops,
        problem="; ".join(problems),
    )


def _interval(report: Report) -> str:
    """r of the real stability interval [−r, 0], as text ("∞" when unbounded)."""
    value: float | None = None
    stability = getattr(report, "stability", None)
    if stability is not None:
        value = stability.real_interval
    elif hasattr(report, "real_interval"):
        value = report.real_interval
    elif hasattr(report, "solver"):
        value = report.solver.stability.real_interval
    if value is None:
        return "—"
    return "∞" if value == math.inf else f"{value:.4g}"
