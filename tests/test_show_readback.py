"""`butcherflow show RUN_DIR` reads a trained block's learned coefficients back with
`bf.extract`: a gated RK2 block (the ODE Transformer's Eq. 25-26, y + g·F₁ + (1 − g)·F₂ with
g = σ([F₁; F₂]W + b) per token) as a tableau per token, beside the declaration it started from."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import sympy
import torch

import butcherflow as bf
from butcherflow.cli import main
from butcherflow.cli.readback import block_fields, describe, read_back, read_back_layers

D_MODEL = 16


def gated_block(trained: bool) -> torch.nn.Module:
    block = bf.compile("rk2-gated", field="san+ffn", d_model=D_MODEL, n_heads=2, d_ffn=32)
    if trained:  # a gate that has moved: W and b no longer zero
        generator = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for parameter in block.program.gate.parameters():
                parameter.copy_(torch.randn(parameter.shape, generator=generator))
    return block.eval()


def test_the_fields_and_the_frozen_gate_of_a_compiled_block() -> None:
    fields, frozen = block_fields(gated_block(trained=False))
    assert fields == {"field": "program.field"} and frozen == ("program.gate",)


def test_an_untrained_gate_reads_back_as_heun() -> None:
    found = read_back(gated_block(trained=False), False, D_MODEL)
    half = sympy.Rational(1, 2)
    assert found.method.b == (half, half) and not found.varies.token  # the gate starts at ½
    assert found.report.order == 2
    assert found.verify() < 1e-13


def test_a_trained_gate_reads_back_per_token() -> None:
    found = read_back(gated_block(trained=True), False, D_MODEL)
    varies = found.varies
    assert varies.token
    b = varies.B[:, 0, :]  # (tokens, 2): g and 1 − g
    assert np.allclose(b.sum(axis=1), 1.0, atol=1e-12)  # y + g F1 + (1 − g) F2: consistent
    assert (b > 0).all() and (b < 1).all()  # a sigmoid
    assert np.ptp(b[:, 0]) > 1e-3  # it differs between tokens
    assert np.allclose(varies.A[:, 1, 0], 1.0)  # the second stage reads y + F1
    assert found.verify() < 1e-13


def test_describe_puts_the_start_beside_the_reading() -> None:
    text = "\n".join(describe("encoder", 0, gated_block(trained=True), False, D_MODEL))
    assert "started from:" in text and "rk2-gated" in text
    assert "computes now" in text and "varies: per token True" in text and "round trip" in text


@pytest.mark.slow
def test_show_a_trained_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from tiny_run import RUN, TINY

    from butcherflow.train import TrainConfig, train

    run = {**RUN, "max_update": 3, "save_interval_updates": 3, "validate_interval_updates": 3}
    train(TrainConfig("ode-transformer-rk2-gated", f"{TINY}:de-en", str(tmp_path), **run))
    capsys.readouterr()
    assert main(["show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "encoder layer 0 (RungeKuttaBlock):" in out and "decoder layer 0" in out
    assert out.count("round trip: relative difference") == 2


def hyper_connection_stack() -> bf.CompiledBlock:
    """hyper-connections-4 with learned coefficients, its second layer's V moved off I."""
    stack = bf.compile_stack(
        "hyper-connections-4",
        fields=["san+ffn"] * 2,
        d_model=D_MODEL,
        n_heads=2,
        d_ffn=32,
        coefficients="learned",
    )
    with torch.no_grad():
        moved = 0.05 * torch.randn(4, 4, generator=torch.Generator().manual_seed(0))
        stack.program.get_submodule("mix1").V.add_(moved.double())
    return stack.eval()


def test_each_layer_of_a_hyper_connection_stack_reads_back_its_learned_v() -> None:
    stack = hyper_connection_stack()
    first, second = read_back_layers(stack, False)  # type: ignore[arg-type]
    learned = stack.program.get_submodule("mix1").V.detach().numpy()
    read = np.array(second.varies.V[0])
    assert np.allclose(read, learned, rtol=0, atol=1e-12)
    assert np.allclose(np.array(first.varies.V[0]), np.eye(4), rtol=0, atol=1e-12)
    assert max(first.verify(), second.verify()) < 1e-13


def test_describe_reads_a_stack_layer_by_layer() -> None:
    text = "\n".join(describe("encoder", 0, hyper_connection_stack(), False, D_MODEL))
    assert "layer 0 computes now" in text and "layer 1 computes now" in text
    assert "not read back" not in text
