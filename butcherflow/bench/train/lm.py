"""`butcherflow bench train --task language_model`: decoder-only recipes beside a plain-PyTorch
GPT written as nanoGPT writes it, on the same packed batches, side by side in one run.

The reference (`GPT`) is nanoGPT's `model.py` at the recipe's sizes: token and learned position
embeddings, blocks `x + attn(ln_1(x))`, `x + mlp(ln_2(x))` with one fused q/k/v projection and
`F.scaled_dot_product_attention(is_causal=True)`, a final LayerNorm and the output projection
tied to the token embedding; its feed-forward takes the recipe's width and activation (a ReLU
is `butcherflow.nn.ReLU`, as in the recipe's layers: compiled, it saves no mask), so the two
models do the same work (the recipe's sinusoidal positions and √d embedding scale cost nothing
next to a layer). The batches are the training loop's: the training split of `--data` packed
into `--tokens-per-sample` windows across lines (`data.packing`), cut by `--max-tokens`
and shuffled as epoch 1 is. Every model takes the loop's own step (`forward_backward` with the
unsmoothed loss of a language model, then `optimizer_step` with AdamW), the models take turns
batch by batch so that load on the machine hits them alike, and an untimed pass over the same
batches comes first. Throughput counts target tokens (non-pad, eos included).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, final

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...assemble import LanguageModel, Recipe, compile_blocks
from ...data import (
    Batch,
    build_vocabulary,
    default_cache_dir,
    load_corpus,
    make_batches,
    padding_fraction,
)
from ...devices import can_compile, resolve_device
from ...errors import DeclarationError
from ...nn import ReLU
from ...tasks import LANGUAGE_MODEL, TOKENS_PER_SAMPLE
from ...train.config import TRAIN_DEFAULTS, TrainConfig, resolve_precision, resolve_recipe
from ...train.run import encode
from ...train.step import forward_backward, optimizer_step
from .. import TRAIN_DATA, option_flags, output_flag, recipes_and_sizes, write_section
from ..order import machine

RECIPES = ("lm-residual",)


@final
class GPT(nn.Module):
    """nanoGPT's GPT (module docstring) at a recipe's sizes.

    **Arguments:** `recipe`: a decoder-only recipe (its sizes, depth and activation);
    `vocab_size`; `block_size`: the longest window.
    """

    def __init__(self, recipe: Recipe, vocab_size: int, block_size: int) -> None:
        super().__init__()
        assert recipe.decoder is not None
        d, heads = int(recipe.sizes["d_model"]), int(recipe.sizes["n_heads"])
        d_ffn, dropout = int(recipe.sizes["d_ffn"]), float(recipe.sizes["dropout"])
        act = {"relu": ReLU, "gelu": nn.GELU}[str(recipe.sizes["activation"])]
        self.wte = nn.Embedding(vocab_size, d)
        self.wpe = nn.Embedding(block_size, d)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(
            _Block(d, heads, d_ffn, dropout, act) for _ in range(recipe.decoder.layers)
        )
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying, as nanoGPT
        self._init_weights(len(self.h))

    @torch.no_grad()
    def _init_weights(self, layers: int) -> None:
        """nanoGPT's initialisation: weights of linear layers and embeddings N(0, 0.02²), the
        projections into the residual stream N(0, 0.02² / 2L), biases 0. With torch's defaults
        instead (embeddings N(0, 1), tied to the output), the logits are so spread that the
        softmax's gradient underflows to subnormal floats, and on a CPU every product with them
        slows down (the output layer's by 14× here)."""
        for name, module in self.named_modules():
            if isinstance(module, nn.Embedding):
                module.weight.normal_(0.0, 0.02)
            elif isinstance(module, nn.Linear):
                residual = name.endswith(("c_proj", "mlp.2"))
                module.weight.normal_(0.0, 0.02 / math.sqrt(2 * layers) if residual else 0.02)
                if module.bias is not None:
                    module.bias.zero_()

    def forward(self, idx: Tensor) -> Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(positions))
        for block in self.h:
            x = block(x)
        out: Tensor = self.lm_head(self.ln_f(x))
        return out


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, d_ffn: int, dropout: float, act: type) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(
            nn.Linear(d, d_ffn), act(), nn.Linear(d_ffn, d), nn.Dropout(dropout)
        )
        self.heads, self.dropout = heads, dropout

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))
        out: Tensor = x + self.mlp(self.ln_2(x))
        return out


