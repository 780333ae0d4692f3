"""How `bench train` times a model: its batches (`Plan`), its step, and the turns it takes.

`plan_batches` cuts the timed batches as `butcherflow train` cuts epoch 1 and keeps one batch of
each distinct shape for the warm-up; `prepare` builds a model's training step (the loop's own;
its blocks compiled one by one when the entry is `compiled`); `take_turns` runs every model's
steps in turns and times each (CUDA events on a GPU), counting its tokens, FLOPs and memory.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, final

import torch
from torch import nn

from ..assemble import LanguageModel, Seq2Seq, compile_blocks
from ..data import Batch, Split, collate, fit_buckets, make_batches
from ..tasks import task_of_model
from ..train.step import forward_backward, optimizer_step
from .flops import forward_flops
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


__all__ = ["Entry", "Plan", "copy_model", "plan_batches", "prepare", "take_turns"]
