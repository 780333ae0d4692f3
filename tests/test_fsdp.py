"""`--fsdp` (FSDP2 under torchrun, gloo on CPU): two processes give the loss curve and the weights
of one process over the same global batches, a sharded run interrupted and resumed ends with the
weights of one that was not, its checkpoints are the save-dir format any command reads, and
`--fsdp` without a process group is one line.

The default run launches torchrun once (the sharded run beside one process, trained here); the
interrupted and resumed sharded run (two more launches) is in `make test-slow`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tiny_run import assert_same_weights, lm_argv

from butcherflow import DeclarationError
from butcherflow.savedir import load_language_model
from butcherflow.savedir.checkpoint import load_weights
from butcherflow.train import TrainConfig, train

# the tiny LM run is shared with test_export.py: one worker trains it for both
pytestmark = [pytest.mark.usefixtures("vocab_cache"), pytest.mark.xdist_group("tiny-lm")]

TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2"]


def _train_sharded(text: Path, save_dir: Path, *flags: str) -> None:
    """`butcherflow train lm-rk4 --fsdp` on the tiny text, two processes under torchrun."""
    command = [*TORCHRUN, "-m", "butcherflow.cli", *lm_argv(text, save_dir, "--fsdp", *flags)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def _curve(save_dir: Path) -> list[tuple[int, float]]:
    lines = (save_dir / "log.jsonl").read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines]
    return [(e["update"], e["loss"]) for e in entries if e["kind"] == "train"]


@pytest.fixture(scope="module")
def runs(tiny_lm_text: Path, tiny_lm_run: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The shared one-process run (update_freq 2) and two FSDP processes of one micro-batch each
    (the same global batches): the default run's one torchrun launch."""
    two = tmp_path_factory.mktemp("fsdp") / "two"
    _train_sharded(tiny_lm_text, two, "--max-update=4")
    return {"one": tiny_lm_run, "two": two}


@pytest.fixture(scope="module")
def resumed(tiny_lm_text: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two FSDP processes stopped at update 2 and resumed to 4 (two more launches: slow)."""
    save_dir = tmp_path_factory.mktemp("fsdp-resumed") / "two"
    _train_sharded(tiny_lm_text, save_dir, "--max-update=2")
    _train_sharded(tiny_lm_text, save_dir, "--max-update=4")
    return save_dir


def _same_weights_within_float_tolerance(left_dir: Path, right_dir: Path) -> None:
    left = load_weights(left_dir / "checkpoint_last.safetensors")
    right = load_weights(right_dir / "checkpoint_last.safetensors")
    assert left.keys() == right.keys()
    for key in left:
        torch.testing.assert_close(right[key], left[key], rtol=1e-4, atol=1e-6)


def _same_curve(one: Path, two: Path) -> None:
    left, right = _curve(one), _curve(two)
    assert [u for u, _ in right] == [1, 2, 3, 4] == [u for u, _ in left]
    for (_, a), (_, b) in zip(left, right, strict=True):
        assert abs(a - b) < 1e-5


def test_two_sharded_processes_give_the_loss_curve_of_one(runs: dict[str, Path]) -> None:
    _same_curve(runs["one"], runs["two"])


def test_two_sharded_processes_end_with_the_weights_of_one(runs: dict[str, Path]) -> None:
    _same_weights_within_float_tolerance(runs["one"], runs["two"])


def test_a_sharded_runs_checkpoint_loads_as_any(runs: dict[str, Path]) -> None:
    model, _, config = load_language_model(runs["two"], "last")
    assert config["fsdp"] is True and model.num_parameters > 0


@pytest.mark.slow
def test_a_sharded_run_resumed_ends_with_the_weights_of_one_process(
    runs: dict[str, Path], resumed: Path
) -> None:
    _same_curve(runs["one"], resumed)
    _same_weights_within_float_tolerance(runs["one"], resumed)


@pytest.mark.slow
def test_a_sharded_run_resumed_ends_with_the_weights_of_an_uninterrupted_sharded_run(
    runs: dict[str, Path], resumed: Path
) -> None:
    assert_same_weights(
        runs["two"] / "checkpoint_last.safetensors", resumed / "checkpoint_last.safetensors"
    )


def test_fsdp_without_a_process_group_is_one_line(tiny_lm_text: Path, tmp_path: Path) -> None:
    config = TrainConfig(
        "lm-rk4", str(tiny_lm_text), str(tmp_path / "run"), task="language_model", fsdp=True
    )
    with pytest.raises(DeclarationError, match=r"--fsdp.*no|--fsdp.*none.*torchrun"):
        train(config)
    assert not (tmp_path / "run").exists()
