"""Splittings compiled into blocks: each step advances one operator's field by its sub-step.

Strang with Euler sub-steps and fields {A: "ffn", B: "san"} is exactly the Macaron layer
y ↦ y + ½F_A(y) ↦ … + F_B(…) ↦ … + ½F_A'(…): the two half-step FFNs have separate weights and
norms by default (`share=True` gives one module per operator).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, final

import torch
from torch import nn

from ..methods import Splitting
from ..nn import Field, make_field
from .options import FieldSizes, FieldSpec, require_operator_fields
from .program import (
    Coefficient,
    CompiledBlock,
    ProgramBuilder,
    check_step_size,
    class_name,
    exact_parameter,
    field_width,
    require,
    step_coefficient,
)

SPLITTING_POLICIES = ("exact", "learned")
DEFAULT_FIELDS = {"A": "ffn", "B": "san", "C": "ca"}  # what `show` and the gallery compile


@final
@dataclass(frozen=True)
class SplittingOptions(FieldSizes):
    """The options of `bf.compile` for a `Splitting` (and the field sizes).

    - `fields`: operator -> field name or `nn.Module` (`{"A": "ffn", "B": "san"}`).
    - `coefficients`: `"exact"` or `"learned"` (one scalar per step, initialised at its cₖ);
      gated policies are refused: a gate replacing the residual add would cancel cₖ.
    - `step_size`: h (every step advances cₖ·h), or `"learned"`.
    - `share`: one module per operator instead of one per step.
    - `post_norm`: a LayerNorm after every step; refused unless every cₖ and bᵢ is 1, since a
      norm after a scaled branch cancels the scale (and with `stage="layer"`, which it would
      turn into a halved branch).
    - `causal`: default: True when some field cross-attends (a decoder).
    """

    fields: Mapping[str, FieldSpec] | None = None
    coefficients: str = "exact"
    step_size: float | str = 1.0
    share: bool = False
    post_norm: bool = False
    causal: bool | None = None

    @classmethod
    def example(cls, method: Any, field: Any, layers: int) -> dict[str, Any]:
        """A = ffn, B = san, C = ca (others ffn), or the given mapping."""
        if isinstance(field, Mapping):
            return {"fields": dict(field)}
        return {"fields": {op: DEFAULT_FIELDS.get(op, "ffn") for op in method.operators}}


@final
class SplittingBlock(CompiledBlock):
    """A `Splitting` compiled with a field per operator. Build it with `bf.compile`.

    **Arguments:**

    - `method`: the splitting; its sub-step must be a Runge-Kutta method (not `"exact"`).
    - `options`: `SplittingOptions`; a module given as a field is deep-copied per step unless
      `share`.
    """

    def __init__(self, method: Splitting, options: SplittingOptions) -> None:
        super().__init__()
        fields, coefficients, step_size = options.fields, options.coefficients, options.step_size
        share, post_norm, sizes = options.share, options.post_norm, options.sizes
        check_step_size(step_size)
        fields = require_operator_fields("splitting", method.name, method.operators, fields)
        method.layer.require(method)
        require(
            coefficients in SPLITTING_POLICIES,
            f"coefficients='{coefficients}' cannot be used with a splitting: a gate or a "
            "unit weight would replace the step coefficients cₖ the splitting is built on",
            key="coefficients",
            value=coefficients,
            valid=f"one of {', '.join(SPLITTING_POLICIES)}",
        )
        sub = method.substep
        assert sub is not None
        if post_norm:
            scales = [float(c) for _, c in method.steps] + [float(x) for x in sub.b]
            require(
                all(x == 1.0 for x in scales) and coefficients == "exact",
                "post_norm after a scaled step would cancel its coefficient",
                key="post_norm",
                value=True,
                valid="post_norm=False, or a splitting whose coefficients are 1",
            )
            # LN(y + L(y)) = LN(2y + F(y)) = LN(y + ½F(y)): the norm turns the layer stage into
            # a halved branch, so the two options would cancel into a scale nobody declared.
            require(
                options.stage == "branch",
                "post_norm after a layer stage cancels it: LN(y + L(y)) = LN(y + F(y)/2)",
                key="stage",
                value=options.stage,
                valid="stage='branch' with post_norm, or post_norm=False",
            )
        holder = nn.Module()
        modules: dict[str, nn.Module] = {}
        targets: list[str] = []
        used: set[int] = set()  # ids of user modules already placed in a step
        for k, (op, _) in enumerate(method.steps):
            target = op if share else f"{op}{k}"
            if target not in modules:
                spec = fields[op]
                if isinstance(spec, nn.Module):
                    if id(spec) in used and not share:
                        spec = copy.deepcopy(spec)  # one module per step unless shared
                    used.add(id(spec))
                modules[target] = make_field(spec, **sizes)
                holder.add_module(target, modules[target])
            targets.append(target)
        self.method, self.policy = method, coefficients
        first = next(iter(modules.values()))
        why = "a norm after each sub-step is d_model wide" if post_norm else None
        self.d_model = sizes.get("d_model") or field_width(first, needed_for=why)
        needs_memory = any(isinstance(m, Field) and m.needs_memory for m in modules.values())
        self.causal = needs_memory if options.causal is None else options.causal
        builder = ProgramBuilder(holder)
        if coefficients == "learned":
            holder.step_weights = exact_parameter([float(c) for _, c in method.steps])
        h = step_coefficient(holder, builder, step_size)
        y = builder.y
        for k, ((op, c), target) in enumerate(zip(method.steps, targets, strict=True)):
            scale: Coefficient = float(c)
            if coefficients == "learned":
                weights = builder.attribute("step_weights", name="step_weights")
                scale = builder.item(weights, k, name=f"c{k + 1}")
            scale = _times(builder, scale, h)
            y = self._substep(builder, y, target, scale, f"{op.lower()}{k + 1}")
            if post_norm:
                norm = f"norm{k}"
                assert self.d_model is not None  # field_width asked for it
                holder.add_module(norm, nn.LayerNorm(self.d_model))
                y = builder.call_module(norm, (y,), name=f"y{k + 1}_normed")
        self.program = builder.finish(y, class_name=class_name(method.name))

    def _substep(
        self, builder: ProgramBuilder, y: Any, target: str, scale: Coefficient, label: str
    ) -> Any:
        sub = self.method.substep
        assert sub is not None
        K: dict[int, Any] = {}
        for i in range(sub.stages):
            terms = [
                (_mul(builder, scale, float(sub.A[i][j])), K[j])
                for j in range(i)
                if not sub.is_zero(i, j)
            ]
            value = builder.combine(y, terms, name=f"{label}_in{i + 1}") if terms else y
            K[i] = builder.call_field(
                target, value, name=f"{label}_k{i + 1}" if sub.stages > 1 else f"k_{label}"
            )
        terms = [
            (_mul(builder, scale, float(sub.b[i])), K[i])
            for i in range(sub.stages)
            if float(sub.b[i]) != 0.0
        ]
        return builder.combine(y, terms, name=f"y_{label}")


def _times(builder: ProgramBuilder, scale: Coefficient, h: Coefficient) -> Coefficient:
    """c_k·h, folded when both are constants."""
    if isinstance(h, float) and h == 1.0:
        return scale
    if isinstance(scale, float) and isinstance(h, float):
        return scale * h
    return builder.graph.call_function(torch.mul, (scale, h))


def _mul(builder: ProgramBuilder, scale: Coefficient, value: float) -> Coefficient:
    if isinstance(scale, float):
        return scale * value
    if value == 1.0:
        return scale
    return builder.graph.call_function(torch.mul, (scale, value))


def compile_splitting(method: Splitting, options: SplittingOptions) -> SplittingBlock:
    """`bf.compile` for a splitting."""
    return SplittingBlock(method, options)
