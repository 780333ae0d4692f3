"""Evaluate a finished run: the numbers `result.json` holds, and the machine they came from.

Evaluation (fixed for every experiment, stated in every report):

- which weights: `checkpoint_last` (the model at the budget), or `checkpoint_best` for a run
  with patience (trained until its validation loss stopped improving: the best is the result);
- translation: greedy decoding with a maximum output length of `1.2 · source length + 10`
  subwords, detokenized sacreBLEU and chrF on the whole test split (sacrebleu's default 13a
  tokenizer; signatures in `result.json`);
- language model: the validation perplexity `2 ** (nll bits per target token)` the training loop
  measured at that checkpoint's update (stored in its commit);
- throughput: target tokens per second of training steps (forward, backward, optimizer; no
  validation or checkpointing), from the run's `log.jsonl`, fairseq's counting.
"""

from __future__ import annotations

import itertools
import os
import platform
import subprocess
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from ..devices import resolve_device
from ..errors import ButcherflowError
from ..generate import score, translate
from ..generate.evaluate import QUICK_DECODING
from ..savedir import load_language_model, load_model, read_commit, read_log, run_corpus
from ..tasks import LANGUAGE_MODEL, TRANSLATION

DECODING: dict[str, Any] = {"subset": "test", "checkpoint": "last", **QUICK_DECODING}
LENGTH_BINS = 4


def evaluate_language_model(
    save_dir: Path, device: str = "cpu", *, bins: bool = False, checkpoint: str = "last"
) -> dict[str, Any]:
    """Validation perplexity and bits per byte at `checkpoint` (`last` or `best`: the loop's
    own measurement, at that checkpoint's update) and the parameter count (`device`, `bins`:
    unused, the signature of `EVALUATIONS`)."""
    commit = read_commit(save_dir, f"checkpoint_{checkpoint}")
    if commit is None or commit.get("valid_ppl") is None:
        raise ButcherflowError(
            f"{save_dir}: checkpoint_{checkpoint} has no validation perplexity (is the valid "
            "split empty?)"
        )
    model, _, _ = load_language_model(save_dir, checkpoint)
    return {
        "parameters": model.num_parameters,
        "metrics": {
            "ppl": float(commit["valid_ppl"]),
            **({"bpb": float(commit["valid_bpb"])} if "valid_bpb" in commit else {}),
        },
        "valid_nll_bits": float(commit["valid_nll_loss"]),
        "evaluation": {"subset": "valid", "checkpoint": checkpoint, "update": commit["update"]},
    }


def evaluate_translation(
    save_dir: Path, device: str, *, bins: bool, checkpoint: str = "last"
) -> dict[str, Any]:
    """Test BLEU and chrF with `DECODING` at `checkpoint` (`last` or `best`); with `bins`, also
    by source-length bin and what the position encoding saw of the test lengths.

    **Returns:** `parameters`, `metrics` (`bleu`, `chrf`, and `bleu_bin1..4` with `bins`),
    `evaluation` (the decoding and sacrebleu's signatures), and with `bins`: `bins`, `positions`.
    """
    target = resolve_device(device)
    model, vocab, config = load_model(save_dir, checkpoint, device=target)
    commit = read_commit(save_dir, f"checkpoint_{checkpoint}", verify=False) or {}
    corpus = run_corpus(save_dir, config)
    if not corpus.test:
        raise ButcherflowError(f"the test split of {corpus.name!r} is empty")
    sources = [s for s, _ in corpus.test]
    references = [t for _, t in corpus.test]
    hypotheses = translate(
        model,
        vocab,
        sources,
        **QUICK_DECODING,
        device=target,
    )
    scores = score(hypotheses, references)
    out: dict[str, Any] = {
        "parameters": model.num_parameters,
        "metrics": {"bleu": scores.bleu, "chrf": scores.chrf},
        "evaluation": {
            **DECODING,
            "checkpoint": checkpoint,
            "update": commit.get("update"),
            "sentences": scores.n,
            "bleu_signature": scores.bleu_signature,
            "chrf_signature": scores.chrf_signature,
        },
    }
    if bins:
        out["bins"] = length_bins(sources, references, hypotheses)
        for number, entry in enumerate(out["bins"], 1):
            if entry["bleu"] is not None:
                out["metrics"][f"bleu_bin{number}"] = entry["bleu"]
        train_lengths = [len(vocab.encode(s)) for s, _ in corpus.train]
        test_lengths = [len(vocab.encode(s)) for s in sources]
        longest = max(train_lengths, default=0)
        max_len = model.recipe.max_positions
        out["positions"] = {
            "position": model.recipe.position,
            "longest_train_source": longest,
            "longest_test_source": max(test_lengths),
            "test_sources_longer_than_train": sum(n > longest for n in test_lengths),
            "max_len": max_len,
            "test_sources_cut": None if max_len is None else sum(n > max_len for n in test_lengths),
        }
    return out


