"""The default run's representatives (tests/catalog_sweep.py) have the structure each stands for,
and a sweep keeps exactly them in the default run."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import sympy
from catalog_sweep import REPRESENTATIVES, sweep

import butcherflow as bf


def _tableau(name: str) -> bf.ButcherTableau:
    method = bf.catalog[name]
    assert isinstance(method, bf.ButcherTableau), f"{name} is a {method.family} declaration"
    return method


def _fsal(name: str) -> bool:
    t = _tableau(name)
    return t.is_explicit and list(t.A[-1]) == list(t.b) and t.c[0] == 0


def _zero_weight(name: str) -> bool:
    return any(sympy.simplify(w) == 0 for w in _tableau(name).b)


def _fully_implicit(name: str) -> bool:
    t = _tableau(name)
    return t.is_implicit and not t.is_diagonally_implicit


def _substep_stages(name: str) -> int:
    method = bf.catalog[name]
    assert isinstance(method, bf.Splitting), f"{name} is a {method.family} declaration"
    return 0 if method.substep is None else method.substep.stages


def _family(family: str) -> Callable[[str], bool]:
    return lambda name: bf.catalog[name].family == family


STRUCTURE: dict[str, Callable[[str], bool]] = {
    "one stage": lambda n: _tableau(n).stages == 1,
    "explicit": lambda n: _tableau(n).is_explicit and _tableau(n).stages > 1,
    "zero-weight stage": _zero_weight,
    "first same as last": _fsal,
    "diagonally implicit": lambda n: _tableau(n).is_diagonally_implicit,
    "fully implicit": _fully_implicit,
    "numeric entries": lambda n: not bf.check(n).exact,
    "gated coefficients": lambda n: bool(_tableau(n).symbols),
    "splitting, Euler sub-steps": lambda n: _substep_stages(n) == 1,
    "splitting, higher-order sub-steps": lambda n: _substep_stages(n) > 1,
    "explicit multistep": lambda n: _family("multistep")(n) and bf.catalog[n].is_explicit,
    "implicit multistep": lambda n: _family("multistep")(n) and not bf.catalog[n].is_explicit,
    "general linear": _family("general-linear"),
    "stack across depth": lambda n: _family("general-linear")(n) and len(bf.catalog[n].V) > 2,
    "continuous, fixed step": lambda n: _family("continuous")(n) and not bf.catalog[n].adaptive,
    "continuous, adaptive": lambda n: _family("continuous")(n) and bool(bf.catalog[n].adaptive),
    "continuous positions": lambda n: _family("continuous")(n) and not bf.catalog[n].layer.compiles,
    "additive, implicit-explicit": lambda n: (
        _family("additive")(n) and len(bf.catalog[n].operators) > 1
    ),
}


def test_every_structure_has_a_test_of_its_representative() -> None:
    assert set(STRUCTURE) == set(REPRESENTATIVES)


@pytest.mark.parametrize("structure", sorted(REPRESENTATIVES))
def test_the_representative_has_its_structure(structure: str) -> None:
    name = REPRESENTATIVES[structure]
    assert STRUCTURE[structure](name), f"{name} does not stand for {structure!r}"


def _default(params: list) -> list:
    return [p.values for p in params if not p.marks]


def test_a_sweep_keeps_the_representatives_and_marks_the_rest_slow() -> None:
    params = sweep(["heun", "rk4", "ralston"])
    assert _default(params) == [("rk4",)]
    assert [m.name for p in params for m in p.marks] == ["slow", "slow"]


def test_a_sweep_without_a_representative_keeps_its_first_entry() -> None:
    assert _default(sweep(["heun", "ralston"])) == [("heun",)]


def test_a_sweep_of_tuples_names_the_entry() -> None:
    params = sweep([("heun", "san"), ("rk4", "san")], entries=["heun", "rk4"])
    assert _default(params) == [("rk4", "san")]
