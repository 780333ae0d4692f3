"""`butcherflow bench train`: training throughput in target tokens per second, FLOPs and MFU.

The recipes (by default `transformer-small` and `ode-transformer-rk2-gated`) train beside
`torch.nn.Transformer` at the same sizes (norm_first, the same embeddings and tied output
projection, see `bench.block`); a decoder-only recipe (`lm-*`, a `LanguageModel` on the target
side) trains beside the residual LM at its sizes (its blocks replaced by y + F(y): `lm-residual`
for `lm-hyper-connections` and `lm-mhc`); all on the same real batches: the first batches of epoch
1 of the training split, cut by `--max-tokens` as the loop cuts them. Each model takes the training
loop's own step (`forward_backward` with the label-smoothed loss, then `optimizer_step` with
AdamW), so the figure is what `butcherflow train` gets. The models take turns batch by batch, so
load on the machine hits them alike. Before the timed pass, `warmup` untimed passes run over the
very batches that are then timed, so that every cache keyed by shape holds every timed shape:
`torch.compile`'s graph (compiled once, with dynamic shapes: see `_prepare`) and, on Hopper GPUs,
the cuDNN attention graphs that PyTorch builds for each new (batch, length) shape. Timed on new
batches, an H100 ran the last of three models in each turn 4 to 6 times faster than the first,
whichever recipe it was (docs/benchmarks.md, "On the GPU").
Throughput counts target tokens (non-pad, eos included), as fairseq does.

FLOPs are the model's, counted from its compiled blocks (`flops_per_token`: linear layers and
attention's quadratic part, each field call and combination term) for the non-pad tokens of each
batch at that batch's lengths, plus the tied output projection (2·d_model·vocab per target
token); a training step is 3× the forward (the backward computes two products per forward one).
`torch.nn.Transformer` is counted as the pre-norm Transformer it computes. Padding, norms,
softmax, the embeddings and FLOATER's position solves are not counted, so MFU slightly
understates the work done. MFU divides the achieved FLOP/s by the device's dense bf16 peak
(`bench.hardware`); on the CPU it is not defined. Peak memory is, on a GPU, each model's
parameters, buffers and AdamW state plus the peak its step allocates above what was allocated
before it (`torch.cuda.max_memory_allocated`); on the CPU, the peak resident set of the whole
process (all models together).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import math
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import torch
from torch import nn

from ..assemble import LanguageModel, Recipe, Seq2Seq, apply_param_budget, load_recipe, model_class
from ..assemble.recipe import OVERRIDES, Side
from ..compiler import CompiledBlock
from ..data import (
    Batch,
    build_vocabulary,
    collate,
    default_cache_dir,
    encode_split,
    load_corpus,
    make_batches,
)
from ..devices import can_compile, resolve_device
from ..errors import DeclarationError
from ..experiments.catalog import PRESETS
from ..tasks import LANGUAGE_MODEL, TRANSLATION
from ..train.config import TRAIN_DEFAULTS, TrainConfig, resolve_precision, resolve_recipe
from ..train.step import forward_backward, optimizer_step
from . import TRAIN_DATA, write_section
from .block import TorchTransformer
from .hardware import Peak, device_peak, process_peak_rss, resident_bytes
from .order import machine
from .profile import Hotspot, describe, profile_step

RECIPES = ("transformer-small", "ode-transformer-rk2-gated")
MIB = 1024 * 1024


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
    - `hotspots`: with `profile`, where one more step's time went (`bench.profile`).
    """

    name: str
    parameters: int
    tokens: int
    seconds: float
    flops: int | None = None
    memory: int | None = None
    reference: str | None = None
    eager: str | None = None
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


def _sizes_of(recipe: Recipe) -> tuple[int, ...]:
    assert recipe.encoder is not None and recipe.decoder is not None
    keys = ("d_model", "n_heads", "d_ffn")
    return (*(int(recipe.sizes[k]) for k in keys), recipe.encoder.layers, recipe.decoder.layers)


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


