"""Starting or resuming a run in its save dir: `check_save_dir`, `open_save_dir`,
`write_save_dir`, `Progress` and `resume`.

A rerun of the same command on the same save dir is the same run: `open_save_dir` reopens the
save dir's vocabulary and refuses a changed recipe, corpus or optimisation setting (creating
nothing: `write_save_dir` writes the save dir once every check has passed; the recipes are
compared as objects: sizes, declarations, then every other field), and `resume`
loads the latest committed checkpoint (weights, optimizer, GradScaler, random states) and the
`Progress` saved with it (update, epoch, data position, counters).
"""

from __future__ import annotations

import dataclasses
import math
import os
import random
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import numpy as np
import torch
from torch import nn
from torch.amp import GradScaler
from torch.optim import Optimizer

from ..assemble import Recipe, recipe_to_toml
from ..assemble.declarations import SIDES, difference, references
from ..assemble.recipe import OVERRIDES, method_name
from ..data import ParallelCorpus, Vocabulary, build_vocabulary, default_cache_dir
from ..errors import DeclarationError, unwritable
from ..savedir.atomic import atomic_path, remove_stale_temporaries, write_json, write_text
from ..savedir.checkpoint import assign_weights, load_state, load_weights
from ..savedir.curves import append_log, truncate_log
from ..savedir.layout import (
    CONFIG,
    LOG,
    RECIPE,
    VOCAB,
    CheckpointError,
    read_config,
    read_recipe,
    run_sizes,
)
from . import distributed
from .config import TrainConfig, flag, resolve_recipe, saved_settings
from .parallelize import load_full_state, sharded, with_aliases


@final
@dataclass
class Progress:
    """Where the run is; saved in every checkpoint (mutable: the loop advances it)."""

    update: int = 0  # optimizer steps taken
    epoch: int = 1  # the epoch being trained (1-based, as fairseq)
    batch_in_epoch: int = 0  # micro-batches of this epoch already consumed, per process
    best_valid_loss: float = math.inf  # the best of the task's `best_metric` so far
    validations_since_best: int = 0  # fairseq's patience counter
    nonfinite_total: int = 0
    nonfinite_in_row: int = 0
    train_tokens: int = 0  # target tokens trained on, summed over processes
    buckets: str = "off"  # the bucket ladder the epoch in progress is cut with (--buckets)


def _check_resumable(
    config: TrainConfig,
    saved: dict[str, Any],
    recipe: Recipe,
    corpus: ParallelCorpus,
    save_dir: Path,
) -> None:
    """A rerun must be the same run: same recipe, declarations, data, vocabulary and
    optimisation settings."""
    where = save_dir / CONFIG
    saved = saved_settings(saved)
    missing = [key for key in config.settings() if key not in saved]
    if missing:
        raise CheckpointError(
            f"{where} has no {', '.join(map(repr, missing))} (a save dir in the 0.1.0 format, "
            "which is no longer read, or an edited file); retrain into a new --save-dir"
        )
    for key, old, new in config.differences(saved):
        raise DeclarationError(
            f"{save_dir} holds a run trained with {flag(key)} {old!r}",
            key=flag(key),
            value=new,
            valid=f"rerun with {flag(key)} {old!r} to resume, or use another --save-dir",
            source=where,
        )
    stored = read_recipe(save_dir)
    _check_sizes(stored, recipe, save_dir / RECIPE)
    _check_declarations(stored, recipe, save_dir / RECIPE)
    changed = _changed_field(stored, recipe)
    if changed is not None:
        raise DeclarationError(
            f"the recipe '{config.recipe}' differs from the one this save dir was trained with "
            f"in its '{changed}' (was its file edited?)",
            key="recipe",
            value=config.recipe,
            valid="restore the recipe file or use another --save-dir",
            source=save_dir / RECIPE,
        )
    if saved.get("corpus_fingerprint") != corpus.fingerprint:
        raise DeclarationError(
            "the corpus content changed since this save dir was trained (its fingerprint differs)",
            key="--data",
            value=config.data,
            valid="the same data, or another --save-dir",
            source=where,
        )


def _check_sizes(stored: Recipe, recipe: Recipe, where: Path) -> None:
    """The run's sizes (`--d-model`, ..., `--decoder-layers`, as resolved) must be the ones it
    was trained at."""
    old, new = run_sizes(stored), run_sizes(recipe)
    for key in OVERRIDES:
        if old[key] != new[key]:
            raise DeclarationError(
                f"this save dir was trained with {flag(key)} {old[key]!r}",
                key=flag(key),
                value=new[key],
                valid=f"rerun with {flag(key)} {old[key]!r} to resume, or use another --save-dir",
                source=where,
            )


