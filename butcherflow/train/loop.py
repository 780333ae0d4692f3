"""The training loop, readable in one sitting (in the spirit of nanoGPT's `train.py`).

`train(config)` runs: corpus -> joint BPE vocabulary -> `Seq2Seq` from the recipe (or, with
`task = "language_model"`, a decoder-only `LanguageModel` on the target side alone) -> updates of
Adam(0.9, 0.98) under fairseq's `inverse_sqrt` schedule on fairseq's label-smoothed cross-entropy,
with gradient accumulation, clipping, mixed precision, optional `torch.compile` and DDP, periodic
validation, atomic checkpoints and automatic resume. Rerunning the same command on the same save
dir continues where the last committed checkpoint left off; on CPU the resumed run ends with the
same weights, bit for bit, as a run that was never interrupted (dropout is reseeded from
`(seed, rank, update)` at every update, as fairseq does, and the data position is saved).
Ctrl-C or SIGTERM finishes the current update, commits `checkpoint_last` at it and ends the run
with `interrupted` (see `interrupts.py`).

Throughput counts target tokens (non-pad tokens of `Batch.target`, eos included), as fairseq does.

`_train` is the loop; `update`, `validate_now`, `checkpoint_names`, `save` and `stop_rule` are
what it does at each update. What it works with (`Run`) and how a run starts are in `run.py`;
the pieces of one update in `step.py`; opening the save dir and resuming in `resume.py`; the
checkpoint files in `butcherflow.savedir`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..assemble import Seq2Seq
from ..compiler import stream_bounds
from ..compiler.general_linear import stream_summary
from ..data import Batch, Vocabulary, collate, fit_buckets, make_batches
from ..devices import resolve_device, set_threads
from ..errors import ButcherflowError, DeclarationError
from ..savedir.checkpoint import prune, save_checkpoint
from ..savedir.curves import plot_curves
from ..savedir.layout import BEST, CURVES, LAST, LOG
from . import distributed
from .config import TrainConfig
from .interrupts import SIGNALS, Interrupts
from .parallelize import full_state, sharded
from .pictures import read_learned
from .resume import trainer_state
from .run import Run, start
from .step import (
    LN2,
    forward_backward,
    inverse_sqrt_lr,
    optimizer_step,
    shard,
    update_seed,
    validate,
)
from .ticker import Ticker

MAX_NONFINITE_IN_ROW = 10
INTERRUPTED = "interrupted"  # the stop rule of a run stopped by SIGINT or SIGTERM

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
    `best_valid_loss` (the best of the task's `best_metric`: the label-smoothed loss of a
    translation model, the nll loss of a language model), `valid_loss` (bits per target token),
    `stopped` (the stop rule that ended
    the run), `interrupted` (the signal that stopped it, or None), `nonfinite_skipped`,
    `train_tokens` (the run's, resumed parts included), `session_tokens` (this command's),
    `tokens_per_s` (target tokens per second of this command's training steps, None without
    any), `seconds` (this command's), `threads` (torch's CPU threads).

    **Raises:** `interrupts.Interrupted` when SIGINT or SIGTERM arrives before the first update.
    """
    if validate_bleu is not None and config.fsdp:
        raise DeclarationError(
            "BLEU decodes on the main process alone, and a sharded model runs on all of them",
            key="--validate-bleu",
            valid="leave --validate-bleu out with --fsdp (butcherflow evaluate the checkpoints)",
        )
    if validate_bleu is not None and "bleu" not in config.run_task.metrics:
        raise DeclarationError(
            f"BLEU measures translations; this run trains a {config.run_task.title}",
            key="--validate-bleu",
            value=config.task,
            valid="leave --validate-bleu out for this run",
        )
    device = resolve_device(config.device, local_rank=int(os.environ.get("LOCAL_RANK", "0") or 0))
    set_threads(config.threads)
    joined = not torch.distributed.is_initialized()
    process = distributed.init(device.type)
    try:
        with Interrupts() as interrupts:
            run = start(config, process, device)
            run.interrupts = interrupts
            try:
                return _train(run, validate_bleu)
            finally:
                run.close()
                del run  # the sharded model holds the process group: free it before leaving
    finally:
        if joined:  # leave a process group only if this call joined it
            distributed.cleanup()


