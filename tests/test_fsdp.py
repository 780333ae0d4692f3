"""`--fsdp` (FSDP2 under torchrun, gloo on CPU): two processes give the loss curve and the weights
of one process over the same global batches, a sharded run interrupted and resumed ends with the
weights of one that was not, its checkpoints are the save-dir format any command reads, and
`--fsdp` without a process group is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny_run import TINY, assert_same_weights

from butcherflow import DeclarationError
from butcherflow.savedir import load_language_model
from butcherflow.savedir.checkpoint import load_weights
from butcherflow.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("vocab_cache")

FLAGS = [
    "--d-model=32",
    "--n-heads=2",
    "--d-ffn=64",
    "--decoder-layers=1",
    "--vocab-size=200",
    "--max-tokens=1024",
    "--warmup-updates=3",
    "--lr=2e-3",
    "--save-interval-updates=2",
    "--validate-interval-updates=2",
    "--log-interval=1",
    "--dropout=0",
]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2"]


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("text")
    for split in ("train", "valid", "test"):
        (folder / f"{split}.txt").write_bytes((TINY / f"{split}.en").read_bytes())
    return folder


def _train(text: Path, save_dir: Path, *flags: str, processes: int = 1) -> None:
    """`butcherflow train lm-rk4` on the tiny text, in its own process(es)."""
    command = [*TORCHRUN] if processes == 2 else [sys.executable]
    command += ["-m", "butcherflow.cli", "train", "lm-rk4", "--task", "language_model"]
    command += ["--data", str(text), "--save-dir", str(save_dir), *FLAGS, *flags]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _curve(save_dir: Path) -> list[tuple[int, float]]:
    lines = (save_dir / "log.jsonl").read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines]
    return [(e["update"], e["loss"]) for e in entries if e["kind"] == "train"]


@pytest.fixture(scope="module")
def runs(text: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One process with update_freq 2, and two FSDP processes of one micro-batch each (the same
    global batches), stopped at update 2 and resumed to 4."""
    folder = tmp_path_factory.mktemp("fsdp")
    _train(text, folder / "one", "--max-update=4", "--update-freq=2")
    _train(text, folder / "two", "--max-update=2", "--fsdp", processes=2)
    _train(text, folder / "two", "--max-update=4", "--fsdp", processes=2)
    return {"one": folder / "one", "two": folder / "two"}


def test_two_sharded_processes_give_the_loss_curve_of_one(runs: dict[str, Path]) -> None:
    one, two = _curve(runs["one"]), _curve(runs["two"])
    assert [u for u, _ in two] == [1, 2, 3, 4] == [u for u, _ in one]
    for (_, left), (_, right) in zip(one, two, strict=True):
        assert abs(left - right) < 1e-5


def test_a_sharded_run_resumed_ends_with_the_weights_of_one_process(
    runs: dict[str, Path],
) -> None:
    left = load_weights(runs["one"] / "checkpoint_last.safetensors")
    right = load_weights(runs["two"] / "checkpoint_last.safetensors")
    assert left.keys() == right.keys()
    for key in left:
        torch.testing.assert_close(right[key], left[key], rtol=1e-4, atol=1e-6)


def test_a_sharded_runs_checkpoint_loads_as_any(runs: dict[str, Path]) -> None:
    model, _, config = load_language_model(runs["two"], "last")
    assert config["fsdp"] is True and model.num_parameters > 0


@pytest.mark.slow
def test_a_sharded_run_resumed_ends_with_the_weights_of_an_uninterrupted_sharded_run(
    text: Path, runs: dict[str, Path], tmp_path: Path
) -> None:
    _train(text, tmp_path / "whole", "--max-update=4", "--fsdp", processes=2)
    assert_same_weights(
        tmp_path / "whole" / "checkpoint_last.safetensors",
        runs["two"] / "checkpoint_last.safetensors",
    )


def test_fsdp_without_a_process_group_is_one_line(text: Path, tmp_path: Path) -> None:
    config = TrainConfig(
        "lm-rk4", str(text), str(tmp_path / "run"), task="language_model", fsdp=True
    )
    with pytest.raises(DeclarationError, match=r"--fsdp.*no|--fsdp.*none.*torchrun"):
        train(config)
    assert not (tmp_path / "run").exists()
