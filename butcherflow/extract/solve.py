"""Least squares in float64: the stage inputs and the output as linear combinations of the state's
streams and the field values, per token.

For every token t, over the channels of the runs, stage i's input is Yᵢ = Σⱼ Uᵢⱼ xⱼ + Σₗ Aᵢₗ Kₗ
and output stream m is Σⱼ Vₘⱼ xⱼ + Σᵢ Bₘᵢ Kᵢ (x the r streams of the state, K the random field
values). The residual decides whether the module is such a combination at all; the coefficients
are then read as exact small-denominator rationals where they are within `EXACT_TOLERANCE`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import final

import numpy as np
import torch
from torch import Tensor

from .probe import Run
from .streams import Streams, tokens

RESIDUAL_TOLERANCE = 1e-9  # relative residual of a linear combination, float64 fit
# A coefficient c is read as the rational p/q when |c − p/q| ≤ ε = EXACT_TOLERANCE·max(1, |c|,
# the largest coefficient of its combination) and q ≤ min(MAX_DENOMINATOR, √(FALSE_EXACT / ε)).
# The fit is accurate to ~1e-15 of that scale (float64, ≥ 8 equations per unknown; 35-stage
# Feagin-14 reaches ~4e-14), 10 to 100 times below ε. Fractions with q ≤ Q are ~1/Q² apart,
# so a coefficient that is not such a rational falls within ε of one with probability about
# Q²ε ≤ FALSE_EXACT: published rationals up to q = 10⁴ (Dormand-Prince's 2187/6784) are found
# for |c| ≤ 1, smaller denominators for larger coefficients.
EXACT_TOLERANCE = 1e-13
MAX_DENOMINATOR = 10_000
FALSE_EXACT = 1e-5
FIXED_TOLERANCE = 1e-9  # spread across tokens under which a coefficient is one number


@final
@dataclass(frozen=True)
class Fit:
    """Per-token coefficients of one set of runs.

    - `U` `(T, s, r)`, `A` `(T, s, s)` (strictly lower), `B` `(T, r, s)`, `V` `(T, r, r)`.
    - `residual`: per target (s stages then r output streams), the largest relative residual
      over the tokens.
    - `labels`: the field of each call.
    - `determined`: per token, whether the state's streams and the field values were linearly
      independent there (a zero state, as a padding token's embedding, leaves the state's
      coefficients undetermined: `filled` takes them from another fit).
    """

    U: np.ndarray
    A: np.ndarray
    B: np.ndarray
    V: np.ndarray
    residual: np.ndarray
    labels: tuple[str, ...]
    determined: np.ndarray  # (T,) bool: the design had full rank at the token

    @property
    def stages(self) -> int:
        return self.A.shape[1]

    @property
    def streams(self) -> int:
        return self.V.shape[1]

    def broken(self) -> int | None:
        """The first target (stage index, or `stages` + m for output stream m) that is not a
        linear combination, or None."""
        bad = np.nonzero(self.residual > RESIDUAL_TOLERANCE)[0]
        return int(bad[0]) if len(bad) else None

    def spread(self) -> float:
        """The largest difference of a coefficient between two tokens (relative to max(1, |c|))."""
        worst = 0.0
        for m in (self.U, self.A, self.B, self.V):
            if m.size:
                scale = np.maximum(1.0, np.abs(m).max(axis=0))
                worst = max(worst, float((np.ptp(m, axis=0) / scale).max()))
        return worst

    def same_as(self, other: Fit) -> bool:
        """Equal coefficients at every token, within `FIXED_TOLERANCE`."""
        both = self.determined & other.determined
        mine, theirs = (self.U, self.A, self.B, self.V), (other.U, other.A, other.B, other.V)
        return all(
            a.shape == b.shape
            and np.allclose(a[both], b[both], rtol=FIXED_TOLERANCE, atol=FIXED_TOLERANCE)
            for a, b in zip(mine, theirs, strict=True)
        )

    def filled(self, other: Fit) -> Fit:
        """This fit with its undetermined tokens taken from `other` (a fit from random states,
        for coefficients that do not depend on the state)."""
        keep = self.determined[:, None, None]
        return dataclasses.replace(
            self,
            U=np.where(keep, self.U, other.U),
            A=np.where(keep, self.A, other.A),
            B=np.where(keep, self.B, other.B),
            V=np.where(keep, self.V, other.V),
            determined=self.determined | other.determined,
        )


def fit(runs: Sequence[Run], states: Sequence[Tensor], streams: Streams) -> Fit:
    """Solve the combination per token over all runs (same calls in each).

    **Arguments:**

    - `runs`: probe runs, each with its random field values.
    - `states`: the state each run started from.
    - `streams`: where the state holds its r streams (`streams.py`; None: one stream).

    **Returns:** the `Fit` (minimum-norm coefficients where a token's design is singular,
    marked in `determined`).
    """
    columns, targets = [], []
    for run, state in zip(runs, states, strict=True):
        x = tokens(state, streams)  # (T, r, d)
        ks = [k.reshape(x.shape[0], -1) for k in run.values]  # (T, d) each
        ys = [y.reshape(x.shape[0], -1) for y in run.stage_inputs]
        out = tokens(run.output, streams)
        columns.append(torch.stack([*x.unbind(1), *ks], dim=-1))  # (T, d, r + s)
        targets.append(torch.stack([*ys, *out.unbind(1)], dim=-1))  # (T, d, s + r)
    X, Z = torch.cat(columns, dim=1), torch.cat(targets, dim=1)
    r, s = int(tokens(states[0], streams).shape[1]), len(runs[0].values)
    determined = (torch.linalg.matrix_rank(X) == r + s).numpy()
    solution = torch.linalg.lstsq(X, Z, driver="gelsd").solution  # (T, r + s, s + r)
    residual = torch.linalg.vector_norm(X @ solution - Z, dim=1)
    scale = torch.linalg.vector_norm(Z, dim=1).clamp_min(1e-300)
    c = solution.numpy()
    A = np.swapaxes(c[:, r:, :s], 1, 2).copy()
    A[:, np.triu_indices(s)[0], np.triu_indices(s)[1]] = 0.0  # a stage reads earlier calls only
    return Fit(
        U=np.swapaxes(c[:, :r, :s], 1, 2),
        A=A,
        B=np.swapaxes(c[:, r:, s:], 1, 2),
        V=np.swapaxes(c[:, :r, s:], 1, 2),
        residual=(residual / scale).max(dim=0).values.numpy(),
        labels=tuple(runs[0].labels),
        determined=determined,
    )


def recognise(x: float, scale: float = 1.0) -> Fraction | float:
    """`x` as a rational p/q within the module's tolerance (see `EXACT_TOLERANCE`; `scale`: the
    largest coefficient of the combination `x` belongs to), else `x`."""
    tolerance = EXACT_TOLERANCE * max(1.0, abs(x), scale)
    largest = min(MAX_DENOMINATOR, int(math.sqrt(FALSE_EXACT / tolerance)))
    guess = Fraction(x).limit_denominator(largest)
    return guess if abs(float(guess) - x) <= tolerance else float(x)


def entries(m: np.ndarray) -> list[list[Fraction | float]]:
    """A matrix's entries, each recognised at the scale of its row (one combination)."""
    return [[recognise(float(x), float(np.abs(row).max(initial=0.0))) for x in row] for row in m]


def all_exact(rows: Sequence[Sequence[Fraction | float]]) -> bool:
    return all(isinstance(x, Fraction) for row in rows for x in row)


def as_entry(x: Fraction | float) -> str | float:
    """An entry as a declaration takes it: `"1/2"` for a rational, the float otherwise."""
    return str(x) if isinstance(x, Fraction) else x
