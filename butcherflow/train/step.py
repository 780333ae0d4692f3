"""One update of the training loop, piece by piece (`loop.py` strings them together).

`inverse_sqrt_lr` (fairseq's schedule), `label_smoothed_loss` (fairseq's criterion),
`forward_backward` (gradients accumulated over micro-batches and DDP processes),
`optimizer_step` (clipping; non-finite steps skipped), `validate` (losses in bits per target
token), `shard` (one process's batches) and `update_seed` (dropout reseeded at every update, as
fairseq does, so that a resumed run repeats an uninterrupted one).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel as DDP

from ..assemble import LanguageModel, Seq2Seq
from ..data import Batch, Split, collate, fit_buckets, make_batches
from ..tasks import TRANSLATION, Task
from . import distributed
from .config import TrainConfig
from .parallelize import sharded

LN2 = math.log(2.0)


def inverse_sqrt_lr(update: int, config: TrainConfig) -> float:
    """fairseq's `inverse_sqrt`: the learning rate of the update after `update` updates.

    Linear from `warmup_init_lr` (update 0) to `lr` (update `warmup_updates`), then
    `lr · sqrt(warmup_updates / update)`.
    """
    if update < config.warmup_updates:
        step = (config.lr - config.warmup_init_lr) / config.warmup_updates
        return config.warmup_init_lr + update * step
    return config.lr * math.sqrt(config.warmup_updates / update)


def label_smoothed_loss(logits: Tensor, target: Tensor, epsilon: float, pad: int) -> Tensor:
    """fairseq's label-smoothed cross-entropy, summed over the non-pad target tokens.

    fairseq spreads ε over the V−1 wrong classes:
    `(1 − ε − ε/(V−1))·nll + ε/(V−1)·Σ_j −log p_j`. PyTorch's `label_smoothing=ε'` spreads ε'
    over all V classes: `(1 − ε')·nll + ε'/V·Σ_j −log p_j`. The two are the same function when
    `ε' = ε·V/(V−1)`, which is what is passed here (tested against fairseq's formula).

    **Arguments:**

    - `logits`: `(batch, tgt_len, V)`.
    - `target`: `(batch, tgt_len)` ids, `pad` where there is no token.
    - `epsilon`: fairseq's `--label-smoothing`.

    **Returns:** a scalar, the sum over tokens (the caller divides by the token count).
    """
    vocab = logits.shape[-1]
    return F.cross_entropy(
        logits.reshape(-1, vocab),
        target.reshape(-1),
        ignore_index=pad,
        reduction="sum",
        label_smoothing=epsilon * vocab / (vocab - 1),
    )


def forward_backward(
    model: nn.Module,
    micro_batches: Sequence[Batch],
    *,
    epsilon: float,
    pad: int,
    device: torch.device,
    autocast: Callable[[], contextlib.AbstractContextManager[Any]],
    scaler: torch.amp.GradScaler,
    world_size: int,
    task: Task = TRANSLATION,
) -> tuple[float, float]:
    """Accumulate the gradients of one update; return `(loss sum, target tokens)`, all processes.

    The gradient is fairseq's: the sum of the loss over every token of every micro-batch of every
    process, divided by the total token count. DDP averages gradients over processes, hence the
    factor `world_size / ntokens`; only the last micro-batch synchronises (`no_sync` before).
    `task` calls the model on a batch (`Task.logits`: a language model reads `prev_output`
    alone).
    """
    local = float(sum(b.ntokens for b in micro_batches))
    (ntokens,) = distributed.all_reduce_sum([local], device)
    total = torch.zeros((), device=device, dtype=torch.float64)
    for i, batch in enumerate(micro_batches):
        batch = batch.to(device)
        last = i == len(micro_batches) - 1
        sync = model.no_sync() if isinstance(model, DDP) and not last else contextlib.nullcontext()
        if sharded(model):  # FSDP2: reduce-scatter the gradients once, after the last
            model.set_requires_gradient_sync(last)  # type: ignore[operator]
        with sync:
            with autocast():
                logits = task.logits(model, batch)
                loss = label_smoothed_loss(logits, batch.target, epsilon, pad)
            scaler.scale(loss * (world_size / ntokens)).backward()
        total += loss.detach().double()
    (loss_sum,) = distributed.all_reduce_sum([float(total)], device)
    return loss_sum, ntokens


def optimizer_step(
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    params: Sequence[Tensor],
    clip_norm: float,
    loss_is_finite: bool,
) -> tuple[str, float]:
    """Clip and step, unless the loss or the gradients are not finite; then zero the gradients.

    **Returns:** `(outcome, gradient norm)`; outcome `"ok"`, `"nonfinite"` (step skipped) or
    `"overflow"` (fp16: the GradScaler skipped the step and lowered its scale).
    """
    if scaler.is_enabled():
        scaler.unscale_(optimizer)
    grads = [p.grad for p in params if p.grad is not None]
    if clip_norm > 0:
        norm = nn.utils.clip_grad_norm_(params, clip_norm)
    else:
        norm = nn.utils.get_total_norm(grads)
    gnorm = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)  # FSDP: a DTensor
    if not loss_is_finite or (not scaler.is_enabled() and not math.isfinite(gnorm)):
        if scaler.is_enabled():
            scaler.update()  # the scaler has seen these gradients: let it adjust its scale
        outcome = "nonfinite"
    else:
        scale = scaler.get_scale() if scaler.is_enabled() else 1.0
        scaler.step(optimizer)
        scaler.update()
        lowered = scaler.is_enabled() and scaler.get_scale() < scale
        outcome = "overflow" if lowered else "ok"
    optimizer.zero_grad(set_to_none=True)
    return outcome, gnorm


@torch.no_grad()
def validate(
    model: Seq2Seq | LanguageModel,
    split: Split,
    config: TrainConfig,
    device: torch.device,
    autocast: Callable[[], contextlib.AbstractContextManager[Any]],
    process: distributed.Process,
    buckets: str = "off",
) -> dict[str, float]:
    """Label-smoothed loss, nll loss (bits per target token) and perplexity on `split`, and,
    for a split of text (`Split.text_bytes`), bits per byte: the summed nll in bits over the
    UTF-8 bytes of the text (`valid_bpb`), which runs with different vocabularies share. The
    batches are cut with the bucket ladder `buckets` (the same sums: padding is masked)."""
    model.eval()
    task = config.run_task
    widths = fit_buckets(split, buckets)
    batches = make_batches(
        split, config.max_tokens, shuffle=False, seed=config.seed, epoch=1, widths=widths
    )
    loss = nll = tokens = 0.0
    # DDP: each process validates its share of the batches; FSDP: every process runs every batch
    # (each forward gathers the weights from all of them), and the sums below count each once
    # per process, which the ratios do not see
    rank, world = (0, 1) if sharded(model) else (process.rank, process.world_size)
    for indices in batches[rank::world]:
        batch = collate(split, indices, widths).to(device)
        with autocast():
            logits = task.logits(model, batch)
        target = batch.target.reshape(-1)
        loss += float(label_smoothed_loss(logits, batch.target, config.smoothing, model.pad_index))
        nll += float(
            F.cross_entropy(
                logits.reshape(target.numel(), -1),
                target,
                ignore_index=model.pad_index,
                reduction="sum",
            )
        )
        tokens += batch.ntokens
    loss, nll, tokens = distributed.all_reduce_sum([loss, nll, tokens], device)
    model.train()
    nll_bits = nll / tokens / LN2
    measured = {
        "valid_loss": loss / tokens / LN2,
        "valid_nll_loss": nll_bits,
        "valid_ppl": 2**nll_bits,
    }
    if split.text_bytes:  # the text once per process that ran every batch (FSDP)
        measured["valid_bpb"] = nll / LN2 / (split.text_bytes * (process.world_size // world))
    return measured


def shard(batches: list[list[int]], process: distributed.Process) -> list[list[int]]:
    """This process's batches: every process gets `len // world_size` of them.

    The last `len % world_size` batches of the (per-epoch shuffled) list are dropped, so every
    process runs the same number of updates; a different tail is dropped every epoch.
    """
    usable = len(batches) - len(batches) % process.world_size
    return batches[process.rank : usable : process.world_size]


def update_seed(seed: int, rank: int, update: int) -> int:
    """The torch seed of update `update` on process `rank`: dropout does not depend on resuming."""
    return (seed * 1_000_003 + rank) * 1_000_003 + update
