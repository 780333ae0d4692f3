"""Runge-Kutta tableaux compiled into blocks: Kᵢ = F(y + h Σⱼ aᵢⱼKⱼ), y' = y + h Σᵢ bᵢKᵢ.

All stages call the SAME field (the ODE Transformer's parameter sharing inside a block). F is the
residual-free branch, so `rk2` (Heun) gives the paper's y + ½(F₁ + F(y + F₁)), not the official
code's staging of whole layers L(y) = y + F(y).

Implicit tableaux are solved by a declared number of fixed-point sweeps: fully implicit ones
update every stage from the previous sweep (Jacobi), starting from Kᵢ⁽⁰⁾ = F(y); diagonally
implicit ones solve stage by stage, Kᵢ⁽⁰⁾ = F(y + h Σⱼ<ᵢ aᵢⱼKⱼ), then `iterations` corrections.
Each sweep is unrolled into the graph, so a block costs (iterations + 1)·s field calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import final

import sympy
import torch.fx as fx
from torch import nn

from ..methods import ButcherTableau
from ..methods.general_linear import layer_stage_inverse
from ..nn import Field, make_field
from .coefficients import StageGate
from .options import MAX_ITERATIONS, FieldSizes, FieldSpec
from .program import (
    Coefficient,
    CompiledBlock,
    ProgramBuilder,
    class_name,
    exact_parameter,
    field_width,
    require,
    step_coefficient,
)


@final
@dataclass(frozen=True)
class RungeKuttaOptions(FieldSizes):
    """The options of `bf.compile` for a `ButcherTableau` (and the field sizes).

    - `field`: the field every stage evaluates: `"san"`, `"ffn"`, `"san+ffn"`, `"ca"`,
      `"san+ca"`, `"san+ca+ffn"` or any `nn.Module` mapping y to dy.
    - `coefficients`: a policy applied to a tableau with exact weights, `"exact"` (default),
      `"unit"`, `"learned"`, `"gated"` or `"tanh"` (`ButcherTableau.with_coefficients`); a
      declaration with parameters is compiled as declared.
    - `step_size`: h (default 1), or `"learned"`.
    - `iterations`: fixed-point sweeps for implicit tableaux (default: the declaration's).
    - `gate`: a `StageGate` shared with other blocks (for a declaration with gates).
    - `causal`: causal self-attention; by default, whenever the field cross-attends.
    """

    field: FieldSpec | None = None
    coefficients: str = "exact"
    step_size: float | str = 1.0
    iterations: int | None = None
    gate: StageGate | None = None
    causal: bool | None = None


def _is_weighted(b: sympy.Expr) -> bool:
    return bool(b.free_symbols) or float(b) != 0.0


def _needed_stages(method: ButcherTableau, weighted: set[int]) -> set[int]:
    """Stages whose value reaches the output: the weighted ones and what they depend on."""
    needed: set[int] = set()
    todo = sorted(weighted)
    while todo:
        i = todo.pop()
        if i in needed:
            continue
        needed.add(i)
        todo.extend(j for j in range(method.stages) if not method.is_zero(i, j))
    return needed


@final
class RungeKuttaBlock(CompiledBlock):
    """A `ButcherTableau` compiled around one shared field. Build it with `bf.compile`.

    **Arguments:**

    - `method`: the tableau; every free symbol a declared parameter (learned scalars become
      the float64 vector `weights`, gates one `StageGate` named `gate`).
    - `options`: `RungeKuttaOptions`; a `coefficients` policy is applied first, so `method`
      (the attribute) is the declaration the block computes, e.g. `heun-gated`.
    """

    def __init__(self, method: ButcherTableau, options: RungeKuttaOptions) -> None:
        super().__init__()
        require(
            options.field is not None,
            "a Runge-Kutta method evaluates one field: pass field=",
            key="field",
            value=None,
            valid="e.g. field='san+ffn' or field=my_module",
        )
        assert options.field is not None
        declared = method.with_coefficients(options.coefficients)
        declared.layer.require(declared)
        if options.stage == "layer" and declared.is_implicit:
            layer_stage_inverse(declared)  # refuses a tableau whose stages it leaves undetermined
        built = make_field(options.field, **options.sizes)
        self.method, self.policy = declared, options.coefficients
        self.d_model = field_width(built, options.d_model)
        self.causal = built.needs_memory if options.causal is None else options.causal
        self.iterations = (
            options.iterations if options.iterations is not None else method.iterations
        )
        if declared.is_implicit:
            require(
                self.iterations is not None and 1 <= self.iterations <= MAX_ITERATIONS,
                f"implicit tableau '{method.name}' needs from 1 to {MAX_ITERATIONS} fixed-point "
                "iterations",
                key="iterations",
                value=self.iterations,
                valid=f"pass iterations=N (1 <= N <= {MAX_ITERATIONS}) or declare `iterations` "
                "in the file",
            )
        gates = [s for s, p in declared.parameters.items() if p.is_gate]
        require(
            options.gate is None or bool(gates),
            "a shared gate applies to a declaration with gate parameters",
            key="gate",
            value=type(options.gate).__name__,
            valid="coefficients='gated' or 'tanh', or a declaration with per-token gates",
        )
        holder = nn.Module()
        holder.field = built
        builder = ProgramBuilder(holder)
        h = step_coefficient(holder, builder, options.step_size)
        symbols = self._learned(holder, builder)
        weighted = {i for i, x in enumerate(declared.b) if _is_weighted(x)}
        needed = _needed_stages(declared, weighted)

        def coefficient(i: int) -> Coefficient:
            return self._times_h(builder, h, declared.b[i], symbols, name=f"b{i + 1}")

        if declared.is_explicit and not gates:
            # Accumulate y_next as soon as each stage is final, so a stage tensor dies at its
            # last use by a later stage instead of living until the end of the block. The
            # partial sums are acc1, acc2, ... (after k1, k2, ...); the last one is y_next.
            acc = [builder.y]
            last = max(weighted, default=-1)

            def accumulate(i: int, k: fx.Node) -> None:
                if i in weighted:
                    name = "y_next" if i == last else f"acc{i + 1}"
                    acc[0] = builder.combine(acc[0], [(coefficient(i), k)], name=name)

            self._stages(builder, h, needed, symbols, accumulate)
            out = acc[0]
        else:
            stages = self._stages(builder, h, needed, symbols)
            order = sorted(weighted)
            if gates:
                self._gate(
                    holder, builder, [stages[i] for i in order], gates, options.gate, symbols
                )
            out = builder.combine(builder.y, [(coefficient(i), stages[i]) for i in order], "y_next")
        self.program = builder.finish(out, class_name=class_name(declared.name))

    @property
    def field(self) -> Field:
        module = self.program.get_submodule("field")
        assert isinstance(module, Field)
        return module

    def _learned(
        self, holder: nn.Module, builder: ProgramBuilder
    ) -> dict[sympy.Symbol, Callable[[], fx.Node]]:
        """A node maker per parameter: learned scalars are entries of one float64 vector
        `weights` (read where first used); gates are filled in by `_gate`."""
        learned = [s for s, p in self.method.parameters.items() if p.kind == "learned"]
        if learned:
            parameters = self.method.parameters
            holder.weights = exact_parameter([float(parameters[s].start) for s in learned])

        def entry(n: int, symbol: sympy.Symbol) -> Callable[[], fx.Node]:
            def read() -> fx.Node:
                weights = builder.attribute("weights", name="weights")
                return builder.item(weights, n, name=str(symbol))

            return read

        return {s: entry(n, s) for n, s in enumerate(learned)}

    def _value(
        self,
        builder: ProgramBuilder,
        expr: sympy.Expr,
        symbols: dict[sympy.Symbol, Callable[[], fx.Node]],
        name: str,
    ) -> Coefficient:
        return builder.expression(expr, lambda s: symbols[s](), name=name)

    def _times_h(
        self,
        builder: ProgramBuilder,
        h: Coefficient,
        expr: sympy.Expr,
        symbols: dict[sympy.Symbol, Callable[[], fx.Node]],
        name: str,
    ) -> Coefficient:
        """h·x for a coefficient x: folded when both are constants."""
        value = self._value(builder, expr, symbols, name)
        if isinstance(value, float) and isinstance(h, float):
            return h * value
        if isinstance(h, float) and h == 1.0:
            return value
        if isinstance(value, float):
            return builder.graph.call_function(_times, (h, value))
        return builder.graph.call_function(_times, (value, h))

    def _gate(
        self,
        holder: nn.Module,
        builder: ProgramBuilder,
        stages: list[fx.Node],
        gates: list[sympy.Symbol],
        shared: StageGate | None,
        symbols: dict[sympy.Symbol, Callable[[], fx.Node]],
    ) -> None:
        """One `StageGate` reads the weighted stages and gives every gate symbol its value."""
        parameters = self.method.parameters
        kind = parameters[gates[0]].kind
        init = [parameters[s].start for s in gates]
        if shared is None:
            why = "a stage gate is d_model wide"
            field = holder.get_submodule("field")
            width = self.d_model or field_width(field, needed_for=why)
            assert width is not None
            gate = StageGate(width, len(stages), kind, init, names=[str(s) for s in gates])
        else:
            gate = shared
        require(
            (gate.stages, gate.kind, gate.outputs) == (len(stages), kind, len(gates)),
            f"the shared gate is a {gate.kind} gate over {gate.stages} stages with "
            f"{gate.outputs} output(s)",
            key="gate",
            value=gate.stages,
            valid=f"a {kind} gate over {len(stages)} stages with {len(gates)} output(s)",
        )
        holder.gate = gate
        values = builder.call_module("gate", tuple(stages), name="gates")
        for n, symbol in enumerate(gates):
            symbols[symbol] = _node(builder.item(values, n, name=str(symbol)))

    def _stages(
        self,
        builder: ProgramBuilder,
        h: Coefficient,
        needed: set[int],
        symbols: dict[sympy.Symbol, Callable[[], fx.Node]],
        on_stage: Callable[[int, fx.Node], None] | None = None,
    ) -> dict[int, fx.Node]:
        """Emit the stage nodes; `on_stage(i, Kᵢ)` runs once stage i of an explicit method is
        computed and its input consumed."""
        m = self.method
        s = m.stages
        K: dict[int, fx.Node] = {}

        def scaled(i: int, j: int) -> Coefficient:
            return self._times_h(builder, h, m.A[i][j], symbols, name=f"a{i + 1}{j + 1}")

        def stage_input(i: int, values: dict[int, fx.Node], upto: int) -> fx.Node:
            terms = [(scaled(i, j), values[j]) for j in range(upto) if not m.is_zero(i, j)]
            return builder.combine(builder.y, terms, name=f"y{i + 1}") if terms else builder.y

        if m.is_explicit:
            pending: list[int] = []
            for i in range(s):
                if i in needed:
                    value = stage_input(i, K, i)
                    if on_stage is not None:
                        # Kⱼ joins the sum once the next stage's input has read it, before the
                        # next field call, so it can be freed during that call.
                        for j in pending:
                            on_stage(j, K[j])
                        pending = [i]
                    K[i] = builder.call_field("field", value, name=f"k{i + 1}")
            for j in pending if on_stage is not None else []:
                on_stage(j, K[j])  # type: ignore[misc]
            return K
        assert self.iterations is not None
        if m.is_diagonally_implicit:
            for i in range(s):
                if i not in needed:
                    continue
                explicit = stage_input(i, K, i)
                K[i] = builder.call_field("field", explicit, name=f"k{i + 1}")
                if not m.is_zero(i, i):
                    for sweep in range(self.iterations):
                        value = builder.combine(
                            explicit, [(scaled(i, i), K[i])], name=f"y{i + 1}_{sweep + 1}"
                        )
                        K[i] = builder.call_field("field", value, name=f"k{i + 1}_{sweep + 1}")
            return K
        first = builder.call_field("field", builder.y, name="k0")
        K = dict.fromkeys(needed, first)
        for sweep in range(self.iterations):
            previous = dict(K)
            for i in sorted(needed):
                value = stage_input(i, previous, s)
                # a stage whose row of A is zero is F(y) in every sweep: reuse it
                K[i] = (
                    first
                    if value is builder.y
                    else builder.call_field("field", value, name=f"k{i + 1}_{sweep + 1}")
                )
        return K


def _node(node: fx.Node) -> Callable[[], fx.Node]:
    return lambda: node


def _times(a: object, b: object) -> object:
    return a * b  # type: ignore[operator]


def compile_runge_kutta(method: ButcherTableau, options: RungeKuttaOptions) -> RungeKuttaBlock:
    """`bf.compile` for a Butcher tableau."""
    return RungeKuttaBlock(method, options)
