"""The task a run trains, translation or language modelling: one object each, chosen once.

A `Task` states in one place what differs between the two: the model it builds from a recipe,
the corpus it accepts and the samples it cuts from it (sentence pairs, or context windows of
text: `data.packing`), its defaults (label smoothing; the window length and break mode of a
language model), the validation number its best checkpoint is chosen on, the metrics
`evaluate` reports and the experiments' tables show, the `evaluate` flags that only it takes,
and the command that runs its model on new input. It is chosen once, from `--task` or else from
the recipe (`task_of_recipe`: a recipe with an encoder and a decoder is a translation model, a
decoder-only `models/lm-*.toml` a language model), and a save dir records it by `name`
(`config.json`'s `task`). Stages to the right look behaviour up in tables keyed by `name`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import ClassVar, final

from torch import Tensor, nn

from .assemble import (
    LanguageModel,
    Recipe,
    Seq2Seq,
    language_model_side,
    load_recipe,
    model_class,
)
from .data import (
    Batch,
    ParallelCorpus,
    Split,
    Vocabulary,
    check_packing,
    encode_split,
    pack_lines,
)
from .data.packing import describe_windows
from .errors import DeclarationError

# fairseq's language-model default is 1024; half of it keeps attention's share of a CPU-scale
# model's work near its feed-forward share (and a Bible verse is about 40 subwords)
TOKENS_PER_SAMPLE = 512
BREAK_MODE = "none"


class Task(ABC):
    """What a task is (module docstring); two final implementations, `Translation` and
    `LanguageModeling`, one instance each (`TRANSLATION`, `LANGUAGE_MODEL`).

    - `name`: `--task` and `config.json`'s value; `title`: what its model is called.
    - `model`: the class it builds from a recipe; `baseline`: the recipe sizes are shown beside.
    - `samples`: what one training example of its corpus is called in messages.
    - `monolingual`: it may read text in one language (`--target-lang` alone).
    - `label_smoothing`: its default `--label-smoothing`.
    - `best_metric`: the validation entry (`valid_loss`, `valid_nll_loss`) the best
      checkpoint and `--patience` are judged on.
    - `metrics`: what `evaluate` and the experiments report.
    - `evaluate_flags`: the `evaluate` options (argparse dests) that apply to it alone.
    - `command`: the command that runs its model on new input (`translate`, `generate`).
    """

    name: ClassVar[str]
    title: ClassVar[str]
    model: ClassVar[type[Seq2Seq] | type[LanguageModel]]
    baseline: ClassVar[str]
    samples: ClassVar[str]
    monolingual: ClassVar[bool]
    label_smoothing: ClassVar[float]
    best_metric: ClassVar[str]
    metrics: ClassVar[tuple[str, ...]]
    evaluate_flags: ClassVar[tuple[str, ...]]
    command: ClassVar[str]

    @abstractmethod
    def logits(self, model: nn.Module, batch: Batch) -> Tensor:
        """`model`'s logits `(batch, tgt_len, vocab)` on `batch` (the model may be wrapped in
        DDP or compiled: it is called, not inspected)."""

    @abstractmethod
    def encode(
        self,
        pairs: Sequence[tuple[str, str]],
        vocab: Vocabulary,
        *,
        max_positions: int | None,
        tokens_per_sample: int | None = None,
        break_mode: str | None = None,
    ) -> Split:
        """A split of the corpus as this task's samples.

        **Arguments:**

        - `pairs`: `(source, target)` sentences (a language model reads the targets).
        - `vocab`: the run's vocabulary.
        - `max_positions`: the model's longest sequence (`Recipe.max_positions`; None: any).
        - `tokens_per_sample`, `break_mode`: a language model's windows (`data.packing`).
        """

    @abstractmethod
    def check_recipe(self, recipe: Recipe, given: str) -> None:
        """Refuse a recipe this task cannot train (`given`: the `RECIPE` as given)."""

    @abstractmethod
    def windows(
        self, tokens_per_sample: int | None, break_mode: str | None
    ) -> tuple[int | None, str | None]:
        """`(--tokens-per-sample, --sample-break-mode)` as a run of this task has them: a
        language model's defaults filled in and checked; a translation run takes neither."""

    @abstractmethod
    def check_corpus(self, corpus: ParallelCorpus, data: str) -> None:
        """Refuse a corpus this task cannot read (`data`: the `--data` given)."""

    def depths(
        self, recipe: Recipe, encoder_layers: int | None, decoder_layers: int | None
    ) -> tuple[int | None, int | None]:
        """The `(--encoder-layers, --decoder-layers)` that give this task's model the depth of
        an encoder of `encoder_layers` (an experiment's depth, declared as the encoder's)."""
        return encoder_layers, decoder_layers

    @abstractmethod
    def describe_samples(
        self, count: int, tokens_per_sample: int | None, break_mode: str | None
    ) -> str:
        """`count` samples of this task in words (`"1,234 sentence pairs"`)."""

    @abstractmethod
    def buckets(self, spec: str, auto: str) -> str:
        """The bucket ladder (`data.buckets`) this task's batches are cut with, from
        `--buckets` `spec`; `auto` is what `--buckets auto` means on the run's device. A spec
        this task cannot take is a `DeclarationError` naming `--buckets`."""


