"""FLOATER inside a model: which attention modules get position biases, and from which flow.

The compatible form of the paper (section 3.3): the sinusoidal input encoding stays, and two
flows add position-aware biases to the q/k/v projections (`ProjectionBias`, through
`Context.attention_bias`):

- the *source* flow serves encoder self-attention (q, k, v at the source positions) and the
  keys/values of decoder cross-attention (k, v at the source positions: they are memory rows);
- the *target* flow serves decoder self-attention (q, k, v at the target positions) and the
  queries of decoder cross-attention (q at the target positions).

Every (attention module, projection) has its own initial value; the dynamics of a flow are
shared. Each flow is solved once per forward (encode and decode share the source table inside
`Seq2Seq.forward`) and every field call of a block (every Runge-Kutta stage) reads the same
biases. Incremental decoding reads the rows of the new tokens' positions, and the cross keys'
biases once, when the cross keys are computed (the official code's decode-time cross bias is
wrong; this one equals the full forward's).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import torch
from torch import Tensor, nn

from ..analysis import check
from ..compiler.multistep import LayerStack
from ..errors import DeclarationError, UnknownNameError
from ..methods import ContinuousDynamics, Method, catalog
from ..nn import (
    AttentionBiasHook,
    CrossAttentionSublayer,
    MultiheadAttention,
    ProjectionBias,
    SelfAttentionSublayer,
    token_positions,
)
from ..nn.floater import FloaterPositions
from ..nn.ode import field_calls_per_step

FLOATER_BLOCKS = ("all", "input")
Ref = tuple[str, int]  # (flow, index of the initial value)


def resolve_floater(
    value: Any, *, key: str = "floater", source: str | None = None
) -> ContinuousDynamics:
    """A FLOATER declaration: a `ContinuousDynamics` over positions, by object, name or file.

    **Returns:** the `ContinuousDynamics`. Raises a `DeclarationError` naming `key` otherwise.
    """
    valid = (
        "a continuous-dynamics declaration with grid = 'positions': a catalog name such as "
        "'floater', or a .toml file"
    )
    if not isinstance(value, (str, Path, Method)):
        raise DeclarationError(
            "expected a declaration", key=key, value=value, valid=valid, source=source
        )
    try:
        found = catalog.resolve(value)
    except UnknownNameError as error:
        raise DeclarationError(str(error), key=key, value=str(value), source=source) from None
    flow = found.position_flow
    if flow is None:
        grid = getattr(found, "grid", None)  # continuous dynamics over an interval of depth
        what = f"grid = '{grid}'" if grid is not None else f"a {found.family} declaration"
        raise DeclarationError(
            f"'{found.name}' is not a position flow ({what})",
            key=key,
            value=str(value),
            valid=valid,
            source=source,
        )
    return flow


def attention_modules(module: nn.Module) -> list[tuple[MultiheadAttention, bool]]:
    """The attention modules of a block (or layer), each with `True` for self-attention."""
    found: list[tuple[MultiheadAttention, bool]] = []
    for sub in module.modules():
        if isinstance(sub, SelfAttentionSublayer):
            found.append((sub.attention, True))
        elif isinstance(sub, CrossAttentionSublayer):
            found.append((sub.attention, False))
    return found


def layer_groups(side: nn.ModuleList) -> list[nn.Module]:
    """One module per layer: the blocks of a side, or the layers of a multistep or DLCL stack."""
    groups: list[nn.Module] = []
    for block in side:
        if isinstance(block, LayerStack):
            groups += [block.program.get_submodule(f"layer{n}") for n in range(block.layers)]
        else:
            groups.append(block)
    return groups


@final
@dataclass(frozen=True, eq=False)
class _Served:
    """An attention module and where its q/k/v biases come from."""

    attention: MultiheadAttention
    self_attention: bool
    block: str  # "encoder block 0", for descriptions
    q: Ref
    k: Ref
    v: Ref


@final
class FloaterInjection(nn.Module):
    """FLOATER biases for the attention modules of a model's sides.

    **Arguments:**

    - `declaration`: the flows' `ContinuousDynamics` (grid `"positions"`), a name or a file.
    - `d_model`: model width.
    - `encoder`: the encoder's blocks (source flow), or None.
    - `decoder`: the decoder's blocks (target flow; cross-attention takes k/v from the source
      flow), or None.
    - `blocks`: `"all"` (every block) or `"input"` (the first block of each side only).
    - `hidden`: hidden width of the dynamics (default `d_model`).
    """

    declaration: ContinuousDynamics
    blocks: str

    def __init__(
        self,
        declaration: ContinuousDynamics | str | Path,
        d_model: int,
        *,
        encoder: nn.ModuleList | None = None,
        decoder: nn.ModuleList | None = None,
        blocks: str = "all",
        hidden: int | None = None,
    ) -> None:
        super().__init__()
        if blocks not in FLOATER_BLOCKS:
            raise DeclarationError(
                "unknown FLOATER placement",
                key="floater_blocks",
                value=blocks,
                valid="'all' (every block) or 'input' (the first block of each side)",
            )
        self.declaration = resolve_floater(declaration)
        self.blocks = blocks
        counts = {"source": 0, "target": 0}

        def take(flow: str) -> Ref:
            counts[flow] += 1
            return flow, counts[flow] - 1

        served: list[_Served] = []
        seen: set[int] = set()
        for where, side in (("encoder", encoder), ("decoder", decoder)):
            own = "source" if where == "encoder" else "target"
            groups = [] if side is None else layer_groups(side)
            for n, group in enumerate(groups[:1] if blocks == "input" else groups):
                for attention, is_self in attention_modules(group):
                    if id(attention) in seen:  # a module shared inside a block: one set of biases
                        continue
                    seen.add(id(attention))
                    if is_self:
                        refs = (take(own), take(own), take(own))
                    else:
                        refs = (take("target"), take("source"), take("source"))
                    served.append(_Served(attention, is_self, f"{where} block {n}", *refs))
        if not served:
            raise DeclarationError(
                "FLOATER found no attention module to bias",
                key="position",
                value="floater",
                valid="FLOATER biases attention; use fields with 'san' or 'ca'",
            )
        self._served = served  # a plain list: the modules belong to the model's sides
        self.flows = nn.ModuleDict(
            {
                flow: FloaterPositions(self.declaration, d_model, n, hidden)
                for flow, n in counts.items()
                if n
            }
        )
        self._shared: dict[str, Tensor] | None = None

    def reset_to_transformer(self) -> None:
        """Zero every flow's output layer and initial values: all biases become exactly zero."""
        for flow in self.flows.values():
            assert isinstance(flow, FloaterPositions)
            flow.reset_to_transformer()

    @contextlib.contextmanager
    def sharing(self) -> Iterator[None]:
        """Inside, each flow is solved at most once (encode and decode of one forward)."""
        self._shared = {}
        try:
            yield
        finally:
            self._shared = None

    def table(self, flow: str, length: int) -> Tensor:
        """`(n_values, length, d_model)`: the flow's biases at positions 0..length−1."""
        shared = self._shared
        if shared is not None and flow in shared and shared[flow].shape[1] >= length:
            return shared[flow][:, :length]
        module = self.flows[flow]
        assert isinstance(module, FloaterPositions)
        table: Tensor = module(length)
        if shared is not None:
            shared[flow] = table
        return table

    def rows(
        self, flow: str, length: int, padding: Tensor | None = None, offset: int = 0
    ) -> Tensor:
        """The biases of a flow for `length` tokens, gathered by position.

        **Arguments:**

        - `flow`: `"source"` or `"target"`.
        - `length`: tokens in the call (the new ones when decoding).
        - `padding`: `(batch, length)` bool, True at padding: positions are `token_positions`
          (the index among real tokens, whatever the padding side); None: `offset + i`.
        - `offset`: position of the first token (decoding: `cache.length`).

        **Returns:** `(n_values, batch, length, d_model)`, or `(n_values, 1, length, d_model)`
        without padding (broadcast over the batch).
        """
        table = self.table(flow, offset + length)
        if padding is None:
            out = table[:, offset : offset + length].unsqueeze(1)
        else:
            out = table[:, token_positions(padding, offset)]
        device = out.device.type
        if torch.is_autocast_enabled(device):  # keep q/k/v in the autocast dtype
            out = out.to(torch.get_autocast_dtype(device))
        return out

    def hook(self, rows: Mapping[str, Tensor]) -> AttentionBiasHook:
        """The `Context.attention_bias` hook for one forward of one side.

        **Arguments:** `rows`: each available flow's `rows(...)` for this call; projections
        whose flow is absent get no bias (cross k/v after the first decoding step, when the
        cross keys already sit in the `DecodeCache`).
        """

        def pick(ref: Ref) -> Tensor | None:
            found = rows.get(ref[0])
            return None if found is None else found[ref[1]]

        biases: dict[nn.Module, tuple[bool, ProjectionBias]] = {
            s.attention: (s.self_attention, ProjectionBias(pick(s.q), pick(s.k), pick(s.v)))
            for s in self._served
        }

        def hook(attention: nn.Module, self_attention: bool) -> ProjectionBias | None:
            entry = biases.get(attention)
            if entry is None:
                return None
            if entry[0] != self_attention:
                kind = "self" if entry[0] else "cross"
                raise RuntimeError(f"FLOATER: a {kind}-attention module was called the other way")
            return entry[1]

        return hook

    def encoder_bias(self, padding: Tensor) -> AttentionBiasHook:
        """The encoder's hook: source-flow biases at the source tokens' positions.

        **Arguments:** `padding`: `(batch, src_len)` bool, True at padding.
        """
        if "source" not in self.flows:
            return self.hook({})
        return self.hook({"source": self.rows("source", padding.shape[1], padding)})

    def decoder_bias(
        self,
        length: int,
        offset: int = 0,
        memory_padding: Tensor | None = None,
        *,
        cross: bool = True,
    ) -> AttentionBiasHook:
        """The decoder's hook: target-flow biases at positions offset..offset+length−1 and,
        when `cross`, source-flow biases for the cross keys/values at the memory's positions.

        **Arguments:**

        - `length`: target tokens in this call; `offset`: position of the first one.
        - `memory_padding`: `(batch, src_len)` bool, True at padding of the memory.
        - `cross`: whether cross keys/values are projected in this call (False once a
          `DecodeCache` holds them).
        """
        rows: dict[str, Tensor] = {}
        if "target" in self.flows:
            rows["target"] = self.rows("target", length, None, offset)
        if cross and "source" in self.flows and memory_padding is not None:
            rows["source"] = self.rows("source", memory_padding.shape[1], memory_padding)
        return self.hook(rows)

    def describe(self) -> str:
        """Where the biases go and what they cost, for `butcherflow show`."""
        d = self.declaration
        where = "every block" if self.blocks == "all" else "the input block of each side"
        _, steps, evals, _ = _solver_text(d)
        lines = [
            f"FLOATER biases at {where} (flows declared by '{d.name}'):",
            f"  solver {d.method} (order {check(d).order}), Δ = {d.delta}, {steps}, "
            f"{evals} evaluations of h per position, {'adjoint' if d.adjoint else 'backprop'}",
        ]
        for name, flow in self.flows.items():
            assert isinstance(flow, FloaterPositions)
            lines.append(
                f"  {name} flow: dynamics {flow.num_dynamics_parameters:,} parameters (shared), "
                f"{flow.n_values} initial values × {flow.d_model} = "
                f"{flow.num_initial_parameters:,} parameters"
            )
        by_block: dict[str, list[str]] = {}
        for s in self._served:
            kind = "self-attention" if s.self_attention else "cross-attention"
            refs = f"q←{s.q[0]} k←{s.k[0]} v←{s.v[0]}"
            by_block.setdefault(s.block, []).append(f"{kind} ({refs})")
        for block, parts in by_block.items():
            lines.append(f"  {block}: " + "; ".join(parts))
        total = sum(p.numel() for p in self.parameters())
        lines.append(f"  FLOATER parameters in all: {total:,}")
        return "\n".join(lines)


