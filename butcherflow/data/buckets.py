"""Length buckets: batches padded to a few fixed widths, so that a run meets few batch shapes.

Every new batch shape costs a GPU something once: `torch.compile` traces and specialises its
graphs on shapes, and PyTorch's cuDNN attention builds an execution plan per (batch, length)
shape, a few hundred milliseconds each. Sorted token-budget batches (`make_batches` without
buckets) give almost every batch its own shape; with buckets, both sides of a batch are padded to
one width of a ladder and a full batch holds `max_tokens // width` pairs, so a split yields about
as many shapes as the ladder has widths in use (plus one last partial batch).

A ladder is a spec (`--buckets`): a ratio such as `1.25` (a geometric ladder: 8 · ratio^k for
k = 0, 1, ..., rounded up to multiples of 8; 1.25 gives 8, 16, 24, 32, 40, 48, 64, 80, 96, 120,
...), an explicit list of increasing widths (`16,32,64,128`), or `off`. A pair goes to the
smallest width that holds its size (`max(len(src), len(tgt) + 1)`, as `EncodedSplit.sizes`
counts it), never above the longest pair of its split, so no batch is wider than the split's
longest pair already made it (learned positions and `max_tokens` hold as before). Padding is
masked like any other: the loss skips pad targets, attention masks pad keys (and causal
attention never reads the decoder's pads, which follow every real token), so a bucketed batch
computes the same losses as an unbucketed one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import final

import numpy as np

from ..errors import DeclarationError

MULTIPLE = 8  # widths in multiples of 8: what tensor cores and vectorised kernels tile by
# the ladder `--buckets auto` means where shapes matter (a CUDA device): 10 widths up to the
# Bible's longest pair (113 positions); measured in docs/benchmarks.md ("Length buckets")
DEFAULT_RATIO = "1.25"
_TOP = 1 << 20  # a geometric ladder is listed up to here (no pair is longer)
SPECS = "off, a ratio > 1 such as 1.25 (a geometric ladder), or increasing widths such as 16,32,64"


@final
@dataclass(frozen=True)
class LengthBuckets:
    """A ladder of batch widths (module docstring).

    **Arguments:**

    - `spec`: the ladder as written (`"1.25"`, `"16,32,64"`), shown in what a run prints.
    - `widths`: the widths, increasing and positive.
    """

    spec: str
    widths: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.widths or min(self.widths) < 1 or list(self.widths) != sorted(set(self.widths)):
            raise DeclarationError(
                "bucket widths must be positive and increasing",
                key="--buckets",
                value=self.spec,
                valid=SPECS,
            )

    @classmethod
    def parse(cls, spec: str) -> LengthBuckets | None:
        """The ladder `spec` names, or None for `off`; a `DeclarationError` naming `--buckets`
        for anything else."""
        text = str(spec).strip().lower()
        if text == "off":
            return None
        parts = text.split(",")
        try:
            if len(parts) == 1 and "." in text:  # a ratio is written with a decimal point
                ratio = float(text)
                if math.isfinite(ratio) and ratio > 1:
                    return cls(text, _geometric(ratio))
            else:
                return cls(text, tuple(int(part) for part in parts))
        except ValueError:
            pass
        raise DeclarationError("not a bucket ladder", key="--buckets", value=spec, valid=SPECS)

    def fit(self, sizes: np.ndarray) -> np.ndarray:
        """Each pair's width: the smallest width that holds its size, at most the longest size.

        **Arguments:**

        - `sizes`: `(N,)` the pairs' sizes (`EncodedSplit.sizes`).

        **Returns:** `(N,)` int64 widths; a `DeclarationError` naming `--buckets` when an explicit
        ladder ends below the longest pair.
        """
        if len(sizes) == 0:
            return np.zeros(0, dtype=np.int64)
        ladder = np.asarray(self.widths, dtype=np.int64)
        longest = int(sizes.max())
        if longest > ladder[-1]:
            raise DeclarationError(
                f"pair {int(sizes.argmax())} needs {longest} positions (max of source length and "
                f"target length + 1), more than the widest bucket ({int(ladder[-1])})",
                key="--buckets",
                value=self.spec,
                valid=f"a ladder that reaches {longest}, a ratio such as {DEFAULT_RATIO}, or off",
            )
        return np.minimum(ladder[np.searchsorted(ladder, sizes)], longest)


def _geometric(ratio: float) -> tuple[int, ...]:
    """8 · ratio^k for k = 0, 1, ..., each rounded up to a multiple of 8, without repeats."""
    widths: list[int] = []
    k = 0
    while not widths or widths[-1] < _TOP:
        width = math.ceil(MULTIPLE * ratio**k / MULTIPLE - 1e-9) * MULTIPLE
        if not widths or width > widths[-1]:
            widths.append(width)
        k += 1
    return tuple(widths)


def bucketed_batches(
    widths: np.ndarray,
    order: np.ndarray,
    max_tokens: int,
    rng: np.random.Generator | None,
) -> list[list[int]]:
    """Cut pairs into batches of `max_tokens // width` pairs of one width each.

    The widths are taken from the narrowest: a width's pairs (in `order`, shuffled by `rng` when
    given) fill as many full batches as they can, each led by one pair of that width; what does
    not fill a batch joins the next width up (padded further), so a width has at most one partial
    batch, the very last one. A batch of width w thus always holds a pair whose own width is w,
    and `collate` pads it to w from the pairs' widths alone.

    **Arguments:**

    - `widths`: `(N,)` each pair's width (`LengthBuckets.fit`), none above `max_tokens`.
    - `order`: the pairs' indices in the order to take them (sorted, for evaluation).
    - `max_tokens`: the budget of padded positions per side, `width * len(batch)`.
    - `rng`: shuffles the pairs of each width (training), or None (the order as given).

    **Returns:** lists of indices; each index appears exactly once.
    """
    batches: list[list[int]] = []
    carried = np.zeros(0, dtype=np.int64)
    rows = 1
    for width in np.unique(widths).tolist():
        own = order[widths[order] == width]
        if rng is not None:
            own = rng.permutation(own)
        rows = max_tokens // width
        count = min((len(own) + len(carried)) // rows, len(own))
        rest = np.concatenate([carried, own[count:]])
        if rng is not None:
            rest = rng.permutation(rest)
        for i in range(count):  # one pair of this width first, then the rest in turn
            batches.append([int(own[i]), *rest[i * (rows - 1) : (i + 1) * (rows - 1)].tolist()])
        carried = rest[count * (rows - 1) :]
    for start in range(0, len(carried), rows):  # the widest width's remainder
        batches.append(carried[start : start + rows].tolist())
    return batches


__all__ = ["DEFAULT_RATIO", "MULTIPLE", "LengthBuckets", "bucketed_batches"]