def _changed_field(stored: Recipe, recipe: Recipe) -> str | None:
    """The first field in which two recipes differ, their declarations (compared by
    `_check_declarations`) and their files (`source`) set aside; None when none does."""

    def declared(reference: Any) -> Any:  # a declaration object, by its place only
        return reference if reference is None or isinstance(reference, str) else ""

    def frame(r: Recipe) -> Recipe:
        sides = {
            where: dataclasses.replace(
                side,
                method=declared(side.method),
                options={k: declared(v) if k == "starter" else v for k, v in side.options.items()},
            )
            for where in SIDES
            if (side := getattr(r, where)) is not None
        }
        return dataclasses.replace(r, source=None, floater=declared(r.floater), **sides)

    old, new = frame(stored), frame(recipe)
    for field in dataclasses.fields(old):
        if getattr(old, field.name) != getattr(new, field.name):
            return field.name
    return None


def _check_declarations(stored: Recipe, recipe: Recipe, where: Path) -> None:
    """Every method of the run must have the declaration it was trained with: a catalog file or
    a user's declaration file edited since is named, with the first entry that differs."""
    saved = references(stored)
    for slot, now in references(recipe).items():
        found = difference(saved[slot], now) if slot in saved else None
        if found is None:
            continue
        entry, old, new = found
        what = f"its entry '{entry}' was {old!r}, is now {new!r}" if entry else f"was {old!r}"
        raise DeclarationError(
            f"this save dir was trained with another declaration of '{method_name(now)}' "
            f"({slot}): {what} (was its file edited, or the catalog changed?)",
            key=slot,
            value=method_name(now),
            valid="restore the declaration the run was trained with, or use another --save-dir",
            source=where,
        )


def check_save_dir(save_dir: Path, key: str = "--save-dir") -> None:
    """A folder the run writes (`--save-dir`, `--tensorboard`) must be a folder, or a path where
    one can be made: a file there (or where one of its parent folders should be), or a parent
    this process may not write, is refused before anything is created."""
    for path in (save_dir, *save_dir.parents):
        if not path.exists():
            continue
        inside = "is" if path == save_dir else f"is inside {path}, which is"
        if not path.is_dir():
            problem = f"{inside} a file, not a folder"
        elif not os.access(path, os.W_OK | os.X_OK):
            problem = f"{inside} a folder this process cannot write"
        else:
            return
        raise DeclarationError(
            problem,
            key=key,
            value=str(save_dir),
            valid="a new folder, or the --save-dir of a run to resume"
            if key == "--save-dir"
            else "a new folder, or one this process can write",
        )


def open_save_dir(
    config: TrainConfig,
    corpus: ParallelCorpus,
    process: distributed.Process,
    resuming: bool,
    recipe: Recipe,
) -> tuple[Vocabulary, Recipe, dict[str, str] | None]:
    """The vocabulary and the resolved recipe of the run (creating nothing in the save dir).

    A run that resumes keeps the save dir's vocabulary and must be the same run as the one saved
    (the fields in `RESUMABLE_CHANGES` aside); a new run trains its vocabulary into the cache.

    **Arguments:**

    - `recipe`: the recipe resolved at `config.vocab_size` (reused when the vocabulary has that
      size; `param_budget` depends on it).

    **Returns:** `(vocabulary, resolved recipe, failed claims)`: the failed claims are those
    `config.json` recorded when resuming (the declarations are the same, so is their proof),
    None for a new run, whose declarations the caller proves.
    """
    save_dir = Path(config.save_dir)
    saved = read_config(save_dir) if resuming else None
    if saved is not None:
        vocab = Vocabulary.load(save_dir / VOCAB)
    else:
        if process.is_main:  # trains it; the other processes then find it in the cache
            build_vocabulary(corpus, config.vocab_size, default_cache_dir())
        distributed.barrier()
        vocab = build_vocabulary(corpus, config.vocab_size, default_cache_dir())
    if len(vocab) != config.vocab_size:
        recipe = resolve_recipe(config, len(vocab))
    if saved is None:
        return vocab, recipe, None
    _check_resumable(config, saved, recipe, corpus, save_dir)
    return vocab, recipe, _recorded_claims(saved, save_dir / CONFIG)


def _recorded_claims(saved: Mapping[str, Any], where: Path) -> dict[str, str]:
    """The `failed_claims` of a save dir's `config.json`: where each failing method is used ->
    its proof's verdict."""
    found = saved.get("failed_claims")
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise CheckpointError(
            f"{where}: 'failed_claims' is {found!r}, not a table of verdicts (was the file "
            "edited?); restore it, or retrain into a new --save-dir"
        )
    return {str(k): v for k, v in found.items()}


