"""Additive Runge-Kutta methods compiled into blocks: call i evaluates its own field,
Kᵢ = f_{Xᵢ}(y + h Σⱼ aᵢⱼKⱼ), y' = y + h Σᵢ bᵢKᵢ.

With fields {attn: "san", ff: "ffn"} and A = [[0, 0], [w, 0]], b = [1, 1] this is the pre-norm
layer whose feed-forward reads y + w·F_attn(y) while the residual adds all of F_attn: LIMe's
layer integration (x-transformers `integrate_layers`) at one token's weights.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, final

from torch import nn

from ..methods import AdditiveRungeKutta
from ..nn import Field, make_field
from .options import FieldSizes, FieldSpec, require_operator_fields
from .program import CompiledBlock, ProgramBuilder, check_step_size, class_name, field_width


@final
@dataclass(frozen=True)
class AdditiveOptions(FieldSizes):
    """The options of `bf.compile` for an `AdditiveRungeKutta` (and the field sizes).

    - `fields`: operator -> field name or `nn.Module` (`{"attn": "san", "ff": "ffn"}`).
    - `step_size`: h (a number; every coefficient is scaled by it).
    - `share`: one module per operator (default) instead of one per call.
    - `causal`: default: True when some field cross-attends (a decoder).
    """

    fields: Mapping[str, FieldSpec] | None = None
    step_size: float = 1.0
    share: bool = True
    causal: bool | None = None

    @classmethod
    def example(cls, method: Any, field: Any, layers: int) -> dict[str, Any]:
        """Attention for a field named like one (`attn`, `san`), a feed-forward otherwise."""
        if isinstance(field, Mapping):
            return {"fields": dict(field)}
        return {
            "fields": {
                X: "san" if any(word in X.lower() for word in ("att", "san")) else "ffn"
                for X in method.operators
            }
        }


@final
class AdditiveBlock(CompiledBlock):
    """An `AdditiveRungeKutta` compiled with a module per field. Build it with `bf.compile`.

    **Arguments:**

    - `method`: the method; explicit (`method.layer` says why an implicit one is not compiled).
    - `options`: `AdditiveOptions`; a module given as a field is deep-copied per call unless
      `share`.
    """

    def __init__(self, method: AdditiveRungeKutta, options: AdditiveOptions) -> None:
        super().__init__()
        check_step_size(options.step_size)
        fields = require_operator_fields("additive", method.name, method.operators, options.fields)
        method.layer.require(method)
        holder = nn.Module()
        targets: list[str] = []
        for i, X in enumerate(method.fields):
            target = X.replace(".", "_") if options.share else f"{X.replace('.', '_')}{i}"
            if not hasattr(holder, target):
                spec = fields[X]
                if isinstance(spec, nn.Module) and not options.share:
                    spec = copy.deepcopy(spec)
                holder.add_module(target, make_field(spec, **options.sizes))
            targets.append(target)
        modules = list(holder.children())
        self.method, self.policy = method, "exact"
        self.d_model = options.d_model or field_width(modules[0])
        needs_memory = any(isinstance(m, Field) and m.needs_memory for m in modules)
        self.causal = needs_memory if options.causal is None else options.causal
        self.program = self._program(holder, targets, float(options.step_size))

    def _program(self, holder: nn.Module, targets: list[str], h: float) -> Any:
        method = self.method
        builder = ProgramBuilder(holder)
        K: dict[int, Any] = {}
        for i, target in enumerate(targets):
            terms = [(h * float(method.A[i][j]), K[j]) for j in range(i) if method.A[i][j] != 0]
            value = builder.combine(builder.y, terms, name=f"y{i + 1}") if terms else builder.y
            K[i] = builder.call_field(target, value, name=f"k{i + 1}_{target}")
        out = [(h * float(method.b[i]), K[i]) for i in range(method.stages) if method.b[i] != 0]
        output = builder.combine(builder.y, out, name="y_next") if out else builder.y
        return builder.finish(output, class_name=class_name(method.name))


def compile_additive(method: AdditiveRungeKutta, options: AdditiveOptions) -> AdditiveBlock:
    """`bf.compile` for an additive Runge-Kutta method."""
    return AdditiveBlock(method, options)
