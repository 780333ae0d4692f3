"""What an experiment is: declared runs, the claims they test, and the sizes they train at.

An experiment is data (frozen dataclasses), not a pile of flags: `Experiment` names the corpus,
the task, the runs (a recipe or a `Variant` of one, layer overrides, seeds), the paper's claims
as `Comparison`s between runs, and how its results are tabulated and plotted. A `Preset` holds
the training sizes and hyper-parameters shared by every run of an invocation (`--sizes`).
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, final

from ..assemble import Recipe, load_recipe, recipe_from_dict, recipe_to_toml
from ..errors import DeclarationError, count_problem
from ..tasks import TRANSLATION, task_named

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TABLES = ("runs", "grid", "bins")  # one row per run; rows x columns; rows x source-length bins
PLOTS = ("points", "grouped-points", "lines", "bins")
METRICS = ("bleu", "chrf", "ppl", "bpb")  # and bleu_bin1 .. bleu_binN (BLEU in length bin N)
LOWER_IS_BETTER = ("ppl", "bpb")


def recipe_table(recipe: Recipe) -> dict[str, Any]:
    """A recipe as the content of its TOML file (a dict to change and write back)."""
    return tomllib.loads(recipe_to_toml(recipe))


def metric_title(metric: str) -> str:
    """`"bleu"` -> `"test BLEU"`, `"bleu_bin4"` -> `"test BLEU, length bin 4"`."""
    if metric.startswith("bleu_bin"):
        return f"test BLEU, length bin {metric.removeprefix('bleu_bin')}"
    titles = {
        "bleu": "test BLEU",
        "chrf": "test chrF",
        "ppl": "valid perplexity",
        "bpb": "valid bits per byte",
    }
    return titles[metric]


def higher_is_better(metric: str) -> bool:
    """BLEU and chrF go up with quality, perplexity and bits per byte go down."""
    return metric not in LOWER_IS_BETTER


def _check_metric(metric: str, where: str) -> None:
    binned = metric.startswith("bleu_bin") and metric.removeprefix("bleu_bin").isdigit()
    if metric not in METRICS and not binned:
        raise DeclarationError(
            "unknown metric", key=where, value=metric, valid="bleu, chrf, ppl, bpb or bleu_binN"
        )


@final
@dataclass(frozen=True)
class Variant:
    """A built-in recipe with a few keys changed: an architecture the catalog does not hold.

    **Arguments:**

    - `name`: the variant's recipe name (its file is written as `<name>.toml`).
    - `base`: the built-in recipe it changes.
    - `encoder`: keys replaced in the `[encoder]` table (e.g. `coefficients = "tanh"`).
    - `embedding`: keys replaced in the `[embedding]` table (e.g. `position = "learned"`,
      `max_len = 1024`).
    - `description`: what changed, in words (kept in the recipe).

    The result is validated by the recipe loader, like any recipe file.
    """

    name: str
    base: str
    encoder: Mapping[str, Any] = field(default_factory=dict)
    embedding: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def table(self) -> dict[str, Any]:
        """The variant as the content of a recipe file."""
        data = recipe_table(load_recipe(self.base))
        data["name"] = self.name
        data["title"] = f"{data.get('title', self.base)} ({self.description or 'variant'})"
        data["description"] = (
            f"{data.get('description', '')}\nVariant of '{self.base}': {self.description}".strip()
        )
        data["encoder"] = {**data["encoder"], **self.encoder}
        data["embedding"] = {**data.get("embedding", {}), **self.embedding}
        return data

    def recipe(self) -> Recipe:
        """The validated variant (a `DeclarationError` names the bad key)."""
        return recipe_from_dict(self.table(), source=f"variant '{self.name}' of '{self.base}'")


@final
@dataclass(frozen=True)
class Run:
    """One architecture of an experiment, trained once per seed.

    **Arguments:**

    - `name`: unique in the experiment; each seed trains in `RUNS_DIR/EXPERIMENT/<name>-seed<S>`.
    - `label`: the row of the tables and the legend of the plots.
    - `recipe`: a built-in recipe name, or a `Variant`.
    - `seeds`: the seeds it is trained with (`--seeds` replaces them).
    - `encoder_layers`, `decoder_layers`: override the preset's depth (None keeps it). A language
      model is built from the encoder side of a translation recipe: `encoder_layers` sizes it.
    - `column`: the column of a grid table (`"1 layer"`, `"6"`); empty for other tables.
    - `budget`: this run's updates (None: the experiment's `budget`; `--budget` replaces both).
    - `patience`: fairseq's early stop: end the run when the validation loss has not improved
      for this many consecutive validations (0 = off; `Experiment.validate_interval_updates`
      sets how often it validates). A run with patience is evaluated at its best checkpoint.
    """

    name: str
    label: str
    recipe: str | Variant
    seeds: tuple[int, ...] = (1,)
    encoder_layers: int | None = None
    decoder_layers: int | None = None
    column: str = ""
    budget: int | None = None
    patience: int = 0

    @property
    def recipe_name(self) -> str:
        return self.recipe if isinstance(self.recipe, str) else self.recipe.name


@final
@dataclass(frozen=True)
class Comparison:
    """`better` beats `worse` on `metric` (higher BLEU/chrF, lower perplexity); run names."""

    better: str
    worse: str
    metric: str


@final
@dataclass(frozen=True)
class Claim:
    """A paper's claim, and the comparisons between runs that would support it.

    **Arguments:**

    - `paper`: where it is claimed (`"ODE Transformer (Li et al., 2022), Table 5"`).
    - `text`: the claim in words.
    - `comparisons`: each must hold for the claim to be supported (`verdict.judge_claim`).
    """

    paper: str
    text: str
    comparisons: tuple[Comparison, ...]


@final
@dataclass(frozen=True)
class Experiment:
    """One of the papers' experiments, at a scale this machine allows.

    **Arguments:**

    - `name`: the command's argument (`butcherflow experiment NAME`).
    - `title`: the heading of its report.
    - `analogue`: which table or figure of which paper it reproduces, and how it differs.
    - `data`: the corpus spec every run trains on (`--data` replaces it).
    - `task`: `"translation"` (test BLEU and chrF, greedy) or `"language_model"` (valid
      perplexity and bits per byte).
    - `settings`: `TrainConfig` settings every run takes beyond the preset's (a language
      model's `sample_break_mode`, say).
    - `runs`: the runs.
    - `claims`: the claims it tests.
    - `budget`: the number of updates per run at the CPU scale, unless a run declares its own
      (`--budget` replaces every run's).
    - `table`: `"runs"` (a row per run), `"grid"` (rows = labels, columns = `Run.column`) or
      `"bins"` (rows = labels, columns = source-length bins of the test set).
    - `metric`: the metric of the grid/bins tables and of the plot.
    - `plot`: `"points"` (a row per run), `"grouped-points"` (x = labels, a series per column),
      `"lines"` (over the grid's columns) or `"bins"` (over the length bins); every point is a
      mean with a ± one standard deviation bar.
    - `x_label`: the axis title of the grid's columns.
    - `validate_interval_updates`: validate every N updates (0: at epoch ends), which is what a
      run's `patience` counts.
    """

    name: str
    title: str
    analogue: str
    data: str
    task: str
    runs: tuple[Run, ...]
    claims: tuple[Claim, ...]
    budget: int
    table: str
    metric: str
    plot: str
    x_label: str = ""
    validate_interval_updates: int = 0
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"experiment '{self.name}'"
        task = task_named(self.task, key=f"{where}.task")
        for key, value, valid in (("table", self.table, TABLES), ("plot", self.plot, PLOTS)):
            if value not in valid:
                raise DeclarationError(
                    f"unknown {key}", key=f"{where}.{key}", value=value, valid=", ".join(valid)
                )
        _check_metric(self.metric, f"{where}.metric")
        if self.metric.partition("_bin")[0] not in task.metrics:  # bleu_binN: BLEU by length
            raise DeclarationError(
                f"a {task.title} is judged by "
                + ", ".join(metric_title(m).removeprefix("valid ") for m in task.metrics),
                key=f"{where}.metric",
                value=self.metric,
                valid=", ".join(task.metrics),
            )
        _check_count(self.budget, f"{where}.budget", minimum=1)
        _check_count(self.validate_interval_updates, f"{where}.validate_interval_updates", 0)
        if not self.runs:
            raise DeclarationError("no runs", key=f"{where}.runs", value=())
        names = [run.name for run in self.runs]
        for name in names:
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
                raise DeclarationError(
                    "a run name names its save dir",
                    key=f"{where}.runs",
                    value=name,
                    valid="lower-case letters, digits and '-'",
                )
            if names.count(name) > 1:
                raise DeclarationError(
                    "two runs have the same name", key=f"{where}.runs", value=name
                )
        for run in self.runs:
            check_seeds(run.seeds, f"{where}.{run.name}.seeds")
            if run.budget is not None:
                _check_count(run.budget, f"{where}.{run.name}.budget", minimum=1)
            _check_count(run.patience, f"{where}.{run.name}.patience", minimum=0)
            if self.table == "grid" and not run.column:
                raise DeclarationError(
                    "a grid table needs every run's column", key=f"{where}.{run.name}.column"
                )
        cells = [(run.label, run.column) for run in self.runs]
        if len(set(cells)) != len(cells):
            raise DeclarationError(
                "two runs share a table cell (label, column)", key=f"{where}.runs", value=cells
            )
        for claim in self.claims:
            if not claim.comparisons:
                raise DeclarationError("a claim needs comparisons", key=f"{where}.claims")
            for comparison in claim.comparisons:
                _check_metric(comparison.metric, f"{where}.claims")
                for name in (comparison.better, comparison.worse):
                    if name not in names:
                        raise DeclarationError(
                            "a comparison names no run of the experiment",
                            key=f"{where}.claims",
                            value=name,
                            valid="one of " + ", ".join(names),
                        )

    def run(self, name: str) -> Run:
        """The run called `name`."""
        return next(run for run in self.runs if run.name == name)

    def recipes(self) -> dict[str, Recipe]:
        """Every run's recipe, loaded and validated (a typo fails before any training)."""
        return {
            run.name: run.recipe.recipe()
            if isinstance(run.recipe, Variant)
            else load_recipe(run.recipe)
            for run in self.runs
        }

    def with_seeds(self, seeds: tuple[int, ...]) -> Experiment:
        """The same experiment with every run trained with `seeds` (`--seeds`)."""
        check_seeds(seeds, "--seeds")
        runs = tuple(dataclasses.replace(run, seeds=seeds) for run in self.runs)
        return dataclasses.replace(self, runs=runs)


def _check_count(value: Any, key: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise DeclarationError(
            count_problem(value),
            key=key,
            value=value,
            valid=f"an integer >= {minimum}",
        )


def check_seeds(seeds: Any, key: str) -> None:
    """Seeds are a non-empty tuple of distinct integers >= 0."""
    ok = isinstance(seeds, tuple) and len(seeds) > 0
    ok = ok and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)
    if not ok or len(set(seeds)) != len(seeds):
        raise DeclarationError(
            "bad seeds", key=key, value=seeds, valid="distinct integers >= 0, e.g. 1 2 3"
        )


@final
@dataclass(frozen=True)
class Preset:
    """Sizes and hyper-parameters shared by every run of an invocation (`--sizes NAME`).

    The fields are `TrainConfig`'s (fairseq names); a run's `encoder_layers`/`decoder_layers`
    override the preset's.
    """

    name: str
    description: str
    d_model: int
    n_heads: int
    d_ffn: int
    encoder_layers: int
    decoder_layers: int
    vocab_size: int
    max_tokens: int
    lr: float
    warmup_updates: int
    dropout: float
    # translation's default, for every run of a preset: the language-model records trained so
    label_smoothing: float = TRANSLATION.label_smoothing

    def train_fields(self) -> dict[str, Any]:
        """The `TrainConfig` fields this preset sets."""
        data = dataclasses.asdict(self)
        del data["name"], data["description"]
        return data
