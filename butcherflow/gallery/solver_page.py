"""One gallery page per catalog declaration: what the layer computes and how accurate it is.

Everything on the page is derived from the declaration when the page is built: the exact
coefficients, the proved report, the measured convergence, the region plot, and the block compiled
at transformer-base sizes with its diagram and generated code. A step that fails (an invalid
file, a family that does not compile) puts its reason on the page instead of stopping the build.
"""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, final

import torch.fx as fx

from ..analysis import Report, check
from ..analysis.convergence import Convergence, convergence, generic_member, has_symbols
from ..compiler import CompiledBlock, compile, compile_stack
from ..methods import (
    ButcherTableau,
    ContinuousDynamics,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
)
from ..methods.catalog import read_toml
from .diagram import block_svg
from .explain import SPLIT_FIELDS, accuracy, computes, what
from .plots import convergence_svg, multistep_stability_svg, stability_svg
from .text import (
    NUMERIC_DIGITS,
    Measured,
    cell,
    exact,
    fence,
    flops,
    save_figure,
    table,
    write_page,
)

D_MODEL, N_HEADS, D_FFN = 512, 8, 2048  # transformer-base
BASE = {"d_model": D_MODEL, "n_heads": N_HEADS, "d_ffn": D_FFN}
LENGTH = 64  # sequence length of the FLOPs/token figures (attention grows with it)
STACK_LAYERS = 6  # multistep stacks are compiled as the 6 layers of a transformer-base encoder

T = TypeVar("T")


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
    effective_order: str
    interval: str
    params: int | None
    flops: int | None
    problem: str = ""  # why a part of the page could not be derived, if any


@final
@dataclass
class _Attempt:
    """Errors met while deriving a page, shown on the page in place of what failed."""

    problems: list[str]

    def run(self, what: str, action: Callable[[], T]) -> T | None:
        try:
            return action()
        except Exception as error:  # a failing entry is shown with its reason, not fatal
            last = traceback.extract_tb(error.__traceback__)[-1]
            where = f" ({Path(last.filename).name}:{last.lineno})"
            self.problems.append(f"{what}: {type(error).__name__}: {error}{where}")
            return None


# -- the compiled block --------------------------------------------------------------------------


@final
@dataclass(frozen=True)
class Built:
    """A block compiled for the gallery, how it was compiled, and its size per layer."""

    block: CompiledBlock
    how: str
    layers: int = 1

    @property
    def params(self) -> int:
        return round(self.block.num_parameters / self.layers)

    @property
    def flops(self) -> int | None:
        """Per layer; None when the count depends on the data (adaptive solvers)."""
        total: int | None = self.block.flops_per_token(LENGTH)
        return None if total is None else round(total / self.layers)

    @property
    def calls(self) -> int | None:
        """Field calls per layer; None when the data decides (adaptive solvers)."""
        total: int | None = self.block.field_calls
        return None if total is None else round(total / self.layers)


def build_block(method: Method) -> Built:
    """Compile a declaration at transformer-base sizes the way the gallery shows it.

    Runge-Kutta methods and continuous blocks call `"san+ffn"`; splittings take A = ffn,
    B = san, C = ca (others ffn); multistep methods build a 6-layer `"san+ffn"` stack, a
    family's symbols as learned per-layer parameters starting at 1.

    **Raises:** whatever `bf.compile` raises for a declaration that has no layer.
    """
    sizes = ", ".join(f"{k}={v}" for k, v in BASE.items())
    if isinstance(method, Splitting):
        fields = {op: SPLIT_FIELDS.get(op, "ffn") for op in method.operators}
        shown = ", ".join(f"{k}={v!r}" for k, v in fields.items())
        block = compile(method, fields=fields, d_model=D_MODEL, n_heads=N_HEADS, d_ffn=D_FFN)
        return Built(block, f"bf.compile({method.name!r}, fields={{{shown}}}, {sizes})")
    if isinstance(method, LinearMultistep):
        layers = ["san+ffn"] * STACK_LAYERS
        if method.symbols:
            init = {str(s): 1.0 for s in sorted(method.symbols, key=str)}
            block = compile_stack(
                method,
                layers,
                coefficients="learned",
                init=init,
                d_model=D_MODEL,
                n_heads=N_HEADS,
                d_ffn=D_FFN,
            )
            how = (
                f"bf.compile_stack({method.name!r}, ['san+ffn'] * {STACK_LAYERS}, "
                f"coefficients='learned', init={init}, {sizes})"
            )
        else:
            block = compile_stack(method, layers, d_model=D_MODEL, n_heads=N_HEADS, d_ffn=D_FFN)
            how = f"bf.compile_stack({method.name!r}, ['san+ffn'] * {STACK_LAYERS}, {sizes})"
        return Built(block, how, STACK_LAYERS)
    block = compile(method, field="san+ffn", d_model=D_MODEL, n_heads=N_HEADS, d_ffn=D_FFN)
    return Built(block, f"bf.compile({method.name!r}, field='san+ffn', {sizes})")


