"""How a gallery page shows each declaration family: one small renderer per family, listed in
`PAGES` (a new family adds its renderer there; the page itself, `solver_page`, is the same for
every family).

A renderer says what the declaration is (`what`), writes out the step it computes and the
accuracy it proves, shows its coefficients, draws its stability region, and picks what to draw
of its compiled block.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any, final

import torch.fx as fx

from ..analysis import Report, check
from ..compiler import CompiledBlock, compile
from ..methods import (
    AdditiveRungeKutta,
    ButcherTableau,
    ContinuousDynamics,
    GeneralLinear,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
)
from ..methods.parameters import initial_values
from .explain import (
    accuracy_continuous,
    accuracy_rk,
    butcher_table,
    compiled_fields,
    explain_continuous,
    explain_rk,
    free_symbols,
    multistep_equation,
    power,
    splitting_equations,
    stage_equations,
)
from .plots import multistep_stability_svg, order_star_svg, stability_svg
from .ssp_section import ssp_figures
from .text import NUMERIC_DIGITS, Attempt, exact, fence, negative_interval, table

RK_PROBLEM = (
    "Measured on the non-autonomous y' = −y + cos t, y(0) = 1, integrated to t = 1 in N "
    "steps against the exact solution; the dashed line has the proved slope. Orders above "
    "4 run in 60-digit arithmetic, so rounding does not flatten the slope."
)


class FamilyPage(abc.ABC):
    """The family-specific parts of a declaration's gallery page."""

    @abc.abstractmethod
    def what(self, method: Any) -> str:
        """One phrase naming the declaration's kind: "an explicit 4-stage Runge-Kutta method"."""

    def computes_title(self, method: Any) -> str:
        return "What the layer computes"

    @abc.abstractmethod
    def computes(self, method: Any, compiled: bool) -> list[str]:
        """The body of "What the layer computes" (`compiled`: the page shows a block)."""

    @abc.abstractmethod
    def accuracy(self, method: Any, report: Any) -> list[str]:
        """The body of "How accurate the integrator is"."""

    @abc.abstractmethod
    def coefficients(self, method: Any) -> list[str]:
        """The coefficients as tables (a Butcher tableau, a splitting sequence, α and β)."""

    def order_phrase(self, method: Any, report: Any) -> str:
        """The summary's " of proved order p" (a splitting adds its sub-step's order)."""
        return f" of proved order {report.order}"

    def verdict(self, report: Any) -> str:
        """The proved verdict in a few words (the audit page): the order, and what decides it
        for general linear methods and splittings."""
        return f"order {report.block_order_text}"

    def stability(self, method: Any, report: Any) -> str | None:
        """The stability region as SVG, or None where there is none to draw (`why_no_region`)."""
        return None

    def order_star(self, method: Any, report: Any) -> str | None:
        """The order star as SVG, or None where there is none to draw (`why_no_order_star`)."""
        return None

    def why_no_region(self, method: Any) -> str:
        """Why `stability` draws nothing for this declaration, in a phrase."""
        return f"{method.family} declarations have no stability region drawn"

    def why_no_order_star(self, method: Any) -> str:
        """Why `order_star` draws nothing for this declaration, in a phrase."""
        return f"an order star compares one R(z) with e^z: a {method.family} has no single R(z)"

    def stages(self, method: Any) -> str:
        """The index's stage column: the stages the page names ("—": a family without)."""
        return "—"

    def monotonicity(self, method: Any, report: Any, attempt: Attempt, assets: Path) -> list[str]:
        """The SSP and internal stability subsections as markdown lines (none by default)."""
        return []

    def problem(self, method: Any) -> str:
        """What the convergence measurement integrates."""
        return RK_PROBLEM

    def diagram(self, block: CompiledBlock, attempt: Attempt) -> tuple[fx.GraphModule | None, str]:
        """The graph to draw for the block and its caption ("": the block's data flow)."""
        return block.program, ""