@final
@dataclass
class LMRow:
    """One model's measurement: `name`, `parameters`, target `tokens` and `seconds` timed."""

    name: str
    parameters: int
    tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds


def bench_lm(
    *,
    data: str = TRAIN_DATA[LANGUAGE_MODEL.name],
    recipes: Sequence[str] = RECIPES,
    sizes: dict[str, Any] | None = None,
    vocab_size: int = TRAIN_DEFAULTS["vocab_size"],
    max_tokens: int = TRAIN_DEFAULTS["max_tokens"],
    tokens_per_sample: int = TOKENS_PER_SAMPLE,
    updates: int = 20,
    device: str = "auto",
    precision: str = "auto",
    compile: bool = False,
) -> tuple[list[LMRow], str]:
    """Time training steps of each decoder-only recipe and of `GPT` at its sizes.

    **Arguments:** as `butcherflow bench train` (`sizes`: a preset's overrides; `compile`: every
    model's blocks compiled one by one, `assemble.compile_blocks`, as `butcherflow train
    --compile` does); `data`: a corpus whose target side is packed.

    **Returns:** `(rows, settings)`: the rows in pairs (recipe, then its GPT) and a line of
    settings.
    """
    base = TrainConfig(
        recipes[0], data, "-", task=LANGUAGE_MODEL.name, tokens_per_sample=tokens_per_sample,
        max_tokens=max_tokens, vocab_size=vocab_size, device=device, precision=precision,
        **(sizes or {}),
    )  # fmt: skip
    target = resolve_device(base.device)
    precision_name = resolve_precision(base, target)
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision_name)
    compile = compile and can_compile(target.type)
    corpus = load_corpus(data)
    vocab = build_vocabulary(corpus, vocab_size, default_cache_dir())
    models: list[tuple[LMRow, nn.Module]] = []
    for name in recipes:
        config = TrainConfig(**{**base.to_json(), "recipe": name})
        recipe = resolve_recipe(config, len(vocab))
        torch.manual_seed(0)
        ours = LanguageModel(recipe, len(vocab), pad_index=vocab.pad)
        torch.manual_seed(0)
        theirs = GPT(recipe, len(vocab), tokens_per_sample)
        for label, model in ((name, ours), (f"nanoGPT-style GPT ({_sizes(recipe)})", theirs)):
            models.append((LMRow(label, sum(p.numel() for p in model.parameters())), model))
    split = encode(base, corpus.train, vocab, recipe)
    order = make_batches(split, max_tokens, shuffle=True, seed=1, epoch=1)[:updates]
    batches = [split.collate(b).to(target) for b in order]
    steps = [_step(model, target, amp, vocab.pad, compile) for _, model in models]
    cuda = target.type == "cuda"
    for timed, batch in [(False, b) for b in batches] + [(True, b) for b in batches]:
        for (row, _), step in zip(models, steps, strict=True):  # in turns
            if cuda:
                torch.cuda.synchronize(target)
            began = time.perf_counter()
            step(batch)
            if cuda:
                torch.cuda.synchronize(target)
            if timed:
                row.seconds += time.perf_counter() - began
                row.tokens += batch.ntokens
    settings = (
        f"{data} (the training split's text), vocabulary {len(vocab)}, {tokens_per_sample}-token "
        f"windows across lines, max_tokens {max_tokens} ({max_tokens // tokens_per_sample} "
        f"windows a batch, padding {padding_fraction(split, order):.2%}), {len(batches)} timed "
        f"updates after one untimed pass over the same batches, device {target}, precision "
        f"{precision_name}"
        + (", torch.compile per block" if compile else "")
        + (f", sizes {sizes}" if sizes else "")
    )
    return [row for row, _ in models], settings