# -- what the layer computes ----------------------------------------------------------------------


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
        effective = getattr(report, "effective_order", None)
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
    attempt = _Attempt([])
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

    md += _block_section(report, built, attempt, assets, name)

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
                "declaration above holds every digit, and the proof used them all).",
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
            f"coloured trees at order {report.effective_order + 1}",  # type: ignore[attr-defined]
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


def _figures(method: Method, report: Report, attempt: _Attempt, assets: Path) -> list[str]:
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


def _block_section(
    report: Report | None, built: Built | None, attempt: _Attempt, assets: Path, name: str
) -> list[str]:
    md = ["## Compiled block", ""]
    if report is None:
        md += ["Not compiled: the declaration could not be checked (see the problems below).", ""]
        return md
    if built is None:
        reason = report.layer[1] if not report.layer[0] else "compiling failed (see below)"
        md += [f"Not compiled: {reason}", ""]
        return md
    per = f" (a stack of {built.layers} layers; per layer in the index)" if built.layers > 1 else ""
    block = built.block
    md += [
        fence(built.how, "python"),
        "",
        table(
            ("field calls", "parameters", f"FLOPs per token (length {LENGTH})"),
            [
                (
                    _maybe(block.field_calls),
                    f"{block.num_parameters:,}",
                    _maybe(block.flops_per_token(LENGTH)),
                )
            ],
            "rrr",
        ),
        "",
        f"Sizes: transformer-base (d_model 512, 8 heads, d_ffn 2048){per}. FLOPs count 2 per "
        "multiply-add of every linear layer and attention product, plus one axpy per term of "
        "every weighted sum.",
        "",
    ]
    program: fx.GraphModule | None = block.program
    caption = ""
    method = block.method
    if isinstance(method, ContinuousDynamics):
        # the solve is one module; draw the solver step it repeats, on the same field
        solver = method.solver_tableau()
        field = block.get_submodule("program.ode.field")
        step = attempt.run("the solver step", lambda: compile(solver, field=field))
        program = step.program if step is not None else None
        repeats = "an adaptive number of times" if method.adaptive else f"{method.steps} time(s)"
        caption = f"one {solver.name} step of the solve, repeated {repeats}"
    svg = None
    if program is not None:
        title = f"{name}: {caption or 'data flow'}"
        svg = attempt.run("the block diagram", lambda: block_svg(program, title))
    if svg is not None:
        md += [
            "### Data flow",
            "",
            save_figure(assets, "block.svg", svg, f"Data flow of the {name} block"),
            "",
            "Coloured boxes are field calls (one colour per module: one colour for all stages "
            "means one shared field), grey boxes the weighted sums; lines on the left carry "
            "states, lines on the right field outputs.",
            "",
        ]
    md += ["### Generated code", "", fence(block.code.strip("\n"), "python"), ""]
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
        effective = str(getattr(report, "effective_order", report.order))
        interval = _interval(report)
    return IndexRow(
        name=name,
        kind="solver",
        page=f"solvers/{name}.md",
        family=family,
        title=title,
        stages=stages,
        order=order,
        effective_order=effective,
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


def _maybe(value: int | None) -> str:
    return "depends on the data" if value is None else f"{value:,}"
