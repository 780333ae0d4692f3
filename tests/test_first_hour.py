"""A new user's first hour (issue 14): work is never lost, nothing is silently endless, and
commands say the right thing.

Checkpoints: a new best keeps the old one readable until it is committed; a corrupt last
checkpoint resumes from the newest intact one and keeps the corrupt files; Ctrl-C and SIGTERM
commit a checkpoint and exit 130 / 143. Bad flags are refused before a save dir is created; a
declaration whose proof refutes its claimed order is refused unless the run says otherwise.
Everything runs on CPU at tiny sizes on tests/data/tiny, as in test_train.py.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import CLI_FLAGS, RUN, TINY, assert_same_weights, config

import butcherflow as bf
from butcherflow import DeclarationError
from butcherflow.assemble import Seq2Seq, load_recipe
from butcherflow.assemble.declarations import pinned
from butcherflow.cli import main
from butcherflow.errors import ButcherflowWarning
from butcherflow.generate import evaluate_perplexity
from butcherflow.savedir import checkpoint as ckpt
from butcherflow.savedir import read_config, read_log, read_recipe, run_sizes, trained
from butcherflow.train import TrainConfig, train
from butcherflow.train import run as train_run
from butcherflow.train.config import resolve_recipe
from butcherflow.train.resume import Progress
from butcherflow.train.run import schedule_note, stop_note
from butcherflow.train.ticker import updates_to_stop

ROOT = Path(__file__).parents[1]

pytestmark = pytest.mark.usefixtures("vocab_cache")  # conftest.py


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted run that interrupted and resumed runs must reproduce."""
    save_dir = tmp_path_factory.mktemp("reference")
    train(config(save_dir))
    return save_dir


# --- work is never lost --------------------------------------------------------------------------


def test_a_best_killed_before_its_commit_leaves_the_previous_best(
    reference: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = ckpt.write_json
    crashed = []

    def crash(path: Path, data: Any) -> None:
        if path.name == "checkpoint_best.json" and data.get("update") == 8:
            crashed.append(path)
            raise KeyboardInterrupt  # as if killed between the new files and their commit
        real(path, data)

    monkeypatch.setattr(ckpt, "write_json", crash)
    with pytest.raises(KeyboardInterrupt):
        train(config(tmp_path))
    assert crashed
    monkeypatch.setattr(ckpt, "write_json", real)
    assert not (tmp_path / "checkpoint_best.json").exists()
    found = ckpt.committed(tmp_path, "checkpoint_best")
    assert found is not None and found[0] == "checkpoint_best.previous"
    assert found[1]["update"] == 4
    with pytest.warns(ButcherflowWarning, match=r"checkpoint_best\.previous \(update 4\)"):
        paths = trained.checkpoint_paths(tmp_path, "best")
    assert paths == [tmp_path / "checkpoint_best.previous.safetensors"]
    with pytest.warns(ButcherflowWarning):
        trained.load_model(tmp_path, "best")
    train(config(tmp_path))  # the same command again: resumes and ends as if never killed
    for name in ("checkpoint_best", "checkpoint_last"):
        assert_same_weights(reference / f"{name}.safetensors", tmp_path / f"{name}.safetensors")
    assert not list(tmp_path.glob("*.previous.*"))


def test_a_corrupt_last_checkpoint_resumes_from_the_newest_intact_one(
    reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_dir = tmp_path / "copy"
    shutil.copytree(reference, save_dir)
    truncated = (save_dir / "checkpoint_last.safetensors").read_bytes()[:1000]
    (save_dir / "checkpoint_last.safetensors").write_bytes(truncated)
    best = ckpt.read_commit(save_dir, "checkpoint_best")
    assert best is not None
    summary = train(config(save_dir, max_update=16))
    assert summary["updates"] == 16
    err = capsys.readouterr().err
    assert "checkpoint_last.safetensors is truncated or corrupt" in err
    assert "kept as checkpoint_last.corrupt-1.*" in err
    assert f"resuming from checkpoint_best instead (update {best['update']})" in err
    # the corrupt files are kept, byte for byte, under a name the next save cannot replace
    assert (save_dir / "checkpoint_last.corrupt-1.safetensors").read_bytes() == truncated
    assert (save_dir / "checkpoint_last.corrupt-1.json").is_file()
    assert ckpt.read_commit(save_dir, "checkpoint_last")["update"] == 16  # type: ignore[index]


def test_no_intact_checkpoint_is_one_error_naming_each(reference: Path, tmp_path: Path) -> None:
    save_dir = tmp_path / "copy"
    shutil.copytree(reference, save_dir)
    for weights in save_dir.glob("checkpoint_*.safetensors"):
        weights.write_bytes(b"")
    with pytest.raises(ckpt.CheckpointError, match="no intact checkpoint to resume from"):
        train(config(save_dir, max_update=16))
    assert len(list(save_dir.glob("checkpoint_*.safetensors"))) >= 2  # nothing deleted


@pytest.mark.parametrize(
    ("flags", "fragments"),
    [
        (["--d-model", "66"], ["d_model", "66", "n_heads"]),
        (["--max-tokens", "5"], ["--max-tokens", "5"]),
        (["--buckets", "1"], ["--buckets", "1"]),
    ],
)
def test_bad_flags_leave_no_save_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], fragments: list[str]
) -> None:
    save_dir = tmp_path / "run"
    argv = ["train", "transformer-small", "--data", f"{TINY}:de-en", "--save-dir", str(save_dir)]
    assert main([*argv, "--vocab-size", "200", *flags]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err
    assert not save_dir.exists()


def test_a_recipe_the_compiler_refuses_leaves_no_save_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "models" / "transformer-small.toml").read_text()
    recipe = tmp_path / "bad.toml"
    recipe.write_text(text.replace('field = "san+ffn"', 'field = "san+ffn"\ncoefficients = "x"'))
    save_dir = tmp_path / "run"
    argv = ["train", str(recipe), "--data", f"{TINY}:de-en", "--save-dir", str(save_dir)]
    assert main([*argv, "--vocab-size", "200"]) == 1
    assert "encoder.coefficients" in capsys.readouterr().err
    assert not save_dir.exists()