@final
class RungeKuttaPage(FamilyPage):
    def what(self, method: ButcherTableau) -> str:
        article = "an" if method.kind[0] in "aeiou" else "a"
        return f"{article} {method.kind} {method.stages}-stage Runge-Kutta method"

    def computes(self, method: ButcherTableau, compiled: bool) -> list[str]:
        return explain_rk(method)

    def accuracy(self, method: ButcherTableau, report: Any) -> list[str]:
        return accuracy_rk(method, report)

    def coefficients(self, method: ButcherTableau) -> list[str]:
        md = ["## Butcher tableau", ""]
        if method.numeric:
            md += [
                f"A numeric declaration: entries are shown to {NUMERIC_DIGITS} digits (the "
                "declaration above holds every digit, and the proof judged each condition at the "
                "precision those digits carry).",
                "",
            ]
        md += [butcher_table(method), ""]
        if method.parameters:
            start = initial_values(method.parameters)
            rows = [(f"`{s}`", p.kind, exact(start[s])) for s, p in method.parameters.items()]
            md += [table(("symbol", "parameter", "at initialisation"), rows), ""]
        return md

    def stability(self, method: ButcherTableau, report: Any) -> str | None:
        if method.symbols:
            return None
        return stability_svg(report.stability, f"{method.name}: |R(z)| ≤ 1")

    def order_star(self, method: ButcherTableau, report: Any) -> str | None:
        if method.symbols:
            return None
        title = f"{method.name}: order star"
        return order_star_svg(report.stability, report.order, title)

    def why_no_region(self, method: ButcherTableau) -> str:
        return free_symbols(method)

    def why_no_order_star(self, method: ButcherTableau) -> str:
        return free_symbols(method)

    def stages(self, method: ButcherTableau) -> str:
        return str(method.stages)

    def monotonicity(
        self, method: ButcherTableau, report: Any, attempt: Attempt, assets: Path
    ) -> list[str]:
        return ssp_figures(method, report, attempt, assets)


@final
class SplittingPage(FamilyPage):
    def what(self, method: Splitting) -> str:
        return f"a splitting of the operators {', '.join(method.operators)}"

    def computes(self, method: Splitting, compiled: bool) -> list[str]:
        ops = ", ".join(method.operators)
        md = [
            f"The field is split into operators {ops}, y' = "
            + " + ".join(f"{op}(y)" for op in method.operators)
            + ", and one block advances them one after another, each by its fraction of the "
            "step h = 1. Each step has its own module (a layer with separate weights, as "
            "Macaron's two half-step FFNs):",
            "",
            fence("\n".join(splitting_equations(method))),
            "",
        ]
        return md + (compiled_fields(method, "") if compiled else [])

    def accuracy(self, method: Splitting, report: Any) -> list[str]:
        r = report
        text = (
            f"**Order {r.order} with exact sub-flows**, proved in the free algebra of the "
            f"operators (every word of length ≤ {r.order} has the exact flow's coefficient). "
        )
        if method.substep is not None:
            text += (
                f"**Order {r.substep_order} with {method.substep_name} sub-steps** "
                "(what the compiled layer computes), proved with coloured trees: "
            )
            sub_order = method.substep.order
            why = (
                f" (each {method.substep_name} sub-step is itself of order {sub_order}, and the "
                f"composition does not cancel its local error O({power('h', sub_order + 1)}))"
                if sub_order is not None and sub_order < r.order
                else ""
            )
            text += (
                f"the {method.substep_name} sub-steps lower the order from {r.order}{why}."
                if r.substep_order < r.order
                else "the sub-steps keep the splitting's order."
            )
        return [text, ""]

    def coefficients(self, method: Splitting) -> list[str]:
        md = ["## Splitting sequence", ""]
        steps = [(k + 1, op, exact(c, method.numeric)) for k, (op, c) in enumerate(method.steps)]
        md += [table(("step", "operator", "fraction of h"), steps, "rll"), ""]
        sub = "exact sub-flows" if method.substep is None else f"`{method.substep.name}`"
        if method.substep is not None and method.substep.name in catalog:
            sub = f"[{method.substep.name}]({method.substep.name}.md)"
        return [*md, f"Sub-step: {sub}.", ""]

    def verdict(self, report: Any) -> str:
        return f"order {report.order} (exact flows), {report.substep_order} with Euler sub-steps"

    def order_phrase(self, method: Splitting, report: Any) -> str:
        phrase = super().order_phrase(method, report)
        if method.substep is None:
            return phrase
        return (
            f"{phrase} with exact sub-flows and {report.substep_order} with "
            f"{method.substep_name} sub-steps"
        )

    def why_no_region(self, method: Splitting) -> str:
        ops = ", ".join(method.operators)
        return f"its linear stability depends on each operator's eigenvalue ({ops}), not one z"

    def problem(self, method: Splitting) -> str:
        return (
            "Measured on y' = (L_A + L_B + …) y with non-commuting 3×3 matrices, integrated "
            "to t = 1 in N steps (exact sub-flows by matrix exponentials); the dashed lines "
            "have the proved slopes. Orders above 4 run in 60-digit arithmetic."
        )


