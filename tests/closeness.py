"""The tolerances tests compare numbers with, each stated once with its reason."""

from __future__ import annotations

from torch import Tensor

# A float64 block against its formula at O(1) values: a few hundred units of round-off.
ROUNDING = 1e-12
# A measured convergence slope against the proved order (a few steps off the asymptotic range).
SLOPE = 0.3


def assert_close(actual: Tensor, expected: Tensor, tol: float = ROUNDING) -> None:
    error = (actual - expected).abs().max().item()
    assert error <= tol, f"max |error| = {error:.3g} > {tol:.1g}"
