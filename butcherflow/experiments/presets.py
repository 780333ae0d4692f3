"""The size presets every experiment trains at (`--sizes NAME`).

Documented here and nowhere else:

- `small` (the CPU scale, default): `make demo`'s settings, tuned for a few CPU minutes per run:
  d_model 128, 4 heads, d_ffn 512, 2 + 2 layers, joint BPE vocabulary 4000, max_tokens 2500,
  lr 3e-3 (inverse sqrt), 150 warmup updates, dropout 0, label smoothing 0.1.
- `base` (the GPU recipe): transformer-base sizes: d_model 512, 8 heads, d_ffn 2048, 6 + 6
  layers, vocabulary 8000, max_tokens 8192, lr 7e-4, 1000 warmup updates, dropout 0.3 (the corpus
  is small, ~29k verse pairs), label smoothing 0.1. An untuned starting point, not a tuned one.
- `tiny`: d_model 16, 1 + 1 layers, vocabulary 200: a smoke test of the pipeline (tests and
  `--data tests/data/tiny`), never a result.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..errors import DeclarationError
from .spec import Preset

PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        "small": Preset(
            name="small",
            description="CPU scale: make demo's sizes (128/4/512, 2+2 layers, vocabulary 4000)",
            d_model=128,
            n_heads=4,
            d_ffn=512,
            encoder_layers=2,
            decoder_layers=2,
            vocab_size=4000,
            max_tokens=2500,
            lr=3e-3,
            warmup_updates=150,
            dropout=0.0,
        ),
        "base": Preset(
            name="base",
            description="GPU recipe: transformer-base sizes (512/8/2048, 6+6 layers, vocab 8000)",
            d_model=512,
            n_heads=8,
            d_ffn=2048,
            encoder_layers=6,
            decoder_layers=6,
            vocab_size=8000,
            max_tokens=8192,
            lr=7e-4,
            warmup_updates=1000,
            dropout=0.3,
        ),
        "tiny": Preset(
            name="tiny",
            description="smoke test of the pipeline (16/2/32, 1+1 layers, vocabulary 200)",
            d_model=16,
            n_heads=2,
            d_ffn=32,
            encoder_layers=1,
            decoder_layers=1,
            vocab_size=200,
            max_tokens=2048,
            lr=2e-3,
            warmup_updates=2,
            dropout=0.0,
        ),
    }
)


def get_preset(name: str) -> Preset:
    """The size preset called `name` (`--sizes`); a `DeclarationError` for an unknown name."""
    if name not in PRESETS:
        raise DeclarationError(
            "unknown size preset", key="--sizes", value=name, valid="one of " + ", ".join(PRESETS)
        )
    return PRESETS[name]
