"""Run an experiment: train every run, evaluate it, write `result.json`, then the reports.

`run_experiment("translation", budget=1000)` trains each run of the declaration into its own
save dir `RUNS_DIR/NAME/<run>-seed<S>` with `train(TrainConfig(..., max_update=budget))` (the
run's declared budget and patience unless `budget` replaces them), then evaluates it and writes
`result.json` there (atomically). A rerun skips runs whose `result.json` matches (`same_run`:
run, seed, recipe, budget, patience, corpus and sizes), and resumes the others (the training loop
resumes from its last checkpoint by itself; interval checkpoints every 200 updates bound what a
kill loses). Ctrl-C or SIGTERM stops the whole experiment with `Interrupted` once the training
loop has committed its checkpoint: the stopped run is neither evaluated nor given a `result.json`,
so the rerun resumes it instead of reporting a model trained for a fraction of its budget.
A run whose save dir has no `result.json` but whose matching result is in the committed record
`OUT/NAME.json` is carried over from it rather than retrained (the record is what the repository
keeps; save dirs are not committed); the report says which results were carried over and when
they were made. At the end it writes `OUT/NAME.json` (every result),
`OUT/NAME.md`, `OUT/NAME.png` and regenerates `OUT/index.md` (`report.py`); `write_reports`
rebuilds those from the JSON alone, without training. `evaluation.py` evaluates a finished run
(the decoding, the metrics and the throughput every report states).

Recipes the catalog does not hold (`Variant`s) and parameter-matched recipes (`param_budget`)
are written as recipe files into `RUNS_DIR/NAME/recipes/`: a `param_budget` recipe is matched to
its budget recipe *at the preset's sizes* (the budget recipe is written with the preset's d_ffn),
so Macaron at the `small` preset has the parameter count of the `small` residual Transformer.
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, final

import tomli_w

from ..assemble import load_recipe
from ..devices import check_threads, resolve_device, set_threads, threads_note
from ..errors import ButcherflowError, DeclarationError, UnknownNameError
from ..savedir import read_commit, read_log
from ..savedir.atomic import write_json, write_text
from ..savedir.layout import BEST, LOG
from ..tasks import task_named
from ..train import Interrupted, TrainConfig, train
from ..train.loop import INTERRUPTED
from .catalog import EXPERIMENTS
from .curves import valid_curve
from .evaluation import (
    DECODING,
    EVALUATIONS,
    code_version,
    machine,
    throughput,
)
from .index import write_index
from .presets import get_preset
from .report import DEFAULT_OUT, write_report
from .spec import Experiment, Preset, Run, Variant, check_seeds, recipe_table
from .summary import read_aggregate

RESULT = "result.json"
SAVE_INTERVAL = 200
DEFAULT_RUNS_DIR = "runs/experiments"

Echo = Callable[[str], None]


def get_experiment(name: str) -> Experiment:
    """The declared experiment called `name` (an error lists them, with close matches)."""
    if name not in EXPERIMENTS:
        close = difflib.get_close_matches(name, list(EXPERIMENTS), n=2)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise UnknownNameError(
            f"no experiment named '{name}'; {hint}experiments: " + ", ".join(EXPERIMENTS)
        )
    return EXPERIMENTS[name]


@final
@dataclass(frozen=True)
class Invocation:
    """One `butcherflow experiment` command, its options resolved and checked."""

    experiment: Experiment
    budget: int | None
    device: str
    preset: Preset
    out: Path
    runs_dir: Path
    data: str
    seeds: tuple[int, ...] | None
    data_override: bool
    threads: int | None = None

    def budget_of(self, run: Run) -> int:
        """The run's updates: `--budget`, else the run's declared budget, else the experiment's."""
        if self.budget is not None:
            return self.budget
        return run.budget if run.budget is not None else self.experiment.budget

    def command(self) -> str:
        """The command that reproduces this invocation (defaults spelled out, paths as given)."""
        parts = ["butcherflow", "experiment", self.experiment.name]
        if self.budget is not None:
            parts += ["--budget", str(self.budget)]
        parts += ["--sizes", self.preset.name, "--device", self.device]
        if self.threads is not None:
            parts += ["--threads", str(self.threads)]
        if self.seeds is not None:
            parts += ["--seeds", *map(str, self.seeds)]
        if self.data_override:
            parts += ["--data", self.data]
        if str(self.out) != DEFAULT_OUT:
            parts += ["--out", str(self.out)]
        if str(self.runs_dir) != DEFAULT_RUNS_DIR:
            parts += ["--runs-dir", str(self.runs_dir)]
        return " ".join(parts)

    def save_dir(self, run: Run, seed: int) -> Path:
        return self.runs_dir / self.experiment.name / f"{run.name}-seed{seed}"