def test_an_unknown_recipe_leaves_no_save_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_dir = tmp_path / "run"
    argv = ["train", "transformer-smal", "--data", f"{TINY}:de-en", "--save-dir", str(save_dir)]
    assert main(argv) == 1
    assert "transformer-smal" in capsys.readouterr().err
    assert not save_dir.exists()


@pytest.mark.parametrize("where", ["file", "inside"])
def test_a_save_dir_that_is_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")
    save_dir = tmp_path / "notes.txt" / ("run" if where == "inside" else "")
    argv = ["train", "transformer-small", "--data", f"{TINY}:de-en", "--save-dir", str(save_dir)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "--save-dir" in err
    assert "not a folder" in err
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


# --- the claims a run trains with ----------------------------------------------------------------


@pytest.fixture
def false_claim(tmp_path: Path) -> Path:
    """A recipe whose encoder runs Heun's method declared (wrongly) as order 3."""
    (tmp_path / "heun3.toml").write_text(
        'name = "heun3"\nfamily = "runge-kutta"\norder = 3\nA = [[0, 0], [1, 0]]\n'
        'b = ["1/2", "1/2"]\n'
    )
    text = (ROOT / "models" / "ode-transformer-rk2.toml").read_text()
    recipe = tmp_path / "wrong.toml"
    recipe.write_text(text.replace('"heun"', '"heun3.toml"'))
    assert "heun3.toml" in recipe.read_text()
    return recipe


def test_a_refuted_order_claim_is_refused_unless_allowed(
    false_claim: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_dir = tmp_path / "run"
    small = {**RUN, "max_update": 1, "encoder_layers": 1, "decoder_layers": 1}
    with pytest.raises(DeclarationError) as info:
        train(TrainConfig(str(false_claim), f"{TINY}:de-en", str(save_dir), **small))
    message = str(info.value)
    assert "heun3" in message and "order is claimed 3 but proved 2" in message
    assert "--allow-failed-claims" in message and "\n" not in message
    assert not save_dir.exists()
    settings = {**small, "allow_failed_claims": True}
    train(TrainConfig(str(false_claim), f"{TINY}:de-en", str(save_dir), **settings))
    assert "training anyway" in capsys.readouterr().err
    saved = read_config(save_dir)
    assert saved["allow_failed_claims"] is True
    assert "order is claimed 3 but proved 2" in saved["failed_claims"]["encoder.method"]


def test_a_resumed_run_reads_its_recorded_proof(
    false_claim: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = {**RUN, "max_update": 1, "encoder_layers": 1, "decoder_layers": 1}
    first = TrainConfig(str(false_claim), f"{TINY}:de-en", str(tmp_path), **small)
    train(dataclasses.replace(first, allow_failed_claims=True))

    def unproved(recipe: Any) -> None:
        raise AssertionError("a resumed run proved its declarations again")

    monkeypatch.setattr(train_run, "failed_claims", unproved)
    with pytest.raises(DeclarationError, match="order is claimed 3 but proved 2"):
        train(dataclasses.replace(first, max_update=2))  # the recorded verdict, not allowed now
    resumed = dataclasses.replace(first, max_update=2, allow_failed_claims=True)
    assert train(resumed)["updates"] == 2


def test_the_allow_failed_claims_flag(false_claim: Path, tmp_path: Path) -> None:
    argv = ["train", str(false_claim), "--data", f"{TINY}:de-en", "--save-dir", str(tmp_path)]
    flags = [*CLI_FLAGS, "--max-update=1", "--allow-failed-claims"]
    assert main(argv + flags) == 0
    assert read_config(tmp_path)["allow_failed_claims"] is True


# --- a recipe at a run's sizes -------------------------------------------------------------------


def test_with_overrides_is_the_recipe_a_run_trained(tmp_path: Path) -> None:
    run = TrainConfig("transformer-small", "x", "y", **{**RUN, "dropout": 0.0})
    resized = load_recipe("transformer-small").with_overrides(run.to_json())
    assert pinned(resized) == resolve_recipe(run, 200)
    assert resized.sizes["d_model"] == 32 and resized.sizes["dropout"] == 0.0
    assert resized.encoder is not None and resized.encoder.layers == 1
    assert load_recipe("transformer-small").with_overrides(d_model=None) == load_recipe(
        "transformer-small"
    )
    with pytest.raises(DeclarationError, match="lr"):
        load_recipe("transformer-small").with_overrides(lr=1.0)
    with pytest.raises(DeclarationError, match="d_ffn"):
        load_recipe("macaron").with_overrides(d_ffn=64)
    with pytest.raises(DeclarationError, match="dropout"):
        load_recipe("transformer-small").with_overrides(dropout=2.0)


def test_warm_start_from_a_run_trained_with_size_overrides(tmp_path: Path) -> None:
    sizes = {**RUN, "max_update": 1, "dropout": 0.0}
    train(TrainConfig("transformer-small", f"{TINY}:de-en", str(tmp_path), **sizes))
    recipe = load_recipe("floater").with_overrides(run_sizes(read_recipe(tmp_path)))
    torch.manual_seed(0)
    model = Seq2Seq(recipe, 200)
    bf.warm_start(model, tmp_path / "checkpoint_last.safetensors")
    transformer, _, _ = trained.load_model(tmp_path, "last")
    src, prev = torch.tensor([[5, 6, 7, 8]]), torch.tensor([[2, 9, 10]])
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(src, prev), transformer(src, prev))


# --- nothing is silently endless -----------------------------------------------------------------


def test_the_schedule_and_the_stop_rules_are_said_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train(config(tmp_path, max_update=2, warmup_updates=4000))
    out = capsys.readouterr()
    said = out.out + out.err
    assert "peak lr 0.002 at update 4000" in said
    assert "--max-update 2 ends the run during warm-up" in said
    endless = stop_note(config(tmp_path, max_update=0))
    assert endless.startswith("warning: no stop rule") and "until you stop it" in endless
    assert "no stop rule" not in stop_note(config(tmp_path, max_update=0, max_epoch=3))
    assert "at update 3" in schedule_note(config(tmp_path))


def test_train_help_points_at_small_data_settings(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "make demo" in " ".join(capsys.readouterr().out.split())


def test_the_start_line_records_threads(tmp_path: Path) -> None:
    train(config(tmp_path, max_update=1, threads=1))
    start = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert any(e["kind"] == "start" and e["threads"] == 1 for e in start)


# --- Ctrl-C and SIGTERM --------------------------------------------------------------------------

# The CLI, with a signal sent to itself during update 8 and again while that update's checkpoint
# is being written (the second Ctrl-C of an impatient user); argv[1] names the signal.
INTERRUPTED_AT_UPDATE_8 = """
import os, signal, sys
from butcherflow.cli import main
from butcherflow.train import loop

SIGNAL = getattr(signal, sys.argv.pop(1))
calls = []
real_forward_backward, real_save = loop.forward_backward, loop.save_checkpoint

def forward_backward(*args, **kwargs):
    calls.append(1)
    if len(calls) == 8:
        os.kill(os.getpid(), SIGNAL)
    return real_forward_backward(*args, **kwargs)

def save_checkpoint(save_dir, names, *args, **kwargs):
    if len(calls) == 8:
        os.kill(os.getpid(), signal.SIGINT)
    return real_save(save_dir, names, *args, **kwargs)

loop.forward_backward, loop.save_checkpoint = forward_backward, save_checkpoint
sys.exit(main(sys.argv[1:]))
"""


# One signal in the default run (the same path); SIGTERM with the slow tests.
@pytest.mark.parametrize(
    ("name", "code"), [("SIGINT", 130), pytest.param("SIGTERM", 143, marks=pytest.mark.slow)]
)
def test_a_signal_commits_the_update_and_exits_128_plus_its_number(
    reference: Path, tmp_path: Path, name: str, code: int
) -> None:
    save_dir = tmp_path / "run"
    argv = ["train", "transformer-small", "--data", f"{TINY}:de-en", "--save-dir", str(save_dir)]
    command = [sys.executable, "-c", INTERRUPTED_AT_UPDATE_8, name, *argv, *CLI_FLAGS]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    ran = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ran.returncode == code, ran.stderr[-2000:]
    assert "Traceback" not in ran.stderr
    assert "interrupted at update 8; rerun the same command to resume" in ran.stderr
    assert "SIGINT again: still writing" in ran.stderr
    assert ckpt.read_commit(save_dir, "checkpoint_last")["update"] == 8  # type: ignore[index]
    train(config(save_dir))  # the same command again
    for kept in ("checkpoint_last", "checkpoint_best"):
        assert_same_weights(reference / f"{kept}.safetensors", save_dir / f"{kept}.safetensors")


def test_a_signal_before_the_first_update_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGINT)
        raise AssertionError("the signal did not interrupt")

    monkeypatch.setattr("butcherflow.train.run.load_corpus", interrupted)
    argv = ["train", "transformer-small", "--data", f"{TINY}:de-en", "--save-dir", str(tmp_path)]
    # what was there before: Python's default, or SIG_IGN under a shell's `cmd &` (nohup, CI)
    before = signal.getsignal(signal.SIGINT)
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "interrupted (SIGINT) before the first update" in err
    assert signal.getsignal(signal.SIGINT) is before  # handlers restored


# --- commands that say the right thing -----------------------------------------------------------


def test_evaluate_reports_a_language_models_perplexity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train(config(tmp_path, max_update=2, task="language_model", decoder_layers=None))
    commit = ckpt.read_commit(tmp_path, "checkpoint_last")
    assert commit is not None and commit["update"] == 2
    valid = evaluate_perplexity(tmp_path, "valid", checkpoint="last", max_tokens=2048)
    assert valid.ppl == pytest.approx(commit["valid_ppl"], rel=1e-6)  # as the loop measured
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path), "--checkpoint", "last"]) == 0
    out = capsys.readouterr().out
    assert "test (30 sentences as " in out and "language model; recorded in " in out
    assert "perplexity = " in out and " bits per byte (" in out
    entry = read_log(tmp_path / "log.jsonl")[-1]
    assert (entry["kind"], entry["update"], entry["subset"]) == ("evaluate", 2, "test")
    assert f"perplexity = {entry['ppl']:.2f}" in out