def _solver_text(dynamics: ContinuousDynamics) -> tuple[str, str, str, str]:
    """(solver, steps per position, field evaluations per position, gradients), in words."""
    tableau = dynamics.solver_tableau()
    if dynamics.adaptive:
        solver = f"{dynamics.method} (adaptive torchdiffeq method running '{tableau.name}')"
        steps = (
            f"adaptive steps (rtol={dynamics.rtol:g}, atol={dynamics.atol:g}, at most "
            f"{dynamics.max_num_steps} per position gap)"
        )
        evals = f"{tableau.stages} stages per accepted step × the steps rtol/atol ask for"
    else:
        solver = f"{dynamics.method} (fixed steps)"
        per_step = field_calls_per_step(tableau)
        if dynamics.step_size is None:
            count = dynamics.steps or 1
            steps = f"{count} step(s) per position"
        else:
            ratio = float(dynamics.delta) / float(dynamics.step_size)
            count = max(1, math.ceil(ratio * (1.0 - 1e-12)))  # as the solver runtime counts
            steps = f"{count} step(s) per position (step_size {dynamics.step_size})"
        evals = f"{count} step(s) × {per_step} stages = {count * per_step}"
    gradients = (
        "adjoint ODE (solved backwards by the same solver: memory constant in the length)"
        if dynamics.adjoint
        else "backpropagation through the solver steps"
    )
    return solver, steps, evals, gradients


