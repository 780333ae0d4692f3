"""Multistep methods compiled into whole stacks: layer n combines earlier states and fields.

With h = 1 and fₘ = Fₘ(yₘ) (layer m's own field, each computed once and reused), a k-step method
Σⱼ αⱼ y_{n+j} = Σⱼ βⱼ f_{n+j} gives layer m = n + k − 1 the update
y_{m+1} = (Σ_{j<k} −αⱼ y_{n+j} + βⱼ f_{n+j}) / α_k. The first k − 1 layers have no history yet and
are started by forward Euler (y_{m+1} = yₘ + fₘ) or by a `starter` Runge-Kutta method around the
same layer's field. Implicit methods (β_k ≠ 0) need f at the new state, which belongs to the
next layer's field, so they are refused.

DLCL, whose history grows with depth, has its own stack in `compiler/dlcl.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import final

import sympy
import torch.fx as fx
from torch import nn

from ..methods import ButcherTableau, LinearMultistep, Method, catalog
from ..nn import Field, make_field
from .options import FieldSizes, FieldSpec, require_fields_list
from .program import (
    Coefficient,
    CompiledBlock,
    ProgramBuilder,
    exact_parameter,
    field_width,
    require,
)

STACK_POLICIES = ("exact", "learned")


@final
@dataclass(frozen=True)
class MultistepOptions(FieldSizes):
    """The options of `bf.compile_stack` for a `LinearMultistep` or DLCL (and the sizes).

    - `fields`: one field spec per layer (names such as `"san+ffn"`, or modules).
    - `coefficients`: `"exact"` (default for multistep methods: a family's declared parameters
      are learned per layer) or `"learned"` (every α, β per layer; the default and only choice
      for DLCL).
    - `starter`: Runge-Kutta method (name or tableau) for the first k − 1 layers; default Euler.
    - `init`: initial values of a family's symbols (`{"k": 1}`), overriding the declared ones.
    - `causal`: default: True when a field cross-attends.
    """

    fields: Sequence[FieldSpec] | None = None
    coefficients: str | None = None
    starter: Method | str | Path | None = None
    init: Mapping[str, float] | None = None
    causal: bool | None = None

    spans_layers = True


class LayerStack(CompiledBlock):
    """A block that is a whole stack of `layers` layers, field n held as `program.layer{n}` (the
    names a checkpoint's parameters carry): a multistep stack or DLCL."""

    layers: int
    d_model: int | None
    causal: bool
    policy: str

    def _make_fields(self, options: MultistepOptions, default_policy: str) -> nn.Module:
        """The module holding one field per layer; sets `layers`, `d_model`, `causal` (default:
        True when a field cross-attends) and `policy` (`coefficients`, else `default_policy`)."""
        fields = require_fields_list(options.fields)
        self.policy = options.coefficients or default_policy
        require(
            self.policy in STACK_POLICIES,
            "unknown coefficient policy for a stack",
            key="coefficients",
            value=self.policy,
            valid=f"one of {STACK_POLICIES}",
        )
        holder = nn.Module()
        modules: list[Field] = []
        for n, spec in enumerate(fields):
            module = make_field(spec, **options.sizes)
            holder.add_module(f"layer{n}", module)
            modules.append(module)
        self.layers = len(modules)
        self.d_model = field_width(modules[0], options.d_model)
        causal = options.causal
        self.causal = any(m.needs_memory for m in modules) if causal is None else causal
        return holder


@final
class MultistepStack(LayerStack):
    """A whole stack of L layers driven by a linear multistep method.

    **Arguments:**

    - `method`: a `LinearMultistep` (explicit).
    - `fields`: L field specs (names or modules), one per layer.
    - `sizes`: `d_model`, `n_heads`, `d_ffn`, `dropout`, `activation` for named fields.
    - `coefficients`: `"exact"`, or `"learned"`: per-layer α, β initialised from the method;
      a family's symbols (the ODE Transformer's learnable-k "Multistep") become per-layer
      parameters initialised from `init`.
    - `starter`: the Runge-Kutta method for the first k − 1 layers (default: forward Euler).
    - `init`: initial values of a family's symbols (e.g. `{"k": 1}`).
    - `causal`: causal self-attention (default: True when a field cross-attends).
    """

    def __init__(self, method: LinearMultistep, options: MultistepOptions) -> None:
        super().__init__()
        holder = self._make_fields(options, default_policy="exact")
        builder = ProgramBuilder(holder)
        self.method = method
        starter = _starter(options.starter)
        out = self._multistep(holder, builder, method, starter, _init(method, options.init))
        self.program = builder.finish(out, class_name="MultistepStack")

    def _multistep(
        self,
        holder: nn.Module,
        builder: ProgramBuilder,
        method: LinearMultistep,
        starter: ButcherTableau | None,
        init: Mapping[str, float],
    ) -> fx.Node:
        method.layer.require(method)
        symbols = sorted(method.symbols, key=str)
        require(
            starter is None or starter.is_explicit,
            "the starter must be explicit",
            key="starter",
            value=getattr(starter, "name", starter),
            valid="e.g. 'heun'",
        )
        k = method.steps
        states: list[fx.Node] = [builder.y]
        f: list[fx.Node] = []
        for m in range(self.layers):
            f.append(builder.call_field(f"layer{m}", states[m], name=f"f{m}"))
            if m + 1 < k:
                states.append(self._start(builder, m, states[m], f[m], starter))
                continue
            n = m + 1 - k
            coeff = self._layer_coefficients(holder, builder, method, m, symbols, init)
            terms: list[tuple[Coefficient, fx.Node]] = []
            for j in range(k):
                terms.append((coeff["alpha"][j], states[n + j]))
                terms.append((coeff["beta"][j], f[n + j]))
            states.append(builder.combine(None, terms, name=f"y{m + 1}"))
        return states[-1]

    def _layer_coefficients(
        self,
        holder: nn.Module,
        builder: ProgramBuilder,
        method: LinearMultistep,
        m: int,
        symbols: list[sympy.Symbol],
        init: Mapping[str, float],
    ) -> dict[str, list[Coefficient]]:
        """−αⱼ/α_k and βⱼ/α_k for j < k: constants, or nodes of per-layer parameters."""
        k = method.steps
        alpha_k = method.alpha[k]
        exprs = {
            "alpha": [-method.alpha[j] / alpha_k for j in range(k)],
            "beta": [method.beta[j] / alpha_k for j in range(k)],
        }
        if self.policy == "exact" and not symbols:
            return {key: [float(e) for e in v] for key, v in exprs.items()}
        if symbols:
            # the family's parameters, per layer; the coefficients are expressions in them
            name = f"theta{m}"
            holder.register_parameter(name, exact_parameter([float(init[str(s)]) for s in symbols]))
            theta = builder.attribute(name, name=name)
            values = [builder.item(theta, i, name=f"{s}{m}") for i, s in enumerate(symbols)]
            env = dict(zip(symbols, values, strict=True))
            return {
                key: [builder.expression(expr, env.__getitem__) for expr in vector]
                for key, vector in exprs.items()
            }
        name = f"coefficients{m}"
        initial = [float(e) for e in exprs["alpha"] + exprs["beta"]]
        holder.register_parameter(name, exact_parameter(initial))
        packed = builder.attribute(name, name=name)
        nodes = [builder.item(packed, i, name=f"c{m}_{i}") for i in range(2 * k)]
        return {"alpha": list(nodes[:k]), "beta": list(nodes[k:])}

    def _start(
        self,
        builder: ProgramBuilder,
        m: int,
        y: fx.Node,
        f_m: fx.Node,
        starter: ButcherTableau | None,
    ) -> fx.Node:
        if starter is None:
            return builder.combine(y, [(1.0, f_m)], name=f"y{m + 1}")
        K: dict[int, fx.Node] = {}
        for i in range(starter.stages):
            terms = [(float(starter.A[i][j]), K[j]) for j in range(i) if not starter.is_zero(i, j)]
            if not terms and float(starter.c[i]) == 0.0:
                K[i] = f_m  # the first stage is F_m(y_m): already computed, reused
                continue
            value = builder.combine(y, terms, name=f"start{m}_{i + 1}") if terms else y
            K[i] = builder.call_field(f"layer{m}", value, name=f"start{m}_k{i + 1}")
        terms = [
            (float(starter.b[i]), K[i]) for i in range(starter.stages) if float(starter.b[i]) != 0.0
        ]
        return builder.combine(y, terms, name=f"y{m + 1}")


def _starter(starter: Method | str | Path | None) -> ButcherTableau | None:
    """The Runge-Kutta method of the first k − 1 layers (None: forward Euler)."""
    if starter is None:
        return None
    found = catalog.resolve(starter)
    tableau = found.as_tableau
    require(
        tableau is not None,
        "the starter must be a Runge-Kutta method",
        key="starter",
        value=found.name,
        valid="e.g. starter='heun'",
    )
    return tableau


def _init(method: LinearMultistep, given: Mapping[str, float] | None) -> dict[str, float]:
    """The initial value of every symbol: `init=` over the declared parameters."""
    symbols = sorted(map(str, method.symbols))
    unknown = set(given or {}) - set(symbols)
    require(
        not unknown,
        "init names symbols the method does not have",
        key="init",
        value=sorted(unknown),
        valid=f"symbols: {symbols}",
    )
    declared = {str(s): p.init.value for s, p in method.parameters.items() if p.init is not None}
    values = {**declared, **(given or {})}
    for s in symbols:
        require(
            s in values,
            f"no initial value for the free symbol '{s}' of '{method.name}'",
            key=f"init.{s}",
            value=None,
            valid=f"init={{'{s}': value}}, or declare [parameters] {s} = {{ kind = 'learned', "
            "init = ... }",
        )
    return {s: float(v) for s, v in values.items()}


def compile_multistep(method: LinearMultistep, options: MultistepOptions) -> MultistepStack:
    """`bf.compile_stack` (and `bf.compile` with a list of fields) for a multistep method."""
    return MultistepStack(method, options)
