"""The subword vocabulary: one joint sentencepiece BPE model over both sides of the training split.

Special ids are fixed: pad 0, unk 1, bos 2, eos 3. `build_vocabulary` caches the model under
`cache_dir/spm-<fingerprint[:16]>-<size>.model` (written atomically) and reuses it while the corpus
is unchanged. A vocabulary size the data cannot fill is an error that says the largest size that
works (rather than silently training a smaller vocabulary, so `--vocab-size` is always the size
actually used). Text is not Unicode-normalized, so `decode(encode(text)) == text` for text made
of characters seen in training (up to runs of spaces).
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar, final

import sentencepiece as spm

from ..errors import DeclarationError
from .corpus import ParallelCorpus

# Scripts with thousands of characters: the rarest 0.05% of characters get no piece of their own
# (sentencepiece's advice) and are spelled as UTF-8 bytes (byte fallback) rather than unk.
LARGE_CHARSET_LANGUAGES = frozenset({"zh", "ja"})
_TOO_HIGH = re.compile(r"Vocabulary size too high \((\d+)\)\. Please set it to a value <= (\d+)")
_TOO_SMALL = re.compile(r"Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)")


@final
class Vocabulary:
    """A joint sentencepiece model with butcherflow's fixed special ids.

    **Arguments:**

    - `path`: the `.model` file.
    """

    pad: ClassVar[int] = 0
    unk: ClassVar[int] = 1
    bos: ClassVar[int] = 2
    eos: ClassVar[int] = 3

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        processor = spm.SentencePieceProcessor()
        try:
            processor.load(str(self.path))
        except (OSError, RuntimeError) as error:
            raise DeclarationError(
                f"cannot load the sentencepiece model ({error})",
                valid="a .model file written by sentencepiece",
                source=self.path,
            ) from None
        ids = (processor.pad_id(), processor.unk_id(), processor.bos_id(), processor.eos_id())
        if ids != (self.pad, self.unk, self.bos, self.eos):
            raise DeclarationError(
                "the sentencepiece model's special ids are not pad=0, unk=1, bos=2, eos=3",
                value=ids,
                valid="a model trained by butcherflow.data.build_vocabulary",
                source=self.path,
            )
        self._processor = processor
        self._special = frozenset({self.pad, self.bos, self.eos})

    @classmethod
    def load(cls, path: Path) -> Vocabulary:
        """The vocabulary stored in `path` (a sentencepiece `.model` file)."""
        return cls(path)

    def __len__(self) -> int:
        return int(self._processor.get_piece_size())

    def __repr__(self) -> str:
        return f"Vocabulary({str(self.path)!r}, size={len(self)})"

    def encode(self, text: str) -> list[int]:
        """The subword ids of `text`, without bos/eos."""
        ids: list[int] = self._processor.encode(text, out_type=int)
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        """The detokenized text of `ids`; pad, bos and eos are dropped."""
        kept = [int(i) for i in ids if int(i) not in self._special]
        text: str = self._processor.decode(kept)
        return text

    def unknown(self, ids: Sequence[int]) -> int:
        """How many of `ids` stand for text the vocabulary never saw: the unknown piece, and
        the UTF-8 bytes that byte fallback spells an unseen character with."""
        p = self._processor
        return sum(1 for i in ids if p.is_unknown(int(i)) or p.is_byte(int(i)))

    def pieces(self, text: str) -> list[str]:
        """The subword pieces of `text` (for display)."""
        pieces: list[str] = self._processor.encode(text, out_type=str)
        return pieces


def default_cache_dir() -> Path:
    """Where vocabularies are cached: `$BUTCHERFLOW_CACHE`, else `~/.cache/butcherflow`."""
    return Path(os.environ.get("BUTCHERFLOW_CACHE") or Path.home() / ".cache" / "butcherflow")


def vocabulary_path(corpus: ParallelCorpus, size: int, cache_dir: Path) -> Path:
    """Where `build_vocabulary` caches the model for (corpus, size)."""
    return Path(cache_dir) / f"spm-{corpus.fingerprint[:16]}-{size}.model"


def _sentences(corpus: ParallelCorpus) -> Iterator[str]:
    for source, target in corpus.train:
        if source:  # monolingual text has none
            yield source
        yield target


def _train(corpus: ParallelCorpus, size: int) -> bytes:
    languages = {corpus.source_lang, corpus.target_lang} - {""}
    large = bool(languages & LARGE_CHARSET_LANGUAGES)
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=_sentences(corpus),
            model_writer=model,
            model_type="bpe",
            vocab_size=size,
            character_coverage=0.9995 if large else 1.0,
            byte_fallback=large,
            # No NFKC: detokenized output must keep the references' characters (NFKC would
            # turn the Chinese comma "，" into ",", costing BLEU against raw references).
            normalization_rule_name="identity",
            pad_id=Vocabulary.pad,
            unk_id=Vocabulary.unk,
            bos_id=Vocabulary.bos,
            eos_id=Vocabulary.eos,
            input_sentence_size=2_000_000,
            shuffle_input_sentence=True,
            num_threads=max(1, min(8, os.cpu_count() or 1)),
            minloglevel=2,
        )
    except RuntimeError as error:
        message = str(error)
        if match := _TOO_HIGH.search(message):
            raise DeclarationError(
                f"vocabulary size too large for the training data of {corpus.name}",
                key="--vocab-size",
                value=size,
                valid=f"use a smaller --vocab-size, at most {match[2]}",
            ) from None
        if match := _TOO_SMALL.search(message):
            raise DeclarationError(
                f"vocabulary size smaller than the {match[2]} characters and special tokens of "
                f"the training data of {corpus.name}",
                key="--vocab-size",
                value=size,
                valid=f"use --vocab-size >= {match[2]}",
            ) from None
        raise
    return model.getvalue()


def build_vocabulary(corpus: ParallelCorpus, size: int, cache_dir: Path) -> Vocabulary:
    """Train (or reuse) the joint BPE model of `corpus.train`.

    **Arguments:**

    - `corpus`: the corpus; both sides of its training split are the training text.
    - `size`: the vocabulary size, special tokens included.
    - `cache_dir`: where models are cached, keyed by `(corpus.fingerprint, size)`.

    **Returns:**

    The `Vocabulary`; a `DeclarationError` naming `--vocab-size` if the data cannot fill `size`.
    """
    if size < 8:
        raise DeclarationError("must be at least 8", key="--vocab-size", value=size)
    path = vocabulary_path(corpus, size, cache_dir)
    if path.is_file():
        return Vocabulary(path)
    data = _train(corpus, size)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return Vocabulary(path)
