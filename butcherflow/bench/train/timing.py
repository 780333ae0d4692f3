"""How `bench train` times a model: its batches (`Plan`), its step, the turns it takes, and
the FLOPs it counts.

`plan_batches` cuts the timed batches as `butcherflow train` cuts epoch 1 and keeps one batch of
each distinct shape for the warm-up; `prepare` builds a model's training step (the loop's own;
its blocks compiled one by one when the entry is `compiled`); `take_turns` runs every model's
steps in turns and times each (CUDA events on a GPU), counting its tokens, FLOPs and memory.

FLOPs are the model's, from its compiled blocks (`forward_flops`): a block's count
(`CompiledBlock.flops`: linear layers and attention's quadratic part, each field call and
combination term) for the non-pad tokens of each batch at that batch's lengths, plus the tied
output projection (2·d_model·vocab per target token); a training step is 3× the forward (the
backward computes two products per forward one). A recipe's row is compared with
`compared_with`'s: `torch.nn.Transformer`, counted as the pre-norm Transformer it computes
(`transformer_twin`), or the residual LM for a decoder-only recipe. Padding, norms, softmax, the
embeddings and FLOATER's position solves are not counted, so MFU slightly understates the work
done; attention's quadratic part is counted at the batch's padded length, which bucketed
batches lengthen (a few percent of a block's FLOPs at the Bible's lengths).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, final

import torch
from torch import nn

from ...assemble import LanguageModel, Recipe, Seq2Seq, compile_blocks, model_class
from ...assemble.recipe import Side
from ...compiler import CompiledBlock
from ...data import Batch, Split, collate, fit_buckets, make_batches
from ...tasks import task_of_model
from ...train.step import forward_backward, optimizer_step
from ..block import TorchTransformer
from .hardware import resident_bytes


@final
@dataclass(frozen=True)
class Plan:
    """The timed batches of one batching (`buckets`), and one batch of each of their shapes."""

    buckets: str
    batches: list[Batch]
    warm: list[Batch]


@final
@dataclass
class Entry:
    """A model being timed, and what its row needs."""

    model: nn.Module
    counter: Seq2Seq | LanguageModel  # whose blocks count the FLOPs (and name its task)
    compiled: bool
    plan: Plan  # the batches it trains on
    reference: str | None = None
    eager: str | None = None
    unbucketed: str | None = None
    sides: Sequence[str] | None = None  # its lists of blocks, for compile_blocks
    seconds: float = 0.0
    tokens: int = 0
    flops: int | None = 0
    transient: int = 0  # the largest step allocation above what was allocated before the step
    step: Callable[[Batch], None] | None = None
    resident: Callable[[], int] | None = None


def plan_batches(
    split: Split, max_tokens: int, updates: int, buckets: str, on: torch.device
) -> Plan:
    """The first `updates` batches of epoch 1, cut as `butcherflow train` cuts them with
    `buckets`, and the first batch of each distinct shape among them (the warm-up)."""
    widths = fit_buckets(split, buckets)
    order = make_batches(split, max_tokens, shuffle=True, seed=1, epoch=1, widths=widths)
    batches = [collate(split, indices, widths).to(on) for indices in order[:updates]]
    warm: dict[tuple[int, ...], Batch] = {}
    for batch in batches:
        warm.setdefault((*batch.src.shape, batch.prev_output.shape[1]), batch)
    return Plan(buckets, batches, list(warm.values()))


def take_turns(
    entries: list[Entry], target: torch.device, pad: int, warmup: int, timed: bool
) -> None:
    """Every model's steps over its timed batches (`timed`) or its warm-up, in turns: load on
    the machine hits all alike. On a GPU each step is timed by CUDA events around it."""
    plans = [e.plan.batches if timed else e.plan.warm * warmup for e in entries]
    cuda = target.type == "cuda"
    for i in range(max(map(len, plans), default=0)):
        for entry, plan in zip(entries, plans, strict=True):
            if i >= len(plan):
                continue
            assert entry.step is not None
            batch = plan[i]
            if cuda:
                torch.cuda.synchronize(target)
                torch.cuda.reset_peak_memory_stats(target)
                before = torch.cuda.memory_allocated(target)
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                start.record()
            began = time.perf_counter()
            entry.step(batch)
            if cuda:
                end.record()
                end.synchronize()
                seconds = start.elapsed_time(end) / 1000
            else:
                seconds = time.perf_counter() - began
            if not timed:
                continue
            entry.seconds += seconds
            entry.tokens += batch.ntokens
            if cuda:
                step_peak = torch.cuda.max_memory_allocated(target) - before
                entry.transient = max(entry.transient, step_peak)
            count = forward_flops(entry.counter, batch, pad)
            entry.flops = None if count is None or entry.flops is None else entry.flops + 3 * count


def copy_model(model: Seq2Seq | LanguageModel) -> Seq2Seq | LanguageModel:
    """The same model with its own parameters (the eager twin of a compiled one)."""
    vocab = model.embedding.tokens.num_embeddings
    copy = type(model)(model.recipe, vocab, pad_index=model.pad_index)
    copy.load_state_dict(model.state_dict())
    return copy


def prepare(
    entry: Entry,
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
    # as `butcherflow train --compile` runs: block by block, dynamic shapes, the view trains
    run = compile_blocks(model, entry.sides) if entry.compiled else model
    task = task_of_model(entry.counter)  # a decoder-only recipe reads the target side alone

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
            task=task,
        )
        optimizer_step(optimizer, scaler, params, 0.0, math.isfinite(loss))

    entry.step = step
    entry.resident = lambda: resident_bytes(model, optimizer)


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


def _sizes_of(recipe: Recipe) -> tuple[int, ...]:
    assert recipe.encoder is not None and recipe.decoder is not None
    keys = ("d_model", "n_heads", "d_ffn")
    return (*(int(recipe.sizes[k]) for k in keys), recipe.encoder.layers, recipe.decoder.layers)


def compared_with(
    recipe: Recipe, vocab_size: int, pad: int
) -> tuple[str, Seq2Seq | LanguageModel, Callable[[], nn.Module], Sequence[str] | None]:
    """(row name, FLOP counter, maker of the model, its lists of blocks for `compile_blocks`)
    of the row a recipe is compared with: `torch.nn.Transformer` at its sizes, or for a
    decoder-only recipe the residual LM at its sizes (the same model with Euler blocks,
    y + F(y): what `lm-residual` declares)."""
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
        return name, counter, lambda: LanguageModel(residual, vocab_size, pad_index=pad), None
    d, h, f, e, dec = _sizes_of(recipe)
    twin = transformer_twin(recipe, vocab_size, pad)

    def theirs() -> nn.Module:
        with warnings.catch_warnings():  # "enable_nested_tensor ... norm_first": expected
            warnings.simplefilter("ignore", UserWarning)
            return TorchTransformer(twin)

    name = f"torch.nn.Transformer ({d}/{h}/{f}, {e}+{dec} layers)"
    return name, twin, theirs, TorchTransformer.SIDES


__all__ = [
    "Entry",
    "Plan",
    "compared_with",
    "copy_model",
    "forward_flops",
    "plan_batches",
    "prepare",
    "take_turns",
    "transformer_twin",
]
