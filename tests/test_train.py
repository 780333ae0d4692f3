"""The training stage: config validation, the loss and schedule, checkpoints, resume, DDP.

Everything runs on CPU at tiny sizes (d_model 32, 1+1 layers, vocabulary 200) on the raw-text
corpus in tests/data/tiny. One uninterrupted reference run (module fixture) is compared with
runs that are SIGKILLed, interrupted mid-save, or resumed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from butcherflow.data.batching import EncodedSplit, collate, make_batches
from butcherflow.data.packing import TokenBlocks

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tiny_run import CLI_FLAGS, RUN, SIZES, TINY, assert_same_weights, config

from butcherflow import DeclarationError
from butcherflow.assemble import (
    Seq2Seq,
    load_recipe,
    recipe_from_dict,
    recipe_names,
    recipe_to_toml,
)
from butcherflow.bench import read_section, table_rows
from butcherflow.cli import main
from butcherflow.devices import set_threads
from butcherflow.savedir import checkpoint as ckpt
from butcherflow.savedir import read_config, read_recipe, trained
from butcherflow.savedir.curves import read_log
from butcherflow.train import distributed, loop
from butcherflow.train.config import TrainConfig, resolve_recipe
from butcherflow.train.distributed import Process
from butcherflow.train.loop import TrainingError, train
from butcherflow.train.run import encode
from butcherflow.train.step import (
    forward_backward,
    inverse_sqrt_lr,
    label_smoothed_loss,
    optimizer_step,
    shard,
    validate,
)

pytestmark = pytest.mark.usefixtures("vocab_cache")  # conftest.py


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The uninterrupted run every resumed run must reproduce."""
    save_dir = tmp_path_factory.mktemp("reference")
    return save_dir, train(config(save_dir))


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the pieces ----------------------------------------------------------------------------------


def fairseq_label_smoothed_nll_loss(
    lprobs: torch.Tensor, target: torch.Tensor, epsilon: float, ignore_index: int
) -> torch.Tensor:
    """fairseq/criterions/label_smoothed_cross_entropy.py, `label_smoothed_nll_loss`, as written
    there (reduce=True)."""
    target = target.unsqueeze(-1)
    nll_loss = -lprobs.gather(dim=-1, index=target)
    smooth_loss = -lprobs.sum(dim=-1, keepdim=True)
    pad_mask = target.eq(ignore_index)
    nll_loss.masked_fill_(pad_mask, 0.0)
    smooth_loss.masked_fill_(pad_mask, 0.0)
    eps_i = epsilon / (lprobs.size(-1) - 1)
    return (1.0 - epsilon - eps_i) * nll_loss.sum() + eps_i * smooth_loss.sum()


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("vocab", [5, 200])
def test_label_smoothing_is_fairseqs(epsilon: float, vocab: int) -> None:
    torch.manual_seed(0)
    logits = torch.randn(3, 7, vocab, dtype=torch.float64)
    target = torch.randint(1, vocab, (3, 7))
    target[0, 4:] = 0  # padding
    target[2, 1:] = 0
    ours = label_smoothed_loss(logits, target, epsilon, pad=0)
    theirs = fairseq_label_smoothed_nll_loss(
        F.log_softmax(logits, -1).reshape(-1, vocab), target.reshape(-1), epsilon, 0
    )
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


def test_inverse_sqrt_is_fairseqs() -> None:
    c = TrainConfig("transformer-small", "x", "y", lr=1e-3, warmup_updates=100)
    assert inverse_sqrt_lr(0, c) == pytest.approx(1e-7)
    assert inverse_sqrt_lr(50, c) == pytest.approx(1e-7 + 50 * (1e-3 - 1e-7) / 100)
    assert inverse_sqrt_lr(100, c) == pytest.approx(1e-3)
    assert inverse_sqrt_lr(400, c) == pytest.approx(5e-4)  # lr * sqrt(100 / 400)
    rates = [inverse_sqrt_lr(u, c) for u in range(1000)]
    assert max(rates) == pytest.approx(1e-3) and rates.index(max(rates)) == 100


def test_shard_gives_every_process_as_many_batches() -> None:
    batches = [[i] for i in range(7)]
    parts = [shard(batches, Process(rank, 2)) for rank in range(2)]
    assert [len(p) for p in parts] == [3, 3]
    assert sorted(i for p in parts for (i,) in p) == [0, 1, 2, 3, 4, 5]  # the tail is dropped
    assert shard(batches, Process()) == batches


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        ({"max_tokens": 0}, ["--max-tokens", "0", ">= 1"]),
        ({"update_freq": 1.5}, ["--update-freq", "1.5"]),
        ({"lr": -1.0}, ["--lr", "-1.0", "> 0"]),
        ({"label_smoothing": 1.0}, ["--label-smoothing", "1.0", "< 1"]),
        ({"dropout": 1.2}, ["--dropout", "1.2"]),
        ({"warmup_updates": 0}, ["--warmup-updates", "inverse-sqrt"]),
        ({"time_budget": 0.0}, ["--time-budget", "0.0"]),
        ({"device": "tpu"}, ["--device", "'tpu'", "cuda:N"]),
        ({"precision": "fp8"}, ["--precision", "'fp8'", "bf16"]),
        ({"device": "cpu", "precision": "fp16"}, ["--precision", "'fp16'", "GPU"]),
        ({"keep_last_checkpoints": 2}, ["--keep-last-checkpoints", "--save-interval-updates"]),
        ({"source_lang": "de"}, ["--target-lang", "both"]),
        ({"d_model": 0}, ["--d-model", "0"]),
        ({"warmup_init_lr": 1.0}, ["--warmup-init-lr", "1.0", "<= --lr"]),
        ({"patience": -1}, ["--patience", "-1", ">= 0"]),
        ({"threads": 0}, ["--threads", "0", ">= 1"]),
    ],
)
def test_bad_config_names_the_flag(changes: dict[str, Any], fragments: list[str]) -> None:
    with pytest.raises(DeclarationError) as info:
        TrainConfig("transformer-small", "bible:de-en", "out", **changes)
    for fragment in fragments:
        assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("changes", "rule"),
    [({"max_tokens": 0}, "an integer >= 1"), ({"threads": 0}, "an integer >= 1")],
)
def test_a_count_out_of_range_states_its_rule_once(changes: dict[str, Any], rule: str) -> None:
    with pytest.raises(DeclarationError) as info:
        TrainConfig("transformer-small", "bible:de-en", "out", **changes)
    message = str(info.value)
    assert message.count(">= 1") == 1 and rule in message and "(got 0)" in message


