"""The save dir's layout: its file names, `config.json`, and the error for a bad save dir.

A save dir (the `--save-dir` of `butcherflow train`) holds:

- `config.json`: the run's settings (`TrainConfig.to_json()`), the resolved recipe as TOML
  (`recipe_toml`, every method in it pinned to its declaration: the run owns its coefficients),
  the vocabulary size, the corpus's name, fingerprint and `corpus_spec` (its `--data` with
  absolute paths, so the run is evaluated from any directory);
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
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..assemble import Recipe, recipe_from_dict
from ..assemble.declarations import by_name
from ..data import ParallelCorpus, load_corpus
from ..errors import ButcherflowError, ButcherflowWarning, DeclarationError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG, VOCAB, LOG, CURVES = "config.json", "spm.model", "log.jsonl", "curves.png"
LAST, BEST = "checkpoint_last", "checkpoint_best"
INTERVAL = re.compile(r"checkpoint_(\d+)$")


class CheckpointError(ButcherflowError):
    """A save dir's file is missing, corrupt, truncated, or belongs to another model."""


def recipe_from_config(config: Mapping[str, Any], source: str | Path | None = None) -> Recipe:
    """The resolved recipe stored in a save dir's `config.json`, with the declarations of its
    methods. A run saved before runs stored them names its methods instead: they are then read
    from today's catalog, and a `ButcherflowWarning` says so (once per save dir)."""
    text = config.get("recipe_toml")
    if not isinstance(text, str):
        raise CheckpointError(f"{source}: no 'recipe_toml' in the config")
    try:
        recipe = recipe_from_dict(tomllib.loads(text), source=source)
    except tomllib.TOMLDecodeError as error:
        raise CheckpointError(f"{source}: 'recipe_toml' is not valid TOML: {error}") from None
    named = by_name(recipe)
    if named:
        warnings.warn(
            f"{source} names its methods instead of storing their declarations (a run saved "
            f"before runs owned their integrators): {', '.join(named)} are read from the "
            "catalog of this installation",
            ButcherflowWarning,
            stacklevel=2,
        )
    return recipe


def run_corpus(save_dir: str | Path, config: Mapping[str, Any]) -> ParallelCorpus:
    """The corpus a run was trained on, from any working directory (`corpus_spec`; a run saved
    before it was stored gives `data` as typed, relative to where it was trained)."""
    spec = str(config.get("corpus_spec") or config["data"])
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