@final
class Translation(Task):
    """A `Seq2Seq` on sentence pairs, judged by BLEU and chrF."""

    name = "translation"
    title = "translation model"
    model = Seq2Seq
    baseline = "transformer-small"
    samples = "pairs"
    monolingual = False
    label_smoothing = 0.1  # fairseq's translation recipes (Vaswani et al.)
    best_metric = "valid_loss"  # fairseq's best_checkpoint_metric: the criterion's loss
    metrics = ("bleu", "chrf")
    evaluate_flags = ("beam", "lenpen", "max_len_a", "max_len_b", "print_samples")
    command = "translate"

    def logits(self, model: nn.Module, batch: Batch) -> Tensor:
        out: Tensor = model(batch.src, batch.prev_output)
        return out

    def encode(
        self,
        pairs: Sequence[tuple[str, str]],
        vocab: Vocabulary,
        *,
        max_positions: int | None,
        tokens_per_sample: int | None = None,
        break_mode: str | None = None,
    ) -> Split:
        return encode_split(list(pairs), vocab, max_positions)

    def describe_samples(
        self, count: int, tokens_per_sample: int | None, break_mode: str | None
    ) -> str:
        return f"{count:,} sentence pairs"

    def buckets(self, spec: str, auto: str) -> str:
        return auto if spec == "auto" else spec  # pairs of every length: buckets bound shapes

    def windows(
        self, tokens_per_sample: int | None, break_mode: str | None
    ) -> tuple[int | None, str | None]:
        given = {"--tokens-per-sample": tokens_per_sample, "--sample-break-mode": break_mode}
        for flag, value in given.items():
            if value is not None:
                raise DeclarationError(
                    f"{flag} shapes a language model's context windows; this run trains a "
                    f"{self.title} on sentence pairs",
                    key=flag,
                    value=value,
                    valid=f"leave it out, or --task {LANGUAGE_MODEL.name}",
                )
        return None, None

    def check_recipe(self, recipe: Recipe, given: str) -> None:
        if model_class(recipe) is not Seq2Seq:
            raise DeclarationError(
                f"recipe '{recipe.name}' has one side: a decoder-only language model, which "
                "translates nothing",
                key="--task",
                value=self.name,
                valid=f"--task {LANGUAGE_MODEL.name} (the default for this recipe), or a recipe "
                "with [encoder] and [decoder]",
            )

    def check_corpus(self, corpus: ParallelCorpus, data: str) -> None:
        if corpus.monolingual:
            raise DeclarationError(
                f"{corpus.name} is monolingual text ({corpus.target_lang}): a translation model "
                "needs a parallel corpus",
                key="--data",
                value=data,
                valid=f"--task {LANGUAGE_MODEL.name} for monolingual text, or a parallel corpus "
                "(bible:SRC-TGT, DIR with train.SRC/train.TGT)",
            )


