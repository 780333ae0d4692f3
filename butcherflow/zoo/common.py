"""What every audited library's factories share: sizes, the seed, random weights and states."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..extraction.streams import Streams

D_MODEL, HEADS, DIM_HEAD = 16, 2, 8
BATCH, LENGTH = 2, 5
STREAMS = 4
FOLDED: Streams = ("batch", STREAMS)  # both libraries fold the streams into the batch, (b s)
SEED = 0


def randomise(module: nn.Module, skip: tuple[str, ...] = (), scale: float = 0.5) -> nn.Module:
    """Every floating parameter of `module` (float64) drawn from N(0, scale²), but those whose
    name contains one of `skip`; the module in eval mode."""
    generator = torch.Generator().manual_seed(SEED)
    module = module.to(torch.float64).eval()
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if any(s in name for s in skip):
                continue
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            parameter.copy_(noise * scale)
    return module


def _state(*shape: int) -> Tensor:
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(SEED + 1), dtype=torch.float64
    )


# x-transformers -------------------------------------------------------------------------------
