"""General linear methods compiled into whole stacks: r streams carried across the layers.

The state of the stack is r streams `(r, batch, time, d_model)`. Layer m computes, with its own
field Fₘ and h = 1, the s stages and the next streams of the declaration (A, U, B, V):

    Yᵢ = Σⱼ₍ⱼ<ᵢ₎ aᵢⱼ Fₘ(Yⱼ) + Σₖ uᵢₖ yₖ          (explicit A only)
    y′ = B Fₘ(Y) + V y

- **Read-in**: the input x (the embedding) becomes the streams u ⊗ x, u the preconsistency vector
  of the declared starting procedure (each input's coefficient of y(x)): a stream started at
  y(x) (or y(x − θh)) is a copy of x, one started at h·f(...) starts at zero. For
  hyper-connections (every input y(x)) this is their replication of the embedding; for a
  multistep method's history it is the constant extrapolation y(x − θh) ≈ y(x), a first-order
  start, where the multistep stack starts by Euler layers instead.
- **Read-out**: the mean of the streams whose starting value is exactly y(x). Hyper-connections
  sum the n streams; every stack here ends in a LayerNorm, which removes that factor n.

With V u = u and U u = 1 (preconsistency, checked at compile) a stack whose fields are zero keeps
x unchanged, and a hyper-connection stack at its declared initialisation is the residual stack.

Coefficient policies (`coefficients=`) for U, B and V; A stays exact:

- `"exact"`: the declaration's values, as buffers.
- `"learned"`: one U, B, V per layer, `nn.Parameter`s starting at the declaration.
- `"dynamic"`: dynamic hyper-connections (Zhu et al. 2025, Eq. 9-11): per token, each
  coefficient is its learned static value plus s·tanh(ȳ W), ȳ the layer-normalised streams, W
  zero-initialised (the stack starts at the declaration) and s a learned scale starting at 0.01.
- `"sinkhorn"`: mHC (Xie et al. 2025): U and B as `"dynamic"`; V = Sinkhorn(exp(L)) with
  per-token logits L = L₀ + s·tanh(ȳ W), projected onto the doubly stochastic matrices by
  `iterations` alternating column and row normalisations (in log space, rows last, so that
  V 1 = 1 holds to rounding). L₀ starts at log V, an entry 0 at −6: exp(−16) would start closer
  to V but its gradient (∝ the entry) would keep it there for thousands of steps; at −6 the
  projection of V = I starts with off-diagonal entries ≈ e⁻⁶ ≈ 0.0025. While the streams are
  equal (the hyper-connection read-in), any row-stochastic V keeps them equal, so such a stack
  still starts as the residual stack. V must be doubly stochastic to be a starting point.
  mHC's sigmoids on U and B are not applied.
- `"birkhoff"`: U and B as `"learned"`; V = Σ_σ softmax(θ)_σ P_σ over the r! permutation
  matrices (`nn.Birkhoff`, registered with `torch.nn.utils.parametrize`), so every V training
  reaches is doubly stochastic and ‖Vⁿ‖∞ = 1: the stack stays zero-stable. θ starts at the
  declared V (which must be doubly stochastic), exactly to rounding when V is inside the set
  (the depth methods of `bf.design.depth_method` are).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, final

import numpy as np
import sympy
import torch
import torch.fx as fx
from torch import Tensor, nn
from torch.nn.utils import parametrize

from ..analysis.general_linear.series import preconsistency
from ..analysis.general_linear.stability import doubly_stochastic, power_bound
from ..methods import BIRKHOFF_MAX_STREAMS, GeneralLinear
from ..nn import Field, make_field
from ..nn.birkhoff import Birkhoff
from ..nn.streams import (
    advance,
    normalised_projection,
    read_in,
    read_out,
    read_stages,
    sinkhorn,
    tokens,
)
from .options import MAX_ITERATIONS, FieldSizes, FieldSpec, require_fields_list
from .program import Coefficient, CompiledBlock, ProgramBuilder, field_width, require

GLM_POLICIES = ("exact", "learned", "dynamic", "sinkhorn", "birkhoff")
SINKHORN_ITERATIONS = 20  # mHC's t_max
DYNAMIC_SCALE = 0.01  # HC's initial s_α, s_β
LOG_ZERO = -6.0  # the starting logit of a zero entry of V under Sinkhorn (module docstring)


@final
@dataclass(frozen=True)
class GeneralLinearOptions(FieldSizes):
    """The options of `bf.compile_stack` for a `GeneralLinear` declaration (and the sizes).

    - `fields`: one field spec per layer (names such as `"san+ffn"`, or modules).
    - `coefficients`: `"exact"` (default), `"learned"`, `"dynamic"` or `"sinkhorn"` (module
      docstring).
    - `iterations`: Sinkhorn iterations (`"sinkhorn"` only; default 20, as mHC).
    - `causal`: default: True when a field cross-attends.
    """

    fields: Sequence[FieldSpec] | None = None
    coefficients: str | None = None
    iterations: int | None = None
    causal: bool | None = None

    spans_layers = True


def _floats(rows: Sequence[Sequence[sympy.Expr]]) -> Tensor:
    return torch.tensor([[float(x) for x in row] for row in rows], dtype=torch.float64)


@final
class StreamMixing(nn.Module):
    """One layer's U (s×r), B (r×s) and V (r×r) under a coefficient policy.

    **Arguments:**

    - `method`: the declaration (its U, B, V are the initial values).
    - `policy`: one of `GLM_POLICIES`.
    - `d_model`: the width of a stream (for the dynamic maps).
    - `iterations`: Sinkhorn iterations (`"sinkhorn"`).

    `forward(streams)` takes the stack's streams `(r, batch, time, d_model)` and returns
    (U, B, V): static matrices `(s, r)`, `(r, s)`, `(r, r)`, or per token `(batch, time, s, r)`,
    `(batch, time, r, s)`, `(batch, time, r, r)`, in the streams' dtype.
    """

    def __init__(self, method: GeneralLinear, policy: str, d_model: int, iterations: int) -> None:
        super().__init__()
        self.policy, self.iterations = policy, iterations
        self.s, self.r = method.stages, method.values
        U, B, V = _floats(method.U), _floats(method.B), _floats(method.V)
        if policy == "sinkhorn":
            V = torch.where(V > 0, V.clamp_min(1e-300).log(), torch.full_like(V, LOG_ZERO))
        if policy == "exact":
            for name, value in (("U", U), ("B", B), ("V", V)):
                self.register_buffer(name, value)
        else:  # float64, so that a layer starts exactly at the declaration in any dtype
            self.U, self.B, self.V = nn.Parameter(U), nn.Parameter(B), nn.Parameter(V)
        if policy == "birkhoff":  # V is then computed from its logits at every read
            parametrize.register_parametrization(self, "V", Birkhoff(self.r), unsafe=True)
        self.dynamic = policy in ("dynamic", "sinkhorn")
        if self.dynamic:
            self.norm = nn.LayerNorm(d_model)
            self.proj = nn.Linear(d_model, 2 * self.s + self.r, bias=False)
            nn.init.zeros_(self.proj.weight)
            self.scale = nn.Parameter(torch.full((3,), DYNAMIC_SCALE))

    def forward(self, streams: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        dtype = streams.dtype
        U, B, V = (m.to(dtype) for m in (self.U, self.B, self.V))
        if not self.dynamic:
            return U, B, V
        s = self.s
        # one projection for all coefficients of all streams; row k of `out` is stream k's:
        # its dynamic U[:, k], B[k, :] and V[k, :]
        out = torch.tanh(
            normalised_projection(tokens(streams), self.norm, self.proj.weight)
        )  # (tokens, r, 2s + r)
        out = out.view(*streams.shape[1:-1], *out.shape[1:])  # (batch, time, r, 2s + r)
        scale = self.scale.to(dtype)
        U = torch.addcmul(U, scale[0], out[..., :s].transpose(-1, -2))
        B = torch.addcmul(B, scale[1], out[..., s : 2 * s])
        V = torch.addcmul(V, scale[2], out[..., 2 * s :])
        if self.policy == "sinkhorn":
            V = sinkhorn(V, self.iterations)
        return U, B, V

    @torch.no_grad()
    def static_v(self) -> np.ndarray:
        """V without its per-token term (projected, under Sinkhorn): what `power_bound` reads."""
        V = self.V.detach().to(torch.float64).cpu()
        if self.policy == "sinkhorn":
            V = sinkhorn(V, self.iterations)
        return V.numpy()


@final
class GeneralLinearStack(CompiledBlock):
    """A whole stack of L layers driven by a general linear method (module docstring).

    **Arguments:**

    - `method`: an explicit, preconsistent `GeneralLinear` without free symbols.
    - `options`: `GeneralLinearOptions`.

    `forward(x, ...)` maps `(batch, length, d_model)` to `(batch, length, d_model)`; the streams
    live inside. `stream_matrices()` gives each layer's V (its static part) for the power-bound
    report.
    """

    def __init__(self, method: GeneralLinear, options: GeneralLinearOptions) -> None:
        super().__init__()
        fields = require_fields_list(options.fields)
        policy = options.coefficients or "exact"
        require(
            policy in GLM_POLICIES,
            "unknown coefficient policy for a general linear stack",
            key="coefficients",
            value=policy,
            valid=f"one of {', '.join(GLM_POLICIES)}",
        )
        iterations = _iterations(policy, options.iterations)
        u, w = check_compilable(method, policy)
        self.method, self.policy, self.layers = method, policy, len(fields)
        holder = nn.Module()
        modules: list[Field] = []
        for m, spec in enumerate(fields):
            module = make_field(spec, **options.sizes)
            holder.add_module(f"layer{m}", module)
            modules.append(module)
        why = "the stream mixing is d_model wide"
        width = field_width(modules[0], options.d_model, needed_for=why)
        assert width is not None
        self.d_model = width
        for m in range(self.layers):
            holder.add_module(f"mix{m}", StreamMixing(method, policy, width, iterations))
        holder.register_buffer("u", torch.tensor(u, dtype=torch.float64))
        holder.register_buffer("w", torch.tensor(w, dtype=torch.float64))
        self.causal = (
            any(m.needs_memory for m in modules) if options.causal is None else options.causal
        )
        self.program = self._build(holder)

    def _build(self, holder: nn.Module) -> fx.GraphModule:
        method, builder = self.method, ProgramBuilder(holder)
        graph = builder.graph
        u = builder.attribute("u", name="u")
        streams = graph.create_node("call_function", read_in, (builder.y, u), name="streams0")
        for m in range(self.layers):
            coefficients = builder.call_module(f"mix{m}", (streams,), name=f"mix{m}")
            U, B, V = (builder.item(coefficients, k, name=f"{n}{m}") for k, n in enumerate("UBV"))
            read = graph.create_node("call_function", read_stages, (U, streams), name=f"read{m}")
            F: list[fx.Node] = []
            for i in range(method.stages):
                base = builder.item(read, i, name=f"read{m}_{i}")
                terms: list[tuple[Coefficient, fx.Node]] = [
                    (float(method.A[i][j]), F[j]) for j in range(i) if method.A[i][j] != 0
                ]
                Y = builder.combine(base, terms, name=f"Y{m}_{i}") if terms else base
                F.append(builder.call_field(f"layer{m}", Y, name=f"F{m}_{i}"))
            streams = graph.create_node(
                "call_function", advance, (V, streams, B, *F), name=f"streams{m + 1}"
            )
        w = builder.attribute("w", name="w")
        out = graph.create_node("call_function", read_out, (streams, w), name="out")
        return builder.finish(out, class_name="GeneralLinearStack")

    def stream_matrices(self) -> list[np.ndarray]:
        """Each layer's V (static part; Sinkhorn-projected under `"sinkhorn"`), float64."""
        return [
            self.program.get_submodule(f"mix{m}").static_v()  # type: ignore[operator]
            for m in range(self.layers)
        ]


