"""Which catalog entries a per-entry sweep runs by default.

A sweep that tests structure (decoding caches, compiled graphs, field wiring) gains nothing from
a second entry of the same structure, so the default run keeps one representative per
structure and marks the rest `slow`: `make test-slow` (which CI runs too) still sweeps the
whole catalog. `tests/test_catalog_sweep.py` checks that each representative has the structure
it stands for, so the default run cannot silently lose one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest

import butcherflow as bf
from butcherflow.assemble import recipe_names

# structure -> the catalog entry that stands for it in the default run
REPRESENTATIVES: dict[str, str] = {
    "one stage": "euler",
    "explicit": "rk4",
    "zero-weight stage": "midpoint",
    "first same as last": "bogacki-shampine-3",
    "diagonally implicit": "sdirk-2",
    "fully implicit": "gauss-legendre-2",
    "numeric entries": "prince-dormand-8-float",
    "gated coefficients": "rk2-gated",
    "splitting, Euler sub-steps": "strang",
    "splitting, higher-order sub-steps": "strang-rk4",
    "explicit multistep": "adams-bashforth-2",
    "implicit multistep": "bdf-2",
    "general linear": "hyper-connections-4",
    "stack across depth": "denseformer-4",
    "continuous, fixed step": "neural-ode-rk4",
    "continuous, adaptive": "neural-ode-dopri5",
    "continuous positions": "floater",
    "additive, implicit-explicit": "ars-222",
}
DEFAULT = frozenset(REPRESENTATIVES.values())


def sweep(
    items: Sequence[Any],
    entries: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
) -> list[Any]:
    """`items` as pytest parameters (a tuple item gives several arguments): those whose catalog
    entry (`entries[i]`, by default the item itself) is a representative run by default, the
    others are marked `slow`. A sweep with no representative keeps its first entry in the default
    run, so that no sweep is empty without the slow tests."""
    names = list(items if entries is None else entries)
    kept = DEFAULT & set(names) or set(names[:1])
    return [
        pytest.param(
            *(item if isinstance(item, tuple) else (item,)),
            marks=() if entry in kept else (pytest.mark.slow,),
            id=None if ids is None else ids[i],
        )
        for i, (item, entry) in enumerate(zip(items, names, strict=True))
    ]


def linked(names: Iterable[str]) -> set[str]:
    """`names` with the catalog entries their gallery pages link to: the methods the recipes use,
    and an adaptive continuous entry's tableau."""
    entries = set(names)
    for name in recipe_names():
        recipe = bf.load_recipe(name)
        for side in (recipe.encoder, recipe.decoder):
            if side is not None and side.method in bf.catalog:
                entries.add(side.method)
    for name in list(entries):
        method = bf.catalog[name]
        if isinstance(method, bf.ContinuousDynamics):
            entries.add(method.solver_tableau().name)
    return entries & set(bf.catalog)
