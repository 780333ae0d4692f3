"""Per-token gates: the module behind a declaration's gate parameters (`methods/parameters.py`).

The coefficient policies of the ODE Transformer (Table 10: `"exact"`, `"unit"`, `"learned"`,
`"gated"`, `"tanh"`) are declarations with parameters (`ButcherTableau.with_coefficients`); the
compiler builds a `StageGate` for the gate symbols of a declaration:

- `"gate"`: g = σ([K₁;…;Kₛ]W + β) per gate symbol (the gated RK2 block is b = (g, 1 − g),
  Eq. 25-26).
- `"softmax"`: the gate symbols are one softmax over [K₁;…;Kₛ]W + β.
- `"tanh"`: tanh([K₁;…;Kₛ]W + β) per gate symbol (Table 10's last line).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, final

import torch
from torch import Tensor, nn

from ..methods.tableau import POLICIES

GATE_KINDS = ("gate", "softmax", "tanh")
__all__ = ["GATE_KINDS", "POLICIES", "StageGate", "start_logit"]


def start_logit(kind: str, value: Any) -> float:
    """The logit at which a gate of `kind` outputs `value` (None: logit 0, the kind's default).
    A sigmoid gate's 1 − value is taken exactly when `value` is exact."""
    if value is None:
        return 0.0
    if kind == "gate":
        return math.log(float(value) / float(1 - value))
    if kind == "tanh":
        return math.atanh(float(value))
    return math.log(float(value))


@final
class StageGate(nn.Module):
    """Per-token weights computed from s stages: logits = [K₁;…;Kₛ]W + β, one per gate symbol.

    **Arguments:**

    - `d_model`: width of each stage.
    - `stages`: s, the weighted stages the gate reads.
    - `kind`: `"gate"` (a sigmoid per output), `"softmax"` (one softmax over the outputs) or
      `"tanh"`.
    - `init`: the initial value of each output (None: logit 0). W starts at 0 and β at the
      logits of these values, so the block starts at the declaration's initial values.
    - `names`: each output's name, the declaration's gate symbol (default: `0`, `1`, ...),
      as TensorBoard's gate histograms are tagged.

    `forward(*stages)` takes s tensors `(batch, length, d_model)` and returns one weight
    `(batch, length, 1)` per output.
    """

    start: torch.Tensor

    def __init__(
        self,
        d_model: int,
        stages: int,
        kind: str,
        init: Sequence[Any],
        names: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        if kind not in GATE_KINDS or stages < 1 or not init:
            raise ValueError(f"a gate reads >= 1 stage into >= 1 {GATE_KINDS} output")
        if names is not None and len(names) != len(init):
            raise ValueError(f"{len(init)} gate outputs, {len(names)} names")
        self.kind, self.stages, self.d_model, self.outputs = kind, stages, d_model, len(init)
        self.names = tuple(names) if names is not None else tuple(map(str, range(len(init))))
        self.proj = nn.Linear(stages * d_model, self.outputs)
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)
        # The starting logits live in a float64 buffer added at use in the input's dtype, so a
        # float64 block starts exactly at the declared values (a float32 bias would round them);
        # plain floats, not tensors: models are also built on the meta device.
        start = [start_logit(kind, value) for value in init]
        self.register_buffer("start", torch.tensor(start, dtype=torch.float64))

    def forward(self, *stages: Tensor) -> tuple[Tensor, ...]:
        if len(stages) != self.stages:
            raise ValueError(f"gate built for {self.stages} stages got {len(stages)}")
        logits = self.proj(torch.cat(stages, dim=-1)) + self.start.to(stages[0].dtype)
        if self.kind == "gate":
            weights = torch.sigmoid(logits)
        elif self.kind == "tanh":
            weights = torch.tanh(logits)
        else:
            weights = torch.softmax(logits, dim=-1)
        return tuple(weights[..., i : i + 1] for i in range(self.outputs))
