"""Stage "save dirs": the files a training run leaves behind, and the trained model they hold.

layout.py (the file names, `recipe.toml`, `config.json`, `CheckpointError`), atomic.py
(every file is written atomically), checkpoint.py (committed checkpoints: weights, trainer state,
commit), curves.py (`log.jsonl` and `curves.png`), trained.py (`load_trained`,
`load_model`, `load_language_model`, averaging).
Generation and the experiments read trained models through this stage, never through the loop.
"""

from .checkpoint import Found, committed, latest_checkpoint, read_commit
from .curves import read_log, record_evaluation
from .layout import CheckpointError, read_config, read_recipe, run_corpus, run_sizes
from .trained import (
    average_checkpoints,
    checkpoint_paths,
    checkpoint_update,
    load_language_model,
    load_model,
    load_trained,
    run_task,
    save_weights,
)

__all__ = [
    "CheckpointError",
    "Found",
    "average_checkpoints",
    "checkpoint_paths",
    "checkpoint_update",
    "committed",
    "latest_checkpoint",
    "load_language_model",
    "load_model",
    "load_trained",
    "read_commit",
    "read_config",
    "read_log",
    "read_recipe",
    "record_evaluation",
    "run_corpus",
    "run_sizes",
    "run_task",
    "save_weights",
]
