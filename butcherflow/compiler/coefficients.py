"""Coefficient policies for the output weights bᵢ of a compiled block (ODE Transformer Table 10).

- `"exact"`: the declared weights, folded into the graph as constants.
- `"unit"`: every bᵢ = 1 (the paper's γᵢ = 1; as an integrator this is order 0, see `bf.check`).
- `"learned"`: one scalar per bᵢ, initialised from the declaration.
- `"gated"`: per-token gates from the stages themselves: g = σ([K₁;K₂]W + b) and weights
  (g, 1 − g) for two stages (Eq. 25-26); a softmax over stages for more.
- `"tanh"`: per-token weights tanh([K₁;…;Kₛ]W + b), one per stage (Table 10's last line).
"""

from __future__ import annotations

import math
from typing import final

import torch
from torch import Tensor, nn

POLICIES = ("exact", "unit", "learned", "gated", "tanh")


@final
class StageGate(nn.Module):
    """Per-token weights of s stages computed from the stages.

    **Arguments:**

    - `d_model`: width of each stage.
    - `stages`: s ≥ 2.
    - `kind`: `"gated"` (sigmoid for two stages, softmax otherwise) or `"tanh"`.
    - `init`: the declared weights bᵢ; W starts at 0 and the bias is set so that the gate
      starts exactly at them where it can (positive weights summing to 1 for `"gated"`, |bᵢ| < 1
      for `"tanh"`), so a gated RK2 block starts as Heun's method.

    `forward(*stages)` takes s tensors `(batch, length, d_model)` and returns s weights
    `(batch, length, 1)`.
    """

    start: torch.Tensor

    def __init__(
        self, d_model: int, stages: int, kind: str, init: tuple[float, ...] | None = None
    ) -> None:
        super().__init__()
        if stages < 2:
            raise ValueError(f"a gate needs at least two weighted stages, got {stages}")
        self.kind = kind
        self.stages = stages
        self.d_model = d_model
        outputs = 1 if kind == "gated" and stages == 2 else stages
        self.proj = nn.Linear(stages * d_model, outputs)
        nn.init.zeros_(self.proj.weight)
        nn.init.zeros_(self.proj.bias)
        # The starting logits live in a float64 buffer added at use in the input's dtype, so a
        # float64 block starts exactly at the declared weights (a float32 bias would round them).
        self.register_buffer("start", self._start_logits(init, outputs))

    def _start_logits(self, weights: tuple[float, ...] | None, outputs: int) -> torch.Tensor:
        # Plain floats, not tensors: models are also built on the meta device (parameter counts).
        start = [0.0] * outputs
        if weights is not None:
            if self.kind == "tanh":
                if all(abs(w) < 1 for w in weights):
                    start = [math.atanh(w) for w in weights]
            elif all(w > 0 for w in weights) and abs(sum(weights) - 1.0) < 1e-12:
                if self.stages == 2:
                    start = [math.log(weights[0] / weights[1])]
                else:
                    start = [math.log(w) for w in weights]
        return torch.tensor(start, dtype=torch.float64)

    def forward(self, *stages: Tensor) -> tuple[Tensor, ...]:
        if len(stages) != self.stages:
            raise ValueError(f"gate built for {self.stages} stages got {len(stages)}")
        logits = self.proj(torch.cat(stages, dim=-1)) + self.start.to(stages[0].dtype)
        if self.kind == "tanh":
            weights = torch.tanh(logits)
        elif self.stages == 2:
            g = torch.sigmoid(logits)
            return g, 1.0 - g
        else:
            weights = torch.softmax(logits, dim=-1)
        return tuple(weights[..., i : i + 1] for i in range(self.stages))