# How a run of each task is evaluated: `(save_dir, device, *, bins, checkpoint) -> result`.
EVALUATIONS: dict[str, Callable[..., dict[str, Any]]] = {
    TRANSLATION.name: evaluate_translation,
    LANGUAGE_MODEL.name: evaluate_language_model,
}


def length_bins(
    sources: Sequence[str], references: Sequence[str], hypotheses: Sequence[str]
) -> list[dict[str, Any]]:
    """BLEU and chrF by source length, in `LENGTH_BINS` bins at the quartiles of the test sources.

    The length is the number of whitespace-separated words of the source sentence (independent of
    any vocabulary). With q1 ≤ q2 ≤ q3 the nearest-rank quartiles of the lengths, the bins are
    `[min, q1]`, `(q1, q2]`, `(q2, q3]`, `(q3, max]`; a bin left empty by ties has no score.

    **Returns:** one dict per bin: `low`, `high` (word counts, inclusive), `n`, `bleu`, `chrf`.
    """
    lengths = [len(s.split()) for s in sources]
    ordered = sorted(lengths)
    cuts = [ordered[max(0, -(-len(ordered) * k // LENGTH_BINS) - 1)] for k in range(1, LENGTH_BINS)]
    edges = [ordered[0] - 1, *cuts, ordered[-1]]
    bins = []
    for low, high in itertools.pairwise(edges):
        members = [i for i, n in enumerate(lengths) if low < n <= high]
        entry: dict[str, Any] = {"low": low + 1, "high": high, "n": len(members)}
        if members:
            scores = score([hypotheses[i] for i in members], [references[i] for i in members])
            entry.update(bleu=scores.bleu, chrf=scores.chrf)
        else:
            entry.update(bleu=None, chrf=None)
        bins.append(entry)
    return bins


def throughput(log: Path) -> float | None:
    """Target tokens per second of training steps over the whole run, from `log.jsonl`.

    Each `train` line gives the tokens/s of the window since the previous line; the tokens of a
    window are the difference of the cumulative `train_tokens`. The window right after a resume
    is left out (its tokens straddle the kill).
    """
    tokens = seconds = 0.0
    previous: float | None = 0.0
    for entry in read_log(log):
        kind = entry.get("kind")
        if kind == "resume":
            previous = None
        elif kind == "train":
            rate = entry.get("tokens_per_s")
            if previous is not None and rate:
                delta = float(entry["train_tokens"]) - previous
                tokens += delta
                seconds += delta / float(rate)
            previous = float(entry["train_tokens"])
    return tokens / seconds if seconds > 0 else None


def code_version() -> str:
    """The code that trains: butcherflow's version and, from a git checkout, its commit, with
    "+ local changes" when the package's files differ from it (a frozen checkout, patched)."""
    try:
        text = f"butcherflow {metadata.version('butcherflow')}"
    except metadata.PackageNotFoundError:
        text = "butcherflow (not installed)"
    package = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(package), *args], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if commit is None:
        return text
    changed = git("status", "--porcelain", "--", ".")
    return f"{text} at git {commit}" + (" + local changes" if changed else "")


def machine(device: str) -> str:
    """The machine in words: the CPU model and threads, the GPU when used, torch's version."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    text = f"{cpu}, {os.cpu_count()} CPU threads, torch {torch.__version__}"
    resolved = resolve_device(device)
    if resolved.type == "cuda":
        text = f"{torch.cuda.get_device_name(resolved)}; {text}"
    return text
