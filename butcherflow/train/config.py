"""The configuration of a training run: fairseq's names, validated once, frozen.

`butcherflow train` flags map one to one onto the fields (`--max-tokens` -> `max_tokens`). Every
bad value raises a `DeclarationError` naming the flag, the value and what would be valid; options
that cancel each other (fp16 on a CPU, `--d-ffn` on a recipe whose `param_budget` sizes d_ffn,
`--keep-last-checkpoints` without interval checkpoints) are rejected rather than ignored.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, final

import torch

from ..assemble import Recipe, apply_param_budget, load_recipe
from ..assemble.declarations import pinned
from ..assemble.recipe import OVERRIDES
from ..data import LengthBuckets
from ..data.buckets import DEFAULT_RATIO
from ..devices import check_device, check_threads
from ..errors import ButcherflowError, DeclarationError, count_problem
from ..tasks import LANGUAGE_MODEL, TRANSLATION, Task, task_named, task_of_recipe

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
# A resumed run may change these (when to stop, what to keep, where to run, where the files are:
# the corpus content is checked by its fingerprint instead); any other field must match the save
# dir's config.json, or the resumed run would not be the run that was started.
RESUMABLE_CHANGES = (
    "save_dir",
    "data",
    "source_lang",
    "target_lang",
    "max_update",
    "max_epoch",
    "time_budget",
    "patience",
    "save_interval_updates",
    "keep_last_checkpoints",
    "validate_interval_updates",
    "no_epoch_checkpoints",
    "log_interval",
    "tensorboard",
    "device",
    "precision",
    "compile",
    "buckets",
    "fsdp",
    "threads",
    "allow_failed_claims",
)
# Settings added after save dirs were first written, and what a save dir without them trained
# with: a language model read one line per sample (break mode `eos`, lines kept whole); no
# batches were cut with length buckets.
ADDED_SETTINGS: dict[str, dict[str, Any]] = {
    TRANSLATION.name: {"tokens_per_sample": None, "sample_break_mode": None, "buckets": "off"},
    LANGUAGE_MODEL.name: {"tokens_per_sample": None, "sample_break_mode": "eos", "buckets": "off"},
}


def flag(name: str) -> str:
    """`max_tokens` -> `--max-tokens` (the CLI flag of a field; the recipe is positional)."""
    return "RECIPE" if name == "recipe" else "--" + name.replace("_", "-")


@final
@dataclass(frozen=True)
class TrainConfig:
    """Everything that defines a training run (fairseq's names and defaults where they exist).

    **Arguments:**

    - `recipe`: a built-in recipe name or a recipe `.toml` file.
    - `data`: a corpus spec (`bible:de-en`, a folder in fairseq's raw layout, ...).
    - `save_dir`: where checkpoints, `config.json`, `log.jsonl` and `curves.png` go.
    - `source_lang`, `target_lang`: language suffixes of a raw-text folder (fairseq `-s/-t`);
      a language model on monolingual text may give `target_lang` alone (the text's language).
    - `max_tokens`: padded positions per batch (fairseq counting), per process.
    - `update_freq`: micro-batches accumulated per update.
    - `lr`, `warmup_updates`, `warmup_init_lr`: the inverse-sqrt schedule (linear warmup from
      `warmup_init_lr` to `lr` over `warmup_updates` updates, then `lr·sqrt(warmup/update)`).
    - `label_smoothing` (None: the task's, `tasks.Task.label_smoothing`: 0.1 for translation,
      0 for a language model), `dropout` (None keeps the recipe's), `clip_norm` (0 = no
      clipping), `weight_decay`.
    - `max_update`, `max_epoch` (0 = no limit), `time_budget` (seconds of wall clock, None = no
      limit), `patience` (fairseq's: stop when the validation loss has not improved for this many
      consecutive validations; 0 = off): the stop rules; the first one reached stops the run with
      a checkpoint.
    - `seed`: initialisation, dropout and batch shuffling.
    - `save_interval_updates` (0 = none: `checkpoint_last` at epoch ends only),
      `keep_last_checkpoints` (-1 = all), `validate_interval_updates` (validate every N updates
      instead of at epoch ends; 0 = at epoch ends), `no_epoch_checkpoints` (fairseq's: no
      `checkpoint_last` at epoch ends, only at interval saves and when the run stops),
      `log_interval` (updates per line of `log.jsonl`). Whatever these say, a stopping run
      validates and commits `checkpoint_last`.
    - `vocab_size`: size of the joint sentencepiece vocabulary.
    - `device` (`auto|cpu|cuda|cuda:N`), `precision` (`auto|fp32|bf16|fp16`), `compile` (each
      block compiled on its own: `assemble.compile_blocks`); `fsdp`: shard the model over
      torchrun's processes (FSDP2, `train.parallelize`) instead of replicating it (DDP).
    - `buckets`: the length buckets training batches are padded to (`data.buckets`: `off`, a
      ratio such as `1.25`, widths such as `16,32,64`), or `auto`: 1.25 on a GPU, where every
      new batch shape costs a compilation or an attention plan, off on a CPU, where padding
      only costs (`resolve_buckets`); a language model's windows take none (`Task.buckets`:
      `auto` is off, a ladder is refused). It changes how an epoch is cut, not what a pair is: a
      resumed run may change it, and finishes the epoch it is in with the old one.
    - `threads`: torch's intra-op CPU threads (`set_threads`; None keeps torch's default).
    - `tensorboard`: a folder for TensorBoard event files with the log's curves
      (`train.tracking`; the `tensorboard` extra), or None.
    - `d_model`, `n_heads`, `d_ffn`, `encoder_layers`, `decoder_layers`: size overrides of the
      recipe (None keeps the recipe's value).
    - `task`: `"translation"` (a `Seq2Seq` on the pairs) or `"language_model"` (a decoder-only
      `LanguageModel` on the target side alone: `Batch.prev_output -> Batch.target`, with the
      run's joint vocabulary); None: the recipe's (`tasks.task_of_recipe`: a decoder-only
      `lm-*` recipe is a language model). A language model is built from the side
      `LanguageModel` picks (a decoder-only recipe's decoder: `--decoder-layers` sizes it; or
      the encoder side of a translation recipe, made causal: `--encoder-layers` sizes it).
    - `tokens_per_sample`, `sample_break_mode`: a language model's context windows (fairseq's
      names, `data.packing`): `none` (the default) cuts the text every `tokens_per_sample`
      positions (default `tasks.TOKENS_PER_SAMPLE`) across lines, `eos` keeps every line a
      sample of its own (cut into windows only when `tokens_per_sample` is given and the line is
      longer). A translation run takes neither.
    - `allow_failed_claims`: train a recipe even when the proof of one of its declarations
      refutes the order it claims (refused by default; the run records which claims failed).
    """

    recipe: str
    data: str
    save_dir: str
    source_lang: str | None = None
    target_lang: str | None = None
    max_tokens: int = 4096
    update_freq: int = 1
    lr: float = 5e-4
    warmup_updates: int = 4000
    warmup_init_lr: float = 1e-7
    label_smoothing: float | None = None
    dropout: float | None = None
    clip_norm: float = 0.0
    weight_decay: float = 0.0
    max_update: int = 0
    max_epoch: int = 0
    seed: int = 1
    save_interval_updates: int = 0
    keep_last_checkpoints: int = -1
    validate_interval_updates: int = 0
    no_epoch_checkpoints: bool = False
    log_interval: int = 100
    vocab_size: int = 8000
    device: str = "auto"
    precision: str = "auto"
    compile: bool = False
    buckets: str = "auto"
    fsdp: bool = False
    time_budget: float | None = None
    patience: int = 0
    threads: int | None = None
    tensorboard: str | None = None
    d_model: int | None = None
    n_heads: int | None = None
    d_ffn: int | None = None
    encoder_layers: int | None = None
    decoder_layers: int | None = None
    task: str | None = None
    allow_failed_claims: bool = False
    tokens_per_sample: int | None = None
    sample_break_mode: str | None = None

    def __post_init__(self) -> None:
        for name in ("recipe", "data", "save_dir"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise DeclarationError(
                    "must not be empty", key=flag(name), value=value, valid="a name or a path"
                )
        self._resolve_task_defaults()
        _integer(self, "max_tokens", minimum=1)
        _integer(self, "update_freq", minimum=1)
        _integer(self, "warmup_updates", minimum=1, why="the inverse-sqrt schedule needs one")
        _integer(self, "max_update", minimum=0, why="0 = no limit")
        _integer(self, "max_epoch", minimum=0, why="0 = no limit")
        _integer(self, "patience", minimum=0, why="validations without improvement; 0 = off")
        check_threads(self.threads)
        _integer(self, "seed", minimum=0)
        _integer(self, "save_interval_updates", minimum=0, why="0 = at epoch ends only")
        _integer(self, "keep_last_checkpoints", minimum=-1, why="-1 = keep all")
        _integer(self, "validate_interval_updates", minimum=0, why="0 = at epoch ends")
        _integer(self, "log_interval", minimum=1)
        _integer(self, "vocab_size", minimum=16, why="4 ids are special, BPE needs the rest")
        for name in OVERRIDES:
            if name != "dropout" and getattr(self, name) is not None:
                _integer(self, name, minimum=1, why="or leave it out to keep the recipe's")
        _number(self, "lr", low=0.0, low_open=True)
        _number(self, "warmup_init_lr", low=0.0)
        _number(self, "label_smoothing", low=0.0, high=1.0)  # resolved first: never None
        _number(self, "clip_norm", low=0.0, why="0 = no clipping")
        _number(self, "weight_decay", low=0.0)
        if self.dropout is not None:
            _number(self, "dropout", low=0.0, high=1.0)
        if self.time_budget is not None:
            _number(self, "time_budget", low=0.0, low_open=True, why="seconds of wall clock")
        if self.warmup_init_lr > self.lr:
            raise DeclarationError(
                "the warmup starts above the peak learning rate",
                key="--warmup-init-lr",
                value=self.warmup_init_lr,
                valid=f"a value <= --lr ({self.lr})",
            )
        check_device(self.device)
        if self.buckets != "auto":
            LengthBuckets.parse(self.buckets)  # a bad ladder fails here
        self.run_task.buckets(self.buckets, "off")  # one its task cannot take, too
        if self.precision not in PRECISIONS:
            raise DeclarationError(
                "unknown precision", key="--precision", value=self.precision, valid=_one(PRECISIONS)
            )
        if self.device == "cpu" and self.precision == "fp16":
            raise DeclarationError(
                "fp16 needs a GPU (no GradScaler-backed fp16 training on CPU)",
                key="--precision",
                value="fp16",
                valid="fp32 or bf16 with --device cpu, or --device cuda",
            )
        if self.keep_last_checkpoints >= 0 and self.save_interval_updates == 0:
            raise DeclarationError(
                "there are no interval checkpoints to keep",
                key="--keep-last-checkpoints",
                value=self.keep_last_checkpoints,
                valid="also give --save-interval-updates N, or leave it out",
            )
        lone_target = self.source_lang is None and task_named(self.task).monolingual
        if (self.source_lang is None) != (self.target_lang is None) and not lone_target:
            missing = "--target-lang" if self.target_lang is None else "--source-lang"
            raise DeclarationError(
                "give both languages or neither",
                key=missing,
                value=None,
                valid="e.g. --source-lang de --target-lang en",
            )

    def _resolve_task_defaults(self) -> None:
        """Fill in what the task decides: the task itself (from the recipe), its label
        smoothing, and a language model's context windows; a translation run given a window is
        refused. (A frozen dataclass sets its own resolved fields once, here.)"""
        task = task_named(self.task) if self.task is not None else None
        task = task or task_of_recipe(load_recipe(self.recipe))
        length, mode = task.windows(self.tokens_per_sample, self.sample_break_mode)
        resolved: dict[str, Any] = {
            "task": task.name,
            "tokens_per_sample": length,
            "sample_break_mode": mode,
        }
        if self.label_smoothing is None:
            resolved["label_smoothing"] = task.label_smoothing
        for name, value in resolved.items():
            object.__setattr__(self, name, value)

    @property
    def run_task(self) -> Task:
        """The `tasks.Task` this run trains (`task` is its name)."""
        return task_named(self.task)

    @property
    def smoothing(self) -> float:
        """`label_smoothing` as resolved (the task's default when it was not given)."""
        assert self.label_smoothing is not None  # resolved in __post_init__
        return self.label_smoothing

    @classmethod
    def from_saved(cls, saved: dict[str, Any]) -> TrainConfig:
        """The config a save dir's `config.json` records (`saved_settings`: a setting added
        since it was written takes the value that run trained with)."""
        return cls.from_json(saved_settings(saved))

    def to_json(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return dataclasses.asdict(self)

    def settings(self) -> dict[str, Any]:
        """The fields a save dir's `config.json` holds: all but the size flags (`OVERRIDES`),
        whose values the run's `recipe.toml` holds as resolved."""
        return {k: v for k, v in self.to_json().items() if k not in OVERRIDES}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrainConfig:
        """The inverse of `to_json` (or `settings`: the size flags are then None); keys that are
        not fields (`vocab_size`, ...) are ignored."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def differences(self, saved: dict[str, Any]) -> list[tuple[str, Any, Any]]:
        """`(field, saved value, this value)` for every setting (`settings`) a resumed run may
        not change; the sizes are the recipe's, compared with it. `saved` holds every setting
        (a missing one is a difference from None).
        """
        mine = self.settings()
        return [
            (name, saved.get(name), mine[name])
            for name in mine
            if name not in RESUMABLE_CHANGES and saved.get(name) != mine[name]
        ]


# Every field's default, read from the dataclass: the CLI's help and the benchmarks say these.
TRAIN_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {f.name: f.default for f in dataclasses.fields(TrainConfig)}
)


def saved_settings(saved: dict[str, Any]) -> dict[str, Any]:
    """A save dir's settings with those added since it was written (`ADDED_SETTINGS`) filled
    in as that run trained them."""
    added = ADDED_SETTINGS.get(str(saved.get("task")), {})
    return {**added, **saved}


def resolve_recipe(config: TrainConfig, vocab_size: int) -> Recipe:
    """The recipe actually trained: its methods pinned, the size overrides applied
    (`Recipe.with_overrides`), then its `param_budget` rule.

    Every method is replaced by its declaration as read now (`declarations.pinned`), so the
    run's `config.json` holds the coefficients it trains with. The budget recipe gets the same
    overrides, so `--d-model 128` on `macaron` still matches the parameter count of
    `transformer-small` at d_model 128. The result has no `param_budget` left (d_ffn is fixed),
    so `Seq2Seq(recipe, vocab_size)` rebuilds the same model from it.
    """
    declared = load_recipe(config.recipe)
    task_named(config.task).check_recipe(declared, config.recipe)
    if declared.param_budget is not None and config.d_ffn is not None:
        raise DeclarationError(
            f"recipe '{declared.name}' sizes d_ffn itself (param_budget = "
            f"'{declared.param_budget}')",
            key="--d-ffn",
            value=config.d_ffn,
            valid="leave --d-ffn out for this recipe",
        )
    overrides = config.to_json()
    recipe = pinned(declared.with_overrides(overrides))
    if recipe.param_budget is not None:
        try:
            budget = load_recipe(recipe.param_budget).with_overrides(overrides)
        except ButcherflowError as error:  # the budget's own problem, named from this recipe
            raise DeclarationError(
                f"the recipe it names cannot be read: {error}",
                key="param_budget",
                value=recipe.param_budget,
                valid="a recipe name (see `butcherflow list`) or a recipe file",
                source=recipe.source,
            ) from None
        recipe = apply_param_budget(recipe, vocab_size, budget)
        recipe = dataclasses.replace(recipe, param_budget=None)
    d_model, n_heads = int(recipe.sizes["d_model"]), int(recipe.sizes["n_heads"])
    if d_model % n_heads:
        key, valid, source = "--d-model", "e.g. --d-model 256 --n-heads 4", None
        if config.d_model is None:
            key = "--n-heads"
        if config.d_model is None and config.n_heads is None:  # the recipe's own sizes
            key, valid = "sizes.n_heads", f"an n_heads dividing {d_model}, or --n-heads"
            source = recipe.source
        raise DeclarationError(
            "d_model must be a multiple of n_heads",
            key=key,
            value=f"d_model={d_model}, n_heads={n_heads}",
            valid=valid,
            source=source,
        )
    check_window(config.tokens_per_sample, recipe)
    return recipe


def check_window(tokens_per_sample: int | None, recipe: Recipe) -> None:
    """A context window the model's positions cover (`Recipe.max_positions`)."""
    longest = recipe.max_positions
    if tokens_per_sample is not None and longest is not None and tokens_per_sample > longest:
        raise DeclarationError(
            f"a window is longer than the model's {recipe.position} positions (max_len {longest})",
            key="--tokens-per-sample",
            value=tokens_per_sample,
            valid=f"--tokens-per-sample <= {longest}, or a recipe with longer positions",
        )


def resolve_precision(config: TrainConfig, device: torch.device) -> str:
    """`auto` is bf16 on a GPU that supports it, fp16 (with a GradScaler) on older GPUs, fp32 on
    CPU. An explicit bf16 on a GPU without bf16 is an error."""
    if device.type == "cuda":
        bf16 = torch.cuda.is_bf16_supported()
        if config.precision == "auto":
            return "bf16" if bf16 else "fp16"
        if config.precision == "bf16" and not bf16:
            raise DeclarationError(
                f"{torch.cuda.get_device_name(device)} has no bf16",
                key="--precision",
                value="bf16",
                valid="fp16 or fp32 on this GPU",
            )
        return config.precision
    if config.precision == "fp16":
        raise DeclarationError(
            "fp16 needs a GPU and none is available",
            key="--precision",
            value="fp16",
            valid="fp32 or bf16 on CPU",
        )
    return "fp32" if config.precision == "auto" else config.precision


def resolve_buckets(config: TrainConfig, device: torch.device) -> str:
    """The bucket ladder a run's new epochs are cut with (`TrainConfig.buckets`, as its task
    takes it: `Task.buckets`): `auto` is `DEFAULT_RATIO` on a GPU and `off` elsewhere for
    sentence pairs, `off` for a language model's windows; any other spec as given."""
    auto = DEFAULT_RATIO if device.type == "cuda" else "off"
    return config.run_task.buckets(config.buckets, auto)


def _integer(config: TrainConfig, name: str, *, minimum: int, why: str = "") -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise DeclarationError(
            count_problem(value),
            key=flag(name),
            value=value,
            valid=f"an integer >= {minimum}" + (f" ({why})" if why else ""),
        )


def _number(
    config: TrainConfig,
    name: str,
    *,
    low: float,
    high: float | None = None,
    low_open: bool = False,
    why: str = "",
) -> None:
    value = getattr(config, name)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > low if low_open else value >= low) and (high is None or value < high)
    if not ok:
        bounds = f"{'>' if low_open else '>='} {low:g}" + (
            "" if high is None else f" and < {high:g}"
        )
        raise DeclarationError(
            "out of range",
            key=flag(name),
            value=value,
            valid=f"a number {bounds}" + (f" ({why})" if why else ""),
        )


def _one(options: tuple[str, ...]) -> str:
    return "one of " + ", ".join(options)
