"""The GPU path: tests marked `cuda`, run by `make test-gpu` (`pytest -m cuda`) on a machine with
an NVIDIA GPU and skipped everywhere else (they are collected by the default run too, so a GPU
machine's `make test` runs them as well).

- cached decoding equals the full causal forward in bf16 autocast (tolerance below) and float32;
- compiled greedy and beam decoding (inductor: Triton kernels) give the eager tokens;
- fp16 training with the GradScaler, and bf16 training under `torch.compile`, through the loop;
- one process launched by torchrun trains through DDP over NCCL;
- a checkpoint written on the GPU resumes on the CPU;
- an experiment, `bench train` (FLOPs, MFU, `torch.cuda.max_memory_allocated`) and `bench beam`
  run with `--device cuda`.

The CPU twins of these tests live beside the code they test; these only add the device.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import CLI_FLAGS, SIZES, TINY
from tiny_run import config as tiny_config

import butcherflow as bf
from butcherflow.bench.beam import run_beam
from butcherflow.bench.train.hardware import device_peak
from butcherflow.bench.train.section import run_train_bench
from butcherflow.experiments import run_experiment
from butcherflow.generate import greedy, search
from butcherflow.nn import DecodeCache
from butcherflow.savedir import load_model
from butcherflow.savedir.checkpoint import load_state
from butcherflow.train import TrainConfig, train

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU: make test-gpu"),
    pytest.mark.usefixtures("vocab_cache"),  # conftest.py
]

VOCAB = 100
# bf16 keeps 8 bits of mantissa: one rounding is a relative 2^-9. The cached and the full
# forward sum the same products in different orders through ~20 roundings per layer, so their
# logits may differ by a few percent of the largest logit, never by more than 2^-4 of it; a
# wrong cache (a key at the wrong position, a stage reading another stage's keys) is off by the
# whole logit.
BF16_TOLERANCE = 2**-4
FP32_TOLERANCE = 1e-4  # relative to the largest logit: TF32 is off for matmuls by default


def small_model(decoder: str = "rk4") -> bf.Seq2Seq:
    """ode-transformer-rk4 at d_model 64 with an RK4 decoder (four caches per block)."""
    recipe = bf.load_recipe("ode-transformer-rk4")
    sizes = {**recipe.sizes, "d_model": 64, "n_heads": 4, "d_ffn": 256, "dropout": 0.0}
    assert recipe.encoder is not None and recipe.decoder is not None
    recipe = replace(
        recipe,
        sizes=sizes,
        encoder=replace(recipe.encoder, layers=2),
        decoder=replace(recipe.decoder, layers=2, method=decoder),
    )
    torch.manual_seed(0)
    return bf.Seq2Seq(recipe, VOCAB).cuda().eval()


def sources() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, VOCAB, (3, 9), generator=g)
    src[1, 5:] = 0  # padding
    return src.cuda()


def config(save_dir: Path, **changes: Any) -> TrainConfig:
    """The shared tiny run, validating every 3 updates (the runs here are 3 to 8 updates)."""
    return tiny_config(save_dir, **{"validate_interval_updates": 3, **changes})


@pytest.mark.parametrize(
    ("dtype", "tolerance"),
    [(torch.bfloat16, BF16_TOLERANCE), (torch.float32, FP32_TOLERANCE)],
    ids=["bf16", "fp32"],
)
def test_cached_decoding_equals_the_full_forward(dtype: torch.dtype, tolerance: float) -> None:
    model = small_model()
    src = sources()
    tgt = torch.randint(4, VOCAB, (3, 8), device="cuda")
    autocast = torch.autocast("cuda", dtype, enabled=dtype != torch.float32)
    with torch.no_grad(), autocast:
        full = model(src, tgt).float()
        memory, padding = model.encode(src)
        cache = DecodeCache(capacity=4)  # doubled twice on the way
        steps = [model.decode(tgt[:, t : t + 1], memory, padding, cache) for t in range(8)]
    cached = torch.cat(steps, dim=1).float()
    scale = float(full.abs().max())
    error = float((cached - full).abs().max())
    assert error <= tolerance * scale, f"max |error| {error:.3g} > {tolerance:g} x {scale:.3g}"


def test_compiled_decoding_gives_the_eager_tokens() -> None:
    torch.compiler.reset()
    model = small_model()
    src = sources()
    assert greedy(model, src, max_len_b=12, compile=True) == greedy(model, src, max_len_b=12)
    eager = search(model, src, beam=4, max_len_b=12)
    compiled = search(model, src, beam=4, max_len_b=12, compile=True)
    assert [[h.tokens for h in row] for row in compiled] == [
        [h.tokens for h in row] for row in eager
    ]
    for row_a, row_b in zip(compiled, eager, strict=True):
        for a, b in zip(row_a, row_b, strict=True):
            assert a.score == pytest.approx(b.score, abs=1e-3)
    torch.compiler.reset()


def test_fp16_training_with_the_grad_scaler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = train(config(tmp_path / "fp16", device="cuda", precision="fp16", max_update=8))
    out = capsys.readouterr().out
    assert "device cuda:0, precision fp16" in out
    assert summary["updates"] == 8
    # the scaler starts at 2^16 and may skip the first steps (overflow), never all of them
    assert summary["nonfinite_skipped"] < 8
    assert summary["valid_loss"] is not None and math.isfinite(summary["valid_loss"])
    state = load_state(tmp_path / "fp16" / "checkpoint_last.pt")
    assert state["scaler"]["scale"] > 0  # an enabled scaler's state


def test_compiled_bf16_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    torch.compiler.reset()
    run = config(tmp_path / "compiled", device="cuda", precision="bf16", compile=True, max_update=4)
    summary = train(run)
    assert "precision bf16" in capsys.readouterr().out
    assert summary["updates"] == 4 and summary["nonfinite_skipped"] == 0
    assert summary["valid_loss"] is not None and summary["valid_loss"] < 20
    torch.compiler.reset()


def test_one_process_under_torchrun_trains_through_nccl_ddp(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",  # a free port on this machine
        "--nproc-per-node=1",
        "-m",
        "butcherflow.cli",
        "train",
        "transformer-small",
        "--data",
        f"{TINY}:de-en",
        "--save-dir",
        str(tmp_path / "ddp"),
        "--device",
        "cuda",
        *CLI_FLAGS,
        "--max-update=3",
        "--validate-interval-updates=3",
    ]
    done = subprocess.run(
        command, env=dict(os.environ), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "1 process(es) (DDP over nccl)" in done.stdout
    assert (tmp_path / "ddp" / "checkpoint_last.safetensors").is_file()


def test_a_gpu_checkpoint_resumes_on_the_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_dir = tmp_path / "run"
    assert train(config(save_dir, device="cuda", max_update=3))["updates"] == 3
    capsys.readouterr()
    summary = train(config(save_dir, device="cpu", max_update=5))
    out = capsys.readouterr().out
    assert "resuming from" in out and "device cpu" in out
    assert summary["updates"] == 5
    model, _, _ = load_model(save_dir, device="cpu")
    assert all(p.device.type == "cpu" for p in model.parameters())


def test_an_experiment_runs_on_the_gpu(tmp_path: Path) -> None:
    """The GPU twin of test_experiments' 'cuda without a GPU' test."""
    outcome = run_experiment(
        "depth",
        device="cuda",
        sizes="tiny",
        budget=2,
        data=f"{TINY}:de-en",
        seeds=[1],
        out=tmp_path / "docs",
        runs_dir=tmp_path / "runs",
        echo=lambda line: None,
    )
    assert outcome.results and all(r["updates"] == 2 for r in outcome.results)
    aggregate = json.loads((tmp_path / "docs" / "depth.json").read_text())
    assert "--device cuda" in aggregate["command"]