def plan(
    experiment: Experiment | str,
    *,
    budget: int | None = None,
    device: str = "auto",
    sizes: str | Preset = "small",
    out: str | Path = DEFAULT_OUT,
    runs_dir: str | Path = DEFAULT_RUNS_DIR,
    seeds: Sequence[int] | None = None,
    data: str | None = None,
    threads: int | None = None,
) -> Invocation:
    """Check every option before anything trains (see `run_experiment` for the arguments)."""
    declared = get_experiment(experiment) if isinstance(experiment, str) else experiment
    bad_budget = isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    if budget is not None and bad_budget:
        raise DeclarationError(
            "the budget is a number of updates per run",
            key="--budget",
            value=budget,
            valid="an integer >= 1",
        )
    resolve_device(device)  # an unknown name, or a GPU this machine lacks, stops here
    preset = get_preset(sizes) if isinstance(sizes, str) else sizes
    chosen = None
    if seeds is not None:
        chosen = tuple(seeds)
        check_seeds(chosen, "--seeds")
        declared = declared.with_seeds(chosen)
    if data is not None and not data.strip():
        raise DeclarationError("must not be empty", key="--data", value=data)
    check_threads(threads)
    declared.recipes()  # every recipe and variant loads: a typo fails before hours of training
    return Invocation(
        experiment=declared,
        budget=budget,
        device=device,
        preset=preset,
        out=Path(out),
        runs_dir=Path(runs_dir),
        data=data or declared.data,
        seeds=chosen,
        data_override=data is not None,
        threads=threads,
    )


@final
@dataclass(frozen=True)
class Outcome:
    """What `run_experiment` did: the results, which runs it trained or skipped, the files."""

    results: list[dict[str, Any]]
    trained: list[str]
    skipped: list[str]
    carried: list[str]
    report: Path
    figure: Path | None
    index: Path


def run_experiment(
    experiment: Experiment | str,
    *,
    budget: int | None = None,
    device: str = "auto",
    sizes: str | Preset = "small",
    out: str | Path = DEFAULT_OUT,
    runs_dir: str | Path = DEFAULT_RUNS_DIR,
    seeds: Sequence[int] | None = None,
    data: str | None = None,
    threads: int | None = None,
    echo: Echo = print,
) -> Outcome:
    """Train, evaluate and report one experiment (resumable; see the module docstring).

    **Arguments:**

    - `experiment`: a declared experiment's name (`truncation`, `translation`, `coefficients`,
      `extrapolation`, `depth`) or an `Experiment`.
    - `budget`: updates of every run (default: each run's declared budget).
    - `device`: `auto`, `cpu`, `cuda` or `cuda:N`, for training and evaluation.
    - `sizes`: a preset name (`small`, `base`, `tiny`) or a `Preset`.
    - `out`: where `NAME.md`, `NAME.png`, `NAME.json` and `index.md` go; `OUT/NAME.json`, when
      present, is also the record whose matching results are carried over.
    - `runs_dir`: where the save dirs go (`RUNS_DIR/NAME/<run>-seed<S>`).
    - `seeds`: replace every run's seeds.
    - `data`: replace the experiment's corpus (e.g. a small test corpus).
    - `threads`: torch's CPU threads for training and evaluation (None: torch's default).
    - `echo`: where progress lines go.

    **Returns:** an `Outcome`.
    """
    invocation = plan(
        experiment,
        budget=budget,
        device=device,
        sizes=sizes,
        out=out,
        runs_dir=runs_dir,
        seeds=seeds,
        data=data,
        threads=threads,
    )
    declared = invocation.experiment
    set_threads(threads)
    echo(f"{declared.name}: {threads_note(threads)}")
    record = recorded_results(invocation)
    results, trained, skipped, carried = _run_jobs(invocation, record, echo)
    aggregate = _aggregate(invocation, threads, results, trained, skipped, carried)
    invocation.out.mkdir(parents=True, exist_ok=True)
    report, figure = write_report(declared, aggregate, invocation.out)
    index = write_index(invocation.out, EXPERIMENTS)
    echo(f"wrote {report}" + (f", {figure}" if figure else "") + f" and {index}")
    return Outcome(results, trained, skipped, carried, report, figure, index)


