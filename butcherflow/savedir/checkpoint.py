"""Checkpoints: the save dir's files, written atomically, read back without executing pickles.

A checkpoint called NAME (`checkpoint_last`, `checkpoint_best`, `checkpoint_<update>`) is three
files in the save dir:

- `NAME.safetensors`: the model weights (`safetensors.torch.save_model`, which stores a tensor
  shared by several modules once and restores every alias on load);
- `NAME.pt`: the trainer state (optimizer, GradScaler, RNG states, data position, counters), plain
  tensors and Python values only, read with `torch.load(weights_only=True)`;
- `NAME.json`: the *commit*: update, epoch, valid loss, and the size and sha256 of the other two.

Every file is written to a temporary name in the same folder and moved into place with
`os.replace`. Saving first removes NAME.json, then replaces the weights and the state, then writes
NAME.json last; so a checkpoint killed half-way has no commit and is ignored, and a commit always
describes the files beside it. A commit whose files do not match (a disk error, a truncated copy)
is reported as corrupt, naming the file. The same bytes saved under several names are hard links.

Loading a trained model from a save dir, and averaging checkpoints, is in `trained.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_model
from torch import Tensor, nn

from .atomic import atomic_path, digest, link_or_copy, write_json
from .layout import BEST, INTERVAL, LAST, CheckpointError, read_json

# --- saving --------------------------------------------------------------------------------------


def _files(save_dir: Path, name: str) -> tuple[Path, Path, Path]:
    return (
        save_dir / f"{name}.safetensors",
        save_dir / f"{name}.pt",
        save_dir / f"{name}.json",
    )


def save_checkpoint(
    save_dir: Path,
    names: Sequence[str],
    model: nn.Module,
    state: Mapping[str, Any],
    summary: Mapping[str, Any],
) -> None:
    """Write one checkpoint under every name in `names` (the first is written, others linked).

    **Arguments:**

    - `save_dir`: the run's folder.
    - `names`: e.g. `["checkpoint_12", "checkpoint_last", "checkpoint_best"]`.
    - `model`: the bare model (not the DDP or compiled wrapper).
    - `state`: the trainer state (tensors and plain Python values only).
    - `summary`: small JSON-ready facts stored in the commit (`update`, `epoch`, `valid_loss`...).
    """
    first, *others = names
    weights, trainer, commit = _files(save_dir, first)
    commit.unlink(missing_ok=True)  # from here until the new commit, `first` does not exist
    with atomic_path(weights) as tmp:
        save_model(model, str(tmp), metadata={"format": "pt"})
    with atomic_path(trainer) as tmp:
        torch.save(dict(state), tmp)
    record = {
        **summary,
        "weights": {
            "file": weights.name,
            "bytes": weights.stat().st_size,
            "sha256": digest(weights),
        },
        "state": {
            "file": trainer.name,
            "bytes": trainer.stat().st_size,
            "sha256": digest(trainer),
        },
    }
    write_json(commit, record)
    for name in others:
        w, s, c = _files(save_dir, name)
        c.unlink(missing_ok=True)
        link_or_copy(weights, w)
        link_or_copy(trainer, s)
        write_json(
            c,
            {
                **record,
                "weights": {**record["weights"], "file": w.name},
                "state": {**record["state"], "file": s.name},
            },
        )


def remove_checkpoint(save_dir: Path, name: str) -> None:
    """Delete a checkpoint, commit first (so a kill half-way leaves no half checkpoint)."""
    for path in reversed(_files(save_dir, name)):
        path.unlink(missing_ok=True)


def interval_checkpoints(save_dir: Path) -> list[tuple[int, str]]:
    """`(update, name)` of the committed `checkpoint_<update>` files, oldest first."""
    found = []
    for commit in save_dir.glob("checkpoint_*.json"):
        match = INTERVAL.match(commit.stem)
        if match:
            found.append((int(match.group(1)), commit.stem))
    return sorted(found)


def prune(save_dir: Path, keep: int) -> list[str]:
    """Keep the newest `keep` interval checkpoints (all when `keep` < 0); return those removed."""
    if keep < 0:
        return []
    found = interval_checkpoints(save_dir)
    old = found[: max(0, len(found) - keep)]
    for _, name in old:
        remove_checkpoint(save_dir, name)
    return [name for _, name in old]


# --- reading -------------------------------------------------------------------------------------


def read_commit(save_dir: Path, name: str, *, verify: bool = True) -> dict[str, Any] | None:
    """The commit of checkpoint `name`, checked against its files; None when it has no commit.

    A commit whose files are missing or differ in size or sha256 raises `CheckpointError`
    naming the file (`verify=False` reads the commit alone).
    """
    weights, trainer, commit = _files(save_dir, name)
    if not commit.is_file():
        return None
    record = read_json(commit)
    if not verify:
        return record
    for key, path in (("weights", weights), ("state", trainer)):
        expected = record.get(key)
        if not isinstance(expected, dict) or "sha256" not in expected or "bytes" not in expected:
            raise CheckpointError(f"{commit} is corrupt: no '{key}' entry")
        if not path.is_file():
            raise CheckpointError(f"{path} is missing (its commit {commit.name} exists)")
        size = path.stat().st_size
        if size != expected["bytes"]:
            raise CheckpointError(
                f"{path} is truncated or corrupt: {size} bytes, its commit says {expected['bytes']}"
            )
        if digest(path) != expected["sha256"]:
            raise CheckpointError(f"{path} is corrupt: its sha256 differs from {commit.name}")
    return record


def latest_checkpoint(save_dir: Path) -> tuple[str, dict[str, Any]] | None:
    """The committed checkpoint to resume from: the highest update, `checkpoint_last` on ties.

    `checkpoint_last` is the normal answer; the others matter when a save was killed after
    removing its commit (then `checkpoint_last` is ignored, with the files left for the next
    save to replace). Only the chosen checkpoint's files are hashed.
    """
    names = [LAST, BEST] + [name for _, name in interval_checkpoints(save_dir)]
    commits = []
    for name in names:
        record = read_commit(save_dir, name, verify=False)
        if record is not None:
            commits.append((int(record.get("update", -1)), name == LAST, name))
    if not commits:
        return None
    name = max(commits)[2]
    record = read_commit(save_dir, name)
    assert record is not None
    return name, record


def load_state(path: Path) -> dict[str, Any]:
    """The trainer state in `path`, read with `weights_only=True` (no pickled code runs)."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises RuntimeError, UnpicklingError, EOFError, ...
        raise CheckpointError(f"{path} is corrupt or truncated: {error}") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} is corrupt: expected a dict of trainer state")
    return state


