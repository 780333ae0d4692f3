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
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import random
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

from ..assemble import LanguageModel, Recipe, Seq2Seq
from ..errors import ButcherflowError, DeclarationError
from . import distributed
from .batching import Batch, EncodedSplit, collate, encode_split, make_batches, target_side
from .checkpoint import (
    BEST,
    CONFIG,
    CURVES,
    LAST,
    LOG,
    VOCAB,
    CheckpointError,
    atomic_path,
    latest_checkpoint,
    prune,
    read_config,
    recipe_to_toml,
    remove_stale_temporaries,
    restore,
    rng_state,
    save_checkpoint,
    write_json,
)
from .config import TrainConfig, cache_dir, flag, resolve_device, resolve_precision, resolve_recipe
from .corpus import ParallelCorpus, load_corpus
from .curves import append_log, plot_curves, truncate_log
from .vocab import Vocabulary, build_vocabulary

MAX_NONFINITE_IN_ROW = 10
LN2 = math.log(2.0)
# Test hook: `BUTCHERFLOW_TEST_SIGKILL=N` makes the process SIGKILL itself right after update N
# (after that update's checkpoint, if any), to test resuming after a hard kill.
KILL_ENV = "BUTCHERFLOW_TEST_SIGKILL"

# `validate_bleu(model, vocab, valid_pairs, device) -> BLEU`: given by the CLI, which may import the
# generate stage (this module may not: train comes before generate in the pipeline).
BleuHook = Callable[[Seq2Seq, Vocabulary, Sequence[tuple[str, str]], torch.device], float]


class TrainingError(ButcherflowError):
    """The run cannot go on (non-finite losses, no data); the last checkpoint is intact."""


@final
@dataclass
class Progress:
    """Where the run is; saved in every checkpoint (mutable: the loop advances it)."""

    update: int = 0  # optimizer steps taken
    epoch: int = 1  # the epoch being trained (1-based, as fairseq)
    batch_in_epoch: int = 0  # micro-batches of this epoch already consumed, per process
    best_valid_loss: float = math.inf
    nonfinite_total: int = 0
    nonfinite_in_row: int = 0
    train_tokens: int = 0  # target tokens trained on, summed over processes


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
    language_model: bool = False,
) -> tuple[float, float]:
    """Accumulate the gradients of one update; return `(loss sum, target tokens)`, all processes.

    The gradient is fairseq's: the sum of the loss over every token of every micro-batch of every
    process, divided by the total token count. DDP averages gradients over processes, hence the
    factor `world_size / ntokens`; only the last micro-batch synchronises (`no_sync` before).
    A `language_model` reads `prev_output` alone (no source).
    """
    local = float(sum(b.ntokens for b in micro_batches))
    (ntokens,) = distributed.all_reduce_sum([local], device)
    total = torch.zeros((), device=device, dtype=torch.float64)
    for i, batch in enumerate(micro_batches):
        batch = batch.to(device)
        last = i == len(micro_batches) - 1
        sync = model.no_sync() if isinstance(model, DDP) and not last else contextlib.nullcontext()
        with sync:
            with autocast():
                if language_model:
                    logits = model(batch.prev_output)
                else:
                    logits = model(batch.src, batch.prev_output)
                loss = label_smoothed_loss(logits, batch.target, epsilon, pad)
            scaler.scale(loss * (world_size / ntokens)).backward()
        total += loss.detach().double()
    (loss_sum,) = distributed.all_reduce_sum([float(total)], device)
    return loss_sum, ntokens


@torch.no_grad()
def validate(
    model: Seq2Seq | LanguageModel,
    split: EncodedSplit,
    config: TrainConfig,
    device: torch.device,
    autocast: Callable[[], contextlib.AbstractContextManager[Any]],
    process: distributed.Process,
) -> dict[str, float]:
    """Label-smoothed loss, nll loss (bits per target token) and perplexity on `split`."""
    model.eval()
    batches = make_batches(split, config.max_tokens, shuffle=False, seed=config.seed, epoch=1)
    loss = nll = tokens = 0.0
    for indices in batches[process.rank :: process.world_size]:
        batch = collate(split, indices).to(device)
        with autocast():
            if isinstance(model, LanguageModel):
                logits = model(batch.prev_output)
            else:
                logits = model(batch.src, batch.prev_output)
        target = batch.target.reshape(-1)
        loss += float(
            label_smoothed_loss(logits, batch.target, config.label_smoothing, model.pad_index)
        )
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
    return {"valid_loss": loss / tokens / LN2, "valid_nll_loss": nll_bits, "valid_ppl": 2**nll_bits}


def shard(batches: list[list[int]], process: distributed.Process) -> list[list[int]]:
    """This process's batches: every process gets `len // world_size` of them.

    The last `len % world_size` batches of the (per-epoch shuffled) list are dropped, so every
    process runs the same number of updates; a different tail is dropped every epoch.
    """
    usable = len(batches) - len(batches) % process.world_size
    return batches[process.rank : usable : process.world_size]