def _run_jobs(
    invocation: Invocation, record: Sequence[dict[str, Any]], echo: Echo
) -> tuple[list[dict[str, Any]], list[str], list[str], list[str]]:
    """Every (run, seed)'s result: its finished save dir's, the record's (carried over), or
    trained now; with the jobs trained, skipped and carried over."""
    declared = invocation.experiment
    # Seed-major: every run's first seed trains before any second seed, so a table cut short
    # (out of time, interrupted) still has every row once.
    jobs = sorted(
        ((run, seed) for run in declared.runs for seed in run.seeds),
        key=lambda job: job[0].seeds.index(job[1]),
    )
    results: list[dict[str, Any]] = []
    trained: list[str] = []
    skipped: list[str] = []
    carried: list[str] = []
    for number, (run, seed) in enumerate(jobs, 1):
        where = f"[{number}/{len(jobs)}] {declared.name}/{run.name}-seed{seed}"
        budget_text = f"{invocation.budget_of(run)} updates" + (
            f", patience {run.patience}" if run.patience else ""
        )
        done = finished_result(invocation, run, seed)
        if done is not None and "valid_curve" not in done:  # a result from before curves
            done["valid_curve"] = valid_curve(read_log(invocation.save_dir(run, seed) / LOG))
        if done is not None:
            echo(f"{where}: done (result.json at {budget_text}), skipped")
            results.append(done)
            skipped.append(f"{run.name}-seed{seed}")
            continue
        kept = next((r for r in record if same_run(invocation, run, seed, r)), None)
        if kept is not None:
            echo(
                f"{where}: carried over from {invocation.out / declared.name}.json "
                f"(finished {kept.get('finished', 'at an unrecorded date')})"
            )
            results.append(kept)
            carried.append(f"{run.name}-seed{seed}")
            continue
        echo(f"{where}: training for up to {budget_text}, then evaluating")
        results.append(run_one(invocation, run, seed))
        trained.append(f"{run.name}-seed{seed}")
    return results, trained, skipped, carried


def _aggregate(
    invocation: Invocation,
    threads: int | None,
    results: list[dict[str, Any]],
    trained: list[str],
    skipped: list[str],
    carried: list[str],
) -> dict[str, Any]:
    """The experiment's record (`OUT/NAME.json`): how it was run, on what, and its results."""
    declared = invocation.experiment
    return {
        "experiment": declared.name,
        "title": declared.title,
        "command": invocation.command(),
        "budget": invocation.budget if invocation.budget is not None else declared.budget,
        "budget_override": invocation.budget is not None,
        "sizes": invocation.preset.name,
        "preset": invocation.preset.train_fields(),
        "data": invocation.data,
        "task": declared.task,
        "decoding": DECODING if "bleu" in task_named(declared.task).metrics else None,
        "machine": machine(invocation.device),
        "threads": threads_note(threads),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "wall_seconds": sum(r.get("wall_seconds", 0.0) for r in results),
        "trained": trained,
        "skipped": skipped,
        "carried_over": carried,
        "results": results,
    }


