"""Stage "export": a trained run as a Hugging Face folder that transformers loads.

folder.py (`export_run`: the folder, written to a temporary folder, checked against the trained
model and renamed into place), hf.py (the `PreTrainedModel` classes the folder loads: imported only
where transformers is wanted), tokenizer.py (the sentencepiece vocabulary as a fast tokenizer with
the same ids) and card.py (the model card). transformers is an optional dependency (the `hf`
extra), imported only when a folder is written or loaded.

The names below load `folder` on first use (PEP 562): a reload by transformers imports `hf`
through this package and needs none of what writing a folder does (the save dir, the decoders'
length limits in generate/decoding.py, the training stage behind them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .folder import EXTRA, Exported, ExportError, export_run, require_transformers

__all__ = ["EXTRA", "ExportError", "Exported", "export_run", "require_transformers"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'butcherflow.export' has no attribute {name!r}")
    value = getattr(importlib.import_module(".folder", __name__), name)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
