"""Position encodings added to the token embeddings: sinusoidal and learned.

Both take explicit positions `(batch, length)` rather than a length, so that padding never shifts
positions (`token_positions` numbers the real tokens of a padded batch) and incremental decoding
passes the offset of its new tokens.
"""

from __future__ import annotations

import abc
from typing import final

import torch
from torch import Tensor, nn

from ..errors import DeclarationError


def token_positions(padding_mask: Tensor, offset: int | Tensor = 0) -> Tensor:
    """The position of each real token among the real tokens of its row, whatever the padding.

    **Arguments:**

    - `padding_mask`: `(batch, length)` bool, True at padding (left, right or anywhere).
    - `offset`: added to every position: an int, or `(batch, 1)` per row (decoding steps).

    **Returns:** `(batch, length)` LongTensor; padding gets position 0 (its output is unused).
    """
    real = (~padding_mask).long()
    positions = real.cumsum(dim=-1) - 1 + offset
    return positions.masked_fill(padding_mask, 0)


class Positions(nn.Module, abc.ABC):
    """Abstract base: `forward(positions)` maps `(batch, length)` indices to encodings."""

    d_model: int

    @abc.abstractmethod
    def forward(self, positions: Tensor) -> Tensor:
        """**Arguments:** `positions`: `(batch, length)` LongTensor, non-negative.

        **Returns:** `(batch, length, d_model)`.
        """


@final
class SinusoidalPositions(Positions):
    """Vaswani et al.'s encodings, computed on the fly for any position (no maximum length).

    PE(t, 2i) = sin(t / 10000^(2i/d_model)) and PE(t, 2i+1) = cos(t / 10000^(2i/d_model)).
    The angles are computed in float64 (float32 angles lose ~1e-3 rad at t ≈ 10⁵), then cast.

    **Arguments:**

    - `d_model`: encoding width (odd widths drop the last cosine).
    - `dtype`: dtype of the output; by default `torch.get_default_dtype()` at call time.
    """

    dtype: torch.dtype | None

    def __init__(self, d_model: int, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        if d_model < 1:
            raise DeclarationError("d_model must be positive", key="d_model", value=d_model)
        self.d_model = d_model
        self.dtype = dtype

    def forward(self, positions: Tensor) -> Tensor:
        half = (self.d_model + 1) // 2
        exponent = torch.arange(half, device=positions.device, dtype=torch.float64)
        inv_freq = torch.pow(10000.0, exponent * (-2.0 / self.d_model))
        angle = positions.to(torch.float64).unsqueeze(-1) * inv_freq
        pe = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)[..., : self.d_model]
        return pe.to(self.dtype or torch.get_default_dtype())

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}"


@final
class LearnedPositions(Positions):
    """One learned vector per position, up to `max_len` positions (BERT/fairseq style).

    **Arguments:**

    - `max_len`: number of positions; a position ≥ `max_len` raises a `ValueError`.
    - `d_model`: encoding width.
    """

    max_len: int

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        if max_len < 1:
            raise DeclarationError("max_len must be positive", key="max_len", value=max_len)
        self.max_len = max_len
        self.d_model = d_model
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=d_model**-0.5)

    def forward(self, positions: Tensor) -> Tensor:
        # A device sync, skipped under torch.compile (where the lookup fails on its own).
        if not torch.compiler.is_compiling() and positions.numel() > 0:
            low, high = int(positions.min()), int(positions.max())
            if low < 0 or high >= self.max_len:
                bad = low if low < 0 else high
                raise ValueError(
                    f"LearnedPositions(max_len={self.max_len}) got position {bad}; learned "
                    f"positions cover 0..{self.max_len - 1}: raise max_len or use "
                    "sinusoidal positions, which have no maximum"
                )
        return self.embedding(positions)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"
