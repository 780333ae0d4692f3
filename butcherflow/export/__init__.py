"""Stage "export": a trained run as a Hugging Face folder that transformers loads.

folder.py (`export_run`: the folder, written to a temporary folder, checked against the trained
model and renamed into place), hf.py (the `PreTrainedModel` classes the folder loads: imported only
where transformers is wanted), tokenizer.py (the sentencepiece vocabulary as a fast tokenizer with
the same ids) and card.py (the model card). transformers is an optional dependency (the `hf`
extra), imported only when a folder is written or loaded.
"""

from .folder import EXTRA, Exported, ExportError, export_run, require_transformers

__all__ = ["EXTRA", "ExportError", "Exported", "export_run", "require_transformers"]
