"""Run an experiment: train every run, evaluate it, write `result.json`, then the reports.

`run_experiment("translation", budget=1200)` trains each run of the declaration into its own
save dir `RUNS_DIR/NAME/<run>-seed<S>` with `train(TrainConfig(..., max_update=budget))`, then
evaluates it and writes `result.json` there (atomically). A rerun skips runs whose `result.json`
matches the budget, corpus and sizes, and resumes the others (the training loop resumes from its
last checkpoint by itself; interval checkpoints every 200 updates bound what a kill loses). At the
end it writes `OUT/NAME.json` (every result), `OUT/NAME.md`, `OUT/NAME.png` and regenerates
`OUT/index.md` (`report.py`). `evaluation.py` evaluates a finished run (the decoding, the
metrics and the throughput every report states).

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
from ..devices import resolve_device
from ..errors import DeclarationError, UnknownNameError
from ..savedir.atomic import write_json, write_text
from ..savedir.layout import LOG
from ..train import TrainConfig, train
from .catalog import EXPERIMENTS, PRESETS
from .evaluation import DECODING, evaluate_language_model, evaluate_translation, machine, throughput
from .report import write_index, write_report
from .spec import Experiment, Preset, Run, Variant, check_seeds, recipe_table

RESULT = "result.json"
SAVE_INTERVAL = 200
DEFAULT_OUT = "docs/experiments"
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


def get_preset(name: str) -> Preset:
    """The size preset called `name` (`--sizes`)."""
    if name not in PRESETS:
        raise DeclarationError(
            "unknown size preset", key="--sizes", value=name, valid="one of " + ", ".join(PRESETS)
        )
    return PRESETS[name]


@final
@dataclass(frozen=True)
class Invocation:
    """One `butcherflow experiment` command, its options resolved and checked."""

    experiment: Experiment
    budget: int
    device: str
    preset: Preset
    out: Path
    runs_dir: Path
    data: str
    seeds: tuple[int, ...] | None
    data_override: bool

    def command(self) -> str:
        """The command that reproduces this invocation (defaults spelled out, paths as given)."""
        parts = ["butcherflow", "experiment", self.experiment.name]
        parts += ["--budget", str(self.budget), "--sizes", self.preset.name]
        parts += ["--device", self.device]
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
) -> Invocation:
    """Check every option before anything trains (see `run_experiment` for the arguments)."""
    declared = get_experiment(experiment) if isinstance(experiment, str) else experiment
    if budget is None:
        budget = declared.budget
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
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
    )


@final
@dataclass(frozen=True)
class Outcome:
    """What `run_experiment` did: the results, which runs it trained or skipped, the files."""

    results: list[dict[str, Any]]
    trained: list[str]
    skipped: list[str]
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
    echo: Echo = print,
) -> Outcome:
    """Train, evaluate and report one experiment (resumable; see the module docstring).

    **Arguments:**

    - `experiment`: a declared experiment's name (`truncation`, `translation`, `coefficients`,
      `extrapolation`, `depth`) or an `Experiment`.
    - `budget`: updates per run (default: the experiment's CPU budget).
    - `device`: `auto`, `cpu`, `cuda` or `cuda:N`, for training and evaluation.
    - `sizes`: a preset name (`small`, `base`, `tiny`) or a `Preset`.
    - `out`: where `NAME.md`, `NAME.png`, `NAME.json` and `index.md` go.
    - `runs_dir`: where the save dirs go (`RUNS_DIR/NAME/<run>-seed<S>`).
    - `seeds`: replace every run's seeds.
    - `data`: replace the experiment's corpus (e.g. a small test corpus).
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
    )
    declared = invocation.experiment
    # Seed-major: every run's first seed trains before any second seed, so a table cut short
    # (out of time, interrupted) still has every row once.
    jobs = sorted(
        ((run, seed) for run in declared.runs for seed in run.seeds),
        key=lambda job: job[0].seeds.index(job[1]),
    )
    results, trained, skipped = [], [], []
    for number, (run, seed) in enumerate(jobs, 1):
        where = f"[{number}/{len(jobs)}] {declared.name}/{run.name}-seed{seed}"
        done = finished_result(invocation, run, seed)
        if done is not None:
            echo(f"{where}: done (result.json at budget {invocation.budget}), skipped")
            results.append(done)
            skipped.append(f"{run.name}-seed{seed}")
            continue
        echo(f"{where}: training for {invocation.budget} updates, then evaluating")
        results.append(run_one(invocation, run, seed))
        trained.append(f"{run.name}-seed{seed}")
    aggregate = {
        "experiment": declared.name,
        "title": declared.title,
        "command": invocation.command(),
        "budget": invocation.budget,
        "sizes": invocation.preset.name,
        "preset": invocation.preset.train_fields(),
        "data": invocation.data,
        "task": declared.task,
        "decoding": DECODING if declared.task == "translation" else None,
        "machine": machine(invocation.device),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "wall_seconds": sum(r.get("wall_seconds", 0.0) for r in results),
        "results": results,
    }
    invocation.out.mkdir(parents=True, exist_ok=True)
    report, figure = write_report(declared, aggregate, invocation.out)
    index = write_index(invocation.out, EXPERIMENTS)
    echo(f"wrote {report}" + (f", {figure}" if figure else "") + f" and {index}")
    return Outcome(results, trained, skipped, report, figure, index)


def finished_result(invocation: Invocation, run: Run, seed: int) -> dict[str, Any] | None:
    """The run's `result.json` when it was made with this budget, corpus and preset, else None."""
    path = invocation.save_dir(run, seed) / RESULT
    if not path.is_file():
        return None
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # unreadable: evaluate again (the checkpoint is intact)
    same = (
        isinstance(result, dict)
        and result.get("budget") == invocation.budget
        and result.get("data") == invocation.data
        and result.get("sizes") == invocation.preset.name
        and result.get("recipe") == run.recipe_name
    )
    return result if same else None


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
    if experiment.task == "language_model":
        fields["decoder_layers"] = None  # a language model is built from the encoder side
    if budgeted:
        fields["d_ffn"] = None
    return TrainConfig(
        recipe=recipe,
        data=invocation.data,
        save_dir=str(invocation.save_dir(run, seed)),
        task=experiment.task,
        seed=seed,
        max_update=invocation.budget,
        save_interval_updates=SAVE_INTERVAL,
        keep_last_checkpoints=0,  # checkpoint_last (and _best) suffice to resume and evaluate
        log_interval=1,
        device=invocation.device,
        **fields,
    )


def run_one(invocation: Invocation, run: Run, seed: int) -> dict[str, Any]:
    """Train (or resume) one run and seed, evaluate it and write its `result.json`."""
    start = time.monotonic()
    config = train_config(invocation, run, seed)
    summary = train(config)
    save_dir = Path(config.save_dir)
    if invocation.experiment.task == "language_model":
        measured = evaluate_language_model(save_dir)
    else:
        measured = evaluate_translation(
            save_dir, invocation.device, bins=invocation.experiment.table == "bins"
        )
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
        "budget": invocation.budget,
        "encoder_layers": config.encoder_layers,
        "decoder_layers": config.decoder_layers,
        "updates": summary["updates"],
        "train_tokens": summary["train_tokens"],
        "tokens_per_s": throughput(save_dir / LOG),
        **measured,
        "device": invocation.device,
        "save_dir": str(save_dir),
        "wall_seconds": time.monotonic() - start,
        "finished": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    write_json(save_dir / RESULT, result)
    return result
