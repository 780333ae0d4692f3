"""`bf.compile`: any declaration -> an `nn.Module` a Transformer can stack."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from torch import nn

from ..errors import DeclarationError
from ..methods import (
    ButcherTableau,
    ContinuousDynamics,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
)
from ..nn import ModuleField, MultiheadAttention, make_field
from .coefficients import StageGate
from .program import CompiledBlock, field_width
from .runge_kutta import RungeKuttaBlock

FieldSpec = str | nn.Module


def field_sizes(
    d_model: int | None, n_heads: int | None, d_ffn: int | None, dropout: float, activation: str
) -> dict[str, Any]:
    """The keyword arguments every named field is built with."""
    return {
        "d_model": d_model,
        "n_heads": n_heads,
        "d_ffn": d_ffn,
        "dropout": dropout,
        "activation": activation,
    }


def compile(
    method: Method | str | Path,
    field: FieldSpec | None = None,
    *,
    fields: Mapping[str, FieldSpec] | None = None,
    d_model: int | None = None,
    n_heads: int | None = None,
    d_ffn: int | None = None,
    dropout: float = 0.0,
    activation: str = "relu",
    coefficients: str = "exact",
    step_size: float | str = 1.0,
    iterations: int | None = None,
    gate: StageGate | None = None,
    share: bool = False,
    post_norm: bool = False,
    causal: bool | None = None,
) -> CompiledBlock:
    """Compile an integrator into a block.

    **Arguments:**

    - `method`: a declaration, a catalog name or a declaration file.
    - `field`: for Runge-Kutta methods and continuous dynamics (`grid = "interval"`: a
      continuous-depth block, see `butcherflow.compiler.continuous`), the field every stage
      evaluates: `"san"`, `"ffn"`, `"san+ffn"`, `"ca"`, `"san+ca"`, `"san+ca+ffn"` or any
      `nn.Module` mapping y to dy.
    - `fields`: for splittings, a field per operator (`{"A": "ffn", "B": "san"}`).
    - `d_model`, `n_heads`, `d_ffn`, `dropout`, `activation`: sizes of named fields.
    - `coefficients`: `"exact"`, `"unit"`, `"learned"`, `"gated"` or `"tanh"` (see
      `butcherflow.compiler.coefficients`); splittings take `"exact"` or `"learned"`.
    - `step_size`: h, or `"learned"`.
    - `iterations`: fixed-point sweeps for implicit tableaux.
    - `gate`: a `StageGate` shared with other blocks.
    - `share`: splittings only: one module per operator instead of one per step.
    - `post_norm`: splittings only: a LayerNorm after every step (only where every coefficient
      is 1, since a norm after a scaled branch cancels the scale).
    - `causal`: causal self-attention; by default, whenever the field cross-attends (decoders).

    **Returns:** a `CompiledBlock`: `block(x, key_padding_mask=..., memory=..., cache=...)`,
    with `block.code`, `block.num_parameters`, `block.flops_per_token()`.
    """
    resolved = catalog.resolve(method)
    sizes = field_sizes(d_model, n_heads, d_ffn, dropout, activation)
    if isinstance(resolved, ButcherTableau):
        if field is None or fields is not None:
            raise DeclarationError(
                "a Runge-Kutta method evaluates one field: pass field=, not fields=",
                key="field",
                value=fields,
                valid="e.g. field='san+ffn' or field=my_module",
            )
        for option, value, default in (("share", share, False), ("post_norm", post_norm, False)):
            if value != default:
                raise DeclarationError(
                    f"{option} applies to splittings only",
                    key=option,
                    value=value,
                    valid=f"{option}={default!r}",
                )
        built = make_field(field, **sizes)
        return RungeKuttaBlock(
            resolved,
            built,
            d_model=field_width(built, d_model),
            coefficients=coefficients,
            step_size=step_size,
            iterations=iterations,
            gate=gate,
            causal=built.needs_memory if causal is None else causal,
        )
    if isinstance(resolved, Splitting):
        from .splitting import SplittingBlock

        if fields is None or field is not None:
            raise DeclarationError(
                "a splitting needs a field per operator: pass fields={...}",
                key="fields",
                value=field,
                valid=f"fields for {list(resolved.operators)}",
            )
        for option, given in (("iterations", iterations), ("gate", gate)):
            if given is not None:
                raise DeclarationError(
                    f"{option} does not apply to a splitting (explicit sub-steps, no gates)",
                    key=option,
                    value=given,
                    valid=f"leave {option} unset",
                )
        return SplittingBlock(
            resolved,
            fields,
            sizes,
            coefficients=coefficients,
            step_size=step_size,
            share=share,
            post_norm=post_norm,
            causal=causal,
        )
    if isinstance(resolved, LinearMultistep):
        if isinstance(fields, Sequence) and not isinstance(fields, str):
            return compile_stack(
                resolved,
                fields,
                d_model=d_model,
                n_heads=n_heads,
                d_ffn=d_ffn,
                dropout=dropout,
                activation=activation,
                coefficients=coefficients,
                causal=causal,
            )
        raise DeclarationError(
            f"'{resolved.name}' is a multistep method: it spans layers, not one block",
            key="method",
            value=resolved.name,
            valid="use bf.compile_stack(method, fields=[F_1, ..., F_L])",
        )
    if isinstance(resolved, ContinuousDynamics):
        from .continuous import ContinuousBlock

        if resolved.grid == "positions":
            raise DeclarationError(
                f"'{resolved.name}' declares position dynamics (grid = 'positions'): a position "
                "encoder, not a block",
                key="grid",
                value=resolved.grid,
                valid="use it as position = 'floater' in a recipe's [embedding], or declare "
                "grid = 'interval' for a continuous-depth block",
                source=resolved.source,
            )
        if field is None or fields is not None:
            raise DeclarationError(
                "a continuous-depth block evaluates one field: pass field=, not fields=",
                key="field",
                value=fields,
                valid="e.g. field='san+ffn' or field=my_module",
            )
        solver = "its steps or tolerances" if not resolved.adaptive else "its tolerances"
        refused: tuple[tuple[str, Any, Any], ...] = (
            ("coefficients", coefficients, "exact"),
            ("step_size", step_size, 1.0),
            ("iterations", iterations, None),
            ("gate", gate, None),
            ("share", share, False),
            ("post_norm", post_norm, False),
        )
        for option, value, default in refused:
            if value != default:
                raise DeclarationError(
                    f"{option} does not apply to continuous dynamics: the declaration fixes the "
                    f"solver, {solver} and the interval",
                    key=option,
                    value=value if option != "gate" else type(value).__name__,
                    valid=f"leave {option} unset; change steps/step_size/rtol/atol in the "
                    "ContinuousDynamics declaration",
                )
        built = make_field(field, **sizes)
        rates = [
            float(m.p if isinstance(m, nn.Dropout) else m.dropout)
            for m in built.modules()
            if isinstance(m, (nn.Dropout, MultiheadAttention))
        ]
        rates = [rate for rate in rates if rate > 0]
        if resolved.adjoint and rates:
            raise DeclarationError(
                "the adjoint re-evaluates the field backwards in time, with fresh dropout masks: "
                "its gradient would not be the forward's",
                key="dropout",
                value=max(rates),
                valid="dropout=0 with adjoint = true, or adjoint = false",
            )
        if resolved.time == "concat" and isinstance(built, ModuleField) and d_model is None:
            raise DeclarationError(
                "with time = 'concat' a module field takes d_model + 1 input features, so its "
                "width cannot be read from its parameters",
                key="d_model",
                value=None,
                valid="pass d_model=...",
            )
        return ContinuousBlock(
            resolved,
            built,
            d_model=field_width(built, d_model),
            causal=built.needs_memory if causal is None else causal,
        )
    raise TypeError(f"cannot compile {type(resolved).__name__}")  # pragma: no cover


def compile_stack(
    method: Method | str | Path,
    fields: Sequence[FieldSpec],
    *,
    d_model: int | None = None,
    n_heads: int | None = None,
    d_ffn: int | None = None,
    dropout: float = 0.0,
    activation: str = "relu",
    coefficients: str | None = None,
    starter: Method | str | None = None,
    init: Mapping[str, float] | None = None,
    causal: bool | None = None,
) -> CompiledBlock:
    """Compile a multistep method (or `"dlcl"`) into a whole stack of `len(fields)` layers.

    **Arguments:**

    - `method`: an explicit `LinearMultistep` (a declaration, catalog name or file), or
      `"dlcl"` (learned weights over all earlier layers' fields).
    - `fields`: one field spec per layer (names such as `"san+ffn"`, or modules).
    - `coefficients`: `"exact"` (default for multistep methods) or `"learned"` (default and
      only choice for DLCL).
    - `starter`: Runge-Kutta method (name or tableau) for the first k − 1 layers; default Euler.
    - `init`: initial values of a family's symbols (`{"k": 1}` for `lm-resnet`).
    - the sizes and `causal` as in `bf.compile`.

    **Returns:** a `MultistepStack` (a `CompiledBlock` whose forward runs all layers).
    """
    from .multistep import MultistepStack

    sizes = field_sizes(d_model, n_heads, d_ffn, dropout, activation)
    if isinstance(fields, (str, bytes)) or not isinstance(fields, Sequence):
        raise DeclarationError(
            "fields must be a list with one field per layer",
            key="fields",
            value=fields,
            valid="e.g. fields=['san+ffn'] * 6",
        )
    if method == "dlcl":
        return MultistepStack(
            "dlcl", fields, sizes, coefficients=coefficients or "learned", causal=causal
        )
    resolved = catalog.resolve(method)
    if not isinstance(resolved, LinearMultistep):
        raise DeclarationError(
            f"'{resolved.name}' is a {resolved.family} method, not a multistep method",
            key="method",
            value=resolved.name,
            valid="a linear multistep method or 'dlcl'; other methods compile per block with "
            "bf.compile",
        )
    start = None if starter is None else catalog.resolve(starter)
    if start is not None and not isinstance(start, ButcherTableau):
        raise DeclarationError(
            "the starter must be a Runge-Kutta method",
            key="starter",
            value=start.name,
            valid="e.g. starter='heun'",
        )
    return MultistepStack(
        resolved,
        fields,
        sizes,
        coefficients=coefficients or "exact",
        starter=start,
        init=init,
        causal=causal,
    )