def describe_dynamics(dynamics: ContinuousDynamics, d_model: int, hidden: int | None = None) -> str:
    """The FLOATER encoder a declaration gives: solver, order, Δ, steps, gradients and cost.

    **Arguments:** `dynamics`: a position flow; `d_model`, `hidden`: sizes of h.

    **Returns:** a few lines of text (`butcherflow show floater`).
    """
    hidden = d_model if hidden is None else hidden
    report = check(dynamics)
    size = FloaterPositions(dynamics, d_model, 1, hidden).num_dynamics_parameters
    d_in = d_model + (dynamics.time == "concat")
    flops = 2 * (d_in * hidden + hidden * d_model)
    delta = float(dynamics.delta)
    solver, steps, evals, gradients = _solver_text(dynamics)
    time = {"concat": "t appended to p", "embedding": "sinusoidal t added to p", "none": "no t"}
    return "\n".join(
        [
            f"FLOATER position encoder '{dynamics.name}': dp/dt = h(t, p; w), "
            f"h = Linear({d_in} → {hidden}) · tanh · Linear({hidden} → {d_model}) "
            f"({time[dynamics.time]})",
            f"  solver: {solver}, proved order {report.order} (bf.check)",
            f"  positions: token i at t = i·Δ, Δ = {dynamics.delta} = {delta:g}; no maximum length",
            f"  steps: {steps}",
            f"  field evaluations per position: {evals} (all initial values of a flow at once)",
            f"  gradients: {gradients}",
            f"  dynamics parameters (d_model={d_model}, hidden={hidden}): {size:,}, shared by all "
            "blocks a flow serves (a Seq2Seq has a source and a target flow)",
            f"  initial values: d_model = {d_model} parameters per (attention module, q/k/v); "
            "a recipe's count is shown with the recipe",
            f"  per forward: one batched solve per flow up to the batch's longest length; each "
            f"evaluation of h costs {flops:,} FLOPs per initial value; cached when no gradient "
            "is needed (generation)",
        ]
    )
