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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import final

import numpy as np
import torch
from torch import Tensor

from ..errors import ExtractionError
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
# A module that computes in float32 (its mixing cast with .float(), as mHC) leaves a relative
# residual at float32 round-off (unit 6e-8; ~6e-8 measured on mHC), never at float64's: up to
# FLOAT32_RESIDUAL it is read as such a module and its coefficients to FLOAT32_PRECISION. A norm
# on the residual sum (post-norm) leaves a residual of order 1e-1 to 1.
FLOAT32_RESIDUAL = 1e-6
FLOAT32_PRECISION = 1e-6
LARGEST_PRECISION = 1e-2  # the coarsest precision= accepted: far below a norm's residual


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

    def broken(self, precision: float | None = None) -> int | None:
        """The first target (stage index, or `stages` + m for output stream m) that is not a
        linear combination (at `precision`, see `residual_tolerance`), or None."""
        bad = np.nonzero(self.residual > residual_tolerance(precision))[0]
        return int(bad[0]) if len(bad) else None

    def spread(self) -> float:
        """The largest difference of a coefficient between two tokens (relative to max(1, |c|))."""
        worst = 0.0
        for m in (self.U, self.A, self.B, self.V):
            if m.size:
                scale = np.maximum(1.0, np.abs(m).max(axis=0))
                worst = max(worst, float((np.ptp(m, axis=0) / scale).max()))
        return worst

    def same_as(self, other: Fit, precision: float | None = None) -> bool:
        """Equal coefficients at every token, within `FIXED_TOLERANCE` (or `precision`)."""
        tol = fixed_tolerance(precision)
        both = self.determined & other.determined
        mine, theirs = (self.U, self.A, self.B, self.V), (other.U, other.A, other.B, other.V)
        return all(
            a.shape == b.shape and np.allclose(a[both], b[both], rtol=tol, atol=tol)
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
    X, Z = _design(runs, states, streams)
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


def _design(
    runs: Sequence[Run], states: Sequence[Tensor], streams: Streams, fractions: int = 1
) -> tuple[Tensor, Tensor]:
    """Per token, the columns X `(T, n, (r + s)·f)` (the state's streams, then the field
    values) and the targets Z `(T, n, (s + r)·f)` (the stage inputs, then the output's
    streams), each vector cut into `fractions` f consecutive pieces of the feature axis; n is
    the runs times d/f."""

    def cut(v: Tensor) -> list[Tensor]:  # (T, d) -> f pieces (T, d/f)
        return list(v.reshape(v.shape[0], fractions, -1).unbind(1))

    columns, targets = [], []
    for run, state in zip(runs, states, strict=True):
        x = tokens(state, streams)  # (T, r, d)
        ks = [k.reshape(x.shape[0], -1) for k in run.values]  # (T, d) each
        ys = [y.reshape(x.shape[0], -1) for y in run.stage_inputs]
        out = tokens(run.output, streams)
        cols = [p for v in (*x.unbind(1), *ks) for p in cut(v)]
        columns.append(torch.stack(cols, dim=-1))  # (T, d/f, (r + s)·f)
        targets.append(torch.stack([p for v in (*ys, *out.unbind(1)) for p in cut(v)], dim=-1))
    return torch.cat(columns, dim=1), torch.cat(targets, dim=1)


def fraction_fit(
    runs: Sequence[Run], states: Sequence[Tensor], streams: Streams, precision: float | None
) -> tuple[int, np.ndarray] | None:
    """The fewest fractions f > 1 of the feature axis such that every fraction of every stage
    input and output stream is a linear combination of the fractions of the state's streams
    and the field values, each with its own coefficients (frac-connections), with the first
    token's coefficients `((r + s)·f, (s + r)·f)` (columns and targets as `_design` orders
    them); or None. Only cuts leaving at least twice as many equations as unknowns per token
    are tried, so that a fit is a finding, never a solve of an underdetermined system."""
    d = int(tokens(states[0], streams).shape[-1])
    r, s = int(tokens(states[0], streams).shape[1]), len(runs[0].values)
    for f in range(2, d + 1):
        if d % f or (d // f) * len(runs) < 2 * (r + s) * f:
            continue
        X, Z = _design(runs, states, streams, f)
        solution = torch.linalg.lstsq(X, Z, driver="gelsd").solution
        residual = torch.linalg.vector_norm(X @ solution - Z, dim=1)
        scale = torch.linalg.vector_norm(Z, dim=1).clamp_min(1e-300)
        if float((residual / scale).max()) <= residual_tolerance(precision):
            return f, solution[0].numpy()
    return None


def residual_tolerance(precision: float | None) -> float:
    """The largest relative residual of a linear combination: float64's, or `precision`."""
    return RESIDUAL_TOLERANCE if precision is None else precision


def fixed_tolerance(precision: float | None) -> float:
    """How close two coefficients must be to count as one: float64's, or `precision`."""
    return FIXED_TOLERANCE if precision is None else precision


def reading_precision(
    fit: Fit, declared: float | None, who: str, below_float64: Callable[[], bool]
) -> float | None:
    """The precision the coefficients are read to: None for float64 (the residual is at float64
    round-off), `declared` when given, `FLOAT32_PRECISION` when the residual is at float32
    round-off and the module computes below float64, else None (the fit is refused as
    nonlinear).

    **Arguments:** `fit`: the probe fit; `declared`: `bf.extract`'s `precision=`; `who`: the
    module, for the message on a bad `precision`; `below_float64`: whether the forward makes
    a tensor narrower than float64 (asked only when the residual is in float32's range), so
    that a small nonlinearity of a float64 module is never read as round-off.
    """
    if declared is not None:
        if isinstance(declared, bool) or not isinstance(declared, (int, float)):
            declared = math.nan
        if not 0 < declared <= LARGEST_PRECISION:
            raise ExtractionError(
                f"{who}: precision={declared!r}; valid: None (float64, or float32 detected from "
                f"the residual) or a number in (0, {LARGEST_PRECISION:g}], the relative accuracy "
                "the module computes to (1e-6 for float32)"
            )
        return float(declared)
    worst = float(fit.residual.max(initial=0.0))
    if worst <= RESIDUAL_TOLERANCE or worst > FLOAT32_RESIDUAL or not below_float64():
        return None
    return FLOAT32_PRECISION


def recognise(x: float, scale: float = 1.0, precision: float | None = None) -> Fraction | float:
    """`x` as a rational p/q within the module's tolerance (see `EXACT_TOLERANCE`, or the
    reading `precision`; `scale`: the largest coefficient of the combination `x` belongs to),
    else `x`."""
    unit = EXACT_TOLERANCE if precision is None else precision
    tolerance = unit * max(1.0, abs(x), scale)
    largest = max(1, min(MAX_DENOMINATOR, int(math.sqrt(FALSE_EXACT / tolerance))))
    guess = Fraction(x).limit_denominator(largest)
    return guess if abs(float(guess) - x) <= tolerance else float(x)


def entries(m: np.ndarray, precision: float | None = None) -> list[list[Fraction | float]]:
    """A matrix's entries, each recognised at the scale of its row (one combination)."""
    return [
        [recognise(float(x), float(np.abs(row).max(initial=0.0)), precision) for x in row]
        for row in m
    ]


def all_exact(rows: Sequence[Sequence[Fraction | float]]) -> bool:
    return all(isinstance(x, Fraction) for row in rows for x in row)