@final
@dataclass(frozen=True)
class StreamBound:
    """Whether one layer's learned V is still power-bounded (the proof is of the declaration,
    the initialisation; training may leave the stable set).

    - `where`: the stack's module name and the layer (`"encoder.0 layer 2"`).
    - `radius`: the spectral radius of V (static part).
    - `worst`: max over n ≤ the stack's depth of ‖Vⁿ‖₂.
    """

    where: str
    radius: float
    worst: float

    def __str__(self) -> str:
        return f"{self.where}: spectral radius {self.radius:.4f}, max ‖Vⁿ‖ {self.worst:.4f}"


def stream_bounds(model: nn.Module) -> list[StreamBound]:
    """Per layer of every general linear stack in `model`: the spectral radius of its V and
    the largest ‖Vⁿ‖₂ over n up to the stack's depth (`analysis.power_bound`)."""
    found = []
    for name, module in model.named_modules():
        if isinstance(module, GeneralLinearStack):
            for m, V in enumerate(module.stream_matrices()):
                radius, worst = power_bound(V, module.layers)
                found.append(StreamBound(f"{name or 'stack'} layer {m}", radius, worst))
    return found


def stream_summary(bounds: Sequence[StreamBound]) -> str:
    """One line for a training log: the largest radius and ‖Vⁿ‖ over the layers ("" if none)."""
    if not bounds:
        return ""
    radius = max(b.radius for b in bounds)
    worst = max(b.worst for b in bounds)
    return f"V: max spectral radius {radius:.3f}, max ‖Vⁿ‖ {worst:.3f}"


