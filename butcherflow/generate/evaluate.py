"""Translate text with a trained model and score it with sacreBLEU; a language model's
perplexity (`evaluate_perplexity`).

Scores are always computed on detokenized text (the vocabulary's `decode`) against the raw
reference sentences, with sacrebleu's own tokenizer (`13a`) and its signature printed beside the
number; tokenized BLEU against pre-tokenized references is never computed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, final

import torch
from sacrebleu.metrics import BLEU, CHRF
from tqdm import tqdm

from ..assemble import Seq2Seq
from ..data import Vocabulary
from ..devices import resolve_device
from ..errors import ButcherflowError, DeclarationError
from ..savedir import load_language_model, load_model, run_corpus
from ..tasks import LANGUAGE_MODEL
from ..train import TrainConfig
from ..train.config import TRAIN_DEFAULTS, check_window
from ..train.distributed import Process
from ..train.run import encode
from ..train.step import validate
from .decoding import BEAM, LENPEN, MAX_LEN_A, MAX_LEN_B, check_options
from .search import beam_search, greedy

SUBSETS = ("valid", "test")
# padded source tokens per generation batch: training's --max-tokens (search defaults: decoding.py)
MAX_TOKENS: int = TRAIN_DEFAULTS["max_tokens"]
# Cheap greedy decoding for BLEU during training and in the experiments' reports: outputs at most
# 1.2 · source length + 10 subwords long.
QUICK_DECODING: dict[str, Any] = {"beam": 1, "max_len_a": 1.2, "max_len_b": 10}


@final
@dataclass(frozen=True)
class Scores:
    """Corpus-level sacreBLEU and chrF of detokenized hypotheses.

    **Arguments:**

    - `bleu`, `chrf`: the scores (0-100).
    - `bleu_signature`, `chrf_signature`: sacrebleu's signatures (tokenizer, case, version...).
    - `n`: number of sentences scored.
    """

    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    n: int

    def __str__(self) -> str:
        return (
            f"BLEU = {self.bleu:.2f} ({self.bleu_signature}) / "
            f"chrF = {self.chrf:.2f} ({self.chrf_signature})"
        )


def score(hypotheses: Sequence[str], references: Sequence[str]) -> Scores:
    """sacreBLEU's `BLEU()` and `CHRF()` over detokenized sentences, one reference each.

    **Arguments:**

    - `hypotheses`: the system's sentences (detokenized text).
    - `references`: the raw reference sentences, in the same order.

    **Returns:** the `Scores`, with the metrics' signatures.
    """
    if isinstance(hypotheses, str) or isinstance(references, str):
        raise DeclarationError(
            "score() takes sequences of sentences, not one string",
            key="hypotheses" if isinstance(hypotheses, str) else "references",
        )
    if len(hypotheses) != len(references):
        raise DeclarationError(
            f"{len(hypotheses)} hypotheses for {len(references)} references",
            key="hypotheses",
            valid="one hypothesis per reference",
        )
    if not hypotheses:
        raise DeclarationError("nothing to score", key="hypotheses", value=[])
    hyps, refs = list(hypotheses), [list(references)]
    bleu, chrf = BLEU(), CHRF()
    return Scores(
        bleu=float(bleu.corpus_score(hyps, refs).score),
        chrf=float(chrf.corpus_score(hyps, refs).score),
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        n=len(hyps),
    )


def token_batches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Group sentence indices, longest first, so that `max(length) × count ≤ max_tokens`.

    Like fairseq at generation, the budget counts padded source positions (each row then becomes
    `beam` decoder rows). A sentence longer than the budget gets a batch of its own.

    **Arguments:**

    - `lengths`: source length (tokens) of each sentence.
    - `max_tokens`: the budget.

    **Returns:** lists of indices into `lengths`; every index appears exactly once.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise DeclarationError(
            "invalid max_tokens", key="max_tokens", value=max_tokens, valid="an integer >= 1"
        )
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        # sorted longest first: the batch's first sentence sets its width
        if batches and lengths[batches[-1][0]] * (len(batches[-1]) + 1) <= max_tokens:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def source_ids(vocab: Vocabulary, text: str, max_positions: int | None = None) -> list[int]:
    """The encoder input of one sentence as in training (`data.encode_split`): its subword ids,
    no bos/eos, cut to `max_positions` for models with learned positions."""
    ids = vocab.encode(text)
    return ids if max_positions is None else ids[:max_positions]


def translate(
    model: Seq2Seq,
    vocab: Vocabulary,
    sentences: Sequence[str],
    *,
    beam: int = BEAM,
    lenpen: float = LENPEN,
    max_len_a: float = MAX_LEN_A,
    max_len_b: int = MAX_LEN_B,
    max_tokens: int = MAX_TOKENS,
    device: str | torch.device = "cpu",
    use_cache: bool = True,
    progress: bool = False,
) -> list[str]:
    """Translate sentences in batches sorted by length; the results come back in input order.

    **Arguments:**

    - `model`: a trained `Seq2Seq` (moved to `device`).
    - `vocab`: its `Vocabulary` (encodes the sources, decodes the outputs).
    - `sentences`: source sentences; an empty (or blank) one translates to `""`.
    - `beam`: beam size; 1 runs greedy decoding.
    - `lenpen`, `max_len_a`, `max_len_b`: as in `search`.
    - `max_tokens`: source tokens (padded) per batch.
    - `device`: `"cpu"`, `"cuda"`, `"cuda:N"` or `"auto"`.
    - `use_cache`: incremental decoding (see `search`).
    - `progress`: show a tqdm bar on stderr.

    **Returns:** one detokenized translation per input sentence, in input order.
    """
    check_options(beam=beam, lenpen=lenpen, max_len_a=max_len_a, max_len_b=max_len_b)
    target = resolve_device(device)
    model.to(target)
    recipe = getattr(model, "recipe", None)  # a stand-in model may have none
    cut = None if recipe is None else recipe.max_positions
    encoded = [source_ids(vocab, s, cut) if s.strip() else [] for s in sentences]
    todo = [i for i, ids in enumerate(encoded) if ids]
    batches = token_batches([len(encoded[i]) for i in todo], max_tokens)
    results = [""] * len(sentences)
    if progress:
        batches = tqdm(batches, desc="translate", unit="batch", leave=False)
    for batch in batches:
        rows = [encoded[todo[j]] for j in batch]
        src = torch.full((len(rows), max(map(len, rows))), model.pad_index, dtype=torch.long)
        for r, ids in enumerate(rows):
            src[r, : len(ids)] = torch.tensor(ids)
        src = src.to(target)
        options: dict[str, Any] = {
            "max_len_a": max_len_a,
            "max_len_b": max_len_b,
            "use_cache": use_cache,
        }
        if beam == 1:
            outputs = greedy(model, src, **options)
        else:
            outputs = beam_search(model, src, beam=beam, lenpen=lenpen, **options)
        for j, ids in zip(batch, outputs, strict=True):
            results[todo[j]] = vocab.decode(ids)
    return results


def validation_bleu(
    model: Seq2Seq, vocab: Vocabulary, pairs: Sequence[tuple[str, str]], device: torch.device
) -> float:
    """Detokenized sacreBLEU of greedy translations, for BLEU at validation during training
    (the train loop's `BleuHook`; greedy and `max_len = 1.2 · src_len + 10` keep it cheap).

    **Arguments:**

    - `model`, `vocab`: the model being trained (its train/eval mode is restored) and vocabulary.
    - `pairs`: `(source, reference)` sentences.
    - `device`: where the model is.

    **Returns:** the BLEU score (0-100).
    """
    sources = [s for s, _ in pairs]
    hypotheses = translate(model, vocab, sources, **QUICK_DECODING, device=device)
    return score(hypotheses, [t for _, t in pairs]).bleu


@final
@dataclass(frozen=True)
class Evaluation:
    """What `evaluate` translated and how it scored.

    **Arguments:**

    - `scores`: sacreBLEU and chrF.
    - `subset`: `"valid"` or `"test"`.
    - `checkpoint`: the checkpoint spec that was loaded.
    - `sources`, `references`, `hypotheses`: the subset's raw sentences and the translations.
    """

    scores: Scores
    subset: str
    checkpoint: str
    sources: tuple[str, ...]
    references: tuple[str, ...]
    hypotheses: tuple[str, ...]


def evaluate(
    save_dir: str | Path,
    subset: str = "test",
    *,
    beam: int = BEAM,
    lenpen: float = LENPEN,
    checkpoint: str = "best",
    max_len_a: float = MAX_LEN_A,
    max_len_b: int = MAX_LEN_B,
    max_tokens: int = MAX_TOKENS,
    device: str | torch.device = "cpu",
    progress: bool = False,
) -> Evaluation:
    """Load a trained model, translate a subset of its corpus and score it.

    The corpus is the one stored in the save dir's `config.json` (with absolute paths: this works
    from any directory), reloaded and filtered as in training, so the subset is exactly the one
    validated on during training.

    **Arguments:**

    - `save_dir`: the `--save-dir` of a `butcherflow train` run.
    - `subset`: `"valid"` or `"test"`.
    - `beam`, `lenpen`, `max_len_a`, `max_len_b`, `max_tokens`, `device`: as in `translate`.
    - `checkpoint`: `"best"`, `"last"`, `"avg:N"` (average of the last N) or a file path.

    **Returns:** an `Evaluation` (scores, sentences and translations).
    """
    if subset not in SUBSETS:
        raise DeclarationError(
            "unknown subset", key="subset", value=subset, valid=" or ".join(SUBSETS)
        )
    check_options(beam=beam, lenpen=lenpen, max_len_a=max_len_a, max_len_b=max_len_b)
    folder = Path(save_dir)
    target = resolve_device(device)
    model, vocab, config = load_model(folder, checkpoint, device=str(target))
    corpus = run_corpus(folder, config)
    pairs = corpus.valid if subset == "valid" else corpus.test
    if not pairs:
        raise ButcherflowError(f"the {subset} split of {corpus.name!r} is empty")
    sources = tuple(s for s, _ in pairs)
    references = tuple(t for _, t in pairs)
    hypotheses = translate(
        model,
        vocab,
        sources,
        beam=beam,
        lenpen=lenpen,
        max_len_a=max_len_a,
        max_len_b=max_len_b,
        max_tokens=max_tokens,
        device=target,
        progress=progress,
    )
    return Evaluation(
        scores=score(hypotheses, references),
        subset=subset,
        checkpoint=checkpoint,
        sources=sources,
        references=references,
        hypotheses=tuple(hypotheses),
    )


@final
@dataclass(frozen=True)
class Perplexity:
    """What `evaluate_perplexity` measured.

    **Arguments:**

    - `ppl`: the perplexity per subword token, `2 ** nll_bits`.
    - `nll_bits`: the negative log-likelihood in bits per target token (eos included, as in
      training).
    - `bpb`: bits per byte, the summed nll in bits over `text_bytes`: comparable across
      vocabularies.
    - `text_bytes`: the UTF-8 bytes of the evaluated text (a newline per line included).
    - `subset`, `checkpoint`, `sentences`: what was scored; `windows`: how (`TokenBlocks` in
      words: the window length and break mode).
    """

    ppl: float
    nll_bits: float
    bpb: float
    text_bytes: int
    subset: str
    checkpoint: str
    sentences: int
    windows: str

    def __str__(self) -> str:
        return (
            f"perplexity = {self.ppl:.2f} (nll {self.nll_bits:.3f} bits per target token), "
            f"{self.bpb:.4f} bits per byte ({self.text_bytes:,} UTF-8 bytes)"
        )


def evaluate_perplexity(
    save_dir: str | Path,
    subset: str = "test",
    *,
    checkpoint: str = "best",
    max_tokens: int = MAX_TOKENS,
    tokens_per_sample: int | None = None,
    sample_break_mode: str | None = None,
    device: str | torch.device = "cpu",
) -> Perplexity:
    """A `--task language_model` run's perplexity and bits per byte on a subset of its corpus
    (the target side), measured as the training loop validates (`train.step.validate`) on the
    run's context windows, in fp32.

    **Arguments:** as in `evaluate`; `max_tokens`: padded positions per batch;
    `tokens_per_sample`, `sample_break_mode`: other windows than the run's (`data.packing`).

    **Returns:** a `Perplexity`.
    """
    if subset not in SUBSETS:
        raise DeclarationError(
            "unknown subset", key="subset", value=subset, valid=" or ".join(SUBSETS)
        )
    folder = Path(save_dir)
    target = resolve_device(device)
    model, vocab, config = load_language_model(folder, checkpoint, device=str(target))
    given: dict[str, Any] = {
        "tokens_per_sample": tokens_per_sample,
        "sample_break_mode": sample_break_mode,
    }
    settings = replace(
        TrainConfig.from_saved(config),
        max_tokens=max_tokens,
        **{k: v for k, v in given.items() if v is not None},
    )
    check_window(settings.tokens_per_sample, model.recipe)
    corpus = run_corpus(folder, config)
    pairs = corpus.valid if subset == "valid" else corpus.test
    if not pairs:
        raise ButcherflowError(f"the {subset} split of {corpus.name!r} is empty")
    split = encode(settings, pairs, vocab, model.recipe)
    measured = validate(model, split, settings, target, contextlib.nullcontext, Process())
    assert split.text_bytes is not None  # text: a language model's windows
    return Perplexity(
        ppl=measured["valid_ppl"],
        nll_bits=measured["valid_nll_loss"],
        bpb=measured["valid_bpb"],
        text_bytes=split.text_bytes,
        subset=subset,
        checkpoint=checkpoint,
        sentences=len(pairs),
        windows=LANGUAGE_MODEL.describe_samples(
            len(split), settings.tokens_per_sample, settings.sample_break_mode
        ),
    )


__all__ = [
    "MAX_TOKENS",
    "QUICK_DECODING",
    "SUBSETS",
    "Evaluation",
    "Perplexity",
    "Scores",
    "evaluate",
    "evaluate_perplexity",
    "score",
    "source_ids",
    "token_batches",
    "translate",
    "validation_bleu",
]