def test_size_overrides_and_param_budget() -> None:
    base = TrainConfig("transformer-small", "x", "y", **SIZES)
    recipe = resolve_recipe(base, 200)
    assert recipe.sizes["d_model"] == 32 and recipe.sizes["d_ffn"] == 64
    assert recipe.encoder is not None and recipe.encoder.layers == 1
    # macaron sizes d_ffn to match transformer-small *at the same overrides*
    sizes = {k: v for k, v in SIZES.items() if k != "d_ffn"}
    macaron = resolve_recipe(TrainConfig("macaron", "x", "y", **sizes), 200)
    small = resolve_recipe(TrainConfig("transformer-small", "x", "y", **sizes), 200)
    with torch.device("meta"):
        n_macaron = Seq2Seq(macaron, 200).num_parameters
        n_small = Seq2Seq(small, 200).num_parameters
    assert macaron.param_budget is None
    assert abs(n_macaron - n_small) / n_small < 0.02
    with pytest.raises(DeclarationError, match="--d-ffn"):
        resolve_recipe(TrainConfig("macaron", "x", "y", d_ffn=64), 200)
    with pytest.raises(DeclarationError, match="multiple of n_heads"):
        resolve_recipe(TrainConfig("transformer-small", "x", "y", d_model=30, n_heads=4), 200)


@pytest.mark.parametrize("name", recipe_names())
def test_recipe_survives_config_json(name: str) -> None:
    recipe = load_recipe(name)
    back = recipe_from_dict(tomllib.loads(recipe_to_toml(recipe)))
    assert back == dataclasses.replace(recipe, source=None)


def test_shared_tensors_are_saved_once_and_restored(tmp_path: Path) -> None:
    text = (TINY.parent.parent.parent / "models" / "ode-transformer-rk2-gated.toml").read_text()
    text = text.replace('method = "rk2-gated"', 'method = "rk2-gated"\nshare_gate = true')
    (tmp_path / "shared.toml").write_text(text)
    sizes = {**SIZES, "encoder_layers": 3}
    recipe = resolve_recipe(TrainConfig(str(tmp_path / "shared.toml"), "x", "y", **sizes), 50)
    torch.manual_seed(0)
    model = Seq2Seq(recipe, 50)
    gates = [k for k in model.state_dict() if k.endswith("gate.proj.weight")]
    assert len(gates) == 3  # one Linear shared by three blocks
    ckpt.save_checkpoint(tmp_path, ["checkpoint_last"], model, {"x": 1}, {"update": 1})
    stored = weights(tmp_path / "checkpoint_last.safetensors")
    assert sum(k in stored for k in gates) == 1
    torch.manual_seed(1)
    fresh = Seq2Seq(recipe, 50)
    ckpt.assign_weights(fresh, stored, "file")
    for key, value in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[key], value), key
    first, second = (fresh.encoder[i].program.get_submodule("gate") for i in (0, 1))
    assert first is second


def test_optimizer_step_outcomes_with_a_grad_scaler() -> None:
    """The fp16 path (GradScaler) runs on CPU too: overflow skips, non-finite loss skips."""
    param = torch.nn.Parameter(torch.ones(3))
    optimizer = torch.optim.AdamW([param], lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)

    def step(factor: float, finite: bool = True) -> tuple[str, float]:
        scaler.scale(param.sum() * factor).backward()
        return optimizer_step(optimizer, scaler, [param], 1.0, finite)

    assert step(1.0) == ("ok", pytest.approx(math.sqrt(3)))
    before = param.detach().clone()
    outcome, gnorm = step(float("inf"))
    assert outcome == "overflow" and math.isinf(gnorm) and scaler.get_scale() == 512.0
    assert step(1.0, finite=False)[0] == "nonfinite"
    assert torch.equal(param.detach(), before) and param.grad is None
    assert step(1.0)[0] == "ok" and not torch.equal(param.detach(), before)


# --- a whole run, its files, and loading it ------------------------------------------------------


