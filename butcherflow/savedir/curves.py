"""The run's log (`log.jsonl`, one JSON object per line) and its plot (`curves.png`).

Each line has a `kind`: `"train"` (mean loss over the last `log_interval` updates, lr, gradient
norm, target tokens/s), `"valid"` (loss, nll loss, perplexity, BLEU when measured), `"skip"` (a
non-finite loss), `"resume"`, `"stop"`, and `"evaluate"` (what `butcherflow evaluate` measured:
the checkpoint, its update, the decoding and the scores, so a figure quoted from a run keeps its
record beside the training log). Losses are in bits per target token (base 2, as fairseq
prints them). The plot uses matplotlib's object API with the Agg canvas, so it never touches the
caller's pyplot backend.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .atomic import atomic_path, write_text
from .layout import LOG, CheckpointError


def append_log(path: Path, entry: Mapping[str, Any]) -> None:
    """Append one entry to `log.jsonl` (a line is small: one write, flushed at close)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def record_evaluation(save_dir: Path, update: int | None, entry: Mapping[str, Any]) -> Path:
    """Append an `"evaluate"` entry to the run's `log.jsonl`, stamped with the checkpoint's
    `update` (None for a weights file or an average) and the time in UTC.

    **Returns:** the log's path."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    append_log(save_dir / LOG, {"update": update, "kind": "evaluate", "time": stamp, **entry})
    return save_dir / LOG


def read_log(path: Path) -> list[dict[str, Any]]:
    """The entries of `log.jsonl`; a torn last line (a killed run) is skipped."""
    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CheckpointError(
            f"{path} is not the UTF-8 JSON lines a run writes ({error.reason} at byte "
            f"{error.start}); restore it, or move it aside to start a new log"
        ) from None
    entries = []
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def truncate_log(path: Path, update: int) -> None:
    """Drop the entries after `update` (written by a run that was killed after its checkpoint,
    and about to be written again by the resumed run)."""
    entries = read_log(path)
    kept = [e for e in entries if int(e.get("update") or 0) <= update]
    if len(kept) != len(entries):
        write_text(path, "".join(json.dumps(e) + "\n" for e in kept))


def plot_curves(log: Path, output: Path) -> None:
    """Draw loss (train and valid), learning rate and BLEU against updates into `output`."""
    from matplotlib.figure import Figure

    entries = read_log(log)
    train = [e for e in entries if e.get("kind") == "train"]
    valid = [e for e in entries if e.get("kind") == "valid"]
    bleu = [e for e in valid if e.get("valid_bleu") is not None]
    panels = 3 if bleu else 2
    figure = Figure(figsize=(4.5 * panels, 3.6), layout="constrained")
    axes = figure.subplots(1, panels, squeeze=False)[0]
    axes[0].plot([e["update"] for e in train], [e["loss"] for e in train], label="train")
    axes[0].plot(
        [e["update"] for e in valid], [e["valid_loss"] for e in valid], "o-", label="valid"
    )
    axes[0].set(xlabel="update", ylabel="loss (bits / target token)", title="label-smoothed loss")
    axes[0].legend()
    axes[1].plot([e["update"] for e in train], [e["lr"] for e in train])
    axes[1].set(xlabel="update", ylabel="learning rate", title="inverse-sqrt schedule")
    if bleu:
        axes[2].plot([e["update"] for e in bleu], [e["valid_bleu"] for e in bleu], "o-")
        axes[2].set(xlabel="update", ylabel="BLEU", title="valid BLEU (greedy)")
    for axis in axes:
        axis.grid(alpha=0.3)
    with atomic_path(output) as tmp:
        figure.savefig(tmp, format="png", dpi=100)
