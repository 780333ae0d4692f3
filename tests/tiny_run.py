"""The tiny training run that the training tests share: transformer-small at d_model 32 on the
tiny de-en corpus (400 training pairs), as a `TrainConfig` and as command-line flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file

from butcherflow.train import TrainConfig

TINY = Path(__file__).parent / "data" / "tiny"
SIZES: dict[str, Any] = {
    "d_model": 32,
    "n_heads": 2,
    "d_ffn": 64,
    "encoder_layers": 1,
    "decoder_layers": 1,
    "vocab_size": 200,
}
# 2048 padded positions per batch: about 10 updates per epoch of the 400 training pairs, so a
# 14-update run crosses an epoch boundary.
RUN: dict[str, Any] = {
    **SIZES,
    "max_tokens": 2048,
    "warmup_updates": 3,
    "lr": 2e-3,
    "max_update": 14,
    "save_interval_updates": 3,
    "validate_interval_updates": 4,
    "log_interval": 1,
}
CLI_FLAGS = [f"--{k.replace('_', '-')}={v}" for k, v in RUN.items()]  # the same run, as flags


def config(save_dir: Path, **changes: Any) -> TrainConfig:
    """The tiny run into `save_dir`, with `changes` to its settings."""
    return TrainConfig("transformer-small", f"{TINY}:de-en", str(save_dir), **{**RUN, **changes})


def assert_same_weights(a: Path, b: Path) -> None:
    """The two safetensors files hold the same tensors, bit for bit."""
    left, right = load_file(str(a)), load_file(str(b))
    assert left.keys() == right.keys()
    for key in left:
        assert torch.equal(left[key], right[key]), key


# The tiny language model the export and FSDP tests share (conftest's `tiny_lm_run`): lm-rk4 at
# d_model 32 on the English side of the tiny corpus, validated and saved every two updates.
LM_FLAGS = [
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
LM_RUN = ["--max-update=4", "--update-freq=2"]  # one process; FSDP's two give the same batches


def lm_text(folder: Path) -> Path:
    """The tiny corpus's English side as a plain-text corpus (train/valid/test.txt) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        (folder / f"{split}.txt").write_bytes((TINY / f"{split}.en").read_bytes())
    return folder


def lm_argv(text: Path, save_dir: Path, *flags: str) -> list[str]:
    """`butcherflow train lm-rk4` on `text` into `save_dir`, as command-line arguments."""
    argv = ["train", "lm-rk4", "--task", "language_model", "--data", str(text)]
    return [*argv, "--save-dir", str(save_dir), *LM_FLAGS, *flags]
