"""`bf.compile` and `bf.compile_stack`: any declaration -> an `nn.Module` a Transformer can stack.

Each family has one small compiler and one option class (a frozen dataclass of the options it
takes, after the field sizes every family shares), listed in `COMPILERS`: a new family adds its
line there. The keyword arguments of a call are validated against the family's option class.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from ..errors import DeclarationError
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
from .additive import AdditiveOptions, compile_additive
from .continuous import ContinuousOptions, compile_continuous
from .dlcl import LayerCombination, compile_dlcl, stack_construct
from .general_linear import GeneralLinearOptions, compile_general_linear
from .multistep import MultistepOptions, compile_multistep
from .options import FieldSizes, FieldSpec, require_fields_list
from .program import CompiledBlock
from .runge_kutta import RungeKuttaOptions, compile_runge_kutta
from .splitting import SplittingOptions, compile_splitting


@final
@dataclass(frozen=True)
class FamilyCompiler:
    """A family's compiler: its option class and the function that builds its block (or, for a
    family whose options `spans_layers`, its stack) from a declaration and those options."""

    options: type[FieldSizes]
    build: Callable[[Any, Any], CompiledBlock]


Declaration = Method | LayerCombination
"""What compiles: a catalog family's declaration, or a stack construct (`compiler/dlcl.py`)."""

COMPILERS: dict[type[Declaration], FamilyCompiler] = {
    ButcherTableau: FamilyCompiler(RungeKuttaOptions, compile_runge_kutta),
    Splitting: FamilyCompiler(SplittingOptions, compile_splitting),
    LinearMultistep: FamilyCompiler(MultistepOptions, compile_multistep),
    ContinuousDynamics: FamilyCompiler(ContinuousOptions, compile_continuous),
    GeneralLinear: FamilyCompiler(GeneralLinearOptions, compile_general_linear),
    LayerCombination: FamilyCompiler(MultistepOptions, compile_dlcl),
    AdditiveRungeKutta: FamilyCompiler(AdditiveOptions, compile_additive),
}


def compiler_of(method: Declaration) -> FamilyCompiler:
    """The compiler of a declaration's family."""
    return COMPILERS[type(method)]


def resolve(method: Declaration | str | Path) -> Declaration:
    """The declaration `method` means: itself, a stack construct's (`CONSTRUCTS`) or the catalog's
    (a name or a declaration file)."""
    if isinstance(method, LayerCombination):
        return method
    return stack_construct(method) or catalog.resolve(method)


def spans_layers(method: Declaration) -> bool:
    """The declaration compiles to a whole stack (`bf.compile_stack`), not one block."""
    return compiler_of(method).options.spans_layers


def compile(
    method: Declaration | str | Path, field: FieldSpec | None = None, **options: Any
) -> CompiledBlock:
    """Compile an integrator into a block.

    **Arguments:**

    - `method`: a declaration, a catalog name or a declaration file.
    - `field`: for Runge-Kutta methods and continuous dynamics, the field every stage
      evaluates: `"san"`, `"ffn"`, `"san+ffn"`, `"ca"`, `"san+ca"`, `"san+ca+ffn"` or any
      `nn.Module` mapping y to dy.
    - `options`: the field sizes `d_model`, `n_heads`, `d_ffn`, `dropout`, `activation`, and the
      options of the method's family, validated against its option class:
      `RungeKuttaOptions` (`coefficients`, `step_size`, `iterations`, `gate`, `causal`),
      `SplittingOptions` (`fields`, a field per operator, `coefficients`, `step_size`, `share`,
      `post_norm`, `causal`), `ContinuousOptions` (`causal`), `MultistepOptions` (a multistep
      method spans layers: `fields=[...]` builds its stack, as `bf.compile_stack`).

    **Returns:** a `CompiledBlock`: `block(x, key_padding_mask=..., memory=..., cache=...)`,
    with `block.code`, `block.num_parameters`, `block.flops_per_token()`.
    """
    resolved = resolve(method)
    family = compiler_of(resolved)
    given = options if field is None else {"field": field, **options}
    if family.options.spans_layers and not _field_list(given.get("fields")):
        raise DeclarationError(
            f"'{resolved.name}' is a {resolved.family} method: it spans layers, not one block",
            key="method",
            value=resolved.name,
            valid="use bf.compile_stack(method, fields=[F_1, ..., F_L])",
        )
    resolved.layer.require(resolved)
    return family.build(resolved, family.options.parse(resolved, given))


def compile_stack(
    method: Declaration | str | Path, fields: Sequence[FieldSpec], **options: Any
) -> CompiledBlock:
    """Compile a declaration that spans layers (a multistep method, a general linear method, or
    DLCL) into a whole stack of `len(fields)` layers.

    **Arguments:**

    - `method`: an explicit `LinearMultistep` or `GeneralLinear` (a declaration, catalog name
      or file), or DLCL (`"dlcl"`: learned weights over all earlier layers' fields).
    - `fields`: one field spec per layer (names such as `"san+ffn"`, or modules).
    - `options`: the field sizes and `MultistepOptions`: `coefficients` (`"exact"`, the default
      for multistep methods, whose declared parameters are learned per layer; or `"learned"`,
      the default and only choice for DLCL), `starter` (the Runge-Kutta method of the first
      k − 1 layers; default Euler), `init` (initial values of a family's symbols, `{"k": 1}`,
      overriding the declared ones), `causal`; for a general linear method,
      `GeneralLinearOptions`: `coefficients` (`"exact"`, `"learned"`, `"dynamic"`,
      `"sinkhorn"`), `iterations` (Sinkhorn), `causal`.

    **Returns:** a `MultistepStack` or `GeneralLinearStack` (a `CompiledBlock` whose forward
    runs all layers).
    """
    given = {"fields": require_fields_list(fields), **options}
    resolved = resolve(method)
    if not spans_layers(resolved):
        raise DeclarationError(
            f"'{resolved.name}' is a {resolved.family} method, not a method that spans layers",
            key="method",
            value=resolved.name,
            valid="a linear multistep method, a general linear method or 'dlcl'; other methods "
            "compile per block with bf.compile",
        )
    return compile(resolved, **given)


def example_fields(method: Declaration, field: Any = None, layers: int = 6) -> dict[str, Any]:
    """The field arguments `butcherflow show` and the gallery compile a declaration with: the
    given `field` (a name; a mapping for a splitting) or the family's default, and `layers`
    layers for a stack."""
    return compiler_of(method).options.example(method, field, layers)


def _field_list(fields: Any) -> bool:
    return isinstance(fields, Sequence) and not isinstance(fields, (str, bytes))
