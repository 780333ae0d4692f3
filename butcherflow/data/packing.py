"""A language model's data: lines of text as fixed-length context windows (fairseq's
`TokenBlockDataset`, nanoGPT's contiguous blocks).

Each line of text contributes its subword ids twice, shifted by one: as the model reads it,
`[bos, y1 .. yn]`, and as it predicts it, `[y1 .. yn, eos]` (eos stands for the line's end). The
lines of a split, in order, make two aligned streams, which `--sample-break-mode` cuts:

- `none` (the default for a language model): the streams are cut every `tokens_per_sample`
  positions, across lines, so that a window sees the lines before it and no position is padding
  but the end of the last window (a window's first input is then the bos of a line or a
  subword in mid-line; every target is predicted once, in the context its window gives it);
- `eos`: a window never crosses a line's end: every line is one sample (fairseq's `eos`), cut
  into windows of `tokens_per_sample` only if it is longer; short lines are padded in their batch.

Either way a token is predicted from the same input it would get in a line-by-line model (bos
before the first subword of a line), so perplexity is comparable across break modes and window
lengths, and every target token of the split (eos included) is counted once. `text_bytes` is the
size in UTF-8 of the text the windows cover, a newline per line included (the eos it predicts),
for bits per byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

import numpy as np
import torch

from ..errors import DeclarationError, count_problem
from .batching import Batch, Split, pad_rows
from .vocab import Vocabulary

BREAK_MODES = ("none", "eos")


@final
@dataclass(frozen=True)
class TokenBlocks:
    """A split as context windows (see the module docstring).

    **Arguments:**

    - `inputs`: one id list per window, what the model reads.
    - `targets`: one id list per window, the same length, what it predicts.
    - `text_bytes`: UTF-8 bytes of the text the windows cover (a newline per line included).
    - `lines`: how many lines of text they cover.
    """

    inputs: list[list[int]]
    targets: list[list[int]]
    text_bytes: int
    lines: int

    def __post_init__(self) -> None:
        if len(self.inputs) != len(self.targets):
            raise ValueError(f"TokenBlocks: {len(self.inputs)} inputs, {len(self.targets)} targets")

    def __len__(self) -> int:
        return len(self.targets)

    def sizes(self) -> np.ndarray:
        """`(N,)` int64: each window's length (its padded size in a batch)."""
        return np.fromiter(map(len, self.targets), dtype=np.int64, count=len(self))

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """The sort keys of `make_batches`: no source, the window's target length."""
        return np.zeros(len(self), dtype=np.int64), self.sizes()

    def padded_widths(self, indices: Sequence[int]) -> tuple[int, int]:
        """`(1, the longest window at indices)`: one pad column of source, the targets' width."""
        return 1, max(len(self.targets[i]) for i in indices)

    def collate(self, indices: list[int], width: int | None = None) -> Batch:
        """The windows at `indices` as a `Batch`: `prev_output` the inputs, `target` the
        targets, right-padded to the longest (or to `width`); `src` one pad column (a language
        model reads none)."""
        if not indices:
            raise ValueError("collate: empty batch")
        targets = [self.targets[i] for i in indices]
        width = width if width is not None else self.padded_widths(indices)[1]
        return Batch(
            src=pad_rows([[] for _ in indices], 1),
            prev_output=pad_rows([self.inputs[i] for i in indices], width),
            target=pad_rows(targets, width),
            ntokens=sum(map(len, targets)),
            indices=torch.tensor(indices, dtype=torch.long),
        )


def pack_lines(
    lines: Sequence[str],
    vocab: Vocabulary,
    tokens_per_sample: int | None,
    break_mode: str,
) -> TokenBlocks:
    """Cut lines of text into context windows (see the module docstring).

    **Arguments:**

    - `lines`: the text, one line per entry, in order.
    - `vocab`: the vocabulary that encodes them.
    - `tokens_per_sample`: the window length (fairseq's `--tokens-per-sample`); None with break
      mode `eos` keeps every line whole, however long.
    - `break_mode`: `"none"` (windows across lines) or `"eos"` (a window within a line).

    **Returns:** the `TokenBlocks`.
    """
    check_packing(tokens_per_sample, break_mode)
    encoded = [vocab.encode(line) for line in lines]
    text_bytes = sum(len(line.encode("utf-8")) + 1 for line in lines)
    if break_mode == "none":
        assert tokens_per_sample is not None
        reads = [token for ids in encoded for token in (Vocabulary.bos, *ids)]
        says = [token for ids in encoded for token in (*ids, Vocabulary.eos)]
        inputs, targets = _cut(reads, tokens_per_sample), _cut(says, tokens_per_sample)
    else:
        inputs, targets = [], []
        for ids in encoded:
            width = tokens_per_sample or len(ids) + 1
            inputs += _cut([Vocabulary.bos, *ids], width)
            targets += _cut([*ids, Vocabulary.eos], width)
    return TokenBlocks(inputs, targets, text_bytes, len(lines))


def describe_windows(count: int, tokens_per_sample: int | None, break_mode: str) -> str:
    """`count` windows in words: `"1,234 context windows of 512 tokens across lines"`."""
    plural = "" if count == 1 else "s"
    if break_mode == "none":
        return f"{count:,} context window{plural} of {tokens_per_sample} tokens across lines"
    cut = f" (longer lines cut every {tokens_per_sample} tokens)" if tokens_per_sample else ""
    return f"{count:,} sample{plural} of one line each{cut}"


def _cut(stream: list[int], width: int) -> list[list[int]]:
    return [stream[i : i + width] for i in range(0, len(stream), width)]


def check_packing(tokens_per_sample: int | None, break_mode: str) -> None:
    """A window length and break mode that `pack_lines` takes (errors name the flags)."""
    if break_mode not in BREAK_MODES:
        raise DeclarationError(
            "unknown break mode",
            key="--sample-break-mode",
            value=break_mode,
            valid="none (windows across lines) or eos (a window never crosses a line's end)",
        )
    if tokens_per_sample is None and break_mode == "none":
        raise DeclarationError(
            "windows across lines need a length",
            key="--tokens-per-sample",
            value=None,
            valid="an integer >= 1, or --sample-break-mode eos (whole lines)",
        )
    if tokens_per_sample is not None and (
        isinstance(tokens_per_sample, bool)
        or not isinstance(tokens_per_sample, int)
        or tokens_per_sample < 1
    ):
        raise DeclarationError(
            count_problem(tokens_per_sample),
            key="--tokens-per-sample",
            value=tokens_per_sample,
            valid="an integer >= 1 (positions per context window)",
        )


def padding_fraction(
    split: Split, batches: Sequence[list[int]], widths: np.ndarray | None = None
) -> float:
    """The share of a batches' positions that are padding: `1 - target tokens / (rows × width)`
    summed over `batches` (what `collate` pads; the source column of a language model is not
    counted).

    **Arguments:**

    - `split`: an `EncodedSplit` or `TokenBlocks`.
    - `batches`: lists of indices into it (`make_batches`).
    - `widths`: each sample's bucket width (`LengthBuckets.fit`), or None: no buckets.

    **Returns:** a number in [0, 1); 0 for no batch.
    """
    sizes = split.sizes()
    padded = sizes if widths is None else widths
    positions = sum(int(padded[b].max()) * len(b) for b in batches if b)
    used = sum(int(sizes[b].sum()) for b in batches if b)
    return 0.0 if positions == 0 else 1.0 - used / positions
