"""What a GPU needs from the CPU side: few batch shapes (length buckets) and compilation block by
block (`compile_blocks`), both checked here without a GPU.

- padding to a bucket's width changes no loss and no logit at a real position (float64), for
  blocks of every structure: Runge-Kutta, FLOATER positions, a multistep stack, hyper-connections;
- `compile_blocks` is a view: the model's parameters, its state-dict keys, its eager forward;
  each block program is its own graph, so ten blocks over three shapes stay within dynamo's
  limit of eight graphs per code object (a whole model's blocks sharing one `forward` hit it);
- `butcherflow train --compile` trains the model's own weights (the same as eager, bit for bit,
  through dynamo's eager backend) and saves the same checkpoint keys;
- `--buckets` is printed with the shapes it gives, refused when malformed, and a resumed run
  finishes its epoch with the ladder it was cut with (the same weights as without the resume).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny_run import TINY, assert_same_weights, config
from torch._dynamo.utils import counters

import butcherflow as bf
from butcherflow.assemble import compile_blocks
from butcherflow.bench.block import TorchTransformer
from butcherflow.cli import main
from butcherflow.data import EncodedSplit, collate, fit_buckets
from butcherflow.savedir.layout import CONFIG
from butcherflow.train import TrainConfig, train
from butcherflow.train.step import label_smoothed_loss

pytestmark = pytest.mark.usefixtures("vocab_cache")  # conftest.py
VOCAB = 60


def small(name: str, layers: int = 2) -> bf.Recipe:
    recipe = bf.load_recipe(name)
    sizes = {**recipe.sizes, "d_model": 16, "n_heads": 2, "d_ffn": 32, "dropout": 0.0}
    assert recipe.encoder is not None and recipe.decoder is not None
    return dataclasses.replace(
        recipe,
        sizes=sizes,
        param_budget=None,
        encoder=dataclasses.replace(recipe.encoder, layers=layers),
        decoder=dataclasses.replace(recipe.decoder, layers=layers),
    )


def pairs(lengths: list[tuple[int, int]], seed: int = 1) -> EncodedSplit:
    g = torch.Generator().manual_seed(seed)
    return EncodedSplit(
        [torch.randint(4, VOCAB, (n,), generator=g).tolist() for n, _ in lengths],
        [torch.randint(4, VOCAB, (m,), generator=g).tolist() for _, m in lengths],
    )


@pytest.mark.parametrize("name", ["ode-transformer-rk2-gated", "floater", "dlcl", "mhc"])
def test_padding_to_a_bucket_changes_no_loss(name: str) -> None:
    torch.manual_seed(0)
    model = bf.Seq2Seq(small(name), VOCAB).double().eval()
    split = pairs([(5, 3), (11, 7), (2, 9), (7, 1)])
    wide = np.full(len(split), 24)  # wider than any pair: 13 more pad positions to mask
    indices = [0, 1, 2, 3]
    with torch.no_grad():
        plain = collate(split, indices)
        padded = collate(split, indices, wide)
        assert padded.src.shape[1] == 24 > plain.src.shape[1]
        a = model(plain.src, plain.prev_output)
        b = model(padded.src, padded.prev_output)
    t = plain.target.shape[1]
    real = plain.target.ne(0)
    torch.testing.assert_close(b[:, :t][real], a[real], rtol=1e-10, atol=1e-10)
    loss_a = label_smoothed_loss(a, plain.target, 0.1, 0)
    loss_b = label_smoothed_loss(b, padded.target, 0.1, 0)
    assert float(loss_b) == pytest.approx(float(loss_a), rel=1e-12)


@pytest.mark.parametrize(
    "layers", [1, pytest.param(5, marks=pytest.mark.slow)], ids=["2 blocks", "10 blocks"]
)
def test_compiled_blocks_are_a_view_with_a_graph_per_block(layers: int) -> None:
    """With 10 blocks (> dynamo's 8 graphs per code object), none falls back to eager."""
    torch.compiler.reset()
    counters.clear()
    torch.manual_seed(0)
    model = bf.Seq2Seq(small("transformer-small", layers=layers), VOCAB)
    keys = list(model.state_dict())
    view = compile_blocks(model, backend="eager")
    assert {id(p) for p in view.parameters()} == {id(p) for p in model.parameters()}
    for length in (8, 16, 24):  # three bucket widths, one graph each block
        src = torch.randint(4, VOCAB, (3, length))
        src[0, length // 2 :] = 0
        tgt = torch.randint(4, VOCAB, (3, length))
        out = view(src, tgt)
        out.sum().backward()
        torch.testing.assert_close(out, model(src, tgt))
    assert counters["stats"]["unique_graphs"] == 2 * layers  # one per block, no recompile
    assert not counters["graph_break"]
    assert list(model.state_dict()) == keys  # the model's own keys, no `_orig_mod.`
    assert all(not hasattr(block.program, "_orig_mod") for block in model.encoder)
    torch.compiler.reset()


@pytest.mark.slow
def test_torch_transformers_layers_compile_as_modules() -> None:
    torch.compiler.reset()
    counters.clear()
    with pytest.warns(UserWarning, match="enable_nested_tensor"):
        theirs = TorchTransformer(bf.Seq2Seq(small("transformer-small", layers=3), VOCAB))
    view = compile_blocks(theirs, TorchTransformer.SIDES, backend="eager")
    src, tgt = torch.randint(4, VOCAB, (2, 8)), torch.randint(4, VOCAB, (2, 8))
    torch.testing.assert_close(view(src, tgt), theirs(src, tgt))
    assert counters["stats"]["unique_graphs"] == 2  # an encoder and a decoder layer: shared code
    assert {id(p) for p in view.parameters()} == {id(p) for p in theirs.parameters()}
    assert not any(hasattr(layer, "_orig_mod") for layer in theirs.core.encoder.layers)
    torch.compiler.reset()


@pytest.mark.slow
def test_compiled_training_trains_the_models_own_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.compiler.reset()
    compile_ = torch.compile  # dynamo only: the same operations as eager, bit for bit
    monkeypatch.setattr(torch, "compile", lambda m, **k: compile_(m, backend="eager", **k))
    eager = train(config(tmp_path / "eager", max_update=3, buckets="1.25"))
    compiled = train(config(tmp_path / "compiled", max_update=3, buckets="1.25", compile=True))
    assert compiled["updates"] == eager["updates"] == 3
    assert_same_weights(
        tmp_path / "eager" / "checkpoint_last.safetensors",
        tmp_path / "compiled" / "checkpoint_last.safetensors",
    )
    torch.compiler.reset()


def test_train_prints_its_buckets_and_refuses_a_bad_ladder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], declaration_error: Callable
) -> None:
    train(config(tmp_path / "run", max_update=1, buckets="1.25"))
    out = capsys.readouterr().out
    assert "batches: --buckets 1.25 (widths 16, 24, 32" in out and "distinct shapes" in out
    with declaration_error("'--buckets'", "'1.0'", "a ratio > 1"):
        TrainConfig("transformer-small", "x", "-", buckets="1.0")
    command = ["train", "transformer-small", "--data", f"{TINY}:de-en", "--buckets", "32,16"]
    assert main([*command, "--save-dir", str(tmp_path / "bad")]) == 1
    assert "--buckets" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_auto_buckets_are_on_a_gpu_only() -> None:
    from butcherflow.train.config import resolve_buckets

    run = TrainConfig("transformer-small", "x", "-")
    assert resolve_buckets(run, torch.device("cpu")) == "off"
    assert resolve_buckets(run, torch.device("cuda", 0)) == "1.25"
    explicit = dataclasses.replace(run, buckets="16,32")
    assert resolve_buckets(explicit, torch.device("cpu")) == "16,32"