def forward_flops(model: Seq2Seq | LanguageModel, batch: Batch, pad: int) -> int | None:
    """Forward FLOPs of `model` on `batch` (see the module docstring for what is counted).

    **Returns:** the count, or None when a block's count is chosen at run time.
    """
    src_len, tgt_len = batch.src.shape[1], batch.prev_output.shape[1]
    output = 2 * int(model.embedding.tokens.weight.shape[1]) * model.embedding.tokens.num_embeddings
    if isinstance(model, LanguageModel):  # the target side alone, causal self-attention
        own = [block.flops(tgt_len, tgt_len) for block in _blocks(model.blocks)]
        if any(c is None for c in own):
            return None
        return (sum(c[0] for c in own if c is not None) + output) * batch.ntokens
    counts = [block.flops(src_len, src_len) for block in _blocks(model.encoder)]
    counts += [block.flops(tgt_len, src_len) for block in _blocks(model.decoder)]
    if any(c is None for c in counts):
        return None
    src_tokens = int(batch.src.ne(pad).sum())
    n_encoder = len(model.encoder)
    per_source = sum(sum(c) for c in counts[:n_encoder] if c is not None)
    per_source += sum(c[1] for c in counts[n_encoder:] if c is not None)  # memory keys/values
    per_target = sum(c[0] for c in counts[n_encoder:] if c is not None)
    per_target += output
    return per_source * src_tokens + per_target * batch.ntokens


def _blocks(side: nn.ModuleList) -> list[CompiledBlock]:
    blocks = [block for block in side if isinstance(block, CompiledBlock)]
    assert len(blocks) == len(side)  # models are made of compiled blocks
    return blocks


def transformer_twin(recipe: Recipe, vocab_size: int, pad: int) -> Seq2Seq:
    """The pre-norm Transformer (Euler blocks) at `recipe`'s sizes, on the meta device: what
    `torch.nn.Transformer(norm_first=True)` computes, to count its FLOPs by the same rule."""
    assert recipe.encoder is not None and recipe.decoder is not None
    twin = dataclasses.replace(
        recipe,
        encoder=Side(recipe.encoder.layers, "euler", field="san+ffn"),
        decoder=Side(recipe.decoder.layers, "euler", field="san+ca+ffn"),
        position="sinusoidal",
        floater=None,
        param_budget=None,
    )
    with torch.device("meta"):
        return Seq2Seq(twin, vocab_size, pad_index=pad)