def test_bench_train_measures_mfu_and_memory(benchmarks_md: Path) -> None:
    rows = run_train_bench(
        str(benchmarks_md),
        "butcherflow bench train (test)",
        data=f"{TINY}:de-en",
        vocab_size=200,
        max_tokens=512,
        updates=2,
        warmup=1,
        device="cuda",
        precision="bf16",
        sizes={
            k: SIZES[k] for k in ("d_model", "n_heads", "d_ffn", "encoder_layers", "decoder_layers")
        },
    )
    peak = device_peak(torch.device("cuda", 0))
    for row in rows:
        assert row.memory is not None and row.memory > 0
        assert row.flops is not None and row.flops > 0
        assert (row.mfu(peak) is None) == (peak is None)
    text = benchmarks_md.read_text()
    assert "<!-- bench:train-cuda:start -->" in text and torch.cuda.get_device_name() in text


def test_bench_beam_on_the_gpu(benchmarks_md: Path) -> None:
    torch.compiler.reset()
    rows = run_beam(
        str(benchmarks_md),
        1,
        "butcherflow bench beam --device cuda (test)",
        sentences=2,
        src_len=4,
        length=6,
        models=[("rk4 decoder", "ode-transformer-rk4", "rk4")],
        sizes={"d_model": 32, "n_heads": 2, "d_ffn": 64, "layers": 1},
        device="cuda",
    )
    assert rows[0].cached > 0 and rows[0].compiled > 0 and rows[0].recomputed > 0
    text = benchmarks_md.read_text()
    assert "<!-- bench:beam-cuda:start -->" in text and "device cuda" in text
    torch.compiler.reset()
