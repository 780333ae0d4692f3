"""The block benchmark compares like with like: its hand-written loops compute the blocks."""

from __future__ import annotations

import pytest
import torch

import butcherflow as bf
from butcherflow.bench.block import (
    BlockRow,
    TorchTransformer,
    hand_written,
    hand_written_splitting,
    side_by_side,
)
from butcherflow.nn import Context

SIZES = {"d_model": 8, "n_heads": 2, "d_ffn": 16}


@pytest.mark.parametrize("name", ["heun", "rk4", "dormand-prince-5", "midpoint"])
def test_hand_written_loop_equals_the_block(name: str) -> None:
    block = bf.compile(name, field="san+ffn", **SIZES).double()
    assert isinstance(block, bf.compiler.RungeKuttaBlock)
    y = torch.randn(2, 5, 8, dtype=torch.float64)
    method = bf.catalog[name]
    assert isinstance(method, bf.ButcherTableau)
    expected = hand_written(method, block.field)(y, Context())
    torch.testing.assert_close(block(y), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["strang", "strang-heun"])
def test_hand_written_splitting_equals_the_block(name: str) -> None:
    block = bf.compile(name, fields={"A": "ffn", "B": "san"}, **SIZES).double()
    modules = {
        str(n.target): block.program.get_submodule(str(n.target))
        for n in block.program.graph.nodes
        if n.op == "call_module"
    }
    method = bf.catalog[name]
    assert isinstance(method, bf.Splitting)
    y = torch.randn(2, 5, 8, dtype=torch.float64)
    expected = hand_written_splitting(method, modules)(y, Context())
    torch.testing.assert_close(block(y), expected, rtol=1e-12, atol=1e-12)


def test_side_by_side_returns_one_median_per_step() -> None:
    calls: list[str] = []
    times = side_by_side(lambda: calls.append("a"), lambda: calls.append("b"), repeats=3)
    assert len(times) == 2 and all(t >= 0 for t in times)
    assert calls == ["a", "b"] * 4  # warm-up, then interleaved


def test_ratios() -> None:
    row = BlockRow("rk4", calls=4, block=4.2, hand=4.0, calls_time=4.0)
    assert row.vs_hand == pytest.approx(1.05) and row.vs_calls == pytest.approx(1.05)


def test_torch_reference_has_the_same_size_and_shapes() -> None:
    from dataclasses import replace

    recipe = bf.load_recipe("transformer-small")
    small = replace(recipe, sizes={**recipe.sizes, "d_model": 16, "n_heads": 2, "d_ffn": 32})
    ours = bf.Seq2Seq(small, 50)
    theirs = TorchTransformer(ours)
    src, tgt = torch.randint(1, 50, (2, 6)), torch.randint(1, 50, (2, 5))
    assert theirs(src, tgt).shape == ours(src, tgt).shape == (2, 5, 50)
    assert sum(p.numel() for p in theirs.parameters()) == ours.num_parameters