@final
@dataclass
class _Entry:
    """A model being timed, and what its row needs."""

    model: nn.Module
    counter: Seq2Seq | LanguageModel  # whose blocks count the FLOPs
    compiled: bool
    reference: str | None = None
    eager: str | None = None
    seconds: float = 0.0
    flops: int | None = 0
    transient: int = 0  # the largest step allocation above what was allocated before the step
    step: Callable[[Batch], None] | None = None
    resident: Callable[[], int] | None = None


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
    sizes: Mapping[str, Any] | None = None,
    profile: str | None = None,
) -> tuple[list[TrainRow], str, torch.device]:
    """Time training steps of each recipe and of `torch.nn.Transformer` at the same sizes.

    **Arguments:**

    - `data`, `vocab_size`, `max_tokens`: the corpus, its BPE vocabulary and the batch budget.
    - `recipes`: the recipes to time (one `torch.nn.Transformer` row per distinct size).
    - `updates`: timed steps per model; `warmup`: untimed passes over the same batches
      before them.
    - `device`, `precision`, `compile`: as for `butcherflow train`.
    - `compare_eager`: with `compile`, also time an eager copy of every model, in the same
      turns (a "compiled / eager" column).
    - `sizes`: a run's overrides (`assemble.recipe.OVERRIDES`: `d_model`, `n_heads`, `d_ffn`,
      `dropout`, `encoder_layers`, `decoder_layers`), e.g. an experiment preset's.
    - `profile`: a folder: after the timed steps, one more step of every model runs under the
      profiler (`bench.profile`), its trace and operator table written there.

    **Returns:** `(rows, settings, device)`: one row per model, a line describing the settings
    and the device the models ran on.
    """
    overrides = dict(sizes or {})
    base = TrainConfig(recipes[0], data, "-", device=device, precision=precision)
    target = resolve_device(base.device)
    precision_name = resolve_precision(base, target)
    compile = compile and can_compile(target.type)
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision_name)
    corpus = load_corpus(data)
    vocab = build_vocabulary(corpus, vocab_size, default_cache_dir())
    split = encode_split(corpus.train, vocab)
    order = make_batches(split, max_tokens, shuffle=True, seed=1, epoch=1)[:updates]
    batches = [collate(split, indices).to(target) for indices in order]

    entries: dict[str, _Entry] = {}
    # with compare_eager, every model also runs as an eager copy (rows tagged " (eager)")
    tags = ["", " (eager)"] if compile and compare_eager else [""]
    for name in recipes:
        recipe, compared = bench_recipe(name, data, overrides, len(vocab))
        torch.manual_seed(0)
        ours = model_class(recipe)(recipe, len(vocab), pad_index=vocab.pad)
        reference, twin, theirs_of = _reference(compared, len(vocab), vocab.pad)
        for tag in tags:
            compiled = compile and not tag
            eager = None if tag or len(tags) == 1 else " (eager)"
            model = _copy(ours) if tag else ours
            entries[name + tag] = _Entry(
                model, ours, compiled, reference + tag, eager and name + eager
            )
            if reference + tag not in entries:
                torch.manual_seed(0)  # the same weights for the eager copy
                entries[reference + tag] = _Entry(
                    theirs_of(), twin, compiled, eager=eager and reference + eager
                )

    def autocast() -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext() if amp is None else torch.autocast(target.type, amp)

    for entry in entries.values():
        _prepare(entry, target, amp, autocast, vocab.pad)
    cuda = target.type == "cuda"
    timed_from = warmup * len(batches)
    for i, batch in enumerate([*batches] * warmup + batches):
        for entry in entries.values():  # take turns: load on the machine hits all alike
            assert entry.step is not None
            if cuda:
                torch.cuda.synchronize(target)
                torch.cuda.reset_peak_memory_stats(target)
                before = torch.cuda.memory_allocated(target)
            began = time.perf_counter()
            entry.step(batch)
            if cuda:
                torch.cuda.synchronize(target)
            if i < timed_from:
                continue
            entry.seconds += time.perf_counter() - began
            if cuda:
                step_peak = torch.cuda.max_memory_allocated(target) - before
                entry.transient = max(entry.transient, step_peak)
            count = forward_flops(entry.counter, batch, vocab.pad)
            entry.flops = None if count is None or entry.flops is None else entry.flops + 3 * count
    tokens = sum(b.ntokens for b in batches)
    rows = []
    for name, entry in entries.items():
        assert entry.resident is not None and entry.step is not None
        hotspots: tuple[Hotspot, ...] = ()
        if profile is not None:
            one = functools.partial(entry.step, batches[-1])
            hotspots = tuple(profile_step(one, target, Path(profile), name))
        rows.append(
            TrainRow(
                name,
                sum(p.numel() for p in entry.model.parameters()),
                tokens,
                entry.seconds,
                entry.flops,
                entry.resident() + entry.transient if cuda else None,
                entry.reference,
                entry.eager,
                hotspots,
            )
        )
    compiled_text = ", torch.compile" + (" (and eager copies)" if compare_eager else "")
    settings = (
        f"{data}, vocabulary {len(vocab)}, max_tokens {max_tokens}, {len(batches)} timed "
        f"updates after {warmup} untimed pass(es) over the same batches, device {target}, "
        f"precision {precision_name}{compiled_text if compile else ''}"
        + (f", sizes {overrides}" if overrides else "")
    )
    return rows, settings, target


def _reference(
    recipe: Recipe, vocab_size: int, pad: int
) -> tuple[str, Seq2Seq | LanguageModel, Callable[[], nn.Module]]:
    """(row name, FLOP counter, maker of the model) of the row a recipe is compared with:
    `torch.nn.Transformer` at its sizes, or for a decoder-only recipe the residual LM at its
    sizes (the same model with Euler blocks, y + F(y): what `lm-residual` declares)."""
    if model_class(recipe) is LanguageModel:
        side = recipe.decoder or recipe.encoder  # a decoder-only recipe declares a decoder
        assert side is not None
        residual = dataclasses.replace(
            recipe, name="lm-residual", decoder=Side(side.layers, "euler", field="san+ffn")
        )
        d, h, f = (int(recipe.sizes[k]) for k in ("d_model", "n_heads", "d_ffn"))
        with torch.device("meta"):
            counter = LanguageModel(residual, vocab_size, pad_index=pad)
        name = f"lm-residual ({d}/{h}/{f}, {side.layers} layers)"
        return name, counter, lambda: LanguageModel(residual, vocab_size, pad_index=pad)
    d, h, f, e, dec = _sizes_of(recipe)
    twin = transformer_twin(recipe, vocab_size, pad)

    def theirs() -> nn.Module:
        with warnings.catch_warnings():  # "enable_nested_tensor ... norm_first": expected
            warnings.simplefilter("ignore", UserWarning)
            return TorchTransformer(twin)

    return f"torch.nn.Transformer ({d}/{h}/{f}, {e}+{dec} layers)", twin, theirs


