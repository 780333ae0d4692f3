"""The training loop, readable in one sitting (in the spirit of nanoGPT's `train.py`).

`train(config)` runs: corpus -> joint BPE vocabulary -> `Seq2Seq` from the recipe (or, with
`task = "language_model"`, a decoder-only `LanguageModel` on the target side alone) -> updates of
Adam(0.9, 0.98) under fairseq's `inverse_sqrt` schedule on fairseq's label-smoothed cross-entropy,
with gradient accumulation, clipping, mixed precision, optional `torch.compile` and DDP, periodic
validation, atomic checkpoints and automatic resume. Rerunning the same command on the same save
dir continues where the last committed checkpoint left off; on CPU the resumed run ends with the
same weights, bit for bit, as a run that was never interrupted (dropout is reseeded from
`(seed, rank, update)` at every update, as fairseq does, and the data position is saved).

Throughput counts target tokens (non-pad tokens of `Batch.target`, eos included), as fairseq does.

The pieces of one update are in `step.py`; opening the save dir and resuming in `resume.py`;
the checkpoint files in `checkpoint.py`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

from ..assemble import LanguageModel, Seq2Seq
from ..errors import ButcherflowError, DeclarationError
from . import distributed
from .batching import collate, encode_split, make_batches, target_side
from .checkpoint import (
    BEST,
    CURVES,
    LAST,
    LOG,
    latest_checkpoint,
    prune,
    rng_state,
    save_checkpoint,
)
from .config import TrainConfig, resolve_device, resolve_precision
from .corpus import load_corpus
from .curves import append_log, plot_curves
from .resume import Progress, open_save_dir, resume
from .step import (
    LN2,
    forward_backward,
    inverse_sqrt_lr,
    optimizer_step,
    shard,
    update_seed,
    validate,
)
from .vocab import Vocabulary

MAX_NONFINITE_IN_ROW = 10
# Test hook: `BUTCHERFLOW_TEST_SIGKILL=N` makes the process SIGKILL itself right after update N
# (after that update's checkpoint, if any), to test resuming after a hard kill.
KILL_ENV = "BUTCHERFLOW_TEST_SIGKILL"

# `validate_bleu(model, vocab, valid_pairs, device) -> BLEU`: given by the CLI, which may import the
# generate stage (this module may not: train comes before generate in the pipeline).
BleuHook = Callable[[Seq2Seq, Vocabulary, Sequence[tuple[str, str]], torch.device], float]


class TrainingError(ButcherflowError):
    """The run cannot go on (non-finite losses, no data); the last checkpoint is intact."""


def train(config: TrainConfig, *, validate_bleu: BleuHook | None = None) -> dict[str, Any]:
    """Train (or resume) the run described by `config`; see the module docstring.

    **Arguments:**

    - `config`: the run.
    - `validate_bleu`: optional `(model, vocab, valid_pairs, device) -> BLEU`, called on the main
      process at every validation (the CLI passes greedy decoding of a slice of valid); a
      translation task only.

    **Returns:** a summary: `save_dir`, `updates`, `epoch` (the one being trained), `epochs_done`,
    `best_valid_loss`, `valid_loss` (bits per target token), `stopped` (the stop rule that ended
    the run), `nonfinite_skipped`, `train_tokens`, `seconds`.
    """
    if validate_bleu is not None and config.task != "translation":
        raise DeclarationError(
            "BLEU needs a translation task",
            key="--validate-bleu",
            value=config.task,
            valid="leave --validate-bleu out for --task language_model",
        )
    device = resolve_device(config, int(os.environ.get("LOCAL_RANK", "0") or 0))
    joined = not torch.distributed.is_initialized()
    process = distributed.init(device.type)
    try:
        return _train(config, process, device, validate_bleu)
    finally:
        if joined:  # leave a process group only if this call joined it
            distributed.cleanup()


def _train(
    config: TrainConfig,
    process: distributed.Process,
    device: torch.device,
    validate_bleu: BleuHook | None,
) -> dict[str, Any]:
    start = time.monotonic()
    main = process.is_main

    def say(line: str, warning: bool = False) -> None:
        if main:  # through tqdm, which clears the progress bar first
            tqdm.write(line, file=sys.stderr if warning else sys.stdout)

    precision = resolve_precision(config, device)
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)

    def autocast() -> contextlib.AbstractContextManager[Any]:
        if amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device.type, dtype=amp_dtype)

    # --- data, vocabulary, model, optimizer -----------------------------------------------------
    corpus = load_corpus(
        config.data, source_lang=config.source_lang, target_lang=config.target_lang
    )
    save_dir, log_path = Path(config.save_dir), Path(config.save_dir) / LOG
    found = latest_checkpoint(save_dir)
    vocab, recipe = open_save_dir(config, corpus, process, resuming=found is not None)
    max_positions = recipe.max_len if recipe.position == "learned" else None
    train_split = encode_split(corpus.train, vocab, max_positions)
    valid_split = encode_split(corpus.valid, vocab, max_positions)
    language_model = config.task == "language_model"
    if language_model:  # the target side alone: batches are cut on it, the source is dropped
        train_split, valid_split = target_side(train_split), target_side(valid_split)
    if config.label_smoothing * len(vocab) / (len(vocab) - 1) > 1:
        raise DeclarationError(
            "too large for this vocabulary",
            key="--label-smoothing",
            value=config.label_smoothing,
            valid=f"< {1 - 1 / len(vocab):g}",
        )
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
    raw_model: Seq2Seq | LanguageModel
    if language_model:
        raw_model = LanguageModel(recipe, len(vocab), pad_index=vocab.pad)
    else:
        raw_model = Seq2Seq(recipe, len(vocab), pad_index=vocab.pad)
    raw_model.to(device)
    # fairseq's Adam decays weights apart from the gradient (Loshchilov & Hutter): that is AdamW.
    optimizer = torch.optim.AdamW(
        raw_model.parameters(),
        lr=config.lr,
        betas=(0.9, 0.98),
        eps=1e-8,
        weight_decay=config.weight_decay,
    )
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    say(
        f"{recipe.name}{' (language model)' if language_model else ''}: "
        f"{raw_model.num_parameters:,} parameters, vocabulary {len(vocab):,}; "
        f"{corpus.name}: {len(corpus.train):,} train / {len(corpus.valid):,} valid "
        + (f"{corpus.target_lang} sentences" if language_model else "pairs")
    )
    for note in corpus.notes:
        say(f"  {note}")
    say(
        f"device {device}, precision {precision}, {process.world_size} process(es)"
        + (f" (DDP over {process.backend})" if process.distributed else "")
        + f", max_tokens {config.max_tokens} x update_freq {config.update_freq}"
    )

    # --- resume ---------------------------------------------------------------------------------
    progress = Progress()
    if found is not None:
        progress = resume(save_dir, found[0], raw_model, optimizer, scaler, process, say)
    model: nn.Module = raw_model
    if config.compile:
        model = torch.compile(model)  # type: ignore[assignment]
    if process.distributed:
        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)

    # --- logging, validation, checkpoints, stop rules -------------------------------------------
    last_valid: dict[str, float] = {}
    validated_at = saved_at = -1
    epoch = progress.epoch  # the epoch of the batches just trained (progress moves on at its end)

    def log(entry: dict[str, Any]) -> None:
        if main:
            append_log(log_path, {"update": progress.update, "epoch": epoch, **entry})

    def run_validation() -> bool:
        """Validate now; True when the valid loss is the best so far."""
        nonlocal validated_at, last_valid
        validated_at = progress.update
        if len(valid_split) == 0:
            return False
        last_valid = validate(raw_model, valid_split, config, device, autocast, process)
        shown = dict(last_valid)
        if validate_bleu is not None and main and isinstance(raw_model, Seq2Seq):
            raw_model.eval()
            shown["valid_bleu"] = float(validate_bleu(raw_model, vocab, corpus.valid, device))
            raw_model.train()
        best = last_valid["valid_loss"] < progress.best_valid_loss
        if best:
            progress.best_valid_loss = last_valid["valid_loss"]
        log({"kind": "valid", **shown, "best_valid_loss": progress.best_valid_loss})
        numbers = " | ".join(f"{k.removeprefix('valid_')} {v:.3f}" for k, v in shown.items())
        say(
            f"valid | epoch {epoch:03d} | update {progress.update} | {numbers}"
            + (" (best)" if best else "")
        )
        distributed.barrier()
        return best

    def save(names: list[str]) -> None:
        nonlocal saved_at
        saved_at = progress.update
        if main:
            state = {
                "progress": dataclasses.asdict(progress),
                "world_size": process.world_size,
                "optimizer": optimizer.state_dict(),
                "scaler": scaler.state_dict(),
                "rng": rng_state(),
            }
            best = progress.best_valid_loss
            summary = {
                "update": progress.update,
                "epoch": progress.epoch,
                "batch_in_epoch": progress.batch_in_epoch,
                "best_valid_loss": best if math.isfinite(best) else None,
                **last_valid,
            }
            save_checkpoint(save_dir, names, raw_model, state, summary)
            prune(save_dir, config.keep_last_checkpoints)
            plot_curves(log_path, save_dir / CURVES)
        distributed.barrier()

    def stop_rule(clock: bool = True) -> str | None:
        if config.max_update and progress.update >= config.max_update:
            return f"max_update {config.max_update} reached"
        if config.max_epoch and progress.epoch > config.max_epoch:
            return f"max_epoch {config.max_epoch} reached"
        budget = config.time_budget
        spent = clock and budget is not None and time.monotonic() - start >= budget
        if distributed.any_process(spent, device):  # every process stops at the same update
            return f"time budget of {config.time_budget:g} s spent"
        return None

    # --- the loop: epochs of updates of `update_freq` micro-batches -----------------------------
    kill_at = int(os.environ.get(KILL_ENV, "-1"))
    stopped = stop_rule(clock=False)  # the time budget allows at least one update
    if stopped is not None:
        say(f"nothing to do: {stopped}")
    window = {"loss": 0.0, "tokens": 0.0, "seconds": 0.0}  # since the last log line
    session_tokens = session_seconds = 0.0
    while stopped is None:
        batches = shard(
            make_batches(
                train_split, config.max_tokens, shuffle=True, seed=config.seed, epoch=progress.epoch
            ),
            process,
        )
        if not batches:
            raise TrainingError(
                f"no training batch for {process.world_size} process(es) in "
                f"{len(train_split)} training pairs"
            )
        groups = [
            batches[i : i + config.update_freq] for i in range(0, len(batches), config.update_freq)
        ]
        first = progress.batch_in_epoch // config.update_freq
        bar = tqdm(
            total=len(groups),
            initial=first,
            desc=f"epoch {progress.epoch:03d}",
            disable=not main,
            leave=False,
            dynamic_ncols=True,
        )
        epoch = progress.epoch
        for group in groups[first:]:
            began = time.monotonic()
            lr = inverse_sqrt_lr(progress.update, config)
            for param_group in optimizer.param_groups:
                param_group["lr"] = lr
            torch.manual_seed(update_seed(config.seed, process.rank, progress.update))
            loss_sum, ntokens = forward_backward(
                model,
                [collate(train_split, indices) for indices in group],
                epsilon=config.label_smoothing,
                pad=vocab.pad,
                device=device,
                autocast=autocast,
                scaler=scaler,
                world_size=process.world_size,
                language_model=language_model,
            )
            outcome, gnorm = optimizer_step(
                optimizer,
                scaler,
                list(raw_model.parameters()),
                config.clip_norm,
                math.isfinite(loss_sum),
            )
            progress.batch_in_epoch += len(group)
            if outcome == "nonfinite":
                progress.nonfinite_total += 1
                progress.nonfinite_in_row += 1
                say(
                    f"warning: non-finite loss at update {progress.update + 1} (epoch "
                    f"{progress.epoch}): step skipped ({progress.nonfinite_in_row} in a row, "
                    f"{progress.nonfinite_total} in all)",
                    warning=True,
                )
                log({"kind": "skip", "reason": "non-finite loss"})
                if progress.nonfinite_in_row >= MAX_NONFINITE_IN_ROW:
                    raise TrainingError(
                        f"{progress.nonfinite_in_row} non-finite losses in a row after update "
                        f"{progress.update}: the run diverged; the last good checkpoint "
                        f"{save_dir / LAST} is left intact (try a lower --lr, more "
                        "--warmup-updates or --clip-norm)"
                    )
            else:
                progress.nonfinite_in_row = 0
            if outcome == "overflow":
                log({"kind": "skip", "reason": "fp16 overflow", "loss_scale": scaler.get_scale()})
            if outcome == "ok":
                progress.update += 1
                progress.train_tokens += int(ntokens)
                window["loss"] += loss_sum
                window["tokens"] += ntokens
            seconds = time.monotonic() - began
            window["seconds"] += seconds
            session_seconds += seconds
            session_tokens += ntokens
            end_of_epoch = progress.batch_in_epoch >= len(batches)
            if end_of_epoch:
                progress.epoch += 1
                progress.batch_in_epoch = 0
            bar.update(1)
            bar.set_postfix(
                loss=f"{loss_sum / ntokens / LN2:.3f}",
                lr=f"{lr:.2e}",
                tok_s=f"{session_tokens / session_seconds:,.0f}",
            )
            if window["tokens"] and (progress.update % config.log_interval == 0 or end_of_epoch):
                log(
                    {
                        "kind": "train",
                        "loss": window["loss"] / window["tokens"] / LN2,
                        "lr": lr,
                        "gnorm": gnorm,
                        "tokens_per_s": window["tokens"] / window["seconds"],
                        "train_tokens": progress.train_tokens,
                    }
                )
                window = dict.fromkeys(window, 0.0)

            stopped = stop_rule()
            due = config.validate_interval_updates
            is_best = False
            if progress.update not in (validated_at, 0) and (
                end_of_epoch or stopped or (due and progress.update % due == 0)
            ):
                is_best = run_validation()
            names = []
            every = config.save_interval_updates
            if progress.update != saved_at and every and progress.update % every == 0:
                names.append(f"checkpoint_{progress.update}")
            if progress.update != saved_at and (names or end_of_epoch or stopped):
                names.append(LAST)
            if is_best:
                names.append(BEST)
            if names:
                save(names)
            if progress.update == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if stopped or end_of_epoch:
                break
        bar.close()

    best = progress.best_valid_loss
    say(
        f"done: {stopped}; {progress.update} updates, best valid loss {best:.3f} bits, "
        f"checkpoints in {save_dir}"
    )
    log({"kind": "stop", "reason": stopped})
    if main:
        plot_curves(log_path, save_dir / CURVES)
    return {
        "save_dir": str(save_dir),
        "updates": progress.update,
        "epoch": progress.epoch,
        "epochs_done": progress.epoch - 1,
        "best_valid_loss": best,
        "valid_loss": last_valid.get("valid_loss"),
        "stopped": stopped,
        "nonfinite_skipped": progress.nonfinite_total,
        "train_tokens": progress.train_tokens,
        "seconds": time.monotonic() - start,
    }
