"""A parametrisation of the doubly stochastic matrices that training cannot leave.

`Birkhoff(r)` maps logits θ (one per permutation of r streams) to V = Σ_σ softmax(θ)_σ P_σ:
every value is a convex combination of permutation matrices, so every row and column of V sums
to 1 and its entries are non-negative, whatever θ the optimiser reaches, and ‖Vⁿ‖∞ = 1 for every
n: the stack stays zero-stable through training (a parametrisation, not a clamp or a
projection after the step). Registered with `torch.nn.utils.parametrize` on a layer's V, its
`right_inverse` starts θ at a declared doubly stochastic V (the convex weights of
`birkhoff_weights`, all positive inside the set).
"""

from __future__ import annotations

import itertools
from typing import final

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import DesignError
from ..methods import BIRKHOFF_MAX_STREAMS

__all__ = ["Birkhoff", "birkhoff_weights"]


@final
class Birkhoff(nn.Module):
    """V = Σ_σ softmax(θ)_σ P_σ over the r! permutation matrices.

    **Arguments:** `r`: the number of streams (at most `methods.BIRKHOFF_MAX_STREAMS`).

    `forward(theta)` maps `(r!,)` logits to the `(r, r)` matrix; `right_inverse(V)` the other
    way (log of the convex weights; exact to rounding for V inside the doubly stochastic set).
    """

    def __init__(self, r: int) -> None:
        super().__init__()
        if not 1 <= r <= BIRKHOFF_MAX_STREAMS:
            raise ValueError(f"Birkhoff parametrisation: 1 <= r <= {BIRKHOFF_MAX_STREAMS}, got {r}")
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


def birkhoff_weights(V: np.ndarray) -> np.ndarray:
    """Convex weights w over the r! permutation matrices (itertools order) with Σ w_σ P_σ = V,
    the smallest weight as large as possible (a linear program, HiGHS): all positive when V is
    inside the doubly stochastic set, so θ = log w starts a softmax parametrisation at V."""
    r = V.shape[0]
    perms = list(itertools.permutations(range(r)))
    n = len(perms)
    # variables: w (n) and t; maximise t subject to w ≥ t, Σ w P = V
    A_eq = np.zeros((r * r, n + 1))
    for k, sigma in enumerate(perms):
        for i, j in enumerate(sigma):
            A_eq[i * r + j, k] = 1
    A_ub = np.hstack([-np.eye(n), np.ones((n, 1))])
    # scipy.optimize costs a quarter second to import: paid by the first birkhoff layer only
    import scipy.optimize

    result = scipy.optimize.linprog(
        np.append(np.zeros(n), -1.0),
        A_ub=A_ub,
        b_ub=np.zeros(n),
        A_eq=A_eq,
        b_eq=V.reshape(-1),
        bounds=[(0, 1)] * n + [(None, None)],
        method="highs",
    )
    if not result.success:
        raise DesignError(
            "V is not doubly stochastic: no convex combination of permutation matrices is V",
            key="V",
            value=V.round(6).tolist(),
            valid="non-negative entries, rows and columns summing to 1",
        )
    return np.asarray(result.x[:n])