def _copy(model: Seq2Seq | LanguageModel) -> Seq2Seq | LanguageModel:
    """The same model with its own parameters (the eager twin of a compiled one)."""
    vocab = model.embedding.tokens.num_embeddings
    copy = type(model)(model.recipe, vocab, pad_index=model.pad_index)
    copy.load_state_dict(model.state_dict())
    return copy


def _prepare(
    entry: _Entry,
    target: torch.device,
    amp: torch.dtype | None,
    autocast: Callable[[], contextlib.AbstractContextManager[Any]],
    pad: int,
) -> None:
    """Move the model, build its optimizer and its training step (the loop's own)."""
    model = entry.model.to(target).train()
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.0)
    scaler = torch.amp.GradScaler(target.type, enabled=amp is torch.float16)
    # every batch has other lengths: `butcherflow train --compile` compiles once for the first
    # shapes, then once more with the changed sizes dynamic, and keeps that graph; compiling it
    # dynamic from the start reaches the same graph with one compilation instead of two
    run: nn.Module = (
        torch.compile(model, dynamic=True) if entry.compiled else model  # type: ignore[assignment]
    )

    def step(batch: Batch) -> None:
        loss, _ = forward_backward(
            run,
            [batch],
            epsilon=0.1,
            pad=pad,
            device=target,
            autocast=autocast,
            scaler=scaler,
            world_size=1,
            task=LANGUAGE_MODEL if isinstance(entry.counter, LanguageModel) else TRANSLATION,
        )
        optimizer_step(optimizer, scaler, params, 0.0, math.isfinite(loss))

    entry.step = step
    entry.resident = lambda: resident_bytes(model, optimizer)


def _cell(value: float | None, text: str) -> str:
    return "n/a" if value is None else text.format(value)


def _ratio(row: TrainRow, other: TrainRow | None) -> str:
    return "" if other is None else f"{row.tokens_per_s / other.tokens_per_s:.3f}"


def train_section_key(device: torch.device, compile: bool, recipes: Sequence[str]) -> str:
    """The benchmarks.md section a configuration writes: `train` (CPU) or `train-cuda` for eager
    runs, and one section per recipe set for compiled runs (a GPU compiles one recipe per
    command), so that no run overwrites another kind's numbers."""
    key = "train" if device.type == "cpu" else f"train-{device.type}"
    return key + ("-compiled-" + "+".join(recipes) if compile else "")


