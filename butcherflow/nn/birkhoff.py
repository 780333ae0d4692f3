"""A parametrisation of the doubly stochastic matrices that training cannot leave.

`Birkhoff(r)` maps logits θ (one per permutation of r streams) to V = Σ_σ softmax(θ)_σ P_σ:
every value is a convex combination of permutation matrices, so every row and column of V sums
to 1 and its entries are non-negative, whatever θ the optimiser reaches, and ‖Vⁿ‖∞ = 1 for every
n: the stack stays zero-stable through training (a parametrisation, not a clamp or a
projection after the step). Registered with `torch.nn.utils.parametrize` on a layer's V, its
`right_inverse` starts θ at a declared doubly stochastic V (the convex weights of
`design.depth.birkhoff_weights`, all positive inside the set).
"""

from __future__ import annotations

import itertools
from typing import final

import torch
from torch import Tensor, nn

from ..design.depth import MAX_STREAMS, birkhoff_weights

__all__ = ["MAX_STREAMS", "Birkhoff"]


@final
class Birkhoff(nn.Module):
    """V = Σ_σ softmax(θ)_σ P_σ over the r! permutation matrices.

    **Arguments:** `r`: the number of streams (at most `design.depth.MAX_STREAMS`).

    `forward(theta)` maps `(r!,)` logits to the `(r, r)` matrix; `right_inverse(V)` the other
    way (log of the convex weights; exact to rounding for V inside the doubly stochastic set).
    """

    def __init__(self, r: int) -> None:
        super().__init__()
        if not 1 <= r <= MAX_STREAMS:
            raise ValueError(f"Birkhoff parametrisation: 1 <= r <= {MAX_STREAMS}, got {r}")
        eye = torch.eye(r, dtype=torch.float64)
        perms = [eye[list(sigma)] for sigma in itertools.permutations(range(r))]
        self.count = len(perms)
        self.register_buffer("perms", torch.stack(perms), persistent=False)

    def forward(self, theta: Tensor) -> Tensor:
        weights = torch.softmax(theta, dim=-1)
        return torch.einsum("k,kij->ij", weights, self.perms.to(theta.dtype))

    def right_inverse(self, V: Tensor) -> Tensor:
        if V.is_meta:  # counting parameters without memory: the shape is all there is
            return torch.empty(self.count, dtype=V.dtype, device=V.device)
        weights = birkhoff_weights(V.detach().to(torch.float64).cpu().numpy())
        floor = torch.finfo(torch.float64).tiny
        return torch.log(torch.as_tensor(weights, dtype=V.dtype).clamp_min(floor))
