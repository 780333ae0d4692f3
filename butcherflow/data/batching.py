"""Token-budget batching, as fairseq does it.

A pair's size is `max(len(src), len(tgt) + 1)`: the source as encoded (no bos/eos) and the
target with one extra position (bos in `prev_output`, eos in `target`). `make_batches` sorts the
pairs by `(src_len, tgt_len)`, breaking ties at random (seeded), and cuts the sorted list greedily
into batches whose padded size `max(size) * len(batch)` stays within `max_tokens`; with `shuffle`
the order of the batches is then shuffled. Both random steps use
`numpy.random.default_rng((seed, epoch))`, so an epoch's batches are a pure function of
`(seed, epoch)` (what a resumed run relies on). Without `shuffle` the order is fully sorted (ties by
index), for validation and test. A language model's context windows (`packing.TokenBlocks`)
are batched alike, a window's size being its length.

With `widths` (each sample's bucket width, `LengthBuckets.fit`), batches are cut per width instead
(`buckets.bucketed_batches`: `max_tokens // width` samples each, both sides padded to the width by
`collate`), so a split yields a few fixed shapes (`batch_shapes` counts them). Whether a run's
batches take buckets is its task's call (`tasks.Task.buckets`: sentence pairs do, a language
model's fixed-length windows do not).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, final

import numpy as np
import torch
from torch import Tensor

from ..errors import DeclarationError
from .buckets import LengthBuckets, bucketed_batches
from .vocab import Vocabulary


@final
@dataclass(frozen=True)
class Batch:
    """One padded batch of sentence pairs.

    **Arguments:**

    - `src`: `(B, S)` long, the source ids right-padded with `pad` (no bos/eos).
    - `prev_output`: `(B, T)` long, `[bos, y1 .. yn]` right-padded (the decoder input).
    - `target`: `(B, T)` long, `[y1 .. yn, eos]` right-padded (what the decoder predicts).
    - `ntokens`: the number of non-pad target tokens (fairseq's count).
    - `indices`: `(B,)` long, the positions of the pairs in their split.
    """

    src: Tensor
    prev_output: Tensor
    target: Tensor
    ntokens: int
    indices: Tensor

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on `device`."""
        return Batch(
            src=self.src.to(device),
            prev_output=self.prev_output.to(device),
            target=self.target.to(device),
            ntokens=self.ntokens,
            indices=self.indices.to(device),
        )

    def __len__(self) -> int:
        return int(self.src.shape[0])


class Split(Protocol):
    """What `make_batches` and `collate` take: a split of samples that knows its sizes and pads
    its own batches (`EncodedSplit`: sentence pairs; `packing.TokenBlocks`: context windows)."""

    def __len__(self) -> int: ...

    def sizes(self) -> np.ndarray:
        """`(N,)` int64: each sample's padded size, what the token budget counts."""
        ...

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """`(source lengths, target lengths)`, the sort keys of the batches."""
        ...

    def padded_widths(self, indices: Sequence[int]) -> tuple[int, int]:
        """`(source width, target width)` that `collate` pads the samples at `indices` to
        without a bucket width."""
        ...

    def collate(self, indices: list[int], width: int | None = None) -> Batch:
        """The samples at `indices`, padded into a `Batch` (with `width`: both sides padded to
        it, a bucket's width, at least the samples' sizes)."""
        ...

    @property
    def text_bytes(self) -> int | None:
        """UTF-8 bytes of the text the targets cover (for bits per byte), or None."""
        ...


@final
@dataclass(frozen=True)
class EncodedSplit:
    """The token ids of one split (no bos/eos; `collate` adds them to the target).

    **Arguments:**

    - `src`: one id list per pair, the source side.
    - `tgt`: one id list per pair, the target side.
    """

    src: list[list[int]]
    tgt: list[list[int]]

    def __post_init__(self) -> None:
        if len(self.src) != len(self.tgt):
            raise ValueError(f"EncodedSplit: {len(self.src)} sources but {len(self.tgt)} targets")

    def __len__(self) -> int:
        return len(self.src)

    def sizes(self) -> np.ndarray:
        """`(N,)` int64: each pair's padded size `max(len(src), len(tgt) + 1)`."""
        src = np.fromiter((len(s) for s in self.src), dtype=np.int64, count=len(self))
        tgt = np.fromiter((len(t) + 1 for t in self.tgt), dtype=np.int64, count=len(self))
        return np.maximum(src, tgt)

    @property
    def text_bytes(self) -> int | None:
        """None: bits per byte is a language model's measure (`packing.TokenBlocks`)."""
        return None

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """`(source lengths, target lengths)` of the pairs (no bos/eos)."""
        src = np.fromiter((len(s) for s in self.src), dtype=np.int64, count=len(self))
        tgt = np.fromiter((len(t) for t in self.tgt), dtype=np.int64, count=len(self))
        return src, tgt

    def padded_widths(self, indices: Sequence[int]) -> tuple[int, int]:
        """`(S, T)` of the pairs at `indices`: `S = max(len(src))` (at least 1),
        `T = max(len(tgt)) + 1`."""
        source = max(1, max(len(self.src[i]) for i in indices))
        return source, max(len(self.tgt[i]) for i in indices) + 1

    def collate(self, indices: list[int], width: int | None = None) -> Batch:
        """Pad the pairs at `indices` into a `Batch`: `prev_output` starts with bos, `target`
        ends with eos, both padded to `T`; `src` padded to `S` (`padded_widths`); with `width`
        (a bucket's), both sides padded to it instead."""
        if not indices:
            raise ValueError("collate: empty batch")
        src = [self.src[i] for i in indices]
        tgt = [self.tgt[i] for i in indices]
        prev_output = [[Vocabulary.bos, *t] for t in tgt]
        target = [[*t, Vocabulary.eos] for t in tgt]
        if width is None:
            source_width, target_width = self.padded_widths(indices)
        else:
            source_width = target_width = width
        return Batch(
            src=pad_rows(src, source_width),
            prev_output=pad_rows(prev_output, target_width),
            target=pad_rows(target, target_width),
            ntokens=sum(len(t) for t in target),
            indices=torch.tensor(indices, dtype=torch.long),
        )


def encode_split(
    pairs: list[tuple[str, str]], vocab: Vocabulary, max_positions: int | None = None
) -> EncodedSplit:
    """Encode sentence pairs with `vocab`.

    **Arguments:**

    - `pairs`: `(source, target)` sentences.
    - `vocab`: the joint vocabulary.
    - `max_positions`: if given, sources are cut to `max_positions` ids and targets to
      `max_positions - 1` (the target gains bos/eos), so every pair fits a model with that many
      positions.

    **Returns:**

    The `EncodedSplit`, in the order of `pairs`.
    """
    if max_positions is not None and max_positions < 2:
        raise DeclarationError("must be at least 2", key="max_positions", value=max_positions)
    src = [vocab.encode(s) for s, _ in pairs]
    tgt = [vocab.encode(t) for _, t in pairs]
    if max_positions is not None:
        src = [ids[:max_positions] for ids in src]
        tgt = [ids[: max_positions - 1] for ids in tgt]
    return EncodedSplit(src, tgt)


def fit_buckets(split: Split, spec: str) -> np.ndarray | None:
    """Each sample's width under the bucket ladder `spec` (`LengthBuckets.parse`), or None for
    `off`: what `make_batches` and `collate` take as `widths`."""
    buckets = LengthBuckets.parse(spec)
    return None if buckets is None else buckets.fit(split.sizes())


def make_batches(
    split: Split,
    max_tokens: int,
    *,
    shuffle: bool,
    seed: int,
    epoch: int,
    widths: np.ndarray | None = None,
) -> list[list[int]]:
    """Cut a split into length-sorted batches within a token budget.

    **Arguments:**

    - `split`: the encoded pairs (or a language model's context windows).
    - `max_tokens`: the budget of padded positions per batch, `max(size) * len(batch)` (with
      `widths`: `width * len(batch)`).
    - `shuffle`: random tie-break and shuffled batch order (training) or sorted order (evaluation).
    - `seed`, `epoch`: the random stream is `numpy.random.default_rng((seed, epoch))`.
    - `widths`: each sample's bucket width (`LengthBuckets.fit`), or None: no buckets.

    **Returns:**

    Lists of indices into `split`; each index appears exactly once. A `DeclarationError` naming
    `--max-tokens` if a single pair does not fit the budget.
    """
    if max_tokens < 1:
        raise DeclarationError("must be positive", key="--max-tokens", value=max_tokens)
    if len(split) == 0:
        return []
    sizes = split.sizes()
    largest = int(sizes.argmax())
    if sizes[largest] > max_tokens:
        raise DeclarationError(
            f"sample {largest} needs {int(sizes[largest])} positions (a pair: the max of its "
            "source length and target length + 1; a context window: its length), more than "
            "the token budget",
            key="--max-tokens",
            value=max_tokens,
            valid=f"--max-tokens >= {int(sizes[largest])}, or a smaller max_positions "
            "(--tokens-per-sample for a language model)",
        )
    src_len, tgt_len = split.lengths()
    rng = np.random.default_rng((seed, epoch))
    tie = rng.permutation(len(split)) if shuffle else np.arange(len(split))
    order = np.lexsort((tie, tgt_len, src_len))  # the last key is the primary one
    if widths is not None:
        batches = bucketed_batches(widths, order, max_tokens, rng if shuffle else None)
    else:
        batches = _sorted_batches(order, sizes, max_tokens)
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches)).tolist()]
    return batches


