"""`butcherflow bench train`: training throughput in target tokens per second, FLOPs and MFU.

The recipes (by default `transformer-small` and `ode-transformer-rk2-gated`) train beside
`torch.nn.Transformer` at the same sizes (norm_first, the same embeddings and tied output
projection, see `bench.block`); a decoder-only recipe (`lm-*`, a `LanguageModel` on the target
side) trains beside the residual LM at its sizes (its blocks replaced by y + F(y): `lm-residual`
for `lm-hyper-connections` and `lm-mhc`); all on the same real batches: the first batches of epoch
1 of the training split, cut by `--max-tokens` and `--buckets` as the loop cuts sentence pairs
(`tasks.TRANSLATION`'s batches). Each model takes the training loop's own step
(`forward_backward` with the label-smoothed loss, then `optimizer_step` with AdamW), so the
figure is what `butcherflow train` gets; with `--compile`, each block is compiled on its own, as
`butcherflow train --compile` does (`assemble.compile_blocks`). The models take turns batch by
batch, so load on the machine hits them alike. Before any step is timed,
every model takes `warmup` untimed passes over one batch of each distinct shape among the timed
batches, so that every cache keyed by shape holds every timed shape: `torch.compile`'s graphs
and, on Hopper GPUs, the cuDNN attention plans that PyTorch builds for each new (batch, length)
shape. Timed on new shapes, an H100 ran the last of three models in each turn 4 to 6 times faster
than the first, whichever recipe it was (docs/benchmarks.md, "On the GPU"); length buckets
(`data.buckets`, on by default on a GPU) keep the shapes few, so the warm-up is short. On a GPU
each step is timed by CUDA events around it. Throughput counts target tokens (non-pad, eos
included), as fairseq does.

FLOPs are the model's, counted from its compiled blocks (`timing.py`). MFU divides the achieved
FLOP/s by the device's dense bf16 peak, looked up by the device's name (`hardware.py`); on the
CPU it is not defined. Peak memory is, on a GPU, each model's parameters, buffers and AdamW state
plus the peak its step allocates above what was allocated before it
(`torch.cuda.max_memory_allocated`); on the CPU, the peak resident set of the whole process (all
models together).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import torch

from ...assemble import Recipe, apply_param_budget, load_recipe, model_class
from ...data import (
    Vocabulary,
    build_vocabulary,
    default_cache_dir,
    encode_split,
    load_corpus,
)
from ...data.buckets import DEFAULT_RATIO
from ...devices import can_compile, resolve_device
from ...errors import DeclarationError
from ...tasks import TRANSLATION
from ...train.config import (
    TRAIN_DEFAULTS,
    TrainConfig,
    resolve_buckets,
    resolve_precision,
    resolve_recipe,
)
from .. import TRAIN_DATA
from .hardware import Peak
from .profile import Hotspot, profile_step
from .timing import Entry, Plan, compared_with, copy_model, plan_batches, prepare, take_turns

RECIPES = ("transformer-small", "ode-transformer-rk2-gated")


@final
@dataclass(frozen=True)
class TrainRow:
    """One model's measurement over the timed steps.

    **Arguments:**

    - `name`: the row's label; `parameters`: its parameter count.
    - `tokens`, `seconds`: target tokens trained and the time the steps took.
    - `flops`: training FLOPs of those steps (None: not countable, e.g. an adaptive solver).
    - `memory`: peak bytes (GPU: this model's, see the module docstring; CPU: None).
    - `reference`: the `torch.nn.Transformer` row at the same sizes (and compilation).
    - `eager`: with `compare_eager`, the eager row of the same model.
    - `unbucketed`: with `compare_buckets`, the row of the same model on unbucketed batches.
    - `hotspots`: with `profile`, where one more step's time went (`bench.train.profile`).
    """

    name: str
    parameters: int
    tokens: int
    seconds: float
    flops: int | None = None
    memory: int | None = None
    reference: str | None = None
    eager: str | None = None
    unbucketed: str | None = None
    hotspots: tuple[Hotspot, ...] = ()

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds

    @property
    def tflops(self) -> float | None:
        """Achieved training TFLOP/s."""
        return None if self.flops is None else self.flops / self.seconds / 1e12

    def mfu(self, peak: Peak | None) -> float | None:
        """Achieved FLOP/s over the device's peak (None without a peak or a FLOP count)."""
        tflops = self.tflops
        return None if tflops is None or peak is None else tflops / peak.tflops


def bench_recipe(
    name: str, data: str, overrides: Mapping[str, Any], vocab_size: int
) -> tuple[Recipe, Recipe]:
    """The recipe `name` resolved as `butcherflow train` resolves it, and the recipe whose sizes
    its `torch.nn.Transformer` row takes.

    A `param_budget` recipe is matched to its budget recipe at *all* the size overrides, d_ffn
    included (as the experiments do: macaron at transformer-base sizes has the parameter count
    of transformer-base, not of transformer-small resized), and is compared with the
    Transformer of that budget: the same parameters and, for macaron's two half-width FFNs, the
    same FLOPs. Other recipes are compared at their own sizes.
    """
    budget = load_recipe(name).param_budget
    if budget is None:
        recipe = resolve_recipe(TrainConfig(name, data, "-", **overrides), vocab_size)
        return recipe, recipe
    rest = {k: v for k, v in overrides.items() if k != "d_ffn"}
    resized = resolve_recipe(TrainConfig(name, data, "-", **rest), vocab_size)
    target = resolve_recipe(TrainConfig(budget, data, "-", **overrides), vocab_size)
    matched = apply_param_budget(
        dataclasses.replace(resized, param_budget=budget), vocab_size, target
    )
    return dataclasses.replace(matched, param_budget=None), target


def _tag(eager: bool, unbucketed: bool) -> str:
    """The end of a copy's row name: `" (eager)"`, `" (no buckets)"`, both, or nothing."""
    parts = [text for text, on in (("eager", eager), ("no buckets", unbucketed)) if on]
    return f" ({', '.join(parts)})" if parts else ""


def bench_train(
    *,
    data: str = TRAIN_DATA[TRANSLATION.name],
    recipes: Sequence[str] = RECIPES,
    vocab_size: int = TRAIN_DEFAULTS["vocab_size"],
    max_tokens: int = TRAIN_DEFAULTS["max_tokens"],
    updates: int = 20,
    warmup: int = 1,
    device: str = "auto",
    precision: str = "auto",
    compile: bool = False,
    compare_eager: bool = False,
    buckets: str = "auto",
    compare_buckets: bool = False,
    sizes: Mapping[str, Any] | None = None,
    profile: str | None = None,
) -> tuple[list[TrainRow], str, torch.device]:
    """Time training steps of each recipe and of `torch.nn.Transformer` at the same sizes.

    **Arguments:**

    - `data`, `vocab_size`, `max_tokens`: the corpus, its BPE vocabulary and the batch budget.
    - `recipes`: the recipes to time (one `torch.nn.Transformer` row per distinct size).
    - `updates`: timed steps per model; `warmup`: untimed passes, before them, over one batch
      of each distinct shape among the timed batches.
    - `device`, `precision`, `compile`, `buckets`: as for `butcherflow train` (`compile`: each
      block on its own, `assemble.compile_blocks`).
    - `compare_eager`: with `compile`, also time an eager copy of every model, in the same
      turns (a "compiled / eager" column).
    - `compare_buckets`: also time a copy of every model on unbucketed batches of the same
      epoch, in the same turns (what the buckets' padding costs or saves).
    - `sizes`: a run's overrides (`assemble.recipe.OVERRIDES`: `d_model`, `n_heads`, `d_ffn`,
      `dropout`, `encoder_layers`, `decoder_layers`), e.g. an experiment preset's.
    - `profile`: a folder: after the timed steps, one more step of every model runs under the
      profiler (`bench.train.profile`), its trace and operator table written there.

    **Returns:** `(rows, settings, device)`: one row per model, a line describing the settings
    and the device the models ran on.
    """
    overrides = dict(sizes or {})
    target, precision_name, amp, compile, ladder = _resolve_run(
        recipes[0], data, device, precision, compile, buckets, compare_buckets
    )
    vocab, plans = _vocab_and_plans(
        data, vocab_size, max_tokens, updates, ladder, target, compare_buckets
    )
    entries = _entries(recipes, data, overrides, vocab, plans, compile, compare_eager)
    _warm_up_and_time(entries, plans[False], ladder, target, amp, vocab.pad, warmup)
    rows = _rows(entries, target, profile)
    compiled_text = ", torch.compile per block" + (" (and eager copies)" if compare_eager else "")
    settings = (
        f"{data}, vocabulary {len(vocab)}, max_tokens {max_tokens}, --buckets {ladder}: "
        f"{len(plans[False].batches)} timed updates in {len(plans[False].warm)} distinct batch "
        f"shapes, after {warmup} untimed pass(es) over one batch of each shape"
        + (f" (unbucketed copies: {len(plans[True].warm)} shapes)" if compare_buckets else "")
        + f", device {target}, precision {precision_name}{compiled_text if compile else ''}"
        + (f", sizes {overrides}" if overrides else "")
    )
    return rows, settings, target


def _resolve_run(
    recipe: str, data: str, device: str, precision: str, compile: bool, buckets: str, compare: bool
) -> tuple[torch.device, str, torch.dtype | None, bool, str]:
    """The device, precision (name and autocast dtype), whether to compile and the bucket
    ladder, as `butcherflow train` resolves them; `compare`: `--compare-buckets`, which needs
    buckets."""
    # the batches are sentence pairs, whatever the recipe: the translation task's buckets
    base = TrainConfig(
        recipe,
        data,
        "-",
        device=device,
        precision=precision,
        buckets=buckets,
        task=TRANSLATION.name,
    )
    target = resolve_device(base.device)
    precision_name = resolve_precision(base, target)
    compile = compile and can_compile(target.type)
    ladder = resolve_buckets(base, target)
    if compare and ladder == "off":
        raise DeclarationError(
            "--compare-buckets compares bucketed batches with unbucketed ones",
            key="--buckets",
            value=ladder,
            valid=f"a ladder, such as --buckets {DEFAULT_RATIO}",
        )
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision_name)
    return target, precision_name, amp, compile, ladder


