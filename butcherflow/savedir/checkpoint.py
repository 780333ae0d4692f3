"""Checkpoints: the save dir's files, written atomically, read back without executing pickles.

A checkpoint called NAME (`checkpoint_last`, `checkpoint_best`, `checkpoint_<update>`) is three
files in the save dir:

- `NAME.safetensors`: the model weights (`safetensors.torch.save_model`, which stores a tensor
  shared by several modules once and restores every alias on load);
- `NAME.pt`: the trainer state (optimizer, GradScaler, RNG states, data position, counters), plain
  tensors and Python values only, read with `torch.load(weights_only=True)`;
- `NAME.json`: the *commit*: update, epoch, valid loss, and the size and sha256 of the other two.

Every file is written to a temporary name in the same folder and moved into place with
`os.replace`. Replacing a committed checkpoint first keeps its current version as
`NAME.previous` (hard links and a commit of their own), then removes NAME.json, replaces the
weights and the state, writes NAME.json last, and only then removes `NAME.previous`. So at every
instant NAME or NAME.previous is a complete commit: a save killed half-way leaves the old version
readable (`committed` falls back to it), and a commit always describes the files beside it. A
commit whose files do not match (a disk error, a truncated copy) is reported as corrupt, naming
the file; `latest_checkpoint` then resumes from the newest intact one and `set_aside` keeps the
corrupt files under another name. The same bytes saved under several names are hard links.

Loading a trained model from a save dir, and averaging checkpoints, is in `trained.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file, save_model
from torch import Tensor, nn

from .atomic import atomic_path, digest, link_or_copy, write_json
from .layout import BEST, INTERVAL, LAST, CheckpointError, read_json

PREVIOUS = ".previous"  # NAME.previous: NAME's last version while a new one is written
CORRUPT = ".corrupt-"  # NAME.corrupt-K: a corrupt checkpoint, set aside (never deleted)

# --- saving --------------------------------------------------------------------------------------


def _files(save_dir: Path, name: str) -> tuple[Path, Path, Path]:
    return (
        save_dir / f"{name}.safetensors",
        save_dir / f"{name}.pt",
        save_dir / f"{name}.json",
    )


def _described(path: Path) -> dict[str, Any]:
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": digest(path)}


def save_checkpoint(
    save_dir: Path,
    names: Sequence[str],
    model: nn.Module | Mapping[str, Tensor],
    state: Mapping[str, Any],
    summary: Mapping[str, Any],
) -> None:
    """Write one checkpoint under every name in `names` (the first is written, others linked).

    A name that holds a committed checkpoint keeps it as `NAME.previous` until the new commit is
    written (see the module docstring): a kill at any instant loses no committed checkpoint.

    **Arguments:**

    - `save_dir`: the run's folder.
    - `names`: e.g. `["checkpoint_12", "checkpoint_last", "checkpoint_best"]`.
    - `model`: the bare model (not the DDP or compiled wrapper), or its full state dict (a
      sharded model's, gathered: `train.parallelize.full_state`; a tensor held under several
      names is written once, as `save_model` does).
    - `state`: the trainer state (tensors and plain Python values only).
    - `summary`: small JSON-ready facts stored in the commit (`update`, `epoch`, `valid_loss`...).
    """
    first, *others = names
    weights, trainer, _ = _files(save_dir, first)
    described: dict[str, dict[str, Any]] = {}

    def write(w: Path, s: Path) -> dict[str, Any]:
        with atomic_path(w) as tmp:
            if isinstance(model, nn.Module):
                save_model(model, str(tmp), metadata={"format": "pt"})
            else:
                save_file(_once(model), str(tmp), metadata={"format": "pt"})
        with atomic_path(s) as tmp:
            torch.save(dict(state), tmp)
        described.update(weights=_described(w), state=_described(s))
        return {**summary, **described}

    def link(w: Path, s: Path) -> dict[str, Any]:
        link_or_copy(weights, w)
        link_or_copy(trainer, s)
        return {
            **summary,
            "weights": {**described["weights"], "file": w.name},
            "state": {**described["state"], "file": s.name},
        }

    _replace(save_dir, first, write)
    for name in others:
        _replace(save_dir, name, link)


def _once(tensors: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """`tensors` with a tensor held under several names kept under its first name only."""
    seen: set[tuple[int, int]] = set()
    kept = {}
    for key, tensor in tensors.items():
        where = (tensor.untyped_storage().data_ptr(), int(tensor.storage_offset()))
        if where not in seen:
            seen.add(where)
            kept[key] = tensor.contiguous()
    return kept


def _replace(save_dir: Path, name: str, fill: Callable[[Path, Path], dict[str, Any]]) -> None:
    """Replace checkpoint `name`: `fill(weights path, state path)` writes the files and returns
    the commit. The committed version stays readable as NAME.previous until the new commit."""
    commit = _files(save_dir, name)[2]
    previous = f"{name}{PREVIOUS}"
    if commit.is_file():  # else NAME.previous, if any, is what a killed save left: keep it
        _keep(save_dir, name, previous)
    commit.unlink(missing_ok=True)  # from here until the new commit, only NAME.previous exists
    record = fill(*_files(save_dir, name)[:2])
    write_json(commit, record)
    remove_checkpoint(save_dir, previous)


def _keep(save_dir: Path, name: str, previous: str) -> None:
    """Make `previous` a committed copy (hard links) of checkpoint `name` as it is now; a version
    that cannot be read is not kept (it was no commit to lose)."""
    weights, trainer, commit = _files(save_dir, name)
    new_weights, new_trainer, new_commit = _files(save_dir, previous)
    new_commit.unlink(missing_ok=True)
    try:
        record = read_json(commit)
        link_or_copy(weights, new_weights)
        link_or_copy(trainer, new_trainer)
        kept = {
            **record,
            "weights": {**record["weights"], "file": new_weights.name},
            "state": {**record["state"], "file": new_trainer.name},
        }
    except (CheckpointError, OSError, KeyError, TypeError):
        return
    write_json(new_commit, kept)


def remove_checkpoint(save_dir: Path, name: str) -> None:
    """Delete a checkpoint (and a version kept as NAME.previous), commit first, so a kill half-way
    leaves no half checkpoint."""
    for each in (name, f"{name}{PREVIOUS}"):
        for path in reversed(_files(save_dir, each)):
            path.unlink(missing_ok=True)


def set_aside(save_dir: Path, name: str) -> str:
    """Rename checkpoint `name` (a corrupt one) to NAME.corrupt-K, the first K free, commit last;
    nothing is deleted, and the next save of NAME cannot overwrite it.

    **Returns:** the new name.
    """
    k = 1
    while any(path.exists() for path in _files(save_dir, f"{name}{CORRUPT}{k}")):
        k += 1
    target = f"{name}{CORRUPT}{k}"
    for source, destination in zip(_files(save_dir, name), _files(save_dir, target), strict=True):
        if source.exists():
            os.replace(source, destination)
    return target


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


def committed(save_dir: Path, name: str) -> tuple[str, dict[str, Any]] | None:
    """Checkpoint `name`, verified: `(name, commit)`, or `(NAME.previous, its commit)` when a save
    of `name` was killed before its new commit; None when neither is committed."""
    for candidate in (name, f"{name}{PREVIOUS}"):
        record = read_commit(save_dir, candidate)
        if record is not None:
            return candidate, record
    return None


@final
@dataclass(frozen=True)
class Found:
    """What `latest_checkpoint` found.

    **Arguments:**

    - `name`: the checkpoint to resume from (`checkpoint_last`, `checkpoint_360`,
      `checkpoint_last.previous`, ...); `commit`: its verified commit.
    - `corrupt`: `(name, why)` of the committed checkpoints that were passed over because their
      files are missing or corrupt (newer than `name`, and `checkpoint_best`).
    """

    name: str
    commit: dict[str, Any]
    corrupt: tuple[tuple[str, str], ...] = ()


def _resumable(stem: str) -> bool:
    base = stem.removesuffix(PREVIOUS)
    return base in (LAST, BEST) or INTERVAL.match(base) is not None


def latest_checkpoint(save_dir: Path) -> Found | None:
    """The newest intact committed checkpoint to resume from.

    Candidates are every committed checkpoint, a version kept as NAME.previous included, newest
    update first (`checkpoint_last` first on ties). The first whose files match its commit is
    chosen; the newer ones that do not are passed over, and so is a corrupt `checkpoint_best`
    (the next best would replace it), each named with the reason in `Found.corrupt`. Only the
    candidates looked at (and `checkpoint_best`) are hashed.
    """
    candidates: list[tuple[int, bool, bool, str]] = []
    corrupt: list[tuple[str, str]] = []
    for path in save_dir.glob("checkpoint_*.json"):
        if not _resumable(path.stem):
            continue
        try:
            record = read_commit(save_dir, path.stem, verify=False)
        except CheckpointError as error:  # an unreadable commit: its update is unknown
            corrupt.append((path.stem, str(error)))
            continue
        update = record.get("update") if record else None
        if not isinstance(update, int):
            corrupt.append((path.stem, f"{path} is corrupt: no update"))
            continue
        candidates.append((update, path.stem == LAST, not path.stem.endswith(PREVIOUS), path.stem))
    chosen: tuple[str, dict[str, Any]] | None = None
    for *_, name in sorted(candidates, reverse=True):
        try:
            record = read_commit(save_dir, name)
        except CheckpointError as error:
            corrupt.append((name, str(error)))
            continue
        assert record is not None
        chosen = name, record
        break
    if chosen is None and not corrupt:
        return None
    if chosen is None:
        reasons = "; ".join(why for _, why in corrupt)
        raise CheckpointError(f"{save_dir}: no intact checkpoint to resume from ({reasons})")
    examined = {name for name, _ in corrupt} | {chosen[0]}
    if BEST not in examined and any(name == BEST for *_, name in candidates):
        try:
            read_commit(save_dir, BEST)
        except CheckpointError as error:
            corrupt.append((BEST, str(error)))
    return Found(chosen[0], chosen[1], tuple(corrupt))


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
