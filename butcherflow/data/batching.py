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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, final

import numpy as np
import torch
from torch import Tensor

from ..errors import DeclarationError
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

    def collate(self, indices: list[int]) -> Batch:
        """The samples at `indices`, padded into a `Batch`."""
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

    def collate(self, indices: list[int]) -> Batch:
        """Pad the pairs at `indices` into a `Batch`: `prev_output` starts with bos, `target`
        ends with eos, both padded to `T = max(len(tgt)) + 1`; `src` padded to
        `S = max(len(src))` (at least 1)."""
        if not indices:
            raise ValueError("collate: empty batch")
        src = [self.src[i] for i in indices]
        tgt = [self.tgt[i] for i in indices]
        prev_output = [[Vocabulary.bos, *t] for t in tgt]
        target = [[*t, Vocabulary.eos] for t in tgt]
        target_width = max(len(t) for t in target)
        return Batch(
            src=pad_rows(src, max(1, max(len(s) for s in src))),
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


def make_batches(
    split: Split, max_tokens: int, *, shuffle: bool, seed: int, epoch: int
) -> list[list[int]]:
    """Cut a split into length-bucketed batches within a token budget.

    **Arguments:**

    - `split`: the encoded pairs (or a language model's context windows).
    - `max_tokens`: the budget of padded positions per batch, `max(size) * len(batch)`.
    - `shuffle`: random tie-break and shuffled batch order (training) or sorted order (evaluation).
    - `seed`, `epoch`: the random stream is `numpy.random.default_rng((seed, epoch))`.

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
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches)).tolist()]
    return batches


def pad_rows(rows: Sequence[list[int]], width: int) -> Tensor:
    """`(len(rows), width)` long: the rows right-padded with `Vocabulary.pad`."""
    out = torch.full((len(rows), width), Vocabulary.pad, dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def collate(split: Split, indices: list[int]) -> Batch:
    """Pad the samples at `indices` into a `Batch` (shapes in `Batch`'s docstring; each split
    pads its own kind: `EncodedSplit.collate`, `TokenBlocks.collate`)."""
    return split.collate(indices)