def _iterations(policy: str, given: Any) -> int:
    if given is None:
        return SINKHORN_ITERATIONS
    require(
        policy == "sinkhorn",
        "iterations applies to coefficients='sinkhorn' only (Sinkhorn iterations)",
        key="iterations",
        value=given,
        valid="remove it, or set coefficients='sinkhorn'",
    )
    require(
        1 <= given <= MAX_ITERATIONS,  # an int: GeneralLinearOptions.parse checked its type
        f"Sinkhorn iterations must be an integer from 1 to {MAX_ITERATIONS}",
        key="iterations",
        value=given,
        valid="e.g. iterations = 20 (mHC)",
    )
    return int(given)


def check_compilable(method: GeneralLinear, policy: str) -> tuple[list[float], list[float]]:
    """Refuse what has no stack (symbols, implicit A, no preconsistency, Sinkhorn on a V that
    is not doubly stochastic) with one clear line; return the read-in u and read-out w."""
    require(
        not method.symbols,
        f"'{method.name}' has free symbols; a stack needs numbers",
        key="method",
        value=sorted(map(str, method.symbols)),
        valid="substitute values (method.subs({...}))",
    )
    method.layer.require(method)
    pre = preconsistency(method)
    # undetermined is refused too: digits that cannot tell V u from u drift a constant state
    verdict = "not preconsistent" if pre.holds is False else "not known to be preconsistent"
    require(
        pre.holds is True,
        f"'{method.name}' is {verdict} ({pre.why}): its stack would not keep a constant "
        "state even with zero fields",
        key="V",
        value=[[str(x) for x in row] for row in method.V],
        valid="V u = u and U u = 1 for u, the starting values' coefficients of y(x) (exactly, "
        "or within entries precise enough to decide it)",
    )
    if policy in ("sinkhorn", "birkhoff"):  # V is square by declaration
        require(
            doubly_stochastic(method.V),
            f"coefficients='{policy}' starts from a doubly stochastic V",
            key="V",
            value=[[str(x) for x in row] for row in method.V],
            valid="non-negative entries with every row and column summing to 1 (e.g. the "
            "identity), or coefficients='learned' / 'dynamic'",
        )
    if policy == "birkhoff":
        require(
            method.values <= BIRKHOFF_MAX_STREAMS,
            "coefficients='birkhoff' sums r! permutation matrices: at most "
            f"{BIRKHOFF_MAX_STREAMS} streams",
            key="coefficients",
            value=policy,
            valid="fewer streams, or coefficients='sinkhorn'",
        )
    plain = [
        len(terms) == 1 and terms[0][0] == 1 and terms[0][1] == "y" and terms[0][2] == 0
        for terms in method.start
    ]
    require(
        any(plain),
        "the stack reads out the streams started at y(x), and there is none",
        key="start",
        value=method.start_text(),
        valid="at least one input started at 'y(x)'",
    )
    w = [1.0 / sum(plain) if p else 0.0 for p in plain]
    return [float(x) for x in pre.u], w


def compile_general_linear(
    method: GeneralLinear, options: GeneralLinearOptions
) -> GeneralLinearStack:
    """`bf.compile_stack` (and `bf.compile` with a list of fields) for a general linear method."""
    return GeneralLinearStack(method, options)
