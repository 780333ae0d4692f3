"""The position-wise feed-forward network of the Transformer."""

from __future__ import annotations

from typing import Any, final

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import DeclarationError

ACTIVATIONS = ("relu", "gelu")


def relu(h: Tensor) -> Tensor:
    """`F.relu`; under `torch.compile`, `_ReLU`, whose backward reads the output that the next
    linear layer keeps for its weight gradient anyway. Inductor otherwise stores a boolean
    mask for relu's backward, and on a CPU (torch 2.13) that store is not vectorised: 5 ms per
    (512, 1024) forward, against 0.2 ms for the ReLU itself (docs/benchmarks.md, streams)."""
    if torch.compiler.is_compiling():
        out: Tensor = _ReLU.apply(h)
        return out
    return F.relu(h)


@final
class ReLU(nn.Module):
    """`relu` as a module, for sequential stacks (the benchmarks' reference GPT)."""

    def forward(self, h: Tensor) -> Tensor:
        return relu(h)


@final
class _ReLU(torch.autograd.Function):
    """max(h, 0) with the gradient g · sign(y) of its output y ≥ 0: relu's wherever g is
    finite; no boolean intermediate for the partitioner to save (`torch.where(y > 0, g, 0)`
    would be moved to the forward as a mask)."""

    @staticmethod
    def forward(ctx: Any, h: Tensor) -> Tensor:
        out = torch.relu(h)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        (out,) = ctx.saved_tensors
        return grad * torch.sign(out)


@final
class FeedForward(nn.Module):
    """`W₂ dropout(act(W₁x + b₁)) + b₂`, as in `torch.nn.TransformerEncoderLayer`.

    **Arguments:**

    - `d_model`: input and output width.
    - `d_ffn`: hidden width.
    - `dropout`: dropout after the activation (training only).
    - `activation`: `"relu"` or `"gelu"` (exact, not the tanh approximation).
    """

    activation: str

    def __init__(
        self, d_model: int, d_ffn: int, dropout: float = 0.0, activation: str = "relu"
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise DeclarationError(
                "unknown activation",
                key="activation",
                value=activation,
                valid=f"one of {', '.join(ACTIVATIONS)}",
            )
        if d_ffn < 1:
            raise DeclarationError("d_ffn must be positive", key="d_ffn", value=d_ffn)
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ffn)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ffn, d_model)

    def forward(self, x: Tensor) -> Tensor:
        """**Arguments:** `x`: `(batch, length, d_model)`. **Returns:** the same shape."""
        h = self.linear1(x)
        h = relu(h) if self.activation == "relu" else F.gelu(h)
        return self.linear2(self.dropout(h))

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}"
