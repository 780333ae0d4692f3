"""Continuous-depth blocks: y(t1) = y(t0) + ∫ F(t, y(t)) dt, solved inside the forward.

The block is the continuous limit of a Runge-Kutta block (the ODE Transformer's discussion): one
field F, evaluated wherever the declared solver asks, by `butcherflow.nn.ode.solve` (fixed-step
catalog tableaux run butcherflow's own step, adaptive methods torchdiffeq's `odeint`; the adjoint
is `butcherflow.nn.adjoint`). The field may depend on t (`time = "concat"` or `"embedding"`), so
each depth has its own effective weights.

Fixed steps give every (step, stage) field call its own decoding-cache slot, so incremental
decoding equals the full causal forward. An adaptive solver chooses its steps from the error of
the whole batch, so it cannot decode token by token (`incremental = False`); its outputs also
depend, within the tolerance, on the other rows of the batch and on later tokens.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import final

import sympy
import torch
from torch import Tensor, nn

from ..errors import ButcherflowError, DeclarationError
from ..methods import ContinuousDynamics
from ..nn import Context, Field, ModuleField, MultiheadAttention, SinusoidalPositions, make_field
from ..nn.ode import coefficients, prepare, solve
from .options import FieldSizes, FieldSpec
from .program import (
    CompiledBlock,
    ProgramBuilder,
    call_flops,
    class_name,
    field_width,
    require,
)

# The embedding maps [t0, t1] onto the first 1000 positions of the Transformer's sinusoid (the
# diffusion models' 1000 time steps): the fastest channel turns 1000 rad over the interval, the
# slowest 0.1 rad, so every depth gets a distinct code however many steps the solver takes.
EMBEDDING_SPAN = 1000.0


@final
class NeuralODE(nn.Module):
    """The dynamics of a continuous-depth block: F(t, y) and the solve over [t0, t1].

    How F sees t (`method.time`):

    - `"none"`: F(t, y) = field(y).
    - `"concat"`: t is appended to the field's input. For a named field (or any `Field`), the
      extra channel goes through a learned projection w (d_model wide) added to y:
      F(t, y) = field(y + t·w), i.e. the concatenation [y, t] followed by the linear map
      [I | w]; for a field whose first operation is a linear map W, that is exactly
      concatenating t and giving W one more input column (W·w). w starts like that column
      would, uniform in ±1/√(d_model + 1). A plain `nn.Module` field gets
      `torch.cat([y, t], -1)` itself: it must accept d_model + 1 input features and return
      d_model.
    - `"embedding"`: F(t, y) = field(y + s ⊙ PE(t)), PE the sinusoidal code of t (d_model wide,
      [t0, t1] mapped to the positions 0..1000) and s a learned per-channel scale starting at 1.

    **Arguments:**

    - `method`: a `ContinuousDynamics` with `grid = "interval"`.
    - `field`: the `Field` (named fields, or a user module wrapped by `make_field`).
    - `d_model`: the state width.
    """

    time_weight: nn.Parameter  # time = "concat", named fields
    time_scale: nn.Parameter  # time = "embedding"
    embedding: SinusoidalPositions

    def __init__(self, method: ContinuousDynamics, field: Field, d_model: int | None) -> None:
        super().__init__()
        self.method, self.d_model = method, d_model
        prepare(method)
        self.field = field
        self.raw_module = isinstance(field, ModuleField)
        self.start, self.end = float(method.t0), float(method.t1)
        if method.time != "none":
            assert d_model is not None  # `field_width` asked for it
        if method.time == "concat" and not self.raw_module:
            assert d_model is not None
            bound = 1.0 / math.sqrt(d_model + 1)
            self.time_weight = nn.Parameter(torch.empty(d_model).uniform_(-bound, bound))
        if method.time == "embedding":
            assert d_model is not None
            self.time_scale = nn.Parameter(torch.ones(d_model))
            self.embedding = SinusoidalPositions(d_model, dtype=torch.float64)

    def rhs(self, t: Tensor, y: Tensor, ctx: Context, slot: int) -> Tensor:
        """F(t, y) for one field call (its own cache `slot`).

        **Arguments:** `t`: 0-dim; `y`: `(batch, length, d_model)`. **Returns:** the same shape.
        """
        time = self.method.time
        if time == "none":
            return self.field(y, ctx, slot)
        if time == "concat":
            if self.raw_module:
                assert isinstance(self.field, ModuleField)
                column = t.to(y).expand(*y.shape[:-1], 1)
                hint = (
                    f"with time = 'concat' a module field takes [y, t] (d_model + 1 = "
                    f"{y.shape[-1] + 1} features) and returns dy (d_model = {y.shape[-1]})"
                )
                try:
                    dy = self.field.module(torch.cat([y, column], dim=-1))
                except RuntimeError as error:
                    raise ValueError(f"field module {self.field.name} failed: {hint}") from error
                if not isinstance(dy, Tensor) or dy.shape != y.shape:
                    shape = getattr(dy, "shape", type(dy).__name__)
                    raise ValueError(f"field module {self.field.name} returned {shape}; {hint}")
                return dy
            return self.field(y + t.to(y) * self.time_weight, ctx, slot)
        angle = (t - self.start) * (EMBEDDING_SPAN / (self.end - self.start))
        code = self.embedding(angle).to(y)
        return self.field(y + self.time_scale * code, ctx, slot)

    def forward(self, y: Tensor, ctx: Context) -> Tensor:
        """y(t1) from y(t0) = `y`, `(batch, length, d_model)`, with the masks, memory and cache
        of `ctx` reaching every field call."""
        if ctx.cache is not None and self.method.adaptive:
            raise ButcherflowError(
                f"ContinuousBlock({self.method.name}): the adaptive solver '{self.method.method}' "
                "cannot decode incrementally (its steps depend on the whole prefix); decode "
                "without a DecodeCache (model.supports_cache is False), or declare a fixed-step "
                "method"
            )
        slots = itertools.count()

        def func(t: Tensor, state: Tensor) -> Tensor:
            return self.rhs(t, state, ctx, next(slots))

        times = torch.tensor([self.start, self.end], dtype=torch.float64, device=y.device)
        extra = _context_tensors(ctx) if self.method.adjoint else []
        params = [p for p in self.parameters() if p.requires_grad] + extra
        return solve(func, y, times, self.method, adjoint_params=params)[-1]


def _context_tensors(ctx: Context) -> list[Tensor]:
    """Tensors of `ctx` the adjoint must route gradients to (the encoder memory, bias maps)."""
    found = [ctx.memory] if ctx.memory is not None and ctx.memory.requires_grad else []
    bias = ctx.attention_bias
    if isinstance(bias, Mapping):
        for projection in bias.values():
            for value in (projection.q, projection.k, projection.v):
                if isinstance(value, Tensor) and value.requires_grad:
                    found.append(value)
    elif bias is not None and torch.is_grad_enabled():
        raise ButcherflowError(
            "adjoint = true with a callable attention_bias hook: the adjoint cannot see the "
            "hook's tensors, so their gradients would be lost; pass a mapping "
            "{'self': ProjectionBias, 'cross': ProjectionBias} or set adjoint = false"
        )
    return found


@final
@dataclass(frozen=True)
class ContinuousOptions(FieldSizes):
    """The options of `bf.compile` for `ContinuousDynamics` (and the field sizes): the
    declaration itself fixes the solver, its steps or tolerances and the interval.

    - `field`: the field F, a name or an `nn.Module`.
    - `causal`: causal self-attention; by default, whenever the field cross-attends.
    """

    field: FieldSpec | None = None
    causal: bool | None = None


def compile_continuous(method: ContinuousDynamics, options: ContinuousOptions) -> ContinuousBlock:
    """`bf.compile` for continuous dynamics (`grid = "interval"`): a continuous-depth block."""
    method.layer.require(method)
    require(
        options.field is not None,
        "a continuous-depth block evaluates one field: pass field=",
        key="field",
        value=None,
        valid="e.g. field='san+ffn' or field=my_module",
    )
    assert options.field is not None
    built = make_field(options.field, **options.sizes)
    rates = [
        float(m.p if isinstance(m, nn.Dropout) else m.dropout)
        for m in built.modules()
        if isinstance(m, (nn.Dropout, MultiheadAttention))
    ]
    rates = [rate for rate in rates if rate > 0]
    if method.adjoint and rates:
        raise DeclarationError(
            "the adjoint re-evaluates the field backwards in time, with fresh dropout masks: "
            "its gradient would not be the forward's",
            key="dropout",
            value=max(rates),
            valid="dropout=0 with adjoint = true, or adjoint = false",
        )
    if method.time == "concat" and isinstance(built, ModuleField) and options.d_model is None:
        raise DeclarationError(
            "with time = 'concat' a module field takes d_model + 1 input features, so its "
            "width cannot be read from its parameters",
            key="d_model",
            value=None,
            valid="pass d_model=...",
        )
    return ContinuousBlock(
        method,
        built,
        d_model=field_width(
            built,
            options.d_model,
            needed_for=None if method.time == "none" else f"time = {method.time!r} is d_model wide",
        ),
        causal=built.needs_memory if options.causal is None else options.causal,
    )


@final
class ContinuousBlock(CompiledBlock):
    """A `ContinuousDynamics` (grid `"interval"`) compiled around one field. Build it with
    `bf.compile(dynamics, field=...)`.

    **Arguments:**

    - `method`: the declaration (solver, steps or tolerances, adjoint, time dependence).
    - `field`: the `Field` F.
    - `d_model`: the state width.
    - `causal`: causal self-attention (decoders).

    **Attributes:** `incremental` (False for adaptive solvers: no `DecodeCache`),
    `field_calls` (steps × stages per forward; None for adaptive solvers, whose step count is
    chosen at run time), `code` (the solve, spelled out), `num_parameters`.
    """

    def __init__(
        self,
        method: ContinuousDynamics,
        field: Field,
        *,
        d_model: int | None,
        causal: bool = False,
    ) -> None:
        super().__init__()
        method.layer.require(method)
        self.method, self.d_model, self.causal, self.policy = method, d_model, causal, "exact"
        self.incremental = not method.adaptive
        holder = nn.Module()
        holder.ode = NeuralODE(method, field, d_model)
        builder = ProgramBuilder(holder)
        out = builder.call_module("ode", (builder.y, builder.ctx), name="y_next")
        self.program = builder.finish(out, class_name=class_name(method.name))

    @property
    def ode(self) -> NeuralODE:
        module = self.program.get_submodule("ode")
        assert isinstance(module, NeuralODE)
        return module

    @property
    def field(self) -> Field:
        return self.ode.field

    @property
    def steps(self) -> int | None:
        """Fixed steps over [t0, t1] (None for adaptive solvers)."""
        m = self.method
        if m.adaptive:
            return None
        if m.steps is not None:
            return int(m.steps)
        assert m.step_size is not None
        return max(1, math.ceil(float((m.t1 - m.t0) / m.step_size) * (1.0 - 1e-12)))

    @property
    def field_calls(self) -> int | None:
        """Field evaluations per forward: steps × stages for fixed steps; None for adaptive
        solvers (the count depends on the data: accepted and rejected steps)."""
        if self.steps is None:
            return None
        assert self.method.tableau is not None
        return self.steps * len(coefficients(self.method.tableau).stages)

    def flops(self, length: int, memory_length: int) -> tuple[int, int] | None:
        """Estimated forward FLOPs per input token and per memory token (the rule of
        `CompiledBlock.flops`: field calls, one axpy of 2·d_model per term of every
        combination, plus the time input of each call); None for adaptive solvers."""
        calls = self.field_calls
        if calls is None:
            return None
        assert self.method.tableau is not None and self.steps is not None
        field, memory = call_flops(self.field, length, memory_length)
        if self.method.time == "concat" and not self.ode.raw_module:
            field += 2 * self.width()  # y + t·w
        elif self.method.time == "embedding":
            field += 4 * self.width()  # sin/cos of d_model/2 angles each, s ⊙ PE, the add
        numbers = coefficients(self.method.tableau)
        terms = sum(len(numbers.reads[i]) for i in numbers.stages) + len(numbers.weighted)
        return calls * field + self.steps * terms * 2 * self.width(), calls * memory

    @property
    def code(self) -> str:
        """The solve, spelled out: the step the solver repeats and the loop around it."""
        m = self.method
        lines = [
            f"# {m.name}: y({m.t1}) = y({m.t0}) + ∫ F(t, y) dt, {_f_text(self)}",
        ]
        gradients = "adjoint ODE (butcherflow.nn.adjoint)" if m.adjoint else "backpropagation"
        if m.adaptive:
            lines += [
                f"# adaptive: torchdiffeq's {m.method} (the tableau "
                f"'{m.solver_tableau().name}') picks its steps; field calls depend on the data",
                "def forward(self, y, ctx):",
                f"    t = torch.tensor([{float(m.t0)!r}, {float(m.t1)!r}], dtype=torch.float64)",
                f"    return torchdiffeq.odeint(F, y, t, method={m.method!r}, rtol={m.rtol!r}, "
                f"atol={m.atol!r},",
                "        options={'max_num_steps': " + f"{m.max_num_steps}" + "})[-1]"
                f"  # gradients: {gradients}",
            ]
            return "\n".join(lines) + "\n"
        tableau = m.tableau
        assert tableau is not None and self.steps is not None
        numbers = coefficients(tableau)
        h = (m.t1 - m.t0) / self.steps  # equal sub-steps, each at most step_size
        lines += [
            f"# {self.steps} fixed step(s) of h = {h} with '{tableau.name}', "
            f"{len(numbers.stages)} field call(s) each;",
            f"# run by butcherflow.nn.ode.fixed_steps; gradients: {gradients}",
            "def step(self, t, y, ctx, h):",
        ]
        for i in numbers.stages:
            t_arg = _scaled("t", tableau.c[i], "h")
            terms = [(tableau.A[i][j], f"k{j + 1}") for j in numbers.reads[i]]
            y_arg = f"y + h*{_grouped(terms)}" if terms else "y"
            lines.append(f"    k{i + 1} = F({t_arg}, {y_arg})")
        weights = [(tableau.b[i], f"k{i + 1}") for i in numbers.weighted]
        lines += [
            f"    return y + h*{_grouped(weights)}",
            "",
            "def forward(self, y, ctx):",
            f"    t, h = {m.t0}, {h}",
            f"    for n in range({self.steps}):  # field call i of step n uses cache slot "
            f"{len(numbers.stages)}·n + i",
            "        y, t = self.step(t, y, ctx, h), t + h",
            "    return y",
        ]
        return "\n".join(lines) + "\n"


def _f_text(block: ContinuousBlock) -> str:
    time = block.method.time
    if time == "none":
        return "F(t, y) = self.field(y)"
    if time == "concat":
        if block.ode.raw_module:
            return "F(t, y) = self.field(torch.cat([y, t], -1))"
        return "F(t, y) = self.field(y + t * self.time_weight)"
    return "F(t, y) = self.field(y + self.time_scale * sinusoid(t))"


def _scaled(base: str, c: sympy.Expr, h: str) -> str:
    if c == 0:
        return base
    return f"{base} + {h}" if c == 1 else f"{base} + {c}*{h}"


def _grouped(terms: list[tuple[sympy.Expr, str]]) -> str:
    """`k3` alone, else `(1/2*k1 + k2)`."""
    if len(terms) == 1 and terms[0][0] == 1:
        return terms[0][1]
    return f"({_combination(terms)})"


def _combination(terms: list[tuple[sympy.Expr, str]]) -> str:
    """`1/2*k1 - k2 + 3*k3` from coefficients and names."""
    text = ""
    for n, (c, name) in enumerate(terms):
        negative = bool(c < 0)
        magnitude = -c if negative else c
        part = name if magnitude == 1 else f"{magnitude}*{name}"
        if n == 0:
            text = f"-{part}" if negative else part
        else:
            text += f" - {part}" if negative else f" + {part}"
    return text
