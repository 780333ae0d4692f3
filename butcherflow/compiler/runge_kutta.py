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
from typing import final

import sympy
import torch.fx as fx
from torch import nn

from ..methods import ButcherTableau
from ..nn import Field
from .coefficients import POLICIES, StageGate
from .program import (
    Coefficient,
    CompiledBlock,
    ProgramBuilder,
    check_step_size,
    class_name,
    exact_parameter,
    require,
)


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

    - `method`: the tableau (no free symbols).
    - `field`: the `Field` evaluated at every stage.
    - `d_model`: the width (for gates and FLOP counts).
    - `coefficients`: `"exact"`, `"unit"`, `"learned"`, `"gated"` or `"tanh"`.
    - `step_size`: h (1 by default) or `"learned"` (a scalar parameter initialised at 1).
    - `iterations`: fixed-point sweeps for implicit tableaux (default: the declaration's).
    - `gate`: a `StageGate` to share with other blocks (`"gated"`/`"tanh"` only).
    - `causal`: self-attention is causal (decoders).
    """

    def __init__(
        self,
        method: ButcherTableau,
        field: Field,
        *,
        d_model: int,
        coefficients: str = "exact",
        step_size: float | str = 1.0,
        iterations: int | None = None,
        gate: StageGate | None = None,
        causal: bool = False,
    ) -> None:
        super().__init__()
        require(
            not method.symbols,
            f"'{method.name}' is a family with free symbols {sorted(map(str, method.symbols))}",
            key="method",
            value=method.name,
            valid="substitute values with tableau.subs({...}), or use coefficients="
            "'learned'/'gated' on a concrete member",
        )
        require(
            coefficients in POLICIES,
            "unknown coefficient policy",
            key="coefficients",
            value=coefficients,
            valid=f"one of {', '.join(POLICIES)}",
        )
        require(
            gate is None or coefficients in ("gated", "tanh"),
            "a shared gate only applies to gated or tanh coefficients",
            key="gate",
            value=type(gate).__name__,
            valid="coefficients='gated' or 'tanh'",
        )
        self.method, self.d_model, self.causal, self.policy = method, d_model, causal, coefficients
        self.iterations = iterations if iterations is not None else method.iterations
        if method.is_implicit:
            require(
                self.iterations is not None and self.iterations >= 1,
                f"implicit tableau '{method.name}' needs a number of fixed-point iterations",
                key="iterations",
                value=self.iterations,
                valid="pass iterations=N (N >= 1) or declare `iterations` in the file",
            )
        holder = nn.Module()
        holder.field = field
        builder = ProgramBuilder(holder)
        h = self._step(holder, builder, step_size)
        b = [float(x) for x in method.b]
        weighted = (
            {i for i in range(method.stages) if b[i] != 0.0}
            if coefficients == "exact"
            else set(range(method.stages))
        )
        needed = _needed_stages(method, weighted)
        if method.is_explicit and coefficients in ("exact", "unit", "learned"):
            # Accumulate y_next as soon as each stage is final, so a stage tensor dies at its
            # last use by a later stage instead of living until the end of the block.
            coefficient = self._coefficients(holder, builder, h, b, sorted(weighted))
            acc = [builder.y]

            def accumulate(i: int, k: fx.Node) -> None:
                if i in weighted:
                    acc[0] = builder.combine(acc[0], [(coefficient(i), k)], name="y_next")

            self._stages(builder, h, needed, accumulate)
            out = acc[0]
        else:
            stages = self._stages(builder, h, needed)
            terms = self._weights(holder, builder, h, b, stages, gate)
            out = builder.combine(builder.y, terms, name="y_next")
        self.program = builder.finish(out, class_name=class_name(method.name))

    @property
    def field(self) -> Field:
        module = self.program.get_submodule("field")
        assert isinstance(module, Field)
        return module

    def _step(self, holder: nn.Module, builder: ProgramBuilder, step: float | str) -> Coefficient:
        check_step_size(step)
        if step == "learned":
            holder.h = exact_parameter([1.0])
            return builder.item(builder.attribute("h", name="h_vector"), 0, name="h")
        return float(step)

    def _scaled(self, builder: ProgramBuilder, h: Coefficient, a: sympy.Expr) -> Coefficient:
        if isinstance(h, float):
            return h * float(a)
        return builder.graph.call_function(_times, (h, float(a)))

    def _stages(
        self,
        builder: ProgramBuilder,
        h: Coefficient,
        needed: set[int],
        on_stage: Callable[[int, fx.Node], None] | None = None,
    ) -> dict[int, fx.Node]:
        """Emit the stage nodes; `on_stage(i, Kᵢ)` runs once stage i of an explicit method is
        computed and its input consumed."""
        m = self.method
        s = m.stages
        K: dict[int, fx.Node] = {}

        def stage_input(i: int, values: dict[int, fx.Node], upto: int) -> fx.Node:
            terms = [
                (self._scaled(builder, h, m.A[i][j]), values[j])
                for j in range(upto)
                if not m.is_zero(i, j)
            ]
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
                            explicit,
                            [(self._scaled(builder, h, m.A[i][i]), K[i])],
                            name=f"y{i + 1}_{sweep + 1}",
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

    def _coefficients(
        self,
        holder: nn.Module,
        builder: ProgramBuilder,
        h: Coefficient,
        b: list[float],
        order: list[int],
    ) -> Callable[[int], Coefficient]:
        """h·bᵢ for the exact, unit and learned policies (emitted lazily, at first use)."""
        if self.policy == "exact":
            return lambda i: self._scaled(builder, h, sympy.Float(b[i]))
        if self.policy == "unit":
            return lambda i: self._scaled(builder, h, sympy.Integer(1))
        holder.weights = exact_parameter([b[i] for i in order])
        position = {i: n for n, i in enumerate(order)}

        def learned(i: int) -> Coefficient:
            weights = builder.attribute("weights", name="weights")
            return self._times_h(builder, h, builder.item(weights, position[i], name=f"b{i + 1}"))

        return learned

    def _weights(
        self,
        holder: nn.Module,
        builder: ProgramBuilder,
        h: Coefficient,
        b: list[float],
        K: dict[int, fx.Node],
        gate: StageGate | None,
    ) -> list[tuple[Coefficient, fx.Node]]:
        policy = self.policy
        order = sorted(K) if policy != "exact" else [i for i in sorted(K) if b[i] != 0.0]
        if policy in ("exact", "unit", "learned"):
            coefficient = self._coefficients(holder, builder, h, b, order)
            return [(coefficient(i), K[i]) for i in order]
        require(
            len(order) >= 2,
            f"'{policy}' coefficients need at least two stages",
            key="coefficients",
            value=policy,
            valid="'exact', 'unit' or 'learned'",
        )
        if gate is None:
            gate = StageGate(self.d_model, len(order), policy, init=tuple(b[i] for i in order))
        require(
            gate.stages == len(order) and gate.kind == policy,
            f"the shared gate is a {gate.kind} gate over {gate.stages} stages",
            key="gate",
            value=gate.stages,
            valid=f"a {policy} gate over {len(order)} stages",
        )
        holder.gate = gate
        gates = builder.call_module("gate", tuple(K[i] for i in order), name="gates")
        return [
            (self._times_h(builder, h, builder.item(gates, n, name=f"g{i + 1}")), K[i])
            for n, i in enumerate(order)
        ]

    def _times_h(self, builder: ProgramBuilder, h: Coefficient, weight: fx.Node) -> Coefficient:
        if isinstance(h, float) and h == 1.0:
            return weight
        return builder.graph.call_function(_times, (weight, h))


def _times(a: object, b: object) -> object:
    return a * b  # type: ignore[operator]