@final
class LanguageModeling(Task):
    """A decoder-only `LanguageModel` on the target side of a corpus, as context windows,
    judged by perplexity per token and bits per byte."""

    name = "language_model"
    title = "language model"
    model = LanguageModel
    baseline = "lm-residual"
    samples = "sentences"
    monolingual = True
    label_smoothing = 0.0  # a language model's likelihood is the number it reports
    best_metric = "valid_nll_loss"  # unsmoothed: what perplexity and bits per byte measure
    metrics = ("ppl", "bpb")
    evaluate_flags = ("tokens_per_sample", "sample_break_mode")
    command = "generate"

    def logits(self, model: nn.Module, batch: Batch) -> Tensor:
        out: Tensor = model(batch.prev_output)
        return out

    def encode(
        self,
        pairs: Sequence[tuple[str, str]],
        vocab: Vocabulary,
        *,
        max_positions: int | None,
        tokens_per_sample: int | None = None,
        break_mode: str | None = None,
    ) -> Split:
        mode = break_mode or BREAK_MODE
        length = tokens_per_sample or (TOKENS_PER_SAMPLE if mode == "none" else max_positions)
        return pack_lines([target for _, target in pairs], vocab, length, mode)

    def describe_samples(
        self, count: int, tokens_per_sample: int | None, break_mode: str | None
    ) -> str:
        return describe_windows(count, tokens_per_sample, break_mode or BREAK_MODE)

    def buckets(self, spec: str, auto: str) -> str:
        # windows across lines have one length (the last one shorter): a batch's shape is fixed
        # already; whole lines (`eos`) are sized by --tokens-per-sample, not by a ladder
        if spec not in ("auto", "off"):
            raise DeclarationError(
                f"length buckets pad sentence pairs; a {self.title} trains on context windows "
                "of --tokens-per-sample tokens, whose batches take few shapes without them",
                key="--buckets",
                value=spec,
                valid=f"leave it out (auto: off for a {self.title}), off, or "
                f"--task {TRANSLATION.name}",
            )
        return "off"

    def windows(
        self, tokens_per_sample: int | None, break_mode: str | None
    ) -> tuple[int | None, str | None]:
        mode = break_mode or BREAK_MODE
        length = tokens_per_sample
        if length is None and mode == "none":  # across lines, a window needs a length
            length = TOKENS_PER_SAMPLE
        check_packing(length, mode)
        return length, mode

    def check_corpus(self, corpus: ParallelCorpus, data: str) -> None:
        return None  # text, or the target side of a parallel corpus: both are lines of text

    def depths(
        self, recipe: Recipe, encoder_layers: int | None, decoder_layers: int | None
    ) -> tuple[int | None, int | None]:
        # the depth goes to the side the model is built from; the other side is not built
        side = language_model_side(recipe)
        return (encoder_layers, None) if side == "encoder" else (None, encoder_layers)

    def check_recipe(self, recipe: Recipe, given: str) -> None:
        budget = recipe.param_budget
        if budget is None:
            return
        if model_class(recipe) is not LanguageModel or model_class(load_recipe(budget)) is not (
            LanguageModel
        ):
            raise DeclarationError(
                f"recipe '{recipe.name}' matches the parameter count of the encoder-decoder "
                f"'{budget}' (param_budget), which says nothing about a language model",
                key="RECIPE",
                value=given,
                valid=f"a recipe without param_budget for --task {self.name}, or a decoder-only "
                "recipe whose param_budget names a decoder-only recipe (models/lm-macaron.toml)",
            )


TRANSLATION = Translation()
LANGUAGE_MODEL = LanguageModeling()
TASKS: Mapping[str, Task] = MappingProxyType({t.name: t for t in (TRANSLATION, LANGUAGE_MODEL)})
_BY_MODEL: Mapping[type, Task] = MappingProxyType({t.model: t for t in TASKS.values()})


def task_named(name: object, key: str = "--task") -> Task:
    """The task called `name` (`translation`, `language_model`); an unknown one is a
    `DeclarationError` naming `key`."""
    found = TASKS.get(name) if isinstance(name, str) else None
    if found is None:
        raise DeclarationError(
            "unknown task", key=key, value=name, valid="one of " + ", ".join(TASKS)
        )
    return found


def task_of_recipe(recipe: Recipe) -> Task:
    """The task a recipe declares: translation with both sides, language modelling with one
    (`assemble.model_class`)."""
    return _BY_MODEL[model_class(recipe)]


def task_of_model(model: nn.Module) -> Task:
    """The task of a built model (`Seq2Seq` or `LanguageModel`, or a class derived from one:
    `fully_shard` swaps a module's class for a subclass)."""
    return next(_BY_MODEL[c] for c in type(model).__mro__ if c in _BY_MODEL)