@pytest.mark.parametrize("command", ["evaluate", "translate"])
def test_generation_help_shows_the_defaults(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "beam size (1: greedy) (default: 5)" in out and "(default: best)" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"butcherflow {bf.__version__}"


def test_average_refuses_an_output_in_a_missing_folder(
    reference: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "nowhere" / "x.safetensors"
    assert main(["average", str(reference), "--last", "2", "-o", str(output)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--output" in err and "does not exist" in err
    assert not output.parent.exists()
    assert main(["average", str(reference), "--last", "2", "-o", str(tmp_path / "x.st")]) == 0


def test_show_tells_a_recipe_from_a_solver_by_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recipe = tmp_path / "my-recipe.toml"
    shutil.copyfile(ROOT / "models" / "ode-transformer-rk2.toml", recipe)
    assert main(["show", str(recipe)]) == 0
    assert "order of its blocks as they train" in capsys.readouterr().out
    (tmp_path / "models").mkdir()
    solver = tmp_path / "models" / "heun.toml"
    shutil.copyfile(ROOT / "solvers" / "heun.toml", solver)
    assert main(["show", str(solver)]) == 0
    out = capsys.readouterr().out
    assert "heun" in out and "order of its blocks" not in out


# --- progress toward the stop rule ---------------------------------------------------------------


def test_a_log_file_gets_a_plain_line_every_log_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train(config(tmp_path, log_interval=5))  # capsys: stderr is not a terminal
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = [line for line in err.splitlines() if " | update " in line]
    assert [line.split(" | ")[1] for line in lines] == ["update 5/14", "update 10/14"]
    assert all(" | eta " in line and " | tok_s " in line for line in lines)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_bar_toward_the_stop_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    train(config(tmp_path, max_update=0, max_epoch=2, validate_interval_updates=0))
    drawn = screen.getvalue()
    assert "\r" in drawn and " | update " not in drawn
    assert "epoch 002" in drawn and "/22 [" in drawn  # 2 epochs of 11 updates, one bar


def test_updates_to_stop_is_the_first_rule(tmp_path: Path) -> None:
    progress = Progress(update=30, epoch=3)
    assert updates_to_stop(config(tmp_path, max_update=0), progress, 4, 11) is None
    assert updates_to_stop(config(tmp_path, max_update=100), progress, 4, 11) == 100
    by_epoch = config(tmp_path, max_update=0, max_epoch=5)
    assert updates_to_stop(by_epoch, progress, 4, 11) == 30 + 4 + 2 * 11
    assert updates_to_stop(config(tmp_path, max_update=40, max_epoch=5), progress, 4, 11) == 40


# --- the demo: the same result on every machine --------------------------------------------------


def test_train_prints_its_throughput_and_warns_when_far_below_the_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["train", "transformer-small", "--data", f"{TINY}:de-en", "--save-dir", str(tmp_path)]
    assert main([*argv, *CLI_FLAGS, "--max-update=2", "--expect-tokens-per-s=1e12"]) == 0
    out, err = capsys.readouterr()
    assert "2 updates (" in out and " target tokens/s; best valid loss" in out
    assert "far below the 1,000,000,000,000 expected here" in err
    assert main([*argv, *CLI_FLAGS, "--max-update=3", "--expect-tokens-per-s=1"]) == 0
    out, err = capsys.readouterr()
    assert "far below" not in err
    # resumed: the run's tokens, and how many of them this command trained in its seconds
    done = re.search(r"3 updates \(([\d,]+) target tokens in all; this command: ([\d,]+) of", out)
    assert done is not None, out
    assert 0 < int(done[2].replace(",", "")) < int(done[1].replace(",", ""))


def test_the_demo_is_budgeted_in_updates() -> None:
    makefile = (ROOT / "Makefile").read_text()
    demo = makefile.split("\ndemo:")[1].split("\n\n")[0]
    assert "--max-update $(DEMO_UPDATES)" in demo and "--time-budget" not in demo
    assert "--expect-tokens-per-s $(DEMO_TOKENS_PER_S)" in demo
    assert "DEMO_UPDATES ?= 800" in makefile


@pytest.mark.parametrize("command", ["evaluate", "translate"])
def test_generation_takes_threads(
    reference: Path,
    command: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = torch.get_num_threads()
    monkeypatch.setattr(sys, "stdin", io.StringIO("ein Satz\n"))
    try:
        assert main([command, str(reference), "--beam", "1", "--threads", "1"]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert main([command, str(reference), "--threads", "0"]) == 1
    assert "--threads" in capsys.readouterr().err