def _train(run: Run, validate_bleu: BleuHook | None) -> dict[str, Any]:
    """The loop: epochs of updates of `update_freq` micro-batches, until a stop rule says so."""
    config, progress = run.config, run.progress
    run.interrupts.looping = True  # from here a signal stops the run at the end of an update
    stopped = stop_rule(run, clock=False)  # the time budget allows at least one update
    if stopped is not None:
        run.say(f"nothing to do: {stopped}")
    ticker = Ticker(config, progress, run.started, shown=run.main)
    while stopped is None:
        if progress.batch_in_epoch == 0:  # a new epoch takes this command's buckets
            progress.buckets = run.buckets
        widths = fit_buckets(run.train, progress.buckets)
        batches = shard(
            make_batches(
                run.train,
                config.max_tokens,
                shuffle=True,
                seed=config.seed,
                epoch=progress.epoch,
                widths=widths,
            ),
            run.process,
        )
        if not batches:
            raise TrainingError(
                f"no training batch for {run.process.world_size} process(es) in "
                f"{len(run.train)} training pairs"
            )
        groups = [
            batches[i : i + config.update_freq] for i in range(0, len(batches), config.update_freq)
        ]
        first = progress.batch_in_epoch // config.update_freq
        ticker.epoch(len(groups) - first, len(groups))
        run.epoch = progress.epoch
        for group in groups[first:]:
            loss_sum, ntokens, lr, gnorm = update(
                run, [collate(run.train, i, widths) for i in group]
            )
            end_of_epoch = progress.batch_in_epoch >= len(batches)
            if end_of_epoch:
                progress.epoch += 1
                progress.batch_in_epoch = 0
            tokens_per_s = run.meter.session_tokens / run.meter.session_seconds
            ticker.tick(run.epoch, loss_sum / ntokens / LN2, lr, tokens_per_s)
            if run.meter.tokens and (progress.update % config.log_interval == 0 or end_of_epoch):
                run.log({"kind": "train", **run.meter.take(lr, gnorm, progress.train_tokens)})
            stopped = stop_rule(run)
            every = config.validate_interval_updates  # replaces the epoch ends when given
            due = progress.update % every == 0 if every else end_of_epoch
            is_best = False
            at_stop = stopped is not None and stopped != INTERRUPTED  # an interrupt saves at once
            if progress.update not in (run.validated_at, 0) and (due or at_stop):
                is_best = validate_now(run, validate_bleu)
                stopped = stopped or stop_rule(run, clock=False)  # patience: judged at validations
            epoch_save = end_of_epoch and not config.no_epoch_checkpoints
            names = checkpoint_names(run, epoch_save or stopped is not None, is_best)
            if names:
                save(run, names)
            if stopped or end_of_epoch:
                break
    ticker.close()
    return finish(run, stopped)


# --- what the loop does at each update -----------------------------------------------------------


def update(run: Run, group: Sequence[Batch]) -> tuple[float, float, float, float]:
    """One update on the micro-batches `group`: schedule, dropout seed, forward and backward,
    clipping and the optimizer step, or a skipped step (non-finite loss, fp16 overflow).

    **Returns:** `(loss sum, target tokens, learning rate, gradient norm)`, over all processes.
    """
    config, progress = run.config, run.progress
    began = time.monotonic()
    lr = inverse_sqrt_lr(progress.update, config)
    for param_group in run.optimizer.param_groups:
        param_group["lr"] = lr
    torch.manual_seed(update_seed(config.seed, run.process.rank, progress.update))
    loss_sum, ntokens = forward_backward(
        run.model,
        group,
        epsilon=config.smoothing,
        pad=run.vocab.pad,
        device=run.device,
        autocast=run.autocast,
        scaler=run.scaler,
        world_size=run.process.world_size,
        task=config.run_task,
    )
    outcome, gnorm = optimizer_step(
        run.optimizer,
        run.scaler,
        list(run.raw_model.parameters()),
        config.clip_norm,
        math.isfinite(loss_sum),
    )
    progress.batch_in_epoch += len(group)
    if outcome == "nonfinite":
        _skip_nonfinite(run)
    else:
        progress.nonfinite_in_row = 0
    if outcome == "overflow":
        run.log({"kind": "skip", "reason": "fp16 overflow", "loss_scale": run.scaler.get_scale()})
    if outcome == "ok":
        progress.update += 1
        progress.train_tokens += int(ntokens)
    run.meter.add(loss_sum, ntokens, time.monotonic() - began, applied=outcome == "ok")
    return loss_sum, ntokens, lr, gnorm


