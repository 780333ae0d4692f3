"""`butcherflow bench train`: training throughput, in target tokens per second.

`transformer-small` and `ode-transformer-rk2-gated` train beside `torch.nn.Transformer` at the
same sizes (norm_first, the same embeddings and tied output projection, see `bench.block`) on the
same real batches: the first batches of epoch 1 of the training split, cut by `--max-tokens` as
the loop cuts them. Each model takes the training loop's own step (`forward_backward` with the
label-smoothed loss, then `optimizer_step` with AdamW), so the figure is what `butcherflow train`
gets. The models take turns batch by batch, so load on the machine hits them alike; the first
`warmup` batches are not timed. Throughput counts target tokens (non-pad, eos included), as
fairseq does.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, final

import torch
from torch import nn

from ..assemble import Recipe, Seq2Seq
from ..data import (
    Batch,
    build_vocabulary,
    collate,
    default_cache_dir,
    encode_split,
    load_corpus,
    make_batches,
)
from ..devices import resolve_device
from ..train.config import TrainConfig, resolve_precision, resolve_recipe
from ..train.step import forward_backward, optimizer_step
from . import write_section
from .block import TorchTransformer
from .order import machine

RECIPES = ("transformer-small", "ode-transformer-rk2-gated")


@final
@dataclass(frozen=True)
class TrainRow:
    """One model's measurement: `tokens` target tokens trained in `seconds` (timed steps)."""

    name: str
    parameters: int
    tokens: int
    seconds: float
    reference: str | None = None  # the torch.nn.Transformer row at the same sizes

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds


def _sizes_of(recipe: Recipe) -> tuple[int, ...]:
    assert recipe.encoder is not None and recipe.decoder is not None
    keys = ("d_model", "n_heads", "d_ffn")
    return (*(int(recipe.sizes[k]) for k in keys), recipe.encoder.layers, recipe.decoder.layers)


def bench_train(
    *,
    data: str = "bible:de-en",
    recipes: Sequence[str] = RECIPES,
    vocab_size: int = 8000,
    max_tokens: int = 4096,
    updates: int = 20,
    warmup: int = 3,
    device: str = "auto",
    precision: str = "auto",
    compile: bool = False,
    sizes: Mapping[str, Any] | None = None,
) -> tuple[list[TrainRow], str]:
    """Time training steps of each recipe and of `torch.nn.Transformer` at the same sizes.

    **Arguments:**

    - `data`, `vocab_size`, `max_tokens`: the corpus, its BPE vocabulary and the batch budget.
    - `recipes`: the recipes to time (one `torch.nn.Transformer` row per distinct size).
    - `updates`: timed steps per model; `warmup`: untimed steps before them.
    - `device`, `precision`, `compile`: as for `butcherflow train`.
    - `sizes`: size overrides (`d_model`, ...) for a quick check at small settings.

    **Returns:** `(rows, settings)`: one row per model and a line describing the settings.
    """
    overrides = dict(sizes or {})
    base = TrainConfig(
        recipes[0],
        data,
        "-",
        vocab_size=vocab_size,
        max_tokens=max_tokens,
        device=device,
        precision=precision,
        **overrides,
    )
    target = resolve_device(base.device)
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(resolve_precision(base, target))
    corpus = load_corpus(data)
    vocab = build_vocabulary(corpus, vocab_size, default_cache_dir())
    split = encode_split(corpus.train, vocab)
    order = make_batches(split, max_tokens, shuffle=True, seed=1, epoch=1)[: warmup + updates]
    batches = [collate(split, indices).to(target) for indices in order]

    models: dict[str, nn.Module] = {}
    references: dict[str, str] = {}
    for name in recipes:
        recipe = resolve_recipe(TrainConfig(name, data, "-", **overrides), len(vocab))
        torch.manual_seed(0)
        ours = Seq2Seq(recipe, len(vocab), pad_index=vocab.pad)
        models[name] = ours
        d, h, f, e, dec = _sizes_of(recipe)
        reference = f"torch.nn.Transformer ({d}/{h}/{f}, {e}+{dec} layers)"
        references[name] = reference
        if reference not in models:
            torch.manual_seed(0)
            with warnings.catch_warnings():  # "enable_nested_tensor ... norm_first": expected
                warnings.simplefilter("ignore", UserWarning)
                models[reference] = TorchTransformer(ours)

    def autocast() -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext() if amp is None else torch.autocast(target.type, amp)

    def trainer(model: nn.Module) -> Callable[[Batch], None]:
        model.to(target).train()
        params = list(model.parameters())
        optimizer = torch.optim.AdamW(
            params, lr=1e-4, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.0
        )
        scaler = torch.amp.GradScaler(target.type, enabled=amp is torch.float16)
        run: nn.Module = torch.compile(model) if compile else model  # type: ignore[assignment]

        def step(batch: Batch) -> None:
            loss, _ = forward_backward(
                run,
                [batch],
                epsilon=0.1,
                pad=vocab.pad,
                device=target,
                autocast=autocast,
                scaler=scaler,
                world_size=1,
            )
            optimizer_step(optimizer, scaler, params, 0.0, math.isfinite(loss))

        return step

    steps = {name: trainer(model) for name, model in models.items()}
    seconds = dict.fromkeys(models, 0.0)
    for i, batch in enumerate(batches):
        for name, step in steps.items():  # take turns: load on the machine hits all alike
            if target.type == "cuda":
                torch.cuda.synchronize(target)
            began = time.perf_counter()
            step(batch)
            if target.type == "cuda":
                torch.cuda.synchronize(target)
            if i >= warmup:
                seconds[name] += time.perf_counter() - began
    tokens = sum(b.ntokens for b in batches[warmup:])
    rows = [
        TrainRow(
            name,
            sum(p.numel() for p in model.parameters()),
            tokens,
            seconds[name],
            references.get(name),
        )
        for name, model in models.items()
    ]
    settings = (
        f"{data}, vocabulary {len(vocab)}, max_tokens {max_tokens}, {len(batches) - warmup} timed "
        f"updates after {warmup} untimed, device {target}, precision "
        f"{resolve_precision(base, target)}{', torch.compile' if compile else ''}"
        + (f", sizes {overrides}" if overrides else "")
    )
    return rows, settings


def run_train_bench(output: str, command: str, **options: Any) -> list[TrainRow]:
    """Run `bench_train(**options)`, print the table and write the `train` section of `output`."""
    load = os.getloadavg()[0]  # the machine's business, which every row shared (they alternate)
    rows, settings = bench_train(**options)
    by_name = {r.name: r for r in rows}
    lines = [
        "## Training throughput (`butcherflow bench train`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}; torch {torch.__version__}"
        + (f", {torch.cuda.get_device_name()}" if torch.cuda.is_available() else "")
        + f", {torch.get_num_threads()} torch thread(s); load average {load:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at the end"
        + f". Settings: {settings}. Each model takes the training loop's own step "
        "(label-smoothed loss, AdamW) on the same batches, in turns; throughput counts target "
        "tokens (non-pad, eos included), as fairseq does.",
        "",
        "| model | parameters | target tokens/s | vs torch.nn.Transformer |",
        "|---|--:|--:|--:|",
    ]
    for row in rows:
        ratio = (
            ""
            if row.reference is None
            else (f"{row.tokens_per_s / by_name[row.reference].tokens_per_s:.3f}")
        )
        lines.append(f"| {row.name} | {row.parameters:,} | {row.tokens_per_s:,.0f} | {ratio} |")
    body = "\n".join(lines)
    print(body)
    write_section(output, "train", body)
    return rows
