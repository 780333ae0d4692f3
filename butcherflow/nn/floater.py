"""FLOATER position encodings (Liu et al., 2020): a neural ODE over positions.

A flow p(t) solves dp/dt = h(t, p; w) from a learned initial value p(0); token i reads p(i·Δ).
In the paper's compatible form (its section 3.3) the flow does not replace the Transformer's
sinusoidal input encoding: it models position-aware *biases* on the query/key/value projections
of the attention modules. The dynamics h is shared by every module a flow serves; each
(module, q/k/v) has its own initial value. Zero dynamics and zero initial values give zero biases,
hence exactly the sinusoidal Transformer: a FLOATER model can start from a trained Transformer.

`FloaterPositions` solves *all* the initial values of a flow in one batched solve and returns
the per-position table; the model gathers each token's row by its position
(`token_positions`), so padding never shifts positions and there is no maximum length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

import torch
from torch import Tensor, nn

from ..errors import DeclarationError
from .ode import prepare, solve

if TYPE_CHECKING:  # nn stays a leaf at run time: the declaration is read through attributes
    from ..methods import ContinuousDynamics

# Cached tables cover a power of two of positions (at least this many), so that token-by-token
# decoding re-solves O(log L) times instead of once per token.
MIN_COVER = 64
TIME = ("concat", "embedding", "none")


@final
class FloaterDynamics(nn.Module):
    """h(t, p; w): the two-layer MLP that drives a FLOATER flow, d_model → hidden → d_model.

    It sees t as the paper's h does (`time="concat"`: t is appended to p, as the input column
    `time_weight`; `"embedding"`: the sinusoidal encoding of the fractional token index t/Δ is
    added to p; `"none"`: autonomous). tanh keeps the field smooth, so fixed-step solvers stay
    accurate. The output layer starts at zero: h ≡ 0, so a fresh model computes exactly the
    Transformer it extends (the paper's "initialize the dynamical model with small values",
    taken to its exact limit); the output layer's own gradient is not zero, so training moves
    it from the first step.

    **Arguments:**

    - `d_model`: width of p.
    - `hidden`: width of the hidden layer.
    - `time`: `"concat"`, `"embedding"` or `"none"` (the declaration's `time`).
    - `delta`: Δ, the time between neighbouring positions (used by `"embedding"`).
    """

    d_model: int
    time: str
    delta: float

    def __init__(
        self, d_model: int, hidden: int, *, time: str = "concat", delta: float = 0.01
    ) -> None:
        super().__init__()
        for key, size in (("d_model", d_model), ("floater_hidden", hidden)):
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise DeclarationError(f"{key} must be a positive integer", key=key, value=size)
        if time not in TIME:
            raise DeclarationError(
                "unknown time dependence", key="time", value=time, valid=f"one of {list(TIME)}"
            )
        self.d_model, self.time, self.delta = d_model, time, float(delta)
        # Linear([p; t]) kept as Linear(p) + t·w_t: no concatenation at every evaluation
        self.inner = nn.Linear(d_model, hidden)
        if time == "concat":
            bound = (d_model + 1) ** -0.5  # nn.Linear's initialisation for d_model + 1 inputs
            with torch.no_grad():
                self.inner.weight.uniform_(-bound, bound)
                self.inner.bias.uniform_(-bound, bound)
            self.time_weight = nn.Parameter(torch.empty(hidden).uniform_(-bound, bound))
        self.outer = nn.Linear(hidden, d_model)
        self.zero_output()

    def zero_output(self) -> None:
        """Zero the output layer: h ≡ 0 (the flow stays at its initial value)."""
        with torch.no_grad():
            self.outer.weight.zero_()
            self.outer.bias.zero_()

    def forward(self, t: Tensor, p: Tensor) -> Tensor:
        """**Arguments:** `t`: a 0-d time; `p`: `(n_values, d_model)`.

        **Returns:** dp/dt, `(n_values, d_model)`.
        """
        if self.time == "concat":
            h = self.inner(p) + t.to(p) * self.time_weight
        elif self.time == "embedding":
            half = (self.d_model + 1) // 2
            exponent = torch.arange(half, device=p.device, dtype=p.dtype)
            angle = (t.to(p) / self.delta) * torch.pow(10000.0, exponent * (-2.0 / self.d_model))
            pe = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten()[: self.d_model]
            h = self.inner(p + pe)
        else:
            h = self.inner(p)
        out: Tensor = self.outer(torch.tanh(h))
        return out

    def extra_repr(self) -> str:
        return f"time={self.time!r}"


@final
class FloaterPositions(nn.Module):
    """One FLOATER flow: shared dynamics and one learned initial value per (module, q/k/v).

    `forward(length)` solves dp/dt = h(t, p) for every initial value at once, at the times
    t_i = i·Δ, i = 0..length−1, and returns the table of biases. Δ defaults to 0.01, the paper's
    choice: positions then live in [0, ~L/100], where a smooth MLP flow changes little from one
    token to the next, so a fixed-step solver is accurate with one step per position and the
    field sees inputs of order one however long the sequence is. A longer sequence just
    integrates further: there is no maximum length, and with a fixed-step solver the biases of a
    prefix do not depend on how far the solve went.

    Cost control: the model calls this once per forward per flow and shares the table with
    every block. When no gradient is needed (under `torch.no_grad()`/`inference_mode`, or with
    frozen parameters) the table is cached and reused, keyed by the device, dtype, inference
    mode and, for every parameter of the flow, its `_version` and `data_ptr`; a hit is then
    confirmed by comparing the parameters with a snapshot taken at the solve (writes through
    `.data` bypass the version counter). An optimizer step, `load_state_dict`, an in-place edit
    or a `.to()` therefore always re-solves: a stale table is impossible. With gradients, every
    call solves afresh (a cached graph would be freed by the first backward). Cached tables
    cover a power of two (≥ 64) of positions; a longer request re-solves.

    **Arguments:**

    - `dynamics`: a `ContinuousDynamics` with `grid = "positions"` (solver, Δ, steps, adjoint).
    - `d_model`: width of the biases.
    - `n_values`: how many initial values (biases) the flow serves.
    - `hidden`: hidden width of h (default `d_model`).
    """

    declaration: ContinuousDynamics
    d_model: int
    n_values: int
    delta: float

    def __init__(
        self, dynamics: ContinuousDynamics, d_model: int, n_values: int, hidden: int | None = None
    ) -> None:
        super().__init__()
        if getattr(dynamics, "family", None) != "continuous" or dynamics.grid != "positions":
            raise DeclarationError(
                "FLOATER needs continuous dynamics over positions",
                key="floater",
                value=getattr(dynamics, "name", dynamics),
                valid="a ContinuousDynamics with grid = 'positions' (e.g. the catalog's 'floater')",
            )
        if isinstance(n_values, bool) or not isinstance(n_values, int) or n_values < 1:
            raise DeclarationError(
                "a flow serves at least one bias", key="n_values", value=n_values
            )
        self.declaration = dynamics
        prepare(dynamics)
        self.d_model, self.n_values = d_model, n_values
        self.delta = float(dynamics.delta)
        self.dynamics = FloaterDynamics(
            d_model, d_model if hidden is None else hidden, time=dynamics.time, delta=self.delta
        )
        self.initial = nn.Parameter(torch.zeros(n_values, d_model))
        self._cache: tuple[tuple[object, ...], list[Tensor], Tensor] | None = None

    def reset_to_transformer(self) -> None:
        """Zero the initial values and h's output layer: every bias is then exactly zero."""
        self.dynamics.zero_output()
        with torch.no_grad():
            self.initial.zero_()

    @property
    def num_dynamics_parameters(self) -> int:
        """Parameters of h (shared by every bias of the flow)."""
        return sum(p.numel() for p in self.dynamics.parameters())

    @property
    def num_initial_parameters(self) -> int:
        """Parameters of the initial values: `n_values × d_model`."""
        return self.initial.numel()

    def forward(self, length: int) -> Tensor:
        """The biases at positions 0..length−1.

        **Arguments:** `length`: positions needed, ≥ 1 (the longest in the batch).

        **Returns:** `(n_values, length, d_model)`; row `[j, i]` is bias j at position i.
        """
        if isinstance(length, bool) or not isinstance(length, (int, torch.SymInt)) or length < 1:
            raise ValueError(f"FloaterPositions: length must be a positive int, got {length!r}")
        params = list(self.parameters())
        if torch.is_grad_enabled() and any(p.requires_grad for p in params):
            if torch.compiler.is_compiling() and not self.declaration.adaptive:
                # the solve is unrolled into the graph: solve a power of two of positions, so
                # one graph serves every length up to it (fixed steps: a prefix's biases do not
                # depend on how far the solve went)
                cover = 2
                while cover < length:
                    cover *= 2
                return self._solve(cover)[:, :length]
            return self._solve(length)
        key = (
            self.initial.device,
            self.initial.dtype,
            torch.is_inference_mode_enabled(),
            tuple((p._version, p.data_ptr()) for p in params if not p.is_inference()),
        )
        cached = self._cache
        if (
            cached is not None
            and cached[0] == key
            and cached[2].shape[1] >= length
            and all(torch.equal(p, s) for p, s in zip(params, cached[1], strict=True))
        ):
            return cached[2][:, :length]
        self._cache = None
        cover = max(MIN_COVER, 1 << (length - 1).bit_length())
        table = self._solve(cover)
        self._cache = (key, [p.detach().clone() for p in params], table)
        return table[:, :length]

    def _solve(self, length: int) -> Tensor:
        """One batched solve of every initial value: `(n_values, length, d_model)`.

        The solver runtime refuses a non-finite solution with an error (never a silent NaN);
        a single position is solved over two, since a time grid needs a start and an end.
        """
        y0 = self.initial
        times = torch.arange(max(length, 2), device=y0.device, dtype=y0.dtype) * self.delta
        adjoint = tuple(self.dynamics.parameters()) if self.declaration.adjoint else None
        path = solve(self.dynamics, y0, times, self.declaration, adjoint_params=adjoint)
        return path[:length].transpose(0, 1)

    def extra_repr(self) -> str:
        d = self.declaration
        return (
            f"n_values={self.n_values}, d_model={self.d_model}, method={d.method!r}, "
            f"delta={self.delta:g}, adjoint={d.adjoint}"
        )