def _sorted_batches(order: np.ndarray, sizes: np.ndarray, max_tokens: int) -> list[list[int]]:
    """The samples in `order`, cut greedily where the next one would overrun the budget."""
    batches: list[list[int]] = []
    current: list[int] = []
    width = 0
    for index in order.tolist():
        size = int(sizes[index])
        if current and max(width, size) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, width = [], 0
        current.append(index)
        width = max(width, size)
    batches.append(current)
    return batches


def batch_shapes(
    split: Split, batches: Sequence[list[int]], widths: np.ndarray | None = None
) -> set[tuple[int, int, int]]:
    """The distinct `(rows, source width, target width)` shapes `collate` gives `batches`."""
    if widths is not None:
        return {(len(b), w, w) for b in batches for w in [int(widths[b].max())]}
    return {(len(b), *split.padded_widths(b)) for b in batches}


def pad_rows(rows: Sequence[list[int]], width: int) -> Tensor:
    """`(len(rows), width)` long: the rows right-padded with `Vocabulary.pad`."""
    out = torch.full((len(rows), width), Vocabulary.pad, dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def collate(split: Split, indices: list[int], widths: np.ndarray | None = None) -> Batch:
    """Pad the samples at `indices` into a `Batch` (shapes in `Batch`'s docstring; each split
    pads its own kind: `EncodedSplit.collate`, `TokenBlocks.collate`).

    **Arguments:**

    - `split`: the encoded pairs (or a language model's context windows).
    - `indices`: which samples, in batch order.
    - `widths`: each sample's bucket width (`LengthBuckets.fit`), or None: no buckets. With
      `widths`, both sides are padded to the largest width of the batch's samples.
    """
    width = None if widths is None else int(widths[indices].max())
    return split.collate(indices, width)