def write_reports(experiment: Experiment | str, out: str | Path = DEFAULT_OUT) -> Outcome:
    """Rebuild `OUT/NAME.md`, `OUT/NAME.png` and `OUT/index.md` from `OUT/NAME.json` alone, with
    this version's tables, verdicts and plots; nothing trains (`--report-only`).

    **Returns:** an `Outcome` listing no trained or skipped run.
    """
    declared = get_experiment(experiment) if isinstance(experiment, str) else experiment
    folder = Path(out)
    path = folder / f"{declared.name}.json"
    if not path.is_file():
        raise ButcherflowError(
            f"{path} does not exist: run `butcherflow experiment {declared.name}` first"
        )
    aggregate = read_aggregate(path)
    report, figure = write_report(declared, aggregate, folder)
    index = write_index(folder, EXPERIMENTS)
    return Outcome(aggregate["results"], [], [], [], report, figure, index)


def same_run(invocation: Invocation, run: Run, seed: int, result: Any) -> bool:
    """Whether `result` was made by this run and seed as this invocation would train it: the
    same recipe, budget, patience, corpus and size preset, and trained to its stop rule (a run that
    a signal stopped, which this runner once recorded as a result, is resumed, not reported)."""
    return (
        isinstance(result, dict)
        and result.get("stopped") != INTERRUPTED
        and result.get("run") == run.name
        and result.get("seed") == seed
        and result.get("budget") == invocation.budget_of(run)
        and result.get("patience", 0) == run.patience
        and result.get("data") == invocation.data
        and result.get("sizes") == invocation.preset.name
        and result.get("recipe") == run.recipe_name
    )


def finished_result(invocation: Invocation, run: Run, seed: int) -> dict[str, Any] | None:
    """The run's `result.json` when it is `same_run` as this invocation's, else None."""
    path = invocation.save_dir(run, seed) / RESULT
    if not path.is_file():
        return None
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # unreadable: evaluate again (the checkpoint is intact)
    return result if same_run(invocation, run, seed, result) else None


def recorded_results(invocation: Invocation) -> list[dict[str, Any]]:
    """The results of the committed record `OUT/NAME.json`, when it was made at this invocation's
    preset (its sizes and hyper-parameters, not only the preset's name); else none."""
    path = invocation.out / f"{invocation.experiment.name}.json"
    if not path.is_file():
        return []
    record = read_aggregate(path)
    if record.get("preset") != invocation.preset.train_fields():
        return []
    return [r for r in record["results"] if isinstance(r, dict)]


def prepare_recipe(run: Run, preset: Preset, recipes_dir: Path) -> tuple[str, bool]:
    """The `TrainConfig.recipe` of a run, writing a recipe file when the catalog has none.

    **Returns:** `(recipe name or file, budgeted)`; `budgeted` is True when the recipe sizes its
    own d_ffn (`param_budget`), which then must not be overridden.
    """
    if isinstance(run.recipe, Variant):
        table = run.recipe.table()
    else:
        recipe = load_recipe(run.recipe)
        if recipe.param_budget is None:
            return run.recipe, False
        table = recipe_table(recipe)
    recipes_dir.mkdir(parents=True, exist_ok=True)
    budget_name = table.get("param_budget")
    if budget_name is not None:  # the budget recipe at the preset's d_ffn (other sizes: overrides)
        matched = recipe_table(load_recipe(budget_name))
        matched["sizes"]["d_ffn"] = preset.d_ffn
        path = recipes_dir / f"budget-{matched['name']}-d_ffn{preset.d_ffn}.toml"
        _write_if_changed(path, matched)
        table["param_budget"] = str(path.resolve())
    path = recipes_dir / f"{table['name']}.toml"
    _write_if_changed(path, table)
    return str(path.resolve()), budget_name is not None


