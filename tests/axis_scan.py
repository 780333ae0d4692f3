"""Where a method first turns unstable going left from z = 0, found without the Schur chain:
the reference the enclosure tests check their bands against."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def first_unstable(unstable: Callable[[float], bool], top: float = 4.0) -> float:
    """The least x in (0, top] with `unstable(x)` (z = −x): a scan at steps of top/4000, then
    60 bisections; inf when the scan finds none."""
    grid = np.linspace(top / 4000, top, 4000)
    first = next((i for i, x in enumerate(grid) if unstable(x)), None)
    if first is None:
        return math.inf
    lo, hi = (grid[first - 1] if first else 0.0), grid[first]
    for _ in range(60):
        lo, hi = (lo, (lo + hi) / 2) if unstable((lo + hi) / 2) else ((lo + hi) / 2, hi)
    return float(lo)