def test_run_writes_the_save_dir(reference: tuple[Path, dict[str, Any]]) -> None:
    save_dir, summary = reference
    assert summary["updates"] == 14 and summary["epochs_done"] >= 1
    assert summary["stopped"] == "max_update 14 reached"
    config_json = read_config(save_dir)
    assert config_json["vocab_size"] == 200 and config_json["max_tokens"] == 2048
    assert read_recipe(save_dir).sizes["d_model"] == 32 and "d_model" not in config_json
    for name in ("checkpoint_last", "checkpoint_best", "checkpoint_3", "checkpoint_12"):
        for suffix in (".safetensors", ".pt", ".json"):
            assert (save_dir / f"{name}{suffix}").is_file(), name + suffix
    assert ckpt.read_commit(save_dir, "checkpoint_last")["update"] == 14  # type: ignore[index]
    assert [u for u, _ in ckpt.interval_checkpoints(save_dir)] == [3, 6, 9, 12]
    assert (save_dir / "spm.model").is_file()
    assert (save_dir / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    log = [e for e in ckpt_log(save_dir)]
    assert [e["update"] for e in log if e["kind"] == "train"] == list(range(1, 15))
    valid = [e["update"] for e in log if e["kind"] == "valid"]
    assert {4, 8, 12, 14} <= set(valid)  # the intervals, the epoch end, the stop
    assert all(math.isfinite(e["valid_loss"]) for e in log if e["kind"] == "valid")
    assert not list(save_dir.glob(".*.tmp"))


def ckpt_log(save_dir: Path) -> list[dict[str, Any]]:
    from butcherflow.savedir.curves import read_log

    return read_log(save_dir / "log.jsonl")


def test_load_model_best_last_avg_and_file(reference: tuple[Path, dict[str, Any]]) -> None:
    save_dir, _ = reference
    model, vocab, _ = trained.load_model(save_dir, "last")
    assert not model.training and len(vocab) == 200 and model.recipe.sizes["d_model"] == 32
    last = weights(save_dir / "checkpoint_last.safetensors")
    for key, value in model.state_dict().items():
        assert torch.equal(value, last[key])
    averaged, _, _ = trained.load_model(save_dir, "avg:2")
    a, b = (
        weights(save_dir / "checkpoint_9.safetensors"),
        weights(save_dir / "checkpoint_12.safetensors"),
    )
    for key, value in averaged.state_dict().items():
        assert torch.equal(value, ((a[key].double() + b[key].double()) / 2).float())
    best, _, _ = trained.load_model(save_dir, "best")
    from_file, _, _ = trained.load_model(save_dir, str(save_dir / "checkpoint_best.safetensors"))
    for key, value in best.state_dict().items():
        assert torch.equal(value, from_file.state_dict()[key])
    with pytest.raises(ckpt.CheckpointError, match="avg:9 needs 9 interval checkpoints, found 4"):
        trained.load_model(save_dir, "avg:9")


def test_average_command(reference: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    save_dir, _ = reference
    out = tmp_path / "avg.safetensors"
    assert main(["average", str(save_dir), "--last", "3", "-o", str(out)]) == 0
    averaged = weights(out)
    parts = [weights(save_dir / f"checkpoint_{u}.safetensors") for u in (6, 9, 12)]
    for key, value in averaged.items():
        mean = sum(p[key].double() for p in parts) / 3
        assert torch.equal(value, mean.float()), key
    model, _, _ = trained.load_model(save_dir, str(out))
    assert torch.equal(model.state_dict()["encoder_norm.weight"], averaged["encoder_norm.weight"])


def test_average_checkpoints_is_the_mean(tmp_path: Path) -> None:
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor([3])}
    b = {"w": torch.tensor([3.0, 6.0]), "n": torch.tensor([3])}
    save_file(a, str(tmp_path / "a.safetensors"))
    save_file(b, str(tmp_path / "b.safetensors"))
    out = trained.average_checkpoints([tmp_path / "a.safetensors", tmp_path / "b.safetensors"])
    assert torch.equal(out["w"], torch.tensor([2.0, 4.0])) and torch.equal(out["n"], a["n"])
    save_file({"n": torch.tensor([3]), "v": torch.zeros(2)}, str(tmp_path / "c.safetensors"))
    with pytest.raises(ckpt.CheckpointError, match="'v'"):
        trained.average_checkpoints([tmp_path / "a.safetensors", tmp_path / "c.safetensors"])


# --- resume --------------------------------------------------------------------------------------


# `butcherflow train ARGS` that SIGKILLs itself as update 8 begins: after update 7 and the
# checkpoints it wrote (checkpoint_6 is the last one, every 3 updates), as a hard kill would.
KILLED_AFTER_UPDATE_7 = """
import os, signal, sys
from butcherflow.cli import main
from butcherflow.train import loop

real, calls = loop.forward_backward, []

def forward_backward(*args, **kwargs):
    calls.append(1)
    if len(calls) == 8:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **kwargs)

loop.forward_backward = forward_backward
sys.exit(main(sys.argv[1:]))
"""


def test_sigkill_then_resume_gives_the_same_weights(
    reference: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_dir = tmp_path / "killed"
    argv = ["train", "transformer-small", "--data", f"{TINY}:de-en", "--save-dir", str(save_dir)]
    command = [sys.executable, "-c", KILLED_AFTER_UPDATE_7, *argv, *CLI_FLAGS]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    killed = subprocess.run(
        command, env=env, cwd=Path(__file__).parents[1], capture_output=True, text=True, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert ckpt.read_commit(save_dir, "checkpoint_last")["update"] == 6  # type: ignore[index]
    # the same command again, in this process
    summary = train(config(save_dir))
    assert (
        f"resuming from {save_dir}/checkpoint_last (update 6, epoch 1)" in capsys.readouterr().out
    )
    assert summary["updates"] == 14
    assert_same_weights(
        reference[0] / "checkpoint_last.safetensors", save_dir / "checkpoint_last.safetensors"
    )
    assert_same_weights(
        reference[0] / "checkpoint_best.safetensors", save_dir / "checkpoint_best.safetensors"
    )
    valid = [(e["update"], e["valid_loss"]) for e in ckpt_log(save_dir) if e["kind"] == "valid"]
    assert valid == [
        (e["update"], e["valid_loss"]) for e in ckpt_log(reference[0]) if e["kind"] == "valid"
    ]


def test_a_save_killed_before_its_commit_is_ignored(
    reference: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    real = ckpt.write_json

    def crash(path: Path, data: Any) -> None:
        if path.name == "checkpoint_last.json" and data.get("update") == 9:
            raise KeyboardInterrupt  # as if killed between the files and the commit
        real(path, data)

    monkeypatch.setattr(ckpt, "write_json", crash)
    with pytest.raises(KeyboardInterrupt):
        train(config(tmp_path))
    assert ckpt.read_commit(tmp_path, "checkpoint_last") is None  # uncommitted: ignored
    monkeypatch.setattr(ckpt, "write_json", real)
    train(config(tmp_path))
    assert f"resuming from {tmp_path}/checkpoint_9 (update 9, epoch 1)" in capsys.readouterr().out
    assert_same_weights(
        reference[0] / "checkpoint_last.safetensors", tmp_path / "checkpoint_last.safetensors"
    )


def test_a_finished_run_resumes_to_nothing_and_extends(
    reference: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_dir = tmp_path / "copy"
    shutil.copytree(reference[0], save_dir)
    assert train(config(save_dir))["updates"] == 14
    assert "nothing to do: max_update 14 reached" in capsys.readouterr().out
    summary = train(config(save_dir, max_update=16, keep_last_checkpoints=1))
    assert summary["updates"] == 16
    assert "resuming from" in capsys.readouterr().out
    assert ckpt.interval_checkpoints(save_dir) == [(15, "checkpoint_15")]  # pruned to 1
    assert not (save_dir / "checkpoint_12.safetensors").exists()


def test_another_recipe_or_setting_is_refused(
    reference: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    save_dir = tmp_path / "copy"
    shutil.copytree(reference[0], save_dir)
    with pytest.raises(DeclarationError) as info:
        train(dataclasses.replace(config(save_dir), recipe="ode-transformer-rk2-gated"))
    assert "RECIPE" in str(info.value) and "'transformer-small'" in str(info.value)
    with pytest.raises(DeclarationError, match="--lr"):
        train(config(save_dir, lr=1e-3))
    # weights of another architecture, given as a file
    torch.manual_seed(0)
    other = Seq2Seq(
        resolve_recipe(TrainConfig("ode-transformer-rk2-gated", "x", "y", **SIZES), 200), 200
    )
    ckpt.save_checkpoint(tmp_path, ["other"], other, {}, {"update": 0})
    with pytest.raises(ckpt.CheckpointError, match=r"other.safetensors: tensor 'encoder\.0"):
        trained.load_model(save_dir, str(tmp_path / "other.safetensors"))


def test_an_edited_config_or_log_is_one_line(
    reference: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    save_dir = tmp_path / "copy"
    shutil.copytree(reference[0], save_dir)
    (save_dir / "log.jsonl").write_bytes(b"\xff\xfe not text\n")
    with pytest.raises(ckpt.CheckpointError, match=r"log\.jsonl is not the UTF-8 JSON lines"):
        read_log(save_dir / "log.jsonl")
    settings = json.loads((save_dir / "config.json").read_text())
    del settings["vocab_size"]
    (save_dir / "config.json").write_text(json.dumps(settings))
    with pytest.raises(ckpt.CheckpointError, match=r"'vocab_size' is None"):
        trained.load_model(save_dir, "last")


def test_a_save_dir_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    save_dir = Path("/proc/butcherflow-run")  # /proc takes no new folder, even from root
    with pytest.raises(DeclarationError, match=r"--save-dir.*(cannot be created|not write)"):
        train(config(save_dir, max_update=1))
    assert not save_dir.exists()


def test_corrupt_files_are_named(reference: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    save_dir = tmp_path / "copy"
    shutil.copytree(reference[0], save_dir)
    weights_file = save_dir / "checkpoint_last.safetensors"
    weights_file.write_bytes(weights_file.read_bytes()[:1000])  # truncated
    with pytest.raises(ckpt.CheckpointError, match=r"checkpoint_last\.safetensors is truncated"):
        trained.load_model(save_dir, "last")
    with pytest.raises(ckpt.CheckpointError, match=r"checkpoint_last\.safetensors is corrupt"):
        trained.load_model(save_dir, str(weights_file))
    state = save_dir / "checkpoint_best.pt"
    data = bytearray(state.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes
    state.write_bytes(bytes(data))
    with pytest.raises(ckpt.CheckpointError, match=r"checkpoint_best\.pt is corrupt"):
        ckpt.read_commit(save_dir, "checkpoint_best")
    state.write_bytes(bytes(data[:5000]))  # truncated: torch.load itself fails
    with pytest.raises(ckpt.CheckpointError, match=r"checkpoint_best\.pt is corrupt or truncated"):
        ckpt.load_state(state)
    (save_dir / "checkpoint_3.json").write_text("{not json")
    with pytest.raises(ckpt.CheckpointError, match=r"checkpoint_3\.json is corrupt"):
        ckpt.read_commit(save_dir, "checkpoint_3")
    with pytest.raises(ckpt.CheckpointError, match="nowhere' does not exist"):
        trained.load_model(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ckpt.CheckpointError, match="not a butcherflow save dir"):
        trained.load_model(tmp_path / "empty")


def test_time_budget_and_max_epoch_stop_with_a_checkpoint(tmp_path: Path) -> None:
    budget = train(config(tmp_path / "budget", max_update=0, time_budget=1e-3))
    assert budget["updates"] == 1 and budget["stopped"] == "time budget of 0.001 s spent"
    assert ckpt.read_commit(tmp_path / "budget", "checkpoint_last")["update"] == 1  # type: ignore[index]
    epoch = train(config(tmp_path / "epoch", max_update=0, max_epoch=1, save_interval_updates=0))
    assert epoch["stopped"] == "max_epoch 1 reached" and epoch["epochs_done"] == 1
    commit = ckpt.read_commit(tmp_path / "epoch", "checkpoint_last")
    assert commit is not None and commit["update"] == epoch["updates"] and commit["epoch"] == 2


def test_an_update_interval_replaces_the_epoch_end_validations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiny run's epoch is about 10 updates. With --validate-interval-updates 4 it
    validates at updates 4, 8, 12 and at its stop (14), not at the epoch's end; with
    --no-epoch-checkpoints it commits no checkpoint_last there either (only at the stop)."""
    saves: list[tuple[int, list[str]]] = []
    real_save = loop.save

    def save(run: Any, names: list[str]) -> None:
        saves.append((run.progress.update, list(names)))
        real_save(run, names)

    monkeypatch.setattr(loop, "save", save)
    run = config(tmp_path, max_update=14, save_interval_updates=0, no_epoch_checkpoints=True)
    summary = train(run)
    assert summary["epochs_done"] >= 1  # the run crossed an epoch's end
    valid = [e["update"] for e in ckpt_log(tmp_path) if e.get("kind") == "valid"]
    assert valid == [4, 8, 12, 14]
    assert [u for u, names in saves if "checkpoint_last" in names] == [14]
    saves.clear()
    epoch_ends = train(config(tmp_path / "epochs", max_update=14, save_interval_updates=0))
    last = [u for u, names in saves if "checkpoint_last" in names]
    assert len(last) == 2 and last[-1] == 14 and epoch_ends["updates"] == 14  # epoch end, stop


def test_patience_stops_after_that_many_validations_without_improvement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fairseq's rule: the counter restarts at every new best (strictly lower valid loss) and the
    run stops when it reaches `patience`; the counter survives a resume."""
    scripted = iter([3.0, 2.0, 2.5, 2.0, 2.2, 1.0, 0.5])  # valid losses at updates 1, 2, ...
    real = loop.validate

    def validate(*args: Any, **kwargs: Any) -> dict[str, float]:
        return {**real(*args, **kwargs), "valid_loss": next(scripted)}

    monkeypatch.setattr(loop, "validate", validate)
    patient = config(tmp_path, max_update=14, validate_interval_updates=1, patience=3)
    summary = train(patient)
    # best at update 2 (2.0); 2.5, 2.0 (not lower) and 2.2 are three without improvement
    assert summary["updates"] == 5 and summary["stopped"].startswith("patience 3")
    assert ckpt.read_commit(tmp_path, "checkpoint_best")["update"] == 2  # type: ignore[index]
    assert ckpt.read_commit(tmp_path, "checkpoint_last")["update"] == 5  # type: ignore[index]
    again = train(patient)  # the counter was saved: nothing left to do
    assert again["updates"] == 5 and again["stopped"].startswith("patience 3")
    more = train(dataclasses.replace(patient, patience=4, max_update=6))  # a resumable change
    assert more["updates"] == 6 and more["stopped"] == "max_update 6 reached"
    assert ckpt.read_commit(tmp_path, "checkpoint_best")["update"] == 6  # type: ignore[index]
    monkeypatch.undo()
    off = train(config(tmp_path / "off", max_update=3, validate_interval_updates=1))
    assert off["updates"] == 3 and off["stopped"] == "max_update 3 reached"  # 0 = no patience


@pytest.mark.parametrize("buckets", ["off", "1.25"])
@pytest.mark.parametrize("task", ["translation", "language_model"])
def test_validation_perplexity_is_the_one_computed_by_hand(task: str, buckets: str) -> None:
    """`validate` batches and pads several sentences (with `buckets`, both sides to a ladder's
    width); here every sentence goes through the model alone (no padding, no batching), its
    target log-probabilities are summed by hand, and the perplexity is exp(total nll / total
    target tokens) (float64, exact to rounding): padding is masked, whatever its amount."""
    from butcherflow.assemble import LanguageModel

    vocab, pad, bos, eos, epsilon = 50, 0, 2, 3, 0.1
    sizes = {**SIZES, "decoder_layers": None} if task == "language_model" else SIZES
    settings = TrainConfig("transformer-small", "x", "-", dropout=0.0, task=task, **sizes)
    recipe = resolve_recipe(settings, vocab)
    torch.manual_seed(0)
    model = (LanguageModel if task == "language_model" else Seq2Seq)(recipe, vocab).double()
    generator = torch.Generator().manual_seed(1)
    lengths = [(5, 3), (2, 7), (9, 1), (4, 4), (1, 6)]  # (source, target) lengths: padding
    sources = [torch.randint(4, vocab, (n,), generator=generator).tolist() for n, _ in lengths]
    targets = [torch.randint(4, vocab, (m,), generator=generator).tolist() for _, m in lengths]
    split: EncodedSplit | TokenBlocks = EncodedSplit(sources, targets)
    if task == "language_model":  # one line per window, as break mode eos makes them
        sources = [[] for _ in targets]
        inputs, says = [[bos, *t] for t in targets], [[*t, eos] for t in targets]
        split = TokenBlocks(inputs, says, text_bytes=57, lines=len(targets))
    nll = smoothed = tokens = 0.0
    model.eval()
    with torch.no_grad():
        for src, tgt in zip(sources, targets, strict=True):
            inputs = torch.tensor([[bos, *tgt]])
            if task == "language_model":
                logits = model(inputs)
            else:
                logits = model(torch.tensor([src]), inputs)
            logp = torch.log_softmax(logits[0], dim=-1)  # (len(tgt) + 1, vocab)
            for position, token in enumerate([*tgt, eos]):
                nll -= float(logp[position, token])
                # fairseq: eps/(V-1) on every wrong class, 1 - eps on the right one
                others = -float(logp[position].sum()) + float(logp[position, token])
                smoothed += (1 - epsilon) * -float(logp[position, token])
                smoothed += epsilon / (vocab - 1) * others
                tokens += 1
    config = TrainConfig(
        "transformer-small", "x", "-", max_tokens=12, label_smoothing=epsilon, task=task
    )
    measured = validate(
        model, split, config, torch.device("cpu"), contextlib.nullcontext, Process(), buckets
    )
    assert len(make_batches(split, 12, shuffle=False, seed=1, epoch=1)) > 1  # several batches
    assert measured["valid_nll_loss"] == pytest.approx(nll / tokens / math.log(2), rel=1e-12)
    assert measured["valid_ppl"] == pytest.approx(math.exp(nll / tokens), rel=1e-12)
    assert measured["valid_loss"] == pytest.approx(smoothed / tokens / math.log(2), rel=1e-12)
    assert pad not in [t for sentence in targets for t in sentence]
    if task == "language_model":  # bits per byte: the same nll over the text's 57 bytes
        assert measured["valid_bpb"] == pytest.approx(nll / math.log(2) / 57, rel=1e-12)
    else:
        assert "valid_bpb" not in measured


def test_set_threads_sets_torchs_count_and_none_keeps_it(tmp_path: Path) -> None:
    before = torch.get_num_threads()
    other = 2 if before == 1 else 1
    try:
        assert set_threads(None) == before == torch.get_num_threads()
        assert set_threads(other) == other == torch.get_num_threads()
        summary = train(config(tmp_path, max_update=1, threads=before))
        assert summary["threads"] == before == torch.get_num_threads()
        assert read_config(tmp_path)["threads"] == before
    finally:
        torch.set_num_threads(before)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(DeclarationError, match="--threads"):
            set_threads(bad)  # type: ignore[arg-type]


# --- non-finite losses ---------------------------------------------------------------------------


def poison(monkeypatch: pytest.MonkeyPatch, bad: set[int]) -> None:
    """Make the training forward passes numbered in `bad` (1-based) return NaN logits."""
    real = Seq2Seq.forward
    calls = [0]

    def forward(self: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        out = real(self, src, tgt)
        if torch.is_grad_enabled():
            calls[0] += 1
            if calls[0] in bad or (-1 in bad and calls[0] >= min(bad - {-1})):
                return out * float("nan")
        return out

    monkeypatch.setattr(Seq2Seq, "forward", forward)


def test_a_non_finite_loss_skips_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    poison(monkeypatch, {2, 3})
    summary = train(config(tmp_path, max_update=4, validate_interval_updates=0))
    assert summary["updates"] == 4 and summary["nonfinite_skipped"] == 2
    assert "non-finite loss at update 2" in capsys.readouterr().err
    log = ckpt_log(tmp_path)
    assert [e["update"] for e in log if e["kind"] == "skip"] == [1, 1]
    model, _, _ = trained.load_model(tmp_path, "last")
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_too_many_non_finite_losses_stop_and_keep_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    poison(monkeypatch, {4, -1})  # every training forward from the 4th on
    with pytest.raises(TrainingError, match="10 non-finite losses in a row after update 3"):
        train(config(tmp_path, max_update=30))
    assert ckpt.read_commit(tmp_path, "checkpoint_last")["update"] == 3  # type: ignore[index]
    model, _, _ = trained.load_model(tmp_path, "last")
    assert all(torch.isfinite(p).all() for p in model.parameters())


# --- the language-model task ---------------------------------------------------------------------


def lm_config(save_dir: Path, **changes: Any) -> TrainConfig:
    """A one-block language model on the English side of the tiny corpus (RK2 blocks)."""
    settings = {**RUN, "max_update": 4, "save_interval_updates": 2, "validate_interval_updates": 2}
    return TrainConfig(
        "ode-transformer-rk2",
        f"{TINY}:de-en",
        str(save_dir),
        task="language_model",
        **{**settings, **changes},
    )


def test_a_language_models_batches_have_no_source() -> None:
    windows = TokenBlocks([[2, 7, 7], [8] * 9], [[7, 7, 3], [8] * 9], text_bytes=30, lines=2)
    assert windows.sizes().tolist() == [3, 9]
    batch = collate(windows, [0, 1])
    assert batch.src.tolist() == [[0], [0]] and batch.ntokens == 3 + 9
    assert batch.prev_output[0].tolist() == [2, 7, 7, 0, 0, 0, 0, 0, 0]


def test_language_model_trains_validates_and_loads(
    reference: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    from butcherflow.assemble import LanguageModel
    from butcherflow.train.step import validate

    summary = train(lm_config(tmp_path))
    assert summary["updates"] == 4 and summary["stopped"] == "max_update 4 reached"
    assert read_config(tmp_path)["task"] == "language_model"
    commit = ckpt.read_commit(tmp_path, "checkpoint_last")
    assert commit is not None and commit["update"] == 4
    assert math.isclose(commit["valid_ppl"], 2 ** commit["valid_nll_loss"], rel_tol=1e-12)
    model, vocab, _ = trained.load_language_model(tmp_path, "last")
    assert isinstance(model, LanguageModel) and len(model.blocks) == 1  # --encoder-layers 1
    # the perplexity in the commit is the model's on the target side of valid, recomputed here
    from butcherflow.data import load_corpus

    settings = lm_config(tmp_path)
    valid = encode(settings, load_corpus(f"{TINY}:de-en").valid, vocab, model.recipe)
    nullcontext = __import__("contextlib").nullcontext
    again = validate(model, valid, settings, torch.device("cpu"), nullcontext, Process())
    assert math.isclose(again["valid_ppl"], commit["valid_ppl"], rel_tol=1e-9)
    with pytest.raises(ckpt.CheckpointError, match="language_model run, not a translation"):
        trained.load_model(tmp_path, "last")
    with pytest.raises(ckpt.CheckpointError, match="translation run, not a language model"):
        trained.load_language_model(reference[0], "last")


def test_a_language_models_best_checkpoint_is_judged_unsmoothed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With label smoothing given, the smoothed loss falls at update 4 while the nll rises: a
    language model's best stays at update 2 (what perplexity measures), a translation model's
    moves to 4 (fairseq's criterion loss)."""
    real = loop.validate
    for task_config, best in ((lm_config(tmp_path / "lm", label_smoothing=0.1), 2), (None, 4)):
        scripted = iter([(3.0, 2.0), (1.0, 2.5)])  # (smoothed, nll) at updates 2 and 4

        def validate(*args: Any, scripted: Any = scripted, **kwargs: Any) -> dict[str, float]:
            smoothed, nll = next(scripted)
            return {**real(*args, **kwargs), "valid_loss": smoothed, "valid_nll_loss": nll}

        monkeypatch.setattr(loop, "validate", validate)
        settings = task_config or config(tmp_path / "mt", max_update=4, validate_interval_updates=2)
        train(settings)
        commit = ckpt.read_commit(Path(settings.save_dir), "checkpoint_best")
        assert commit is not None and commit["update"] == best, settings.task


def test_language_model_resumes_to_the_same_weights(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    train(lm_config(whole))
    parts = tmp_path / "parts"
    assert train(lm_config(parts, max_update=2))["updates"] == 2
    assert train(lm_config(parts))["updates"] == 4  # resumed from update 2
    assert_same_weights(
        whole / "checkpoint_last.safetensors", parts / "checkpoint_last.safetensors"
    )
    translation = {"task": "translation", "tokens_per_sample": None, "sample_break_mode": None}
    with pytest.raises(DeclarationError, match="--task"):  # a translation run is another run
        train(dataclasses.replace(lm_config(parts, max_update=6), **translation))


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        ({"task": "lm"}, ["--task", "'lm'", "translation, language_model"]),
        ({"recipe": "macaron"}, ["RECIPE", "param_budget", "language model"]),
    ],
)
def test_bad_language_model_settings(
    tmp_path: Path, changes: dict[str, Any], fragments: list[str]
) -> None:
    with pytest.raises(DeclarationError) as info:
        train(dataclasses.replace(lm_config(tmp_path), **changes))
    for fragment in fragments:
        assert fragment in str(info.value)


def test_language_model_refuses_validation_bleu(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match="--validate-bleu"):
        train(lm_config(tmp_path), validate_bleu=lambda *args: 0.0)
    argv = ["train", "ode-transformer-rk2", "--data", f"{TINY}:de-en", "--task", "language_model"]
    argv += [f for f in CLI_FLAGS if not f.startswith("--max-update")]
    argv += ["--save-dir", str(tmp_path), "--max-update", "1"]
    assert main(argv) == 0 and read_config(tmp_path)["task"] == "language_model"


# --- the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "fragments"),
    [
        (["--max-tokens", "0"], ["--max-tokens", "0"]),
        (["--precision", "fp8"], ["--precision", "fp8"]),
        (["--device", "cpu", "--precision", "fp16"], ["--precision", "GPU"]),
        (["--keep-last-checkpoints", "2"], ["--keep-last-checkpoints"]),
        (["--max-tokens", "8"], ["--max-tokens", "8", "positions"]),
        (["--vocab-size", "100000"], ["--vocab-size", "100000"]),
    ],
)
def test_bad_flags_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], fragments: list[str]
) -> None:
    argv = ["train", "transformer-small", "--data", f"{TINY}:de-en", "--save-dir", str(tmp_path)]
    assert main(argv + flags) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


def test_a_failed_first_attempt_does_not_hold_the_save_dir(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match="--max-tokens"):
        train(config(tmp_path, max_tokens=8))
    assert train(config(tmp_path, max_update=1))["updates"] == 1  # the corrected command


def test_a_non_number_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["train", "transformer-small", "--data", "x", "--save-dir", "y", "--lr", "fast"])
    assert info.value.code == 2 and "--lr: invalid float value: 'fast'" in capsys.readouterr().err


# --- DDP -----------------------------------------------------------------------------------------


def _batches(count: int) -> list[Any]:
    generator = torch.Generator().manual_seed(3)
    split = EncodedSplit(
        [
            torch.randint(4, 50, (int(n),), generator=generator).tolist()
            for n in range(3, 3 + 4 * count)
        ],
        [
            torch.randint(4, 50, (int(n),), generator=generator).tolist()
            for n in range(2, 2 + 4 * count)
        ],
    )
    return [collate(split, list(range(4 * i, 4 * i + 4))) for i in range(count)]


def _model() -> Seq2Seq:
    recipe = resolve_recipe(TrainConfig("transformer-small", "x", "y", dropout=0.0, **SIZES), 50)
    torch.manual_seed(0)
    return Seq2Seq(recipe, 50).double()


def _gradients(
    model: torch.nn.Module, batches: list[Any], world_size: int
) -> tuple[float, dict[str, torch.Tensor]]:
    loss, _ = forward_backward(
        model,
        batches,
        epsilon=0.1,
        pad=0,
        device=torch.device("cpu"),
        autocast=__import__("contextlib").nullcontext,
        scaler=torch.amp.GradScaler("cpu", enabled=False),
        world_size=world_size,
    )
    inner = getattr(model, "module", model)
    return loss, {k: p.grad.clone() for k, p in inner.named_parameters() if p.grad is not None}


def _ddp_worker(rank: int, port: int) -> None:
    torch.set_num_threads(1)
    batches = _batches(4)
    loss_one, grads_one = _gradients(_model(), batches, world_size=1)  # one process, all four
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.distributed.init_process_group("gloo", rank=rank, world_size=2)
    try:
        ddp = torch.nn.parallel.DistributedDataParallel(_model())
        # rank r gets micro-batches 2r and 2r+1: update_freq 2, no_sync on the first
        loss_two, grads_two = _gradients(ddp, batches[2 * rank : 2 * rank + 2], world_size=2)
        assert math.isclose(loss_one, loss_two, rel_tol=1e-12)
        assert grads_one.keys() == grads_two.keys()
        for key in grads_one:
            torch.testing.assert_close(grads_two[key], grads_one[key], rtol=1e-10, atol=1e-12)
    finally:
        # as the training loop does before it leaves the group: gloo's worker threads drop the
        # last all-reduce's gradients (which need the GIL) while this thread waits here, not
        # while destroy_process_group holds the GIL and joins them (pytorch#56297: a hang)
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def test_two_process_ddp_computes_the_one_process_gradients() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workers = torch.multiprocessing.spawn(_ddp_worker, args=(port,), nprocs=2, join=False)
    deadline = time.monotonic() + 300  # a hang fails the test instead of the whole run
    while not workers.join(timeout=5):
        if time.monotonic() > deadline:
            for process in workers.processes:
                process.kill()
            pytest.fail("the two DDP processes did not end within 300 s")


def test_one_process_under_torchrun_joins_a_group_and_trains_through_ddp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """torchrun --nproc-per-node 1 runs the DDP code of a larger job (gloo here, NCCL on a GPU:
    tests/test_gpu.py); a plain process joins no group."""
    assert distributed.init("cpu") == Process()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torchrun = {"TORCHELASTIC_RUN_ID": "test", "WORLD_SIZE": "1", "RANK": "0"}
    torchrun |= {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    for name, value in torchrun.items():
        monkeypatch.setenv(name, value)
    process = distributed.init("cpu")
    try:
        assert process == Process(0, 1, 0, "gloo") and process.distributed
        assert torch.distributed.is_initialized()
    finally:
        distributed.cleanup()


# --- the benchmark -------------------------------------------------------------------------------


def test_bench_train_writes_its_section(benchmarks_md: Path) -> None:
    from butcherflow.bench.train.section import run_train_bench

    output = benchmarks_md
    rows = run_train_bench(
        str(output),
        "butcherflow bench train (test)",
        data=f"{TINY}:de-en",
        vocab_size=200,
        max_tokens=512,
        updates=2,
        warmup=1,
        sizes={k: v for k, v in SIZES.items() if k != "vocab_size"},
    )
    names = [r.name for r in rows]
    assert names[0] == "transformer-small" and names[2] == "ode-transformer-rk2-gated"
    assert names[1].startswith("torch.nn.Transformer (32/2/64, 1+1 layers)") and len(rows) == 3
    assert rows[0].parameters == rows[1].parameters  # the same sizes
    assert all(r.tokens > 0 and r.seconds > 0 for r in rows)
    assert rows[2].reference == names[1]
    text = output.read_text()
    assert "kept" in text and "<!-- bench:train:start -->" in text
    assert "| transformer-small | " in text
    assert f", {torch.get_num_threads()} torch thread(s); load average " in text


def test_transformer_small_against_torch_is_stated_once() -> None:
    """One figure, one home: docs/benchmarks.md compares transformer-small with
    torch.nn.Transformer only in the CPU `bench train` section, which names its thread count,
    and in the length-bucket comparison (`train-buckets`: the same bench on bucketed batches,
    each model beside its unbucketed copy, which is that section's figure), each once.
    The sections are read as `bench train` writes them (their tables, by column name), so that
    rerunning the benchmark, whatever its columns, keeps this test true."""
    text = (TINY.parent.parent.parent / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    train = read_section(text, "train")
    assert train is not None and "torch thread(s)" in train
    rows = {row["model"]: row for row in table_rows(train)}
    (reference,) = [name for name in rows if name.startswith("torch.nn.Transformer (")]
    assert float(rows["transformer-small"]["vs torch.nn.Transformer"]) > 0
    keys = re.findall(r"<!-- bench:([\w.+-]+):start -->", text)
    compared = [
        key
        for key in keys
        for row in table_rows(read_section(text, key) or "")
        if row.get("model") == "transformer-small" and "vs torch.nn.Transformer" in row
    ]
    assert sorted(compared) == ["train", "train-buckets"]
    assert [(read_section(text, key) or "").count(f"| {reference} |") for key in compared] == [1, 1]


@pytest.mark.slow
def test_torchrun_two_processes_match_one_process_with_update_freq_2(tmp_path: Path) -> None:
    """The whole loop under torchrun (gloo): 2 processes x 1 micro-batch take the same global
    batches as 1 process x update_freq 2, so the weights agree (to rounding)."""
    flags = [*CLI_FLAGS, "--dropout=0", "--max-update=6", "--max-tokens=1024"]
    base = ["-m", "butcherflow.cli", "train", "transformer-small", "--data", f"{TINY}:de-en"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2"]
    two = subprocess.run(
        [*torchrun, *base, "--save-dir", str(tmp_path / "two"), *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert two.returncode == 0, two.stderr[-3000:]
    assert "2 process(es)" in two.stdout
    one = subprocess.run(
        [sys.executable, *base, "--save-dir", str(tmp_path / "one"), *flags, "--update-freq=2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert one.returncode == 0, one.stderr[-3000:]
    left = weights(tmp_path / "two" / "checkpoint_last.safetensors")
    right = weights(tmp_path / "one" / "checkpoint_last.safetensors")
    for key in left:
        torch.testing.assert_close(left[key], right[key], rtol=1e-4, atol=1e-5)


def test_learned_stream_matrices_are_reported_in_the_log_and_by_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A general linear stack's trained V: spectral radius and max ‖Vⁿ‖ per layer, in the
    validation log line, in log.jsonl and in `butcherflow show RUN_DIR`."""
    from butcherflow.savedir.curves import read_log

    run = TrainConfig(
        "hyper-connections",
        f"{TINY}:de-en",
        str(tmp_path),
        **{**RUN, "max_update": 4, "save_interval_updates": 0},
    )
    train(run)
    said = capsys.readouterr().out
    assert "V: max spectral radius" in said
    valid = [e for e in read_log(tmp_path / "log.jsonl") if e.get("kind") == "valid"]
    streams = valid[-1]["streams"]
    assert [s["where"] for s in streams] == ["encoder.0 layer 0"]
    assert all(s["radius"] > 0.5 and s["worst"] >= s["radius"] - 1e-9 for s in streams)
    assert main(["show", str(tmp_path)]) == 0
    shown = capsys.readouterr().out
    assert "encoder.0 layer 0: spectral radius" in shown and "max ‖Vⁿ‖" in shown
