"""Stage "train": the training loop, from a recipe and a corpus to a save dir.

config.py (`TrainConfig`: fairseq's names, validated once; the recipe actually trained),
loop.py (the loop), run.py (what the loop works with, and how a run starts), step.py (one
update: schedule, loss, accumulation, clipping, validation), resume.py (opening a save dir, the
trainer state, resuming), distributed.py (DDP glue). The data it reads is `butcherflow.data`;
the files it writes are `butcherflow.savedir`.
"""

from .config import TrainConfig
from .loop import TrainingError, train

__all__ = ["TrainConfig", "TrainingError", "train"]
