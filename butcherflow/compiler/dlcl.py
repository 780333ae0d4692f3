"""DLCL (Wang et al. 2019, ODE Transformer Table 7): a stack construct declared once, here.

DLCL has a growing history rather than a fixed tableau: y_{m+1} = y₀ + Σ_{l≤m} W_{m,l} F_l(y_l),
the weights learned and initialised at 1 (which is the residual stack); each F_l is a pre-norm
field, so every term is computed from a layer-normalised input. A fixed r cannot hold a history
that grows with depth, so it is no `GeneralLinear` (`solvers/dlcl-4.toml` is the fixed-window
variant): `LayerCombination` declares it, with a name, a title and a layer, and `COMPILERS` maps
its type to its compiler as it maps every family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, final

import torch.fx as fx
from torch import nn

from ..methods import Layer
from .multistep import LayerStack, MultistepOptions
from .program import (
    Coefficient,
    ProgramBuilder,
    exact_parameter,
    require,
)


@final
@dataclass(frozen=True)
class LayerCombination:
    """A stack construct whose layer m combines every earlier layer's field with learned weights.

    **Arguments:**

    - `name`: the name recipes and `bf.compile_stack` give it.
    - `title`: what it is, for a page or an error.
    - `trained_order`: the order its stack proves as it trains (a sentence: none).
    """

    name: str
    title: str
    trained_order: str
    family: ClassVar[str] = "stack"
    source: ClassVar[str | None] = None

    @property
    def layer(self) -> Layer:
        """It compiles to a whole stack."""
        return Layer(True, "a stack of learned combinations of every earlier layer")


DLCL = LayerCombination(
    name="dlcl",
    title="Dynamic linear combination of layers (Wang et al. 2019)",
    trained_order="none: DLCL learns its weights over every earlier layer",
)
CONSTRUCTS: dict[str, LayerCombination] = {DLCL.name: DLCL}
"""The stack constructs by name: the names `bf.compile_stack` and recipes accept beside the
catalog's."""


def stack_construct(reference: object) -> LayerCombination | None:
    """The stack construct a recipe's or a call's `method` names, or None (a catalog name, a file
    or a declaration, which the catalog resolves)."""
    return CONSTRUCTS.get(reference) if isinstance(reference, str) else None


@final
class DLCLStack(LayerStack):
    """A whole stack of L layers, layer m computing y_{m+1} = y₀ + Σ_{l≤m} W_{m,l} F_l(y_l).

    **Arguments:**

    - `method`: the `LayerCombination` it compiles.
    - `options`: `MultistepOptions`: `fields` (L field specs), `coefficients` (`"learned"`, the
      default and only choice), `causal`; `starter` and `init` do not apply.
    """

    def __init__(self, method: LayerCombination, options: MultistepOptions) -> None:
        super().__init__()
        holder = self._make_fields(options, default_policy="learned")
        for option in ("starter", "init"):
            require(
                getattr(options, option) is None,
                f"{option} does not apply to DLCL (learned weights over every earlier layer)",
                key=option,
                value=getattr(options, option),
                valid=f"leave {option} unset",
            )
        require(
            self.policy == "learned",
            "DLCL's layer weights are learned by definition",
            key="coefficients",
            value=self.policy,
            valid="coefficients='learned' (the default)",
        )
        self.method = method
        builder = ProgramBuilder(holder)
        out = self._combine(holder, builder)
        self.program = builder.finish(out, class_name="MultistepStack")

    def _combine(self, holder: nn.Module, builder: ProgramBuilder) -> fx.Node:
        y0 = builder.y
        state = y0
        f: list[fx.Node] = []
        for m in range(self.layers):
            f.append(builder.call_field(f"layer{m}", state, name=f"f{m}"))
            name = f"weights{m}"
            holder.register_parameter(name, exact_parameter([1.0] * (m + 1)))
            weights = builder.attribute(name, name=name)
            terms: list[tuple[Coefficient, fx.Node]] = [
                (builder.item(weights, i, name=f"w{m}_{i}"), f[i]) for i in range(m + 1)
            ]
            state = builder.combine(y0, terms, name=f"y{m + 1}")
        return state


def compile_dlcl(method: LayerCombination, options: MultistepOptions) -> DLCLStack:
    """`bf.compile_stack` (and `bf.compile` with a list of fields) for DLCL."""
    return DLCLStack(method, options)
