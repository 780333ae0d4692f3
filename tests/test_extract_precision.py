"""`bf.extract` on a module that computes below float64: read at its precision, never a small
nonlinearity of a float64 module read as round-off."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
import torch
from torch import nn

import butcherflow as bf
from butcherflow.errors import ExtractionError

D = 16


class HalfStep(nn.Module):
    """y + ½ F(y), the sum computed in float32 (`.float()`, as mHC's mixing) or in the input's
    dtype plus a nonlinearity of float32 round-off size (`bend`)."""

    def __init__(self, in_float32: bool, bend: float = 0.0) -> None:
        super().__init__()
        self.f = nn.Sequential(nn.Linear(D, D), nn.Tanh())
        self.in_float32, self.bend = in_float32, bend

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.f(x)
        if self.in_float32:
            return (x.float() + 0.5 * k.float()).to(x.dtype)
        return x + 0.5 * k + self.bend * x * x


def _state() -> torch.Tensor:
    return torch.randn(2, 5, D, generator=torch.Generator().manual_seed(1), dtype=torch.float64)


def test_a_float32_sum_is_read_to_1e_minus_6() -> None:
    found = bf.extract(HalfStep(True).eval(), _state(), fields={"F": "f"})
    assert found.precision == 1e-6
    assert found.method.family == "runge-kutta"
    assert found.method.b == (sympy.Rational(1, 2),)
    assert found.method.precision == Fraction(1, 10**6)
    assert found.verify() < 1e-6


def test_a_float64_module_bent_by_round_off_size_is_refused() -> None:
    # The same residual size, but the forward makes no float32 tensor: not round-off.
    with pytest.raises(ExtractionError, match="not a linear combination"):
        bf.extract(HalfStep(False, bend=3e-7).eval(), _state(), fields={"F": "f"})


def test_precision_reads_a_module_at_the_precision_given() -> None:
    found = bf.extract(
        HalfStep(False, bend=3e-7).eval(), _state(), fields={"F": "f"}, precision=1e-4
    )
    # at 1e-4 only integers are taken as exact (a rational q ≤ √(1e-5/1e-4) < 2): ½ is numeric
    assert found.precision == 1e-4 and abs(float(found.method.b[0]) - 0.5) < 1e-4
    assert found.method.precision == Fraction(1, 10**4)