@final
class MultistepPage(FamilyPage):
    def what(self, method: LinearMultistep) -> str:
        explicit = "explicit" if method.is_explicit else "implicit"
        return f"an {explicit} {method.steps}-step linear multistep method"

    def computes(self, method: LinearMultistep, compiled: bool) -> list[str]:
        md = [
            f"A {method.steps}-step method spans layers: layer n+{method.steps} combines the "
            f"states and field outputs of the {method.steps} layers before it (each layer has "
            "its own field F, with its own weights; h = 1):",
            "",
            fence(multistep_equation(method)),
            "",
            "The first layers, before k states exist, are started by forward Euler.",
            "",
        ]
        if method.parameters:
            start = initial_values(method.parameters)
            learned = ", ".join(f"{s} (starting at {start[s]})" for s in method.parameters)
            md += [f"Every layer learns its own {learned}.", ""]
        return md

    def accuracy(self, method: LinearMultistep, report: Any) -> list[str]:
        r = report
        stable = "zero-stable" if r.zero_stable else "**not zero-stable** (it diverges)"
        text = f"**Order {r.order}**, {stable}"
        if r.error_constant is not None:
            text += f", error constant C = {exact(r.error_constant)}"
        if r.real_interval is not None:
            text += f"; real stability interval {negative_interval(r.real_interval)}"
        return [text + ".", ""]

    def coefficients(self, method: LinearMultistep) -> list[str]:
        pairs = [
            (j, exact(a, method.numeric), exact(b, method.numeric))
            for j, (a, b) in enumerate(zip(method.alpha, method.beta, strict=True))
        ]
        return ["## Coefficients α, β", "", table(("j", "αⱼ", "βⱼ"), pairs, "rll"), ""]

    def stability(self, method: LinearMultistep, report: Any) -> str | None:
        if method.symbols:
            return None
        alpha = [float(a) for a in method.alpha]
        beta = [float(b) for b in method.beta]
        title = f"{method.name}: stability region"
        return multistep_stability_svg(alpha, beta, report.boundary_locus(), title)

    def why_no_region(self, method: LinearMultistep) -> str:
        return free_symbols(method)

    def why_no_order_star(self, method: LinearMultistep) -> str:
        return (
            "an order star compares a one-step method's R(z) with e^z; a multistep method has "
            "k roots ζ(z) instead (their boundary locus is drawn on the stability region)"
        )


