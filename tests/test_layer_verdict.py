"""Every catalog method compiles, or its report says why not: checked against bf.compile."""

from __future__ import annotations

import json

import pytest

import butcherflow as bf

SIZES = {"d_model": 8, "n_heads": 2, "d_ffn": 16}


def _compile(method: bf.Method) -> None:
    if isinstance(method, bf.Splitting):
        bf.compile(method, fields=dict.fromkeys(method.operators, "ffn"), **SIZES)
    elif isinstance(method, bf.LinearMultistep):
        init = {str(s): 0.5 for s in method.symbols}
        policy = "learned" if init else "exact"
        bf.compile_stack(method, ["ffn"] * 3, coefficients=policy, init=init, **SIZES)
    else:
        bf.compile(method, field="ffn", **SIZES)


@pytest.mark.parametrize("name", sorted(bf.catalog))
def test_report_says_whether_the_method_compiles(name: str) -> None:
    method = bf.catalog[name]
    report = bf.check(method)
    compiles, how = report.layer
    try:
        _compile(method)
        compiled = True
    except bf.DeclarationError:
        compiled = False
    assert compiled == compiles, how
    assert how in str(report)
    assert json.loads(report.to_json())["layer"]["compiles"] is compiles
    if not compiles:
        assert how.startswith("not compiled")


def test_continuous_verdicts_follow_the_grid() -> None:
    block = bf.catalog["neural-ode-rk4"]
    adaptive = bf.catalog["neural-ode-dopri5"]
    positions = bf.catalog["floater"]
    assert bf.check(block).layer[0] and "fixed step" in bf.check(block).layer[1]
    assert bf.check(adaptive).layer[0] and "no incremental" in bf.check(adaptive).layer[1]
    compiles, how = bf.check(positions).layer
    assert not compiles and "position = 'floater'" in how
    assert bf.compile(block, field="ffn", **SIZES).incremental
    assert not bf.compile(adaptive, field="ffn", **SIZES).incremental
