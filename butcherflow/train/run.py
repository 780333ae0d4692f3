"""What the training loop works with: `Run` (the run's pieces and the state the loop advances),
`Meter` (throughput and loss since the last log line) and `start` (a `Run` from a config: the
corpus, the save dir, the model and optimizer, and the resumed progress)."""

from __future__ import annotations

import contextlib
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from tqdm import tqdm

from ..assemble import LanguageModel, Recipe, Seq2Seq
from ..data import EncodedSplit, ParallelCorpus, Vocabulary, encode_split, load_corpus, target_side
from ..devices import threads_note
from ..errors import DeclarationError
from ..savedir.checkpoint import latest_checkpoint
from ..savedir.curves import append_log
from ..savedir.layout import LOG
from . import distributed
from .config import TrainConfig, resolve_precision
from .resume import Progress, open_save_dir, resume
from .step import LN2


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
    `saved_at`, `meter`).

    - `model`: what the updates run (the model, compiled and/or wrapped in DDP);
      `raw_model`: the bare model, which is validated and saved.
    - `train`, `valid`: the encoded splits; `valid_pairs`: the raw valid sentences (for BLEU).
    - `amp_dtype`: the autocast dtype (None in fp32).
    """

    config: TrainConfig
    process: distributed.Process
    device: torch.device
    save_dir: Path
    vocab: Vocabulary
    train: EncodedSplit
    valid: EncodedSplit
    valid_pairs: Sequence[tuple[str, str]]
    raw_model: Seq2Seq | LanguageModel
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    amp_dtype: torch.dtype | None
    progress: Progress
    started: float
    epoch: int = 1  # the epoch of the batches just trained (progress moves on at its end)
    last_valid: dict[str, float] = field(default_factory=dict)
    validated_at: int = -1
    saved_at: int = -1
    meter: Meter = field(default_factory=Meter)

    @property
    def main(self) -> bool:
        return self.process.is_main

    @property
    def language_model(self) -> bool:
        return self.config.task == "language_model"

    def say(self, line: str, warning: bool = False) -> None:
        """Print a line on the main process (through tqdm, which clears the progress bar first)."""
        if self.main:
            tqdm.write(line, file=sys.stderr if warning else sys.stdout)

    def log(self, entry: dict[str, Any]) -> None:
        """Append an entry to `log.jsonl` (main process), stamped with the update and epoch."""
        if self.main:
            stamp = {"update": self.progress.update, "epoch": self.epoch}
            append_log(self.save_dir / LOG, {**stamp, **entry})

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """Mixed precision for a forward pass (a no-op in fp32)."""
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)


def start(config: TrainConfig, process: distributed.Process, device: torch.device) -> Run:
    """Load the corpus, open the save dir (vocabulary, recipe), build the model and optimizer,
    resume from the latest committed checkpoint if there is one, and say what will run."""
    started = time.monotonic()
    precision = resolve_precision(config, device)
    corpus = load_corpus(
        config.data, source_lang=config.source_lang, target_lang=config.target_lang
    )
    save_dir = Path(config.save_dir)
    found = latest_checkpoint(save_dir)
    vocab, recipe = open_save_dir(config, corpus, process, resuming=found is not None)
    train_split, valid_split = _encode(config, corpus, vocab, recipe)
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
    kind = LanguageModel if config.task == "language_model" else Seq2Seq
    raw_model = kind(recipe, len(vocab), pad_index=vocab.pad).to(device)
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
        model=raw_model,
        optimizer=optimizer,
        scaler=torch.amp.GradScaler(device.type, enabled=precision == "fp16"),
        amp_dtype={"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision),
        progress=Progress(),
        started=started,
    )
    _say_what_runs(run, recipe, corpus, precision)
    if found is not None:
        run.progress = resume(
            save_dir, found[0], raw_model, optimizer, run.scaler, process, run.say
        )
        run.epoch = run.progress.epoch
    if config.compile:
        run.model = torch.compile(run.model)  # type: ignore[assignment]
    if process.distributed:
        run.model = DDP(run.model, device_ids=[device.index] if device.type == "cuda" else None)
    return run


def _encode(
    config: TrainConfig, corpus: ParallelCorpus, vocab: Vocabulary, recipe: Recipe
) -> tuple[EncodedSplit, EncodedSplit]:
    """The train and valid splits as the model reads them (a language model: the target side)."""
    max_positions = recipe.max_len if recipe.position == "learned" else None
    train_split = encode_split(corpus.train, vocab, max_positions)
    valid_split = encode_split(corpus.valid, vocab, max_positions)
    if config.task == "language_model":  # batches are cut on the target side, the source dropped
        train_split, valid_split = target_side(train_split), target_side(valid_split)
    if config.label_smoothing * len(vocab) / (len(vocab) - 1) > 1:
        raise DeclarationError(
            "too large for this vocabulary",
            key="--label-smoothing",
            value=config.label_smoothing,
            valid=f"< {1 - 1 / len(vocab):g}",
        )
    return train_split, valid_split


def _say_what_runs(run: Run, recipe: Recipe, corpus: ParallelCorpus, precision: str) -> None:
    config, language_model = run.config, run.language_model
    run.say(
        f"{recipe.name}{' (language model)' if language_model else ''}: "
        f"{run.raw_model.num_parameters:,} parameters, vocabulary {len(run.vocab):,}; "
        f"{corpus.name}: {len(corpus.train):,} train / {len(corpus.valid):,} valid "
        + (f"{corpus.target_lang} sentences" if language_model else "pairs")
    )
    for note in corpus.notes:
        run.say(f"  {note}")
    run.say(
        f"device {run.device}, precision {precision}, {run.process.world_size} process(es)"
        + (f" (DDP over {run.process.backend})" if run.process.distributed else "")
        + f", {threads_note(config.threads)}, "
        f"max_tokens {config.max_tokens} x update_freq {config.update_freq}"
    )