def test_a_resumed_run_finishes_its_epoch_with_its_ladder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stopped at update 2 of epoch 1 and resumed with --buckets off, the run trains updates 3
    and 4 on the batches epoch 1 was cut into (1.25): the weights of the run never stopped."""
    whole = train(config(tmp_path / "whole", max_update=4, buckets="1.25"))
    assert whole["epoch"] == 1  # still in epoch 1: the epoch itself decides the batches
    train(config(tmp_path / "resumed", max_update=2, buckets="1.25"))
    capsys.readouterr()
    train(config(tmp_path / "resumed", max_update=4, buckets="off"))
    assert "epoch 1 was cut with --buckets 1.25: it goes on with those" in capsys.readouterr().out
    assert_same_weights(
        tmp_path / "whole" / "checkpoint_last.safetensors",
        tmp_path / "resumed" / "checkpoint_last.safetensors",
    )


def test_a_save_dir_from_before_buckets_resumes(tmp_path: Path) -> None:
    train(config(tmp_path, max_update=2))
    saved: dict[str, Any] = json.loads((tmp_path / CONFIG).read_text())
    del saved["buckets"]  # as written before the setting existed
    (tmp_path / CONFIG).write_text(json.dumps(saved))
    assert train(config(tmp_path, max_update=3))["updates"] == 3


def test_bucket_widths_are_what_collate_pads_to() -> None:
    split = pairs([(3, 2), (9, 4), (20, 30)])
    widths = fit_buckets(split, "1.25")
    assert widths is not None and widths.tolist() == [8, 16, 31]  # 31: the longest, not 32
    batch = collate(split, [0, 1], widths)
    assert batch.src.shape == batch.prev_output.shape == (2, 16)
    assert np.array_equal(fit_buckets(split, "8,16,31"), widths)  # type: ignore[arg-type]