def load_weights(path: Path) -> dict[str, Tensor]:
    """The tensors of a `.safetensors` file (a clear error naming the file when unreadable)."""
    if not path.is_file():
        raise CheckpointError(f"{path} does not exist")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path} is corrupt or truncated: {error}") from None


def assign_weights(model: nn.Module, tensors: Mapping[str, Tensor], source: str | Path) -> None:
    """Copy `tensors` into `model`, as `safetensors.torch.load_model` does with a file.

    A tensor shared by several modules is stored once (under one of its names): the other names
    are aliases and count as loaded. Missing, unexpected or mis-shaped tensors mean the weights
    belong to another architecture; the error names the first such key.
    """
    own = model.state_dict()
    by_storage: dict[tuple[int, int], list[str]] = {}
    for key, tensor in own.items():
        by_storage.setdefault((tensor.untyped_storage().data_ptr(), tensor.numel()), []).append(key)
    aliases = {k: group for group in by_storage.values() for k in group}
    for key, tensor in tensors.items():
        if key not in own:
            raise CheckpointError(
                f"{source}: tensor '{key}' is not in this model (trained with another recipe "
                "or other sizes?)"
            )
        if tuple(tensor.shape) != tuple(own[key].shape):
            raise CheckpointError(
                f"{source}: tensor '{key}' has shape {tuple(tensor.shape)}, the model expects "
                f"{tuple(own[key].shape)} (trained with other sizes?)"
            )
    for key in own:
        if not any(alias in tensors for alias in aliases[key]):
            raise CheckpointError(
                f"{source}: no tensor '{key}' (trained with another recipe or other sizes?)"
            )
    model.load_state_dict({k: tensors[k] for k in tensors}, strict=False)