def _skip_nonfinite(run: Run) -> None:
    """Count a step skipped for a non-finite loss; too many in a row end the run."""
    progress = run.progress
    progress.nonfinite_total += 1
    progress.nonfinite_in_row += 1
    run.say(
        f"warning: non-finite loss at update {progress.update + 1} (epoch "
        f"{progress.epoch}): step skipped ({progress.nonfinite_in_row} in a row, "
        f"{progress.nonfinite_total} in all)",
        warning=True,
    )
    run.log({"kind": "skip", "reason": "non-finite loss"})
    if progress.nonfinite_in_row >= MAX_NONFINITE_IN_ROW:
        raise TrainingError(
            f"{progress.nonfinite_in_row} non-finite losses in a row after update "
            f"{progress.update}: the run diverged; the last good checkpoint "
            f"{run.save_dir / LAST} is left intact (try a lower --lr, more "
            "--warmup-updates or --clip-norm)"
        )


def validate_now(run: Run, validate_bleu: BleuHook | None) -> bool:
    """Validate (and measure BLEU with `validate_bleu`); True when the loss is the best so far."""
    progress = run.progress
    run.validated_at = progress.update
    if len(run.valid) == 0:
        return False
    run.last_valid = validate(
        run.raw_model, run.valid, run.config, run.device, run.autocast, run.process, run.buckets
    )
    shown = dict(run.last_valid)
    if validate_bleu is not None and run.main and isinstance(run.raw_model, Seq2Seq):
        run.raw_model.eval()
        bleu = validate_bleu(run.raw_model, run.vocab, run.valid_pairs, run.device)
        shown["valid_bleu"] = float(bleu)
        run.raw_model.train()
    judged = run.last_valid[run.config.run_task.best_metric]  # a language model: unsmoothed
    best = judged < progress.best_valid_loss
    if best:
        progress.best_valid_loss = judged
    progress.validations_since_best = 0 if best else progress.validations_since_best + 1
    # learned stream-mixing matrices: is each layer's V still power-bounded? (general linear)
    # (under FSDP each process holds a shard of V: not read, the log has no streams entry)
    bounds = [] if sharded(run.raw_model) else stream_bounds(run.raw_model)
    streams = {"streams": [vars(b) for b in bounds]} if bounds else {}
    run.log({"kind": "valid", **shown, "best_valid_loss": progress.best_valid_loss, **streams})
    _pictures(run)
    numbers = " | ".join(f"{k.removeprefix('valid_')} {v:.3f}" for k, v in shown.items())
    run.say(
        f"valid | epoch {run.epoch:03d} | update {progress.update} | {numbers}"
        + (f" | {stream_summary(bounds)}" if bounds else "")
        + (" (best)" if best else "")
    )
    distributed.barrier()
    return best


def _pictures(run: Run) -> None:
    """--tensorboard: the learned gates and stream mixings on the first validation batch
    (`pictures.py`; the main process, and not under FSDP, where it holds a shard)."""
    if run.tensorboard is None or sharded(run.raw_model):
        return
    config = run.config
    first = make_batches(run.valid, config.max_tokens, shuffle=False, seed=config.seed, epoch=1)[0]
    with run.autocast():
        learned = read_learned(run.raw_model, collate(run.valid, first).to(run.device))
    run.tensorboard.pictures(learned, run.progress.update)