def _write_if_changed(path: Path, table: dict[str, Any]) -> None:
    text = tomli_w.dumps(table)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        write_text(path, text)


def train_config(invocation: Invocation, run: Run, seed: int) -> TrainConfig:
    """The `TrainConfig` of one run and seed (the preset, the run's overrides, the budget)."""
    experiment, preset = invocation.experiment, invocation.preset
    recipe, budgeted = prepare_recipe(
        run, preset, invocation.runs_dir / experiment.name / "recipes"
    )
    fields = preset.train_fields()
    if run.encoder_layers is not None:
        fields["encoder_layers"] = run.encoder_layers
    if run.decoder_layers is not None:
        fields["decoder_layers"] = run.decoder_layers
    depths = task_named(experiment.task).depths(
        load_recipe(recipe), fields["encoder_layers"], fields["decoder_layers"]
    )
    fields["encoder_layers"], fields["decoder_layers"] = depths
    if budgeted:
        fields["d_ffn"] = None
    return TrainConfig(
        recipe=recipe,
        data=invocation.data,
        save_dir=str(invocation.save_dir(run, seed)),
        task=experiment.task,
        seed=seed,
        max_update=invocation.budget_of(run),
        patience=run.patience,
        validate_interval_updates=experiment.validate_interval_updates,
        threads=invocation.threads,
        save_interval_updates=SAVE_INTERVAL,
        keep_last_checkpoints=0,  # checkpoint_last (and _best) suffice to resume and evaluate
        log_interval=1,
        device=invocation.device,
        **{**fields, **experiment.settings},
    )


def run_one(invocation: Invocation, run: Run, seed: int) -> dict[str, Any]:
    """Train (or resume) one run and seed, evaluate it and write its `result.json`."""
    start = time.monotonic()
    config = train_config(invocation, run, seed)
    summary = train(config)
    save_dir = Path(config.save_dir)
    if summary["interrupted"] is not None:  # not a result: stop the experiment, resume later
        raise Interrupted(summary["interrupted"], summary["updates"], str(save_dir))
    checkpoint = "best" if run.patience else "last"  # patience: the best is what it trained for
    evaluation = EVALUATIONS[invocation.experiment.task]
    measured = evaluation(
        save_dir,
        invocation.device,
        bins=invocation.experiment.table == "bins",
        checkpoint=checkpoint,
    )
    best = read_commit(save_dir, BEST, verify=False) or {}
    log = read_log(save_dir / LOG)
    result = {
        "experiment": invocation.experiment.name,
        "run": run.name,
        "label": run.label,
        "column": run.column,
        "seed": seed,
        "recipe": run.recipe_name,
        "recipe_file": None if config.recipe == run.recipe_name else config.recipe,
        "task": invocation.experiment.task,
        "data": invocation.data,
        "sizes": invocation.preset.name,
        "budget": invocation.budget_of(run),
        "patience": run.patience,
        "validate_interval_updates": config.validate_interval_updates,
        "encoder_layers": config.encoder_layers,
        "decoder_layers": config.decoder_layers,
        "updates": summary["updates"],
        "stopped": summary["stopped"],
        "best_update": best.get("update"),
        "train_tokens": summary["train_tokens"],
        "tokens_per_s": throughput(save_dir / LOG),
        **measured,
        "device": invocation.device,
        "code": code_version(),
        "threads": summary["threads"],
        "save_dir": str(save_dir),
        # this command's training and evaluation; a run resumed from a checkpoint (sessions > 1)
        # spent more in the sessions before
        "wall_seconds": time.monotonic() - start,
        "sessions": 1 + sum(entry.get("kind") == "resume" for entry in log),
        "valid_curve": valid_curve(log),
        "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    write_json(save_dir / RESULT, result)
    return result
