"""TensorBoard curves (`--tensorboard DIR`): the scalars of `log.jsonl`, where researchers look.

Every `train` and `valid` entry the loop appends to `log.jsonl` is also written, at its update, to
a `torch.utils.tensorboard.SummaryWriter` (the `tensorboard` package, the optional extra
`butcherflow[tensorboard]`). Tags (`scalars`):

- `train/loss`, `train/lr`, `train/gnorm`, `train/tokens_per_s`, `train/train_tokens`: the
  `train` lines (loss in bits per target token, as in the log);
- `valid/loss`, `valid/nll_loss`, `valid/ppl`, `valid/bleu` (with `--validate-bleu`),
  `valid/best_loss`: the validations;
- `streams/<layer>/spectral_radius` and `streams/<layer>/max_power_norm` for each layer of a
  general linear stack (hyper-connections, mHC, DenseFormer: the learned V's spectral radius and
  its largest ‖Vⁿ‖₂), and `streams/max_spectral_radius` over the layers, at each validation.

Pictures (`pictures`, at each validation; `train/pictures.py`): `gates/<module>/<symbol>`
histograms of every per-token gate value, `streams/<stack>_layer_<m>/V` histograms of
per-token V entries (dynamic coefficients), and a `streams/<stack>` image of each layer's learned
U, B and V.

A resumed run purges the events after the update it resumes from (a run interrupted after its last
checkpoint had logged updates that are trained again), as its `log.jsonl` curves do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ButcherflowError
from .pictures import Learned, mixing_figure

EXTRA = "tensorboard"  # the optional dependency group (pyproject.toml) that installs the writer
CURVES = ("train", "valid")  # the kinds of log entries that are curves


def require_tensorboard() -> Any:
    """The `SummaryWriter` class; a one-line `ButcherflowError` naming the extra when the
    `tensorboard` package is missing."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ButcherflowError(
            f"--tensorboard needs the `tensorboard` package: pip install 'butcherflow[{EXTRA}]'"
        ) from None
    return SummaryWriter


def scalars(entry: Mapping[str, Any]) -> dict[str, float]:
    """The TensorBoard scalars of one `log.jsonl` entry (module docstring), tag -> value.

    **Arguments:**

    - `entry`: a log entry (`kind`, `update`, and its numbers).

    **Returns:** `{}` for entries that are no curve (`start`, `resume`, `skip`, `stop`, ...).
    """
    kind = entry.get("kind")
    if kind not in CURVES:
        return {}
    out: dict[str, float] = {}
    for key, value in entry.items():
        if key in ("kind", "update", "epoch") or isinstance(value, bool):
            continue
        if isinstance(value, (int, float)) and math.isfinite(value):
            name = key.removeprefix("valid_") if kind == "valid" else key
            out[f"{kind}/{name}"] = float(value)
    if "best_valid_loss" in entry and kind == "valid":
        out.pop("valid/best_valid_loss", None)
        out["valid/best_loss"] = float(entry["best_valid_loss"])
    streams = entry.get("streams") or []
    for stream in streams:
        layer = str(stream["where"]).replace(" ", "_")  # "blocks.0_layer_2"
        out[f"streams/{layer}/spectral_radius"] = float(stream["radius"])
        out[f"streams/{layer}/max_power_norm"] = float(stream["worst"])
    if streams:
        out["streams/max_spectral_radius"] = max(float(s["radius"]) for s in streams)
    return out


class TensorBoard:
    """A `SummaryWriter` fed with the log's entries.

    **Arguments:**

    - `folder`: the event files' folder (`--tensorboard DIR`), created if needed.
    - `resumed_at`: the update a resumed run goes on from (events after it are purged), or None.
    """

    def __init__(self, folder: Path, resumed_at: int | None = None) -> None:
        writer = require_tensorboard()
        purge = None if resumed_at is None else resumed_at + 1
        self.writer = writer(log_dir=str(folder), purge_step=purge)

    def write(self, entry: Mapping[str, Any]) -> None:
        """Add the scalars of a log entry at its update."""
        for tag, value in scalars(entry).items():
            self.writer.add_scalar(tag, value, global_step=int(entry["update"]))

    def pictures(self, learned: Learned, update: int) -> None:
        """Add the histograms and mixing images of `learned` at `update` (module docstring)."""
        for tag, values in learned.histograms.items():
            if values.size:
                self.writer.add_histogram(tag, values, global_step=update)
        for stack, layers in learned.mixing.items():
            figure = mixing_figure(stack, layers)
            self.writer.add_figure(f"streams/{stack}", figure, global_step=update)

    def close(self) -> None:
        """Flush the event file and close it."""
        self.writer.close()