def _vocab_and_plans(
    data: str,
    vocab_size: int,
    max_tokens: int,
    updates: int,
    ladder: str,
    target: torch.device,
    compare_buckets: bool,
) -> tuple[Vocabulary, dict[bool, Plan]]:
    """The corpus's vocabulary and the timed batches of its training split, keyed by
    "unbucketed" (True only with `compare_buckets`)."""
    corpus = load_corpus(data)
    vocab = build_vocabulary(corpus, vocab_size, default_cache_dir())
    split = encode_split(corpus.train, vocab)
    plans = {False: plan_batches(split, max_tokens, updates, ladder, target)}
    if compare_buckets:
        plans[True] = plan_batches(split, max_tokens, updates, "off", target)
    return vocab, plans


def _warm_up_and_time(
    entries: Mapping[str, Entry],
    plan: Plan,
    ladder: str,
    target: torch.device,
    amp: torch.dtype | None,
    pad: int,
    warmup: int,
) -> None:
    """Move every model to `target`, then take the untimed warm-up turns and the timed ones,
    printing a progress line before and after each."""

    def autocast() -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext() if amp is None else torch.autocast(target.type, amp)

    for entry in entries.values():
        prepare(entry, target, amp, autocast, pad)
    print(  # progress lines: a run stopped at a time limit still says how far it got
        f"bench train: {len(entries)} models, --buckets {ladder}: {len(plan.batches)} timed "
        f"batches in {len(plan.warm)} shapes, device {target}",
        flush=True,
    )
    for timed in (False, True):  # every shape is seen before any step is timed
        began = time.perf_counter()
        take_turns(list(entries.values()), target, pad, warmup, timed)
        what = "timed steps" if timed else "warm-up (compilation, attention plans)"
        print(f"bench train: {what} in {time.perf_counter() - began:.1f} s", flush=True)


