"""Trained models out of a save dir: `load_trained` (whichever task it trained), `load_model`,
`load_language_model`, `average_checkpoints`.

A save dir's `recipe.toml` holds the resolved recipe and `spm.model` the vocabulary, so a trained
model is rebuilt from the save dir alone; its weights come from a committed checkpoint (`best`,
`last`), the mean of the last N interval checkpoints (`avg:N`, as fairseq's
`average_checkpoints.py`) or a `.safetensors` file (say, written by `butcherflow average`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import torch
from safetensors.torch import save_file
from torch import Tensor, nn

from ..assemble import LanguageModel, Recipe, Seq2Seq
from ..data import Vocabulary
from ..errors import ButcherflowWarning, DeclarationError
from ..tasks import LANGUAGE_MODEL, TASKS, TRANSLATION, Task
from .atomic import atomic_path
from .checkpoint import (
    assign_weights,
    committed,
    interval_checkpoints,
    load_weights,
    read_commit,
)
from .layout import BEST, CONFIG, LAST, VOCAB, CheckpointError, read_config, read_recipe


def checkpoint_update(save_dir: Path, checkpoint: str) -> int | None:
    """The update `checkpoint` was saved at (`last` or `best`, from its commit); None for an
    average, a weights file, or a checkpoint with no commit."""
    if checkpoint not in ("last", "best"):
        return None
    found = committed(save_dir, LAST if checkpoint == "last" else BEST)
    return None if found is None else found[1].get("update")


def checkpoint_paths(save_dir: Path, checkpoint: str) -> list[Path]:
    """The weight files named by `checkpoint` (`last`, `best`, `avg:N` or a file path)."""
    if checkpoint in ("last", "best"):
        name = LAST if checkpoint == "last" else BEST
        found = committed(save_dir, name)
        if found is None:
            hint = (
                "no validation has run yet; use --checkpoint last"
                if checkpoint == "best"
                else "the run has not saved a checkpoint yet"
            )
            raise CheckpointError(f"{save_dir}: no committed {name} ({hint})")
        if found[0] != name:
            warnings.warn(
                f"{save_dir}: the last save of {name} did not finish; reading the version it "
                f"replaced, {found[0]} (update {found[1].get('update')})",
                ButcherflowWarning,
                stacklevel=2,
            )
        return [save_dir / f"{found[0]}.safetensors"]
    if checkpoint.startswith("avg:"):
        count = checkpoint[4:]
        if not count.isdigit() or int(count) < 1:
            raise DeclarationError(
                "bad checkpoint average",
                key="--checkpoint",
                value=checkpoint,
                valid="avg:N with N >= 1, e.g. avg:5",
            )
        intervals = interval_checkpoints(save_dir)
        if len(intervals) < int(count):
            raise CheckpointError(
                f"{save_dir}: avg:{count} needs {count} interval checkpoints, found "
                f"{len(intervals)} (train with --save-interval-updates to keep some)"
            )
        chosen = [name for _, name in intervals[-int(count) :]]
        for name in chosen:
            read_commit(save_dir, name)
        return [save_dir / f"{name}.safetensors" for name in chosen]
    path = Path(checkpoint)
    if not path.is_file():
        raise DeclarationError(
            "no such checkpoint",
            key="--checkpoint",
            value=checkpoint,
            valid="last, best, avg:N or the path of a .safetensors file",
        )
    return [path]


def load_model(
    save_dir: str | Path, checkpoint: str = "best", device: str | torch.device = "cpu"
) -> tuple[Seq2Seq, Vocabulary, dict[str, Any]]:
    """The trained model of a save dir, in eval mode, with its vocabulary and config.

    **Arguments:**

    - `save_dir`: the `--save-dir` of a `butcherflow train` run.
    - `checkpoint`: `"best"`, `"last"`, `"avg:N"` (the mean of the last N interval checkpoints)
      or the path of a `.safetensors` file (e.g. written by `butcherflow average`).
    - `device`: where the model goes.

    **Returns:** `(model, vocabulary, config)`; `config` is the content of `config.json`. A save
    dir of `--task language_model` is refused (`load_language_model` reads it).
    """
    model, vocab, config = _load_trained(TRANSLATION, Path(save_dir), checkpoint, device)
    return cast(Seq2Seq, model), vocab, config  # the task's model


def load_language_model(
    save_dir: str | Path, checkpoint: str = "best", device: str | torch.device = "cpu"
) -> tuple[LanguageModel, Vocabulary, dict[str, Any]]:
    """The trained `LanguageModel` of a `--task language_model` save dir (see `load_model`).

    **Returns:** `(model in eval mode, vocabulary, config)`.
    """
    model, vocab, config = _load_trained(LANGUAGE_MODEL, Path(save_dir), checkpoint, device)
    return cast(LanguageModel, model), vocab, config  # the task's model


def load_trained(
    save_dir: str | Path, checkpoint: str = "best", device: str | torch.device = "cpu"
) -> tuple[Seq2Seq | LanguageModel, Vocabulary, dict[str, Any]]:
    """The trained model of a save dir of either task (`run_task` says which), as `load_model`.

    **Returns:** `(model in eval mode, vocabulary, config)`.
    """
    return _load_trained(None, Path(save_dir), checkpoint, device)


def run_task(save_dir: str | Path) -> Task:
    """The task a save dir trained (its `config.json`'s `task`); a `CheckpointError` when the
    file names none this version knows."""
    folder = Path(save_dir)
    found = read_config(folder).get("task")
    if not isinstance(found, str) or found not in TASKS:
        raise CheckpointError(
            f"{folder / CONFIG}: 'task' is {found!r}, not one of {', '.join(TASKS)} (a save "
            "dir in the 0.1.0 format, which is no longer read, or an edited file)"
        )
    return TASKS[found]


_LOADERS = {TRANSLATION.name: "load_model", LANGUAGE_MODEL.name: "load_language_model"}


def _load_trained(
    expected: Task | None, folder: Path, checkpoint: str, device: str | torch.device
) -> tuple[Seq2Seq | LanguageModel, Vocabulary, dict[str, Any]]:
    task, config = run_task(folder), read_config(folder)
    if expected is not None and task is not expected:
        raise CheckpointError(
            f"{folder} holds a {task.name} run, not a {expected.title} (load it with "
            f"butcherflow.savedir.{_LOADERS[task.name]}, or load_trained)"
        )
    recipe, vocab = _recipe_and_vocabulary(folder, config)
    size = config.get("vocab_size")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise CheckpointError(
            f"{folder / CONFIG}: 'vocab_size' is {size!r}, not the run's vocabulary size (was "
            "the file edited?); restore it"
        )
    model = task.model(recipe, size, pad_index=vocab.pad)
    _load_weights(model, folder, checkpoint)
    return model.to(device).eval(), vocab, config


def _recipe_and_vocabulary(folder: Path, config: dict[str, Any]) -> tuple[Recipe, Vocabulary]:
    recipe = read_recipe(folder)
    vocab_path = folder / VOCAB
    if not vocab_path.is_file():
        raise CheckpointError(f"{vocab_path} is missing (the vocabulary of this run)")
    return recipe, Vocabulary.load(vocab_path)


def _load_weights(model: nn.Module, folder: Path, checkpoint: str) -> None:
    paths = checkpoint_paths(folder, checkpoint)
    tensors = average_checkpoints(paths) if len(paths) > 1 else load_weights(paths[0])
    assign_weights(model, tensors, paths[0] if len(paths) == 1 else f"{checkpoint} of {folder}")


# --- averaging ----------------------------------------------------------------------------------


def average_checkpoints(paths: Sequence[Path]) -> dict[str, Tensor]:
    """The element-wise mean of the weights in `paths` (as fairseq's `average_checkpoints.py`).

    Floating-point tensors are summed in float64 and cast back to their dtype; any other tensor
    must be equal in every file.

    **Arguments:**

    - `paths`: `.safetensors` files of the same architecture.

    **Returns:** name -> averaged tensor (shared tensors appear once, as in the files).
    """
    if not paths:
        raise CheckpointError("average_checkpoints: no checkpoint to average")
    first = load_weights(Path(paths[0]))
    sums = {k: v.double() if v.is_floating_point() else v for k, v in first.items()}
    for path in paths[1:]:
        tensors = load_weights(Path(path))
        if set(tensors) != set(first):
            key = sorted(set(tensors) ^ set(first))[0]
            raise CheckpointError(
                f"{path}: tensor '{key}' is in one file but not in {paths[0]} "
                "(checkpoints of different models cannot be averaged)"
            )
        for key, tensor in tensors.items():
            if tensor.shape != first[key].shape:
                raise CheckpointError(
                    f"{path}: tensor '{key}' has shape {tuple(tensor.shape)}, "
                    f"{paths[0]} has {tuple(first[key].shape)}"
                )
            if tensor.is_floating_point():
                sums[key] += tensor.double()
            elif not torch.equal(tensor, first[key]):
                raise CheckpointError(f"{path}: integer tensor '{key}' differs between files")
    return {
        k: (v / len(paths)).to(first[k].dtype) if first[k].is_floating_point() else v
        for k, v in sums.items()
    }


def save_weights(tensors: Mapping[str, Tensor], path: Path, metadata: Mapping[str, str]) -> None:
    """Write `tensors` to a `.safetensors` file atomically (the output of `butcherflow average`),
    in a folder that exists."""
    with atomic_path(path) as tmp:
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp), dict(metadata))