@final
class ContinuousPage(FamilyPage):
    def what(self, method: ContinuousDynamics) -> str:
        if method.grid == "positions":
            return f"a position flow (FLOATER) solved by {method.method}"
        return f"a continuous-depth block solved by {method.method}"

    def computes_title(self, method: ContinuousDynamics) -> str:
        return "What it computes" if method.grid == "positions" else "What the layer computes"

    def computes(self, method: ContinuousDynamics, compiled: bool) -> list[str]:
        return explain_continuous(method)

    def accuracy(self, method: ContinuousDynamics, report: Report) -> list[str]:
        return accuracy_continuous(method, report)

    def coefficients(self, method: ContinuousDynamics) -> list[str]:
        solver = method.solver_tableau()
        link = f"[{solver.name}]({solver.name}.md)" if solver.name in catalog else solver.name
        md = ["## Solver", "", f"The dynamics are integrated by {link}:", ""]
        return [*md, butcher_table(solver), ""]

    def stability(self, method: ContinuousDynamics, report: Any) -> str | None:
        solver = check(method.solver_tableau())
        stability = solver.stability  # type: ignore[attr-defined]
        return stability_svg(stability, f"{method.name}: solver {solver.method.name}")

    def why_no_order_star(self, method: ContinuousDynamics) -> str:
        solver = method.solver_tableau().name
        return f"the step is its solver's: `butcherflow check {solver} --plot DIR` draws its star"

    def stages(self, method: ContinuousDynamics) -> str:
        return str(method.solver_tableau().stages)

    def diagram(self, block: CompiledBlock, attempt: Attempt) -> tuple[fx.GraphModule | None, str]:
        """The solve is one module: draw the solver step it repeats, on the same field."""
        method = block.method
        solver = method.solver_tableau()
        field = block.get_submodule("program.ode.field")
        step = attempt.run("the solver step", lambda: compile(solver, field=field))
        repeats = "an adaptive number of times" if method.adaptive else f"{method.steps} time(s)"
        caption = f"one {solver.name} step of the solve, repeated {repeats}"
        return (step.program if step is not None else None), caption


@final
class GeneralLinearPage(FamilyPage):
    def verdict(self, report: Any) -> str:
        if report.preconsistent is False:
            return "not preconsistent: order 0"
        return f"order {report.order}"

    def what(self, method: GeneralLinear) -> str:
        explicit = "explicit" if method.is_explicit else "implicit"
        return (
            f"an {explicit} general linear method (s = {method.stages} stage(s), "
            f"r = {method.values} value(s) carried across layers)"
        )

    def computes(self, method: GeneralLinear, compiled: bool) -> list[str]:
        r, s = method.values, method.stages
        return [
            f"A general linear method spans layers: the stack carries r = {r} streams "
            f"(batch, time, {r}, d_model); layer m computes its {s} stage(s) with its own field "
            "Fₘ and mixes the streams (h = 1):",
            "",
            fence(
                "Y  = A·Fₘ(Y) + U·y        (stages; A strictly lower triangular)\n"
                "y' = B·Fₘ(Y) + V·y        (the next layer's streams)"
            ),
            "",
            "The input x becomes the streams u ⊗ x (u: each input's coefficient of y(x) in the "
            "starting procedure " + ", ".join(f"`{t}`" for t in method.start_text()) + "); the "
            "output is the mean of the streams started at y(x). Under `coefficients` = "
            "`learned`, `dynamic` (per-token, dynamic hyper-connections) or `sinkhorn` (mHC) "
            "each layer has its own U, B, V starting at the declaration.",
            "",
        ]

    def accuracy(self, method: GeneralLinear, report: Any) -> list[str]:
        r = report
        stable = {True: "V power-bounded (zero-stable)", False: "**V not power-bounded**"}.get(
            r.zero_stable, "power-boundedness of V undecided"
        )
        pre = {True: "preconsistent", False: "**not preconsistent**"}.get(
            r.preconsistent, "preconsistent only within the rounding of its digits"
        )
        text = f"**Order {r.order}** relative to its starting procedure, {pre}, {stable}"
        if r.real_interval is not None:
            interval = negative_interval(r.real_interval)
            text += f"; real stability interval of M(z) = V + zB(I − zA)⁻¹U: {interval}"
        return [
            text + ".",
            "",
            "The proof is of the declaration, which is a learned stack's initialisation; "
            "`butcherflow show RUN_DIR` reports each trained layer's spectral radius of V and "
            "the largest ‖Vⁿ‖.",
            "",
        ]

    def coefficients(self, method: GeneralLinear) -> list[str]:
        md = ["## Coefficients A, U, B, V", ""]
        for key in ("A", "U", "B", "V"):
            matrix = getattr(method, key)
            cols = len(matrix[0]) if matrix else 0
            rows = [(i, *(exact(x, method.numeric) for x in row)) for i, row in enumerate(matrix)]
            md += [f"{key}:", "", table((key, *map(str, range(cols))), rows), ""]
        starts = [(i, f"`{t}`") for i, t in enumerate(method.start_text())]
        md += [table(("input", "starting value"), starts, "rl"), ""]
        return md

    def why_no_region(self, method: GeneralLinear) -> str:
        return "its M(z) = V + zB(I − zA)⁻¹U has r eigenvalues (the report: the real interval)"

    def stages(self, method: GeneralLinear) -> str:
        return str(method.stages)

    def problem(self, method: GeneralLinear) -> str:
        return (
            "Measured on the non-autonomous y' = −y + cos t, y(0) = 1 (as the system (y, t)), "
            "integrated to t = 1 in N steps with the r inputs started exactly by the starting "
            "procedure; the error is the largest difference between an output and that "
            "procedure on the exact solution. The dashed line has the proved slope."
        )