def checkpoint_names(run: Run, due: bool, is_best: bool) -> list[str]:
    """The checkpoints to write now: `checkpoint_best` after a best validation, then
    `checkpoint_<update>` every `save_interval_updates`, and `checkpoint_last` with it and
    whenever `due` (an epoch's end, a stop). The best comes first: a save killed after it
    resumes from it (the newest), so the run never goes on past a best it did not keep."""
    update, every = run.progress.update, run.config.save_interval_updates
    names = [BEST] if is_best else []
    if update != run.saved_at and every and update % every == 0:
        names.append(f"checkpoint_{update}")
    if update != run.saved_at and (len(names) > is_best or due):
        names.append(LAST)
    return names


def save(run: Run, names: list[str]) -> None:
    """Commit one checkpoint under `names`, prune old interval checkpoints, redraw the curves."""
    progress = run.progress
    run.saved_at = progress.update
    run.interrupts.saving = f"writing {', '.join(names)} at update {progress.update}"
    weights, optimizer_state = full_state(run.raw_model, run.optimizer)  # FSDP: every rank
    if run.main:
        best = progress.best_valid_loss
        summary = {
            "update": progress.update,
            "epoch": progress.epoch,
            "batch_in_epoch": progress.batch_in_epoch,
            "best_valid_loss": best if math.isfinite(best) else None,
            **run.last_valid,
        }
        state = trainer_state(progress, run.process, optimizer_state, run.scaler)
        save_checkpoint(run.save_dir, names, weights, state, summary)
        prune(run.save_dir, run.config.keep_last_checkpoints)
        plot_curves(run.save_dir / LOG, run.save_dir / CURVES)
    distributed.barrier()


def stop_rule(run: Run, clock: bool = True) -> str | None:
    """The stop rule that ends the run now (`max_update`, `max_epoch`, `patience`, a signal,
    the time budget), or None; every process stops at the same update. `clock=False` ignores the
    time budget."""
    config, progress = run.config, run.progress
    if config.max_update and progress.update >= config.max_update:
        return f"max_update {config.max_update} reached"
    if config.max_epoch and progress.epoch > config.max_epoch:
        return f"max_epoch {config.max_epoch} reached"
    if config.patience and progress.validations_since_best >= config.patience:
        return f"patience {config.patience}: no better valid loss in as many validations"
    if distributed.any_process(run.interrupts.received is not None, run.device):
        return INTERRUPTED
    budget = config.time_budget
    spent = clock and budget is not None and time.monotonic() - run.started >= budget
    if distributed.any_process(spent, run.device):
        return f"time budget of {config.time_budget:g} s spent"
    return None


def best_name(config: TrainConfig) -> str:
    """What the best checkpoint is judged on, in words (`loss`, `nll loss`)."""
    return config.run_task.best_metric.removeprefix("valid_").replace("_", " ")


def finish(run: Run, stopped: str | None) -> dict[str, Any]:
    """Say and log how the run ended, draw the curves, and summarise it (see `train`)."""
    progress, best, meter = run.progress, run.progress.best_valid_loss, run.meter
    interrupted = None
    if stopped == INTERRUPTED:  # a process the signal missed stops as torchrun's SIGTERM would
        interrupted = run.interrupts.received or SIGNALS[-1]
        run.say(
            f"interrupted at update {progress.update}; rerun the same command to resume "
            f"(checkpoints in {run.save_dir})",
            warning=True,
        )
    else:
        run.say(
            f"done: {stopped}; {progress.update} updates, best valid {best_name(run.config)} "
            f"{best:.3f} bits, checkpoints in {run.save_dir}"
        )
    run.log({"kind": "stop", "reason": stopped})
    if run.main:
        plot_curves(run.save_dir / LOG, run.save_dir / CURVES)
    return {
        "save_dir": str(run.save_dir),
        "updates": progress.update,
        "epoch": progress.epoch,
        "epochs_done": progress.epoch - 1,
        "best_valid_loss": best,
        "valid_loss": run.last_valid.get("valid_loss"),
        "stopped": stopped,
        "interrupted": interrupted,
        "nonfinite_skipped": progress.nonfinite_total,
        "train_tokens": progress.train_tokens,
        "session_tokens": round(meter.session_tokens),
        "tokens_per_s": meter.session_tokens / meter.session_seconds
        if meter.session_seconds
        else None,
        "seconds": time.monotonic() - run.started,
        "threads": torch.get_num_threads(),
    }