def _update_seed(seed: int, rank: int, update: int) -> int:
    return (seed * 1_000_003 + rank) * 1_000_003 + update


def _check_resumable(
    config: TrainConfig,
    saved: dict[str, Any],
    recipe_text: str,
    corpus: ParallelCorpus,
    save_dir: Path,
) -> None:
    """A rerun must be the same run: same recipe, data, vocabulary and optimisation settings."""
    where = save_dir / CONFIG
    for key, old, new in config.differences(saved):
        raise DeclarationError(
            f"{save_dir} holds a run trained with {flag(key)} {old!r}",
            key=flag(key),
            value=new,
            valid=f"rerun with {flag(key)} {old!r} to resume, or use another --save-dir",
            source=where,
        )
    if saved.get("recipe_toml") != recipe_text:
        raise DeclarationError(
            f"the recipe '{config.recipe}' differs from the one this save dir was trained with "
            "(was its file edited?)",
            key="recipe",
            value=config.recipe,
            valid="restore the recipe file or use another --save-dir",
            source=where,
        )
    if saved.get("corpus_fingerprint") != corpus.fingerprint:
        raise DeclarationError(
            "the corpus content changed since this save dir was trained (its fingerprint differs)",
            key="--data",
            value=config.data,
            valid="the same data, or another --save-dir",
            source=where,
        )


def open_save_dir(
    config: TrainConfig, corpus: ParallelCorpus, process: distributed.Process, resuming: bool
) -> tuple[Vocabulary, Recipe]:
    """Create the save dir (or reopen it to resume): its vocabulary, recipe and `config.json`.

    A run that resumes keeps the save dir's vocabulary and must be the same run as the one saved
    (the fields in `RESUMABLE_CHANGES` aside). A save dir without a committed checkpoint (say, a
    first attempt that stopped on a bad flag) starts afresh: its config and log are replaced.
    `spm.model` is written before `config.json`, so a config always has its vocabulary.

    **Returns:** `(vocabulary, resolved recipe)`.
    """
    save_dir = Path(config.save_dir)
    if process.is_main:
        save_dir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(save_dir)
        if not resuming:
            (save_dir / LOG).unlink(missing_ok=True)
    distributed.barrier()
    saved = read_config(save_dir) if resuming else None
    if saved is not None:
        vocab = Vocabulary.load(save_dir / VOCAB)
    else:
        if process.is_main:  # trains it; the other processes then find it in the cache
            build_vocabulary(corpus, config.vocab_size, cache_dir())
        distributed.barrier()
        vocab = build_vocabulary(corpus, config.vocab_size, cache_dir())
    recipe = resolve_recipe(config, len(vocab))
    recipe_text = recipe_to_toml(recipe)
    if saved is not None:
        _check_resumable(config, saved, recipe_text, corpus, save_dir)
    if process.is_main:
        if saved is None:
            with atomic_path(save_dir / VOCAB) as tmp:
                shutil.copyfile(vocab.path, tmp)
        config_json = {
            **config.to_json(),
            "recipe_toml": recipe_text,
            "vocab_size": len(vocab),
            "corpus_name": corpus.name,
            "corpus_fingerprint": corpus.fingerprint,
            "languages": [corpus.source_lang, corpus.target_lang],
        }
        write_json(save_dir / CONFIG, config_json)
    distributed.barrier()
    return vocab, recipe


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
        gnorm = float(nn.utils.clip_grad_norm_(params, clip_norm))
    else:
        gnorm = float(nn.utils.get_total_norm(grads))
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
        f"device {device}, precision {precision}, {process.world_size} process(es), "
        f"max_tokens {config.max_tokens} x update_freq {config.update_freq}"
    )

    # --- resume ---------------------------------------------------------------------------------
    progress = Progress()
    if found is not None:
        name = found[0]
        state = restore(save_dir, name, raw_model, optimizer, scaler)
        try:
            progress = Progress(**state["progress"])
        except (KeyError, TypeError) as error:
            raise CheckpointError(f"{save_dir / name}.pt has no valid progress ({error})") from None
        saved_world = int(state.get("world_size", 1))
        if saved_world != process.world_size:  # map the data position onto the new sharding
            progress.batch_in_epoch = progress.batch_in_epoch * saved_world // process.world_size
            say(
                f"note: saved by {saved_world} process(es), resumed by {process.world_size}: "
                "the epoch goes on from the nearest batch"
            )
        say(f"resuming from {save_dir / name} (update {progress.update}, epoch {progress.epoch})")
        if main:
            truncate_log(log_path, progress.update)
            append_log(
                log_path,
                {
                    "update": progress.update,
                    "epoch": progress.epoch,
                    "kind": "resume",
                    "from": name,
                },
            )
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
            torch.manual_seed(_update_seed(config.seed, process.rank, progress.update))
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
