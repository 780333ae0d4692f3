"""Evaluate a general linear combination on a module's own fields, per token: what `verify` runs
for streams and for coefficients that vary from token to token (the stack compiler reads a
stack's input in and out, so one layer with its streams, or per-token coefficients read at an
input, are evaluated here by the same equations)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from ..nn import Field
from .streams import Streams, tokens, untokens


def evaluate_glm(
    coefficients: Sequence[np.ndarray | Tensor],
    stage_fields: Sequence[Field],
    stage_shapes: Sequence[torch.Size],
    state: Tensor,
    streams: Streams,
) -> Tensor:
    """Yᵢ = Σⱼ Uᵢⱼ xⱼ + Σ_{l<i} Aᵢₗ Kₗ, Kᵢ = Fᵢ(Yᵢ), output = V x + B K, per token.

    **Arguments:**

    - `coefficients`: U `(T, s, r)`, A `(T, s, s)`, B `(T, r, s)`, V `(T, r, r)` (or without
      the leading T: the same at every token).
    - `stage_fields`: the field of each stage.
    - `stage_shapes`: the shape each stage value is passed to its field in.
    - `state`: the module's state; `streams`: its stream axis (None: one stream).

    **Returns:** the output, in the state's layout.
    """
    x = tokens(state, streams)
    U, A, B, V = (
        (t := torch.as_tensor(m, dtype=x.dtype, device=x.device)).expand(x.shape[0], *t.shape[-2:])
        for m in coefficients
    )
    values: list[Tensor] = []
    for i, field in enumerate(stage_fields):
        stage = torch.einsum("tj,tjd->td", U[:, i], x)
        for k, value in enumerate(values):
            stage = stage + A[:, i, k, None] * value
        result = field(stage.reshape(stage_shapes[i]))
        values.append(result.reshape(x.shape[0], -1))
    out = torch.einsum("tmj,tjd->tmd", V, x)
    if values:
        out = out + torch.einsum("tms,tsd->tmd", B, torch.stack(values, dim=1))
    return untokens(out, state, streams)