@final
class AdditivePage(FamilyPage):
    def what(self, method: AdditiveRungeKutta) -> str:
        kind = "an explicit" if method.is_explicit else "an implicit"
        ops = ", ".join(method.operators)
        return f"{kind} additive Runge-Kutta method of the fields {ops} ({method.stages} calls)"

    def computes(self, method: AdditiveRungeKutta, compiled: bool) -> list[str]:
        ops = " + ".join(f"{op}(y)" for op in method.operators)
        md = [
            f"The field is a sum, y' = {ops}, and each call evaluates one of its parts at its "
            "own combination of the earlier calls (h = 1):",
            "",
            fence("\n".join(stage_equations(method, method.fields))),
            "",
        ]
        return md + (compiled_fields(method, ", one module per field") if compiled else [])

    def accuracy(self, method: AdditiveRungeKutta, report: Any) -> list[str]:
        return [
            f"**Order {report.order}**, proved over trees whose nodes are coloured by field "
            f"(every coloured tree of at most {report.order} nodes has Φ(t) = 1/γ(t)). Linear "
            "stability depends on every field's eigenvalue: the report gives R as a function of "
            f"{', '.join(f'z_{op}' for op in method.operators)}.",
            "",
        ]

    def coefficients(self, method: AdditiveRungeKutta) -> list[str]:
        rows = [
            (
                i + 1,
                field,
                ", ".join(exact(a, method.numeric) for a in row),
                exact(b, method.numeric),
            )
            for i, (field, row, b) in enumerate(zip(method.fields, method.A, method.b, strict=True))
        ]
        return ["## Calls", "", table(("call", "field", "row of A", "b"), rows, "rlll"), ""]

    def why_no_region(self, method: AdditiveRungeKutta) -> str:
        zs = ", ".join(f"z_{op}" for op in method.operators)
        return f"its R depends on every field's eigenvalue ({zs}), not one z"

    def problem(self, method: AdditiveRungeKutta) -> str:
        return (
            "Measured on y' = (L_f + L_g + …) y with non-commuting 3×3 matrices, one per field, "
            "integrated to t = 1 in N steps (stages solved exactly) against the matrix "
            "exponential; the dashed line has the proved slope."
        )


PAGES: dict[type[Method], FamilyPage] = {
    ButcherTableau: RungeKuttaPage(),
    Splitting: SplittingPage(),
    LinearMultistep: MultistepPage(),
    ContinuousDynamics: ContinuousPage(),
    GeneralLinear: GeneralLinearPage(),
    AdditiveRungeKutta: AdditivePage(),
}


def page_for(method: Method) -> FamilyPage:
    """The renderer of a declaration's family."""
    return PAGES[type(method)]
