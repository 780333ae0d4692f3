"""What the training loop works with: `Run` (the run's pieces and the state the loop advances),
`Meter` (throughput and loss since the last log line) and `start` (a `Run` from a config: the
corpus, the save dir, the model and optimizer, and the resumed progress)."""

from __future__ import annotations

import contextlib
import random
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from ..assemble import LanguageModel, Recipe, Seq2Seq
from ..assemble.declarations import failed_claims
from ..data import (
    ParallelCorpus,
    Split,
    Vocabulary,
    batch_shapes,
    fit_buckets,
    load_corpus,
    make_batches,
    padding_fraction,
)
from ..devices import can_compile, threads_note
from ..errors import DeclarationError
from ..savedir.checkpoint import CORRUPT, Found, latest_checkpoint, set_aside
from ..savedir.curves import append_log
from ..savedir.layout import LOG
from . import distributed
from .config import TrainConfig, resolve_buckets, resolve_precision, resolve_recipe
from .interrupts import Interrupts
from .parallelize import parallelize, require_process_group
from .resume import Progress, check_save_dir, open_save_dir, resume, write_save_dir
from .step import LN2
from .tracking import TensorBoard, require_tensorboard


@final
@dataclass
class Meter:
    """Target tokens, summed loss and seconds of training steps: since the last `train` line of
    the log (`loss`, `tokens`, `seconds`) and since this command started (`session_*`)."""

    loss: float = 0.0
    tokens: float = 0.0
    seconds: float = 0.0
    session_tokens: float = 0.0
    session_seconds: float = 0.0

    def add(self, loss_sum: float, ntokens: float, seconds: float, applied: bool) -> None:
        """Count one update (`applied`: its step was taken, so its loss counts)."""
        if applied:
            self.loss += loss_sum
            self.tokens += ntokens
        self.seconds += seconds
        self.session_seconds += seconds
        self.session_tokens += ntokens

    def take(self, lr: float, gnorm: float, train_tokens: int) -> dict[str, Any]:
        """The `train` line of the log for the window since the last one, which starts anew."""
        line = {
            "loss": self.loss / self.tokens / LN2,
            "lr": lr,
            "gnorm": gnorm,
            "tokens_per_s": self.tokens / self.seconds,
            "train_tokens": train_tokens,
        }
        self.loss = self.tokens = self.seconds = 0.0
        return line


@final
@dataclass
class Run:
    """Everything one call of `train` works with: what it was given and built (frozen in
    spirit), and what the loop advances (`progress`, `epoch`, `last_valid`, `validated_at`,
    `saved_at`, `meter`; `interrupts`: the signals received).

    - `model`: what the updates run (the model, its blocks compiled and/or wrapped in DDP);
      `raw_model`: the bare model, which is validated and saved.
    - `buckets`: the bucket ladder this command cuts new epochs with (`resolve_buckets`).
    - `train`, `valid`: the splits as the task's samples (pairs, or a language model's context
      windows); `valid_pairs`: the raw valid sentences (for BLEU).
    - `amp_dtype`: the autocast dtype (None in fp32).
    """

    config: TrainConfig
    process: distributed.Process
    device: torch.device
    save_dir: Path
    vocab: Vocabulary
    train: Split
    valid: Split
    valid_pairs: Sequence[tuple[str, str]]
    raw_model: Seq2Seq | LanguageModel
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    amp_dtype: torch.dtype | None
    buckets: str
    progress: Progress
    started: float
    epoch: int = 1  # the epoch of the batches just trained (progress moves on at its end)
    last_valid: dict[str, float] = field(default_factory=dict)
    validated_at: int = -1
    saved_at: int = -1
    meter: Meter = field(default_factory=Meter)
    interrupts: Interrupts = field(default_factory=Interrupts)
    tensorboard: TensorBoard | None = None  # --tensorboard: the log's curves, also there

    @property
    def main(self) -> bool:
        return self.process.is_main

    def say(self, line: str, warning: bool = False) -> None:
        """Print a line on the main process (through tqdm, which clears the progress bar first)."""
        say(self.process, line, warning)

    def log(self, entry: dict[str, Any]) -> None:
        """Append an entry to `log.jsonl` (main process), stamped with the update and epoch."""
        if self.main:
            stamp = {"update": self.progress.update, "epoch": self.epoch}
            append_log(self.save_dir / LOG, {**stamp, **entry})
            if self.tensorboard is not None:
                self.tensorboard.write({**stamp, **entry})

    def close(self) -> None:
        """Flush and close what the run writes beside its save dir (the TensorBoard events)."""
        if self.tensorboard is not None:
            self.tensorboard.close()
            self.tensorboard = None

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """Mixed precision for a forward pass (a no-op in fp32)."""
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)