def _entries(
    recipes: Sequence[str],
    data: str,
    overrides: Mapping[str, Any],
    vocab: Vocabulary,
    plans: Mapping[bool, Plan],
    compile: bool,
    compare_eager: bool,
) -> dict[str, Entry]:
    """Every model to time, by row name: each recipe and the row it is compared with
    (`bench.train.timing.compared_with`), and their copies (the same weights): eager
    (`compare_eager`), on unbucketed batches (`plans[True]`)."""
    entries: dict[str, Entry] = {}
    eager_copies = (False, True) if compile and compare_eager else (False,)
    for name in recipes:
        recipe, compared = bench_recipe(name, data, overrides, len(vocab))
        torch.manual_seed(0)
        ours = model_class(recipe)(recipe, len(vocab), pad_index=vocab.pad)
        reference, twin, theirs_of, sides = compared_with(compared, len(vocab), vocab.pad)
        for eager in eager_copies:
            for unbucketed, plan in plans.items():
                tag = _tag(eager, unbucketed)
                eager_twin = _tag(True, unbucketed) if len(eager_copies) > 1 and not eager else None
                bucket_twin = _tag(eager, True) if len(plans) > 1 and not unbucketed else None
                compiled = compile and not eager
                model = copy_model(ours) if tag else ours
                entries[name + tag] = Entry(
                    model,
                    ours,
                    compiled,
                    plan,
                    reference + tag,
                    eager_twin and name + eager_twin,
                    bucket_twin and name + bucket_twin,
                )
                if reference + tag not in entries:
                    torch.manual_seed(0)  # the same weights for every copy
                    entries[reference + tag] = Entry(
                        theirs_of(),
                        twin,
                        compiled,
                        plan,
                        eager=eager_twin and reference + eager_twin,
                        unbucketed=bucket_twin and reference + bucket_twin,
                        sides=sides,
                    )
    return entries


def _rows(
    entries: Mapping[str, Entry], target: torch.device, profile: str | None
) -> list[TrainRow]:
    """One row per model (after one more profiled step of each, with `profile`)."""
    rows = []
    for name, entry in entries.items():
        assert entry.resident is not None and entry.step is not None
        hotspots: tuple[Hotspot, ...] = ()
        if profile is not None:
            one = functools.partial(entry.step, entry.plan.batches[-1])
            hotspots = tuple(profile_step(one, target, Path(profile), name))
        rows.append(
            TrainRow(
                name,
                sum(p.numel() for p in entry.model.parameters()),
                entry.tokens,
                entry.seconds,
                entry.flops,
                entry.resident() + entry.transient if target.type == "cuda" else None,
                entry.reference,
                entry.eager,
                entry.unbucketed,
                hotspots,
            )
        )
    return rows
