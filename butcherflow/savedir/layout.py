"""The save dir's layout: its file names, `config.json`, and the error for a bad save dir.

A save dir (the `--save-dir` of `butcherflow train`) holds:

- `recipe.toml`: the resolved recipe, a recipe file like those of `models/`: every method in it
  pinned to its declaration (the run owns its coefficients) and the sizes it trained at (the
  only place a save dir holds them);
- `config.json`: the run's settings that are not the recipe's (`TrainConfig.to_json()` without
  the size flags), the vocabulary size, the corpus's name, fingerprint and `corpus_spec` (its
  `--data` with absolute paths, so the run is evaluated from any directory);
- `spm.model`: the joint sentencepiece vocabulary;
- `log.jsonl` and `curves.png`: the run's log and its plot (`curves.py`);
- the checkpoints `checkpoint_last`, `checkpoint_best` and `checkpoint_<update>`, three files
  each (`checkpoint.py`).

Loading a trained model from it is `trained.py`; the training loop writes it (`butcherflow.train`).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..assemble import Recipe, recipe_from_dict
from ..assemble.declarations import by_name
from ..assemble.recipe import OVERRIDES, SIZE_KEYS
from ..data import ParallelCorpus, load_corpus
from ..errors import ButcherflowError, DeclarationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG, RECIPE, VOCAB = "config.json", "recipe.toml", "spm.model"
LOG, CURVES = "log.jsonl", "curves.png"
LAST, BEST = "checkpoint_last", "checkpoint_best"
INTERVAL = re.compile(r"checkpoint_(\d+)$")


class CheckpointError(ButcherflowError):
    """A save dir's file is missing, corrupt, truncated, or belongs to another model."""


def read_recipe(save_dir: str | Path) -> Recipe:
    """The resolved recipe a run trained, from its save dir's `recipe.toml` (its methods are
    declarations: nothing is read from the catalog).

    **Arguments:**

    - `save_dir`: the `--save-dir` of a `butcherflow train` run.

    **Returns:** the `Recipe`; a missing or unreadable `recipe.toml` is a `CheckpointError`.
    """
    path = Path(save_dir) / RECIPE
    if not path.is_file():
        raise CheckpointError(
            f"{path} is missing: a save dir holds the recipe it trained (the 0.1.0 format kept "
            "it inside config.json, which is no longer read); retrain into a new --save-dir, "
            "or restore the file"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise CheckpointError(f"{path} is corrupt or truncated ({error})") from None
    recipe = recipe_from_dict(data, source=path, folder=path.parent)
    named = by_name(recipe)
    if named:
        raise CheckpointError(
            f"{path} names {named[0]} instead of declaring it: a save dir's recipe holds the "
            "declarations it trained (`butcherflow train` writes them); restore the file"
        )
    return recipe


def run_sizes(recipe: Recipe) -> dict[str, Any]:
    """The sizes a run may override (`OVERRIDES`: `d_model`, ..., `encoder_layers`), as the
    recipe has them: `load_recipe(NAME).with_overrides(run_sizes(read_recipe(save_dir)))` is
    NAME at the sizes of that run (a side the recipe lacks gives None)."""
    sides = {f"{where}_layers": getattr(recipe, where) for where in ("encoder", "decoder")}
    return {
        key: recipe.sizes.get(key)
        if key in SIZE_KEYS
        else (None if sides[key] is None else sides[key].layers)
        for key in OVERRIDES
    }


def run_corpus(save_dir: str | Path, config: Mapping[str, Any]) -> ParallelCorpus:
    """The corpus a run was trained on, from any working directory (`corpus_spec`)."""
    spec = config.get("corpus_spec")
    if not isinstance(spec, str):
        raise CheckpointError(
            f"{Path(save_dir) / CONFIG} has no 'corpus_spec' (a save dir in the 0.1.0 format, "
            "which is no longer read); retrain into a new --save-dir"
        )
    try:
        return load_corpus(
            spec, source_lang=config.get("source_lang"), target_lang=config.get("target_lang")
        )
    except DeclarationError as error:  # its key names --data, which is not this command's
        reason = error.problem if error.source is None else f"{error.source}: {error.problem}"
        raise CheckpointError(
            f"{Path(save_dir) / CONFIG}: the run's corpus {spec!r} cannot be read from "
            f"{Path.cwd()} ({reason}); run this from the directory the run was trained in, or "
            "restore the corpus files"
        ) from None


def read_config(save_dir: str | Path) -> dict[str, Any]:
    """The save dir's `config.json` (a clear error when it is missing or unreadable)."""
    path = Path(save_dir) / CONFIG
    if not path.parent.is_dir():
        why = "is a file" if path.parent.exists() else "does not exist"
        raise CheckpointError(
            f"save dir {str(path.parent)!r} {why}; give the --save-dir of a `butcherflow train` run"
        )
    if not path.is_file():
        raise CheckpointError(
            f"{Path(save_dir)} is not a butcherflow save dir (no {CONFIG}); "
            "give the --save-dir of a `butcherflow train` run"
        )
    return read_json(path)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path` (a `CheckpointError` naming the file when it is not one)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path} is corrupt or truncated ({error})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} is corrupt: expected a JSON object")
    return data