def say(process: distributed.Process, line: str, warning: bool = False) -> None:
    """`Run.say` before there is a run."""
    if process.is_main:
        tqdm.write(line, file=sys.stderr if warning else sys.stdout)


def start(config: TrainConfig, process: distributed.Process, device: torch.device) -> Run:
    """Check everything (the save dir, the recipe and its proofs, the corpus, the batches), then
    open the save dir (vocabulary, recipe), build the model and optimizer, resume from the newest
    intact checkpoint if there is one, and say what will run. Nothing is created in the save dir
    before every check has passed."""
    started = time.monotonic()
    if config.fsdp:
        require_process_group(process)  # before anything is read or written
    precision = resolve_precision(config, device)
    save_dir = Path(config.save_dir)
    check_save_dir(save_dir)
    if config.tensorboard is not None and process.is_main:
        require_tensorboard()  # a missing package fails before anything is written
        check_save_dir(Path(config.tensorboard), "--tensorboard")
    recipe = resolve_recipe(config, config.vocab_size)  # a bad recipe or size fails first
    found = latest_checkpoint(save_dir) if save_dir.is_dir() else None
    resuming = found is not None
    # a resumed run's declarations are checked unchanged (open_save_dir): its proof is recorded
    failed: Mapping[str, str] = {} if resuming else failed_claims(recipe)
    if not resuming:
        _refuse_failed_claims(config, recipe, failed)
    corpus = load_corpus(
        config.data, source_lang=config.source_lang, target_lang=config.target_lang
    )
    config.run_task.check_corpus(corpus, config.data)
    vocab, recipe, recorded = open_save_dir(config, corpus, process, resuming, recipe)
    if recorded is not None:  # resuming: after "the declaration changed"
        failed = recorded
        _refuse_failed_claims(config, recipe, failed)
    train_split, valid_split = _encode(config, corpus, vocab, recipe)
    buckets = resolve_buckets(config, device)
    fit_buckets(train_split, buckets)  # a bad ladder fails here, not as the first epoch is cut
    raw_model = _seeded_model(config, recipe, vocab, device)
    write_save_dir(config, corpus, vocab, recipe, process, resuming=resuming, failed_claims=failed)
    compile = config.compile and can_compile(device.type, lambda line: say(process, line, True))
    model = parallelize(raw_model, process, device, compile=compile, fsdp=config.fsdp)
    # after parallelize: FSDP replaces the parameters by their shards
    # fairseq's Adam decays weights apart from the gradient (Loshchilov & Hutter): that is AdamW.
    optimizer = torch.optim.AdamW(
        raw_model.parameters(),
        lr=config.lr,
        betas=(0.9, 0.98),
        eps=1e-8,
        weight_decay=config.weight_decay,
    )
    run = Run(
        config=config,
        process=process,
        device=device,
        save_dir=save_dir,
        vocab=vocab,
        train=train_split,
        valid=valid_split,
        valid_pairs=corpus.valid,
        raw_model=raw_model,
        model=model,
        optimizer=optimizer,
        scaler=torch.amp.GradScaler(device.type, enabled=precision == "fp16"),
        amp_dtype={"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision),
        buckets=buckets,
        progress=Progress(),
        started=started,
    )
    _say_what_runs(run, recipe, corpus, precision, failed)
    if found is not None:
        _set_aside_corrupt(run, found)
        run.progress = resume(
            save_dir, found.name, raw_model, optimizer, run.scaler, process, run.say
        )
        run.epoch = run.progress.epoch
        if run.progress.batch_in_epoch and run.progress.buckets != run.buckets:
            run.say(
                f"note: epoch {run.epoch} was cut with --buckets {run.progress.buckets}: it goes "
                f"on with those batches, the next epochs take --buckets {run.buckets}"
            )
    if config.tensorboard is not None and process.is_main:
        resumed_at = run.progress.update if found is not None else None
        run.tensorboard = TensorBoard(Path(config.tensorboard), resumed_at)
    return run


def _seeded_model(
    config: TrainConfig, recipe: Recipe, vocab: Vocabulary, device: torch.device
) -> Seq2Seq | LanguageModel:
    """The run's model, built once torch, random and numpy are seeded with the run's seed."""
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
    return config.run_task.model(recipe, len(vocab), pad_index=vocab.pad).to(device)


def _refuse_failed_claims(config: TrainConfig, recipe: Recipe, failed: Mapping[str, str]) -> None:
    """A declaration whose proof refutes its claimed order is not trained, unless the run says
    `allow_failed_claims` (then `config.json` records the verdicts)."""
    if failed and not config.allow_failed_claims:
        where, verdict = next(iter(failed.items()))
        raise DeclarationError(
            f"the proof refutes the claimed order: {verdict}",
            key=where,
            valid="correct the declared order (`butcherflow check` shows the proof), or train it "
            "anyway with --allow-failed-claims (recorded in the run)",
            source=recipe.source,
        )


def _set_aside_corrupt(run: Run, found: Found) -> None:
    """Say which checkpoints are corrupt and why, and keep their files under another name (the
    next save would replace them); resume goes on from `found`, the newest intact one."""
    for name, why in found.corrupt:
        kept = set_aside(run.save_dir, name) if run.main else f"{name}{CORRUPT}K"
        run.say(f"warning: {why}; its files are kept as {kept}.*", warning=True)
    if found.corrupt:
        run.say(
            f"resuming from {found.name} instead (update {found.commit.get('update')}): the "
            "newest checkpoint whose files match its commit",
            warning=True,
        )
    distributed.barrier()


def encode(
    config: TrainConfig, pairs: Sequence[tuple[str, str]], vocab: Vocabulary, recipe: Recipe
) -> Split:
    """A split of the corpus as the run's task reads it (`Task.encode`: sentence pairs, or a
    language model's context windows at the run's `tokens_per_sample` and break mode)."""
    return config.run_task.encode(
        pairs,
        vocab,
        max_positions=recipe.max_positions,
        tokens_per_sample=config.tokens_per_sample,
        break_mode=config.sample_break_mode,
    )


def _encode(
    config: TrainConfig, corpus: ParallelCorpus, vocab: Vocabulary, recipe: Recipe
) -> tuple[Split, Split]:
    """The train and valid splits as the model reads them; a sample over `--max-tokens` fails
    now, not later."""
    train_split, valid_split = (
        encode(config, s, vocab, recipe) for s in (corpus.train, corpus.valid)
    )
    for split in (train_split, valid_split):
        make_batches(split, config.max_tokens, shuffle=False, seed=config.seed, epoch=1)
    if config.smoothing * len(vocab) / (len(vocab) - 1) > 1:
        raise DeclarationError(
            "too large for this vocabulary",
            key="--label-smoothing",
            value=config.label_smoothing,
            valid=f"< {1 - 1 / len(vocab):g}",
        )
    return train_split, valid_split


def _say_what_runs(
    run: Run, recipe: Recipe, corpus: ParallelCorpus, precision: str, failed: Mapping[str, str]
) -> None:
    """Print (and log) what will run: the model, the corpus, where and how it runs, the
    learning-rate schedule and the stop rules."""
    config, task = run.config, run.config.run_task
    samples = f"{corpus.target_lang} {task.samples}" if task.monolingual else task.samples
    run.say(
        f"{recipe.name} ({task.title}): "
        f"{run.raw_model.num_parameters:,} parameters, vocabulary {len(run.vocab):,}; "
        f"{corpus.name}: {len(corpus.train):,} train / {len(corpus.valid):,} valid {samples}"
    )
    for note in corpus.notes:
        run.say(f"  {note}")
    widths = fit_buckets(run.train, run.buckets)  # epoch 1's batches, as the loop cuts them
    first = make_batches(
        run.train, config.max_tokens, shuffle=True, seed=config.seed, epoch=1, widths=widths
    )
    padding = padding_fraction(run.train, first, widths)
    run.say(f"  {samples_note(config, len(run.train), padding)}")
    for where, verdict in failed.items():
        run.say(
            f"warning: training anyway (--allow-failed-claims): {where}: {verdict}", warning=True
        )
    run.say(
        f"device {run.device}, precision {precision}, {run.process.world_size} process(es)"
        + (
            f" ({'FSDP' if config.fsdp else 'DDP'} over {run.process.backend})"
            if run.process.distributed
            else ""
        )
        + f", {threads_note(config.threads)}, "
        f"max_tokens {config.max_tokens} x update_freq {config.update_freq}"
    )
    run.say(batches_note(run.train, first, widths, run.buckets))
    run.say(schedule_note(config))
    run.say(stop_note(config), warning=not stop_rules(config))
    run.log(
        {
            "kind": "start",
            "threads": torch.get_num_threads(),
            "device": str(run.device),
            "precision": precision,
            "processes": run.process.world_size,
            "failed_claims": dict(failed),
            "train_samples": len(run.train),
            "padding": padding,
        }
    )


def batches_note(
    split: Split, batches: Sequence[list[int]], widths: np.ndarray | None, buckets: str
) -> str:
    """How the first epoch's training `batches` are cut (`widths`: with the bucket ladder
    `buckets`, `fit_buckets`), and how many shapes they take."""
    used = [] if widths is None else sorted(set(widths.tolist()))
    ladder = f" (widths {', '.join(map(str, used))})" if used else ""
    return (
        f"batches: --buckets {buckets}{ladder}: {len(batches)} per epoch in "
        f"{len(batch_shapes(split, batches, widths))} distinct shapes"
    )


def samples_note(config: TrainConfig, samples: int, padding: float) -> str:
    """What the training batches hold (`Task.describe_samples`) and how much is padding (epoch
    1's batches)."""
    shape = config.run_task.describe_samples(
        samples, config.tokens_per_sample, config.sample_break_mode
    )
    return f"{shape}; padding {padding:.1%} of the positions of the training batches"


def schedule_note(config: TrainConfig) -> str:
    """The effective learning-rate schedule in one line: where warm-up ends and the peak."""
    return (
        f"schedule: inverse_sqrt, warm-up from {config.warmup_init_lr:g} to the peak lr "
        f"{config.lr:g} at update {config.warmup_updates}, then lr * sqrt({config.warmup_updates}"
        " / update)"
    )


def stop_rules(config: TrainConfig) -> list[str]:
    """The stop rules that bound the run (`--patience` alone does not: it may never trigger)."""
    rules = []
    if config.max_update:
        rules.append(f"--max-update {config.max_update}")
    if config.max_epoch:
        rules.append(f"--max-epoch {config.max_epoch}")
    if config.time_budget is not None:
        rules.append(f"--time-budget {config.time_budget:g}")
    return rules


def stop_note(config: TrainConfig) -> str:
    """The stop rules in one line, with a warning when there is none (the run never ends) and a
    note when the run ends during warm-up."""
    rules = stop_rules(config)
    patience = f"--patience {config.patience}" if config.patience else ""
    if not rules:
        return (
            "warning: no stop rule (--max-update, --max-epoch, --time-budget): this run trains "
            + (f"until {patience} stops it or " if patience else "")
            + "until you stop it (Ctrl-C saves a checkpoint; rerun the command to resume)"
        )
    text = "stops at the first of: " + ", ".join(rules + ([patience] if patience else []))
    if config.max_update and config.max_update < config.warmup_updates:
        text += (
            f"; note: --max-update {config.max_update} ends the run during warm-up, before the "
            f"peak lr (update {config.warmup_updates})"
        )
    return text
