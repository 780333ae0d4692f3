"""Whether a declaration becomes a layer is stated once, by the declaration (`Method.layer`):
the report shows it, and `bf.compile` does what it says, for every catalog entry."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from catalog_sweep import sweep

import butcherflow as bf
from butcherflow.compiler import example_fields

SIZES = {"d_model": 8, "n_heads": 2, "d_ffn": 16}


def _compile(method: bf.Method) -> bf.CompiledBlock:
    """As `butcherflow show` and the gallery do: the family's example fields, a family's
    undeclared symbols (none in the catalog) given initial values."""
    fields = example_fields(method, "ffn", layers=3)
    if method.family == "splitting":
        fields = {"fields": dict.fromkeys(method.operators, "ffn")}
    return bf.compile(method, **fields, **SIZES)


@pytest.mark.parametrize("name", sweep(sorted(bf.catalog)))
def test_report_says_whether_the_method_compiles(
    name: str, catalog_report: Callable[[str], bf.Report]
) -> None:
    method = bf.catalog[name]
    report = catalog_report(name)
    layer = method.layer
    try:
        block = _compile(method)
    except bf.DeclarationError as error:
        assert not layer.compiles, f"{name}: {error}"
        assert layer.how in str(error)  # the compiler refuses with the declaration's words
    else:
        assert layer.compiles, layer.how
        assert block.method.family == method.family
    assert layer.how in str(report)
    assert json.loads(report.to_json())["layer"]["compiles"] is layer.compiles
    assert layer.how.startswith("not compiled") != layer.compiles


def test_continuous_verdicts_follow_the_grid() -> None:
    block = bf.catalog["neural-ode-rk4"]
    adaptive = bf.catalog["neural-ode-dopri5"]
    positions = bf.catalog["floater"]
    assert block.layer.compiles and "fixed step" in block.layer.how
    assert adaptive.layer.compiles and "no incremental" in adaptive.layer.how
    assert not positions.layer.compiles and "position = 'floater'" in positions.layer.how
    assert bf.compile(block, field="ffn", **SIZES).incremental
    assert not bf.compile(adaptive, field="ffn", **SIZES).incremental


def test_a_family_compiles_once_its_symbols_are_declared_parameters() -> None:
    family = bf.ButcherTableau([[0, 0], ["a", 0]], ["1 - g", "g"], name="mine")
    assert not family.layer.compiles and "['a', 'g']" in family.layer.how
    with pytest.raises(bf.DeclarationError, match="not declared parameters"):
        bf.compile(family, field="ffn", **SIZES)
    declared = bf.ButcherTableau(
        [[0, 0], ["a", 0]],
        ["1 - g", "g"],
        name="mine",
        parameters={"a": {"kind": "learned", "init": 1}, "g": "gate"},
    )
    assert declared.layer.compiles and "a: a learned scalar" in declared.layer.how
    block = bf.compile(declared, field="ffn", **SIZES)
    assert block.program.weights.tolist() == [1.0]  # a = 1: Heun's stages, gate at 1/2
    assert block.program.gate.outputs == 1