def write_save_dir(
    config: TrainConfig,
    corpus: ParallelCorpus,
    vocab: Vocabulary,
    recipe: Recipe,
    process: distributed.Process,
    *,
    resuming: bool,
    failed_claims: Mapping[str, str],
) -> None:
    """Create the save dir (or reopen it to resume): its vocabulary, `recipe.toml` and
    `config.json`, once every check has passed. A save dir without a committed checkpoint (say,
    a first attempt stopped by Ctrl-C before its first save) starts afresh: its recipe, config
    and log are replaced. `spm.model` and `recipe.toml` are written before `config.json`, so a
    config always has its vocabulary and its recipe."""
    save_dir = Path(config.save_dir)
    if process.is_main:
        try:
            save_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise unwritable(error, "--save-dir", save_dir) from None
        remove_stale_temporaries(save_dir)
        if not resuming:
            (save_dir / LOG).unlink(missing_ok=True)
            with atomic_path(save_dir / VOCAB) as tmp:
                shutil.copyfile(vocab.path, tmp)
        write_text(save_dir / RECIPE, recipe_to_toml(recipe))
        config_json = {
            **config.settings(),
            "vocab_size": len(vocab),
            "corpus_name": corpus.name,
            "corpus_fingerprint": corpus.fingerprint,
            "corpus_spec": corpus.spec,
            "languages": [corpus.source_lang, corpus.target_lang],
            "failed_claims": dict(failed_claims),
        }
        write_json(save_dir / CONFIG, config_json)
    distributed.barrier()


def rng_state() -> dict[str, Any]:
    """The python, numpy, torch and CUDA random states as tensors and plain values (so that
    `torch.load(weights_only=True)` reads them back)."""
    name, keys, position, has_gauss, gauss = np.random.get_state(legacy=True)
    return {
        "python": random.getstate(),
        "numpy": {
            "name": str(name),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(position),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(gauss),
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def trainer_state(
    progress: Progress,
    process: distributed.Process,
    optimizer_state: Mapping[str, Any],
    scaler: GradScaler,
) -> dict[str, Any]:
    """What a checkpoint's `NAME.pt` holds for `resume`: the progress, the process count, the
    optimizer state (an unsharded `optimizer.state_dict()`: `parallelize.full_state`), the
    GradScaler state and the random states (plain tensors and values only)."""
    return {
        "progress": dataclasses.asdict(progress),
        "world_size": process.world_size,
        "optimizer": dict(optimizer_state),
        "scaler": scaler.state_dict(),
        "rng": rng_state(),
    }


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore what `rng_state` returned."""
    random.setstate(state["python"])
    n = state["numpy"]
    keys = n["keys"].numpy().astype(np.uint32)
    np.random.set_state((n["name"], keys, n["pos"], n["has_gauss"], n["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def restore(
    save_dir: Path, name: str, model: nn.Module, optimizer: Optimizer, scaler: GradScaler
) -> dict[str, Any]:
    """Load checkpoint `name` into the model, optimizer, GradScaler and random generators.

    **Returns:** the trainer state (`progress`, `world_size`, ...) for the loop to go on from.
    """
    weights = save_dir / f"{name}.safetensors"
    tensors = load_weights(weights)
    path = save_dir / f"{name}.pt"
    state = load_state(path)
    try:
        if sharded(model):
            load_full_state(
                model, optimizer, with_aliases(model, tensors, weights), state["optimizer"]
            )
        else:
            assign_weights(model, tensors, weights)
            optimizer.load_state_dict(state["optimizer"])
        scaler.load_state_dict(state["scaler"])
        set_rng_state(state["rng"])
    except (KeyError, TypeError, ValueError, RuntimeError) as error:
        raise CheckpointError(
            f"{path} is not a trainer state of this model ({type(error).__name__}: {error})"
        ) from None
    return state


def resume(
    save_dir: Path,
    name: str,
    model: nn.Module,
    optimizer: Optimizer,
    scaler: GradScaler,
    process: distributed.Process,
    say: Callable[[str], None],
) -> Progress:
    """Load checkpoint `name` of `save_dir` into the run; cut `log.jsonl` back to it.

    **Arguments:**

    - `model`: the bare model (not the DDP or compiled wrapper).
    - `say`: prints a line on the main process.

    **Returns:** the saved `Progress`, its data position mapped onto this run's process count.
    """
    state = restore(save_dir, name, model, optimizer, scaler)
    try:
        progress = Progress(**state["progress"])
        saved_world = int(state["world_size"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(
            f"{save_dir / name}.pt has no valid progress or process count ({error})"
        ) from None
    if saved_world != process.world_size:  # map the data position onto the new sharding
        progress.batch_in_epoch = progress.batch_in_epoch * saved_world // process.world_size
        say(
            f"note: saved by {saved_world} process(es), resumed by {process.world_size}: "
            "the epoch goes on from the nearest batch"
        )
    say(f"resuming from {save_dir / name} (update {progress.update}, epoch {progress.epoch})")
    if process.is_main:
        log_path = save_dir / LOG
        truncate_log(log_path, progress.update)
        append_log(
            log_path,
            {"update": progress.update, "epoch": progress.epoch, "kind": "resume", "from": name},
        )
    return progress
