"""Stage "train": the training loop, from a recipe and a corpus to a save dir.

config.py (`TrainConfig`: fairseq's names, validated once; the recipe actually trained),
loop.py (the loop), run.py (what the loop works with, and how a run starts), step.py (one
update: schedule, loss, accumulation, clipping, validation), resume.py (opening a save dir, the
trainer state, resuming), interrupts.py (Ctrl-C and SIGTERM: commit, then exit 130 / 143),
distributed.py (DDP glue). The data it reads is `butcherflow.data`;
the files it writes are `butcherflow.savedir`.
"""

from .config import TrainConfig
from .interrupts import Interrupted
from .loop import TrainingError, train

__all__ = ["Interrupted", "TrainConfig", "TrainingError", "train"]