def run_train_bench(output: str, command: str, **options: Any) -> list[TrainRow]:
    """Run `bench_train(**options)`, print the table and write its section of `output`."""
    load = os.getloadavg()[0]  # the machine's business, which every row shared (they alternate)
    rows, settings, target = bench_train(**options)
    peak = device_peak(target)
    by_name = {r.name: r for r in rows}
    gpu = f", {torch.cuda.get_device_name(target)}" if target.type == "cuda" else ""
    if target.type == "cuda":
        peak_text = (
            f"MFU against the {peak.name}'s dense {peak.precision} peak of {peak.tflops:g} TFLOP/s"
            if peak is not None
            else "MFU n/a: this GPU is not in bench.hardware.PEAKS"
        )
        total = torch.cuda.get_device_properties(target).total_memory
        memory_text = (
            "peak memory per model (parameters + AdamW state + its step's peak), "
            f"of the device's {total / MIB:,.0f} MiB"
        )
    else:
        peak_text = "MFU n/a on a CPU (no tensor-core peak)"
        memory_text = (
            f"peak resident set of the whole process (all models): "
            f"{process_peak_rss() / MIB:,.0f} MiB"
        )
    lines = [
        "## Training throughput (`butcherflow bench train`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}; torch {torch.__version__}{gpu}, {torch.get_num_threads()} torch "
        f"thread(s); load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at the end. "
        f"Settings: {settings}. Each model "
        "takes the training loop's own step (label-smoothed loss, AdamW) on the same batches, "
        "in turns; throughput counts target tokens (non-pad, eos included), as fairseq does. "
        "FLOPs: the model's, from its compiled blocks, forward + backward = 3 × forward "
        f"(module docstring of `butcherflow.bench.train`); {peak_text}; {memory_text}.",
        "",
        "| model | parameters | target tokens/s | vs torch.nn.Transformer | vs lm-residual "
        "| compiled / eager | GFLOP per target token | TFLOP/s | MFU | peak memory (MiB) |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for row in rows:
        ratio = _ratio(row, by_name.get(row.reference or ""))
        lm = (row.reference or "").startswith("lm-residual")  # a decoder-only recipe's row
        transformer, residual = ("", ratio) if lm else (ratio, "")
        eager = _ratio(row, by_name.get(row.eager or ""))
        per_token = None if row.flops is None else row.flops / row.tokens / 1e9
        memory = None if row.memory is None else row.memory / MIB
        lines.append(
            f"| {row.name} | {row.parameters:,} | {row.tokens_per_s:,.0f} | {transformer} | "
            f"{residual} | {eager} | "
            f"{_cell(per_token, '{:.3g}')} | {_cell(row.tflops, '{:.3g}')} | "
            f"{_cell(row.mfu(peak), '{:.1%}')} | {_cell(memory, '{:,.0f}')} |"
        )
    profiled = [row for row in rows if row.hotspots]
    if profiled:
        where = "kernels by device time" if target.type == "cuda" else "operators by CPU time"
        lines += [
            "",
            f"Where one more step's time goes (`--profile {options.get('profile')}`: a Chrome "
            f"trace and the operator table per model; the largest {where}):",
            "",
            *(f"- {row.name}: {describe(list(row.hotspots))}" for row in profiled),
        ]
    body = "\n".join(lines)
    print(body)
    key = train_section_key(target, bool(options.get("compile")), options.get("recipes", RECIPES))
    write_section(output, key, body)
    return rows


def run_from_args(args: argparse.Namespace, given: str = "") -> int:
    """`bench train`: the options, the command line shown in its section, the run.

    **Arguments:**

    - `args`: the parsed `butcherflow bench train` arguments.
    - `given`: options the caller already applied, as they appear on the command line
      (`" --threads N"`), appended to the command shown.

    **Returns:** the exit code, 0.
    """
    options: dict[str, Any] = {
        "data": args.data or TRAIN_DATA[TRANSLATION.name],
        "vocab_size": args.vocab_size,
        "max_tokens": args.max_tokens,
        "updates": args.updates,
        "device": args.device,
        "precision": args.precision,
    }
    command = "butcherflow bench train " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in options.items()
    )
    command += " --compile" * args.compile + " --compare-eager" * args.compare_eager + given
    if args.recipes:
        options["recipes"] = tuple(args.recipes)
        command += " --recipes " + " ".join(args.recipes)
    if args.sizes is not None:
        if args.sizes not in PRESETS:
            raise DeclarationError(
                "unknown size preset",
                key="--sizes",
                value=args.sizes,
                valid=", ".join(PRESETS),
            )
        preset = PRESETS[args.sizes].train_fields()
        options["sizes"] = {k: preset[k] for k in OVERRIDES}  # sizes and dropout
        command += f" --sizes {args.sizes}"
    if args.compare_eager and not args.compile:
        raise DeclarationError(
            "--compare-eager compares compiled models with eager copies",
            key="--compare-eager",
            value=True,
            valid="add --compile",
        )
    if args.profile is not None:
        options["profile"] = args.profile
        command += f" --profile {args.profile}"
    if str(args.output) != "docs/benchmarks.md":
        command += f" --output {args.output}"
    options.setdefault("recipes", RECIPES)
    run_train_bench(
        args.output, command, compile=args.compile, compare_eager=args.compare_eager, **options
    )
    return 0