def _sizes(recipe: Recipe) -> str:
    assert recipe.decoder is not None
    keys = ("d_model", "n_heads", "d_ffn")
    layers = recipe.decoder.layers
    return "/".join(str(recipe.sizes[k]) for k in keys) + f", {layers} layer" + "s" * (layers > 1)


def _step(
    model: nn.Module, target: torch.device, amp: torch.dtype | None, pad: int, compile: bool
) -> Callable[[Batch], None]:
    """The training loop's step for a language model (unsmoothed loss, AdamW), through a view
    whose blocks are compiled when `compile` (the GPT's `h` as the recipe's `blocks`)."""
    model.to(target).train()
    runner = compile_blocks(model) if compile else model
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.98), eps=1e-8)
    scaler = torch.amp.GradScaler(target.type, enabled=amp is torch.float16)

    def autocast() -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext() if amp is None else torch.autocast(target.type, amp)

    def step(batch: Batch) -> None:
        loss, _ = forward_backward(
            runner, [batch], epsilon=0.0, pad=pad, device=target, autocast=autocast,
            scaler=scaler, world_size=1, task=LANGUAGE_MODEL,
        )  # fmt: skip
        optimizer_step(optimizer, scaler, params, 0.0, math.isfinite(loss))

    return step


def run_lm_bench(output: str, command: str, **options: Any) -> list[LMRow]:
    """Run `bench_lm(**options)`, print its table and write its section of `output`."""
    load = os.getloadavg()[0]
    rows, settings = bench_lm(**options)
    target = resolve_device(options.get("device", "auto"))
    gpu = f", {torch.cuda.get_device_name(target)}" if target.type == "cuda" else ""
    lines = [
        "## Language-model training throughput (`butcherflow bench train --task language_model`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}; torch {torch.__version__}{gpu}, {torch.get_num_threads()} torch "
        f"thread(s); load average {load:.1f} at start, {os.getloadavg()[0]:.1f} at the end. "
        f"Settings: {settings}. Each decoder-only recipe trains beside nanoGPT's GPT at its "
        "sizes (module docstring of `butcherflow.bench.train.lm`), both taking the training loop's "
        "own step on the same batches, in turns; throughput counts target tokens.",
        "",
        "| model | parameters | target tokens/s | vs nanoGPT-style GPT |",
        "|---|--:|--:|--:|",
    ]
    for ours, reference in zip(rows[::2], rows[1::2], strict=True):
        for row in (ours, reference):
            ratio = row.tokens_per_s / reference.tokens_per_s
            lines.append(
                f"| {row.name} | {row.parameters:,} | {row.tokens_per_s:,.0f} | {ratio:.3f} |"
            )
    body = "\n".join(lines)
    print(body)
    key = "train-lm" if target.type == "cpu" else f"train-lm-{target.type}"
    compiled = bool(options.get("compile")) and can_compile(target.type, say=lambda _: None)
    write_section(output, key + "-compiled" * compiled, body)  # what ran, not what was asked
    return rows


def run_from_args(args: argparse.Namespace, given: str = "") -> int:
    """`bench train --task language_model`: the options, the command line shown, the run."""
    options: dict[str, Any] = {
        "data": args.data or TRAIN_DATA[LANGUAGE_MODEL.name],
        "vocab_size": args.vocab_size,
        "max_tokens": args.max_tokens,
        "tokens_per_sample": args.tokens_per_sample,
        "updates": args.updates,
        "device": args.device,
        "precision": args.precision,
    }
    command = "butcherflow bench train --task language_model " + option_flags(options)
    command += recipes_and_sizes(args, options)
    if args.compile:
        options["compile"] = True
        command += " --compile"
    LANGUAGE_MODEL.buckets(getattr(args, "buckets", "auto"), "off")  # windows take no ladder
    refused = {
        "--profile": args.profile,
        "--compare-buckets": getattr(args, "compare_buckets", False),
    }
    for key, value in refused.items():
        if value:
            raise DeclarationError(
                "the language-model benchmark times models on unbucketed windows, without a "
                "profile",
                key=key,
                value=value,
                valid="leave it out with --task language_model",
            )
    run_lm_bench(args.output, command + given + output_flag(args.output), **options)
    return 0
