"""The prose of a gallery page, derived from the declaration and its report: the step written
out with exact coefficients ("what it computes") and the proved accuracy ("how accurate")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import sympy

from ..analysis import Report
from ..analysis.report import show
from ..compiler import example_fields
from ..methods import (
    AdditiveRungeKutta,
    ButcherTableau,
    ContinuousDynamics,
    LinearMultistep,
    Number,
    Splitting,
)
from ..methods.parameters import KINDS, initial_values
from .text import esc, exact, fence


def _term(coefficient: sympy.Expr, name: str, numeric: bool) -> tuple[str, str]:
    """(sign, magnitude·name) of one term of a linear combination."""
    if coefficient == 1:
        return "+", name
    if coefficient == -1:
        return "−", name
    text = exact(coefficient, numeric)
    if text.startswith("−") and " " not in text:
        return "−", f"{text[1:]}·{name}"
    if " " in text:
        text = f"({text})"
    return "+", f"{text}·{name}"


def combination(base: str | None, terms: Sequence[tuple[sympy.Expr, str]], numeric: bool) -> str:
    """`y + 1/2·k1 − k2`, zero terms dropped."""
    parts = [] if base is None else [base]
    for coefficient, name in terms:
        if coefficient == 0:
            continue
        sign, text = _term(coefficient, name, numeric)
        parts.append(f"{sign} {text}" if parts else ("−" + text if sign == "−" else text))
    return " ".join(parts) if parts else "0"


def stage_equations(
    method: ButcherTableau | AdditiveRungeKutta, fields: Sequence[str]
) -> list[str]:
    """One line per stage, calling its field (`fields[i]`: `F` for every stage of a tableau,
    an additive method's own per call), and the update (h = 1), exact coefficients."""
    lines = []
    for i, (row, field) in enumerate(zip(method.A, fields, strict=True)):
        terms = [(a, f"k{j + 1}") for j, a in enumerate(row)]
        lines.append(f"k{i + 1} = {field}({combination('y', terms, method.numeric)})")
    weights = [(b, f"k{i + 1}") for i, b in enumerate(method.b)]
    lines.append(f"y_next = {combination('y', weights, method.numeric)}")
    return lines


def splitting_equations(method: Splitting) -> list[str]:
    """One line per sub-step: which operator moves, by how much, from which state."""
    lines = []
    state = "y"
    numeric = method.numeric
    for k, (op, c) in enumerate(method.steps, start=1):
        new = "y_next" if k == len(method.steps) else f"y{k}"
        if method.substep is not None and method.substep.stages == 1 and method.substep.b[0] == 1:
            lines.append(f"{new} = {combination(state, [(c, f'{op}({state})')], numeric)}")
        else:
            how = "exact flow" if method.substep is None else f"one {method.substep.name} step"
            lines.append(f"{new} = {how} of {op} over {exact(c, numeric)}·h from {state}")
        state = new
    return lines


def multistep_equation(method: LinearMultistep) -> str:
    """y_{n+k} solved from Σ αⱼ y_{n+j} = Σ βⱼ F(y_{n+j}) (h = 1)."""
    k = method.steps
    lead = method.alpha[k]
    numeric = method.numeric
    terms: list[tuple[sympy.Expr, str]] = []
    for j in range(k):
        terms.append((sympy.simplify(-method.alpha[j] / lead), f"y[n+{j}]" if j else "y[n]"))
    for j in range(k + 1):
        name = f"y[n+{j}]" if j else "y[n]"
        terms.append((sympy.simplify(method.beta[j] / lead), f"F({name})"))
    return f"y[n+{k}] = {combination(None, terms, numeric)}"


def explain_rk(m: ButcherTableau) -> list[str]:
    calls = m.stages
    out = [
        f"One block is one step (h = 1) of this {m.kind} {m.stages}-stage Runge-Kutta method "
        "applied to y' = F(y), where F is the block's field: the residual-free branch of a "
        "pre-norm Transformer layer (for `san+ffn`, F(y) = L(y) − y). Every stage calls the "
        "same F, so the parameters are those of one layer while the compute is "
        f"{calls} layer evaluations:",
        "",
        fence("\n".join(stage_equations(m, ["F"] * m.stages))),
        "",
    ]
    if m.is_implicit:
        out += [
            "The stages appear on both sides (an implicit method): the compiled layer solves "
            f"them by {m.iterations or 'a declared number of'} fixed-point sweeps starting "
            "from F(y).",
            "",
        ]
    undeclared = sorted(map(str, m.symbols - set(m.parameters)))
    if undeclared:
        out += [
            f"The coefficients contain the free symbols {', '.join(undeclared)}: this is a "
            "family, compiled once its symbols are declared parameters (`[parameters]`).",
            "",
        ]
    if m.parameters:
        start = initial_values(m.parameters)
        trained = "; ".join(
            f"{s} is {KINDS[p.kind]} starting at {exact(start[s])}" for s, p in m.parameters.items()
        )
        out += [f"The layer trains its parameters: {trained}.", ""]
    return out


def accuracy_rk(m: ButcherTableau, r: Any) -> list[str]:
    p = r.order
    how = "proved exactly" if r.exact else "established at the precision of the entries"
    lines = [
        f"**Order {p}{'+' if r.order_is_lower_bound else ''}, {how}** over every rooted tree "
        f"with at most {p} nodes: one step has local error O({power('h', p + 1)}) and the "
        f"global error of n steps falls as {power('h', p)}.",
    ]
    if r.undetermined:
        lines.append(
            f"{len(r.undetermined)} condition(s) of order {p + 1} are undetermined: the digits "
            "given cannot decide them (never counted as met)."
        )
    if r.failing:
        lines.append(
            f"The order stops there: {len(r.failing)} condition(s) of order {p + 1} fail "
            f"(principal error norm {show(r.principal_error_norm)}; the first are listed below)."
        )
    if r.initial_order is not None:
        lines.append(
            f"This is the order for every value the parameters take, so it is the order of the "
            f"layer as it trains: {r.block_order_text}."
        )
    lines.append(f"Stage order {r.stage_order}.")
    stab = r.stability
    if stab.real_interval is not None:
        lines.append(
            f"For the linear test equation y' = λy, the step is stable on the real interval "
            f"{stab.real_interval_text} and the imaginary interval "
            f"{stab.imaginary_interval_text} of hλ" + (" (A-stable)." if stab.a_stable else ".")
        )
    return [" ".join(lines), ""]


def scientific(value: float) -> str:
    """`1e-08` as `10⁻⁸`, `2.5e-05` as `3·10⁻⁵` (one significant digit)."""
    mantissa, exponent = f"{value:.0e}".split("e")
    power_of_ten = "10" + str(int(exponent)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return power_of_ten if mantissa == "1" else f"{mantissa}·{power_of_ten}"


def power(base: str, exponent: int) -> str:
    """`h⁵`: an exponent as superscript digits."""
    return base + str(exponent).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


def explain_continuous(m: ContinuousDynamics) -> list[str]:
    solver = m.solver_tableau()
    if m.adaptive:
        how = (
            f"torchdiffeq's adaptive `{m.method}` (the tableau {solver.name}), with "
            f"rtol = {m.rtol:g}, atol = {m.atol:g} and at most {m.max_num_steps} steps"
        )
    else:
        per = (
            f"steps of length {exact(m.step_size)}"
            if m.step_size is not None
            else f"{m.steps} step(s) of {solver.name}"
        )
        how = f"{per} ({solver.stages} field calls per step)"
    time = {
        "concat": "t is appended to its input",
        "embedding": "a sinusoidal embedding of t is added to its input",
        "none": "it does not see t",
    }.get(m.time, m.time)
    if m.grid == "positions":
        delta = exact(m.delta)
        gaps = (
            f"{m.steps} {solver.name} step(s) between neighbouring positions"
            if not m.adaptive and m.step_size is None
            else how
        )
        return [
            "Not a block but a **position encoding** (FLOATER, Liu et al. 2020). A flow "
            "p(t) ∈ ℝᵈ solves the neural ODE dp/dt = h(t, p; w), where h is a small two-layer "
            f"MLP ({time}), from a learned initial value p(0). Token i reads the flow at "
            f"t_i = i·Δ with Δ = {delta}:",
            "",
            fence(
                "p(t_0) = p0                      # a learned initial value\n"
                "p(t_(i+1)) = p(t_i) + ∫ h(t, p) dt over [iΔ, (i+1)Δ]\n"
                f"                                 # {gaps}\n"
                "bias_q(i) = p_q(t_i),  bias_k(i) = p_k(t_i),  bias_v(i) = p_v(t_i)"
            ),
            "",
            'In a model (`position = "floater"` in a recipe\'s `[embedding]`), the encodings are '
            "injected at every block as position-aware biases on the query, key and value "
            "projections of its attention, added to the sinusoidal input encoding. The dynamics "
            "h are shared by every block; each block (and each of q, k, v) has its own learned "
            "initial value, so the biases differ per block while the parameters of h are paid "
            "once. Lengths are unbounded: a longer sequence integrates further. With h = 0 and "
            "zero initial values every bias is zero, so a FLOATER model computes exactly the "
            "sinusoidal Transformer it can be warm-started from.",
            "",
        ]
    return [
        "A **continuous-depth block**: the state flows through the neural ODE "
        f"y' = F(t, y) from t = {exact(m.t0)} to t = {exact(m.t1)}, where F is the block's "
        f"field ({time}):",
        "",
        fence(f"y_next = y + ∫ F(t, y(t)) dt over [{exact(m.t0)}, {exact(m.t1)}]"),
        "",
        f"The integral is computed by {how}"
        + (", backpropagating with the adjoint ODE." if m.adjoint else "."),
        "",
    ]


def accuracy_continuous(method: ContinuousDynamics, report: Report) -> list[str]:
    solver = method.solver_tableau()
    p = report.order
    text = (
        f"**Order {p}**: the order of the solver [{solver.name}]({solver.name}.md), proved "
        f"like every Runge-Kutta method: the computed flow's error falls as {power('s', p)} "
        "with the solver's step s"
    )
    if method.adaptive:
        return [text + " (the adaptive solver picks h to meet its tolerances).", ""]
    real = report.real_stability_interval
    if method.grid == "positions":
        step = method.delta / method.steps if method.step_size is None else method.step_size
        size = float(step)
        text += (
            f". Here the step is {exact(step)} (Δ = {exact(method.delta)}"
            + (f", {method.steps} step(s) per gap)" if method.step_size is None else ")")
            + f": between neighbouring tokens the solver commits a local error of order "
            f"({exact(step)}){power('', p + 1)} ≈ {scientific(size ** (p + 1))} (times "
            "derivatives of the flow), and the error of p(t) grows at most linearly in t, "
            f"staying near ({exact(step)}){power('', p)} ≈ {scientific(size**p)} per unit of t "
            f"for a smooth flow (token i sits at t = i·{exact(method.delta)})."
        )
        if real is not None and math.isfinite(real) and real > 0:
            text += (
                f" The step is stable while the step times the eigenvalues of the dynamics' "
                f"Jacobian stays in the region below; on the real axis down to −{real:.3g}, "
                f"i.e. for eigenvalues down to −{real / size:.3g}."
            )
        return [text, ""]
    steps = method.steps if method.step_size is None else None
    if steps is not None:
        h = (method.t1 - method.t0) / steps
        text += (
            f"; here {steps} step(s) over [{exact(method.t0)}, {exact(method.t1)}], h = {exact(h)}"
        )
    return [text + ".", ""]


def butcher_table(m: ButcherTableau) -> str:
    """The tableau as HTML (c | A over the weights), exact entries."""

    def entry(x: Number) -> str:
        return esc(exact(x.value, x.numeric))

    rows = []
    n = m.numbers
    for ci, row in zip(n.c, n.A, strict=True):
        cells = "".join(f"<td>{entry(a)}</td>" for a in row)
        rows.append(f'<tr><th class="c">{entry(ci)}</th>{cells}</tr>')
    weights = "".join(f"<td>{entry(b)}</td>" for b in n.b)
    rows.append(f'<tr class="b"><th class="c">b</th>{weights}</tr>')
    if "b_hat" in n:
        hat = "".join(f"<td>{entry(b)}</td>" for b in n.b_hat)
        rows.append(f'<tr class="b"><th class="c">b̂</th>{hat}</tr>')
    return '<table class="butcher">\n' + "\n".join(rows) + "\n</table>"


def free_symbols(method: ButcherTableau | LinearMultistep) -> str:
    """Why a family of methods (free symbols) has no region or star drawn."""
    names = ", ".join(sorted(str(s) for s in method.symbols))
    return (
        f"the declaration is a family with free symbols ({names}): its R(z) depends on them "
        "(give them values in a copy of the file to draw one member)"
    )


def compiled_fields(method: Splitting | AdditiveRungeKutta, note: str) -> list[str]:
    """The page's line naming the field each operator is compiled with (`example_fields`)."""
    given = example_fields(method)["fields"]
    fields = ", ".join(f"{op} = {field}" for op, field in given.items())
    return [f"On this page the block is compiled with {fields}{note}.", ""]
