"""An experiment's results as markdown tables, a matplotlib figure and verdicts; the index.

`write_report` turns one experiment's aggregate (the `OUT/NAME.json` the runner writes: every
run's `result.json` and how they were made) into `OUT/NAME.md` and `OUT/NAME.png`;
`write_index` rebuilds `OUT/index.md` from every `OUT/NAME.json` on disk, so the index always
describes exactly the results in the repository. Plots use matplotlib's object API with the Agg
canvas (no pyplot state).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from ..errors import ButcherflowError
from ..savedir.atomic import atomic_path, write_json, write_text
from .spec import Claim, Experiment, higher_is_better, metric_title
from .verdict import RULE, Verdict, combine, format_mean_std, judge, mean_std


@final
@dataclass(frozen=True)
class RunSummary:
    """The seeds of one run, gathered.

    **Arguments:**

    - `name`, `label`, `column`, `recipe`: from the declaration.
    - `seeds`: the seeds that have a result.
    - `values`: metric -> one value per seed (in `seeds` order).
    - `parameters`: the model's parameter count (the same for every seed).
    - `tokens_per_s`: training throughput per seed (target tokens/s).
    - `extra`: the first seed's `positions` facts (extrapolation), or empty.
    """

    name: str
    label: str
    column: str
    recipe: str
    seeds: tuple[int, ...]
    values: Mapping[str, tuple[float, ...]]
    parameters: int | None
    tokens_per_s: tuple[float, ...]
    extra: Mapping[str, Any]

    @property
    def title(self) -> str:
        return f"{self.label}, {self.column}" if self.column else self.label


def summarize(experiment: Experiment, results: Sequence[Mapping[str, Any]]) -> list[RunSummary]:
    """One `RunSummary` per declared run that has at least one result, in declaration order."""
    summaries = []
    for run in experiment.runs:
        mine = sorted((r for r in results if r.get("run") == run.name), key=lambda r: r["seed"])
        if not mine:
            continue
        metrics = sorted({m for r in mine for m in r.get("metrics", {})})
        values = {
            m: tuple(float(r["metrics"][m]) for r in mine if r["metrics"].get(m) is not None)
            for m in metrics
        }
        summaries.append(
            RunSummary(
                name=run.name,
                label=run.label,
                column=run.column,
                recipe=run.recipe_name,
                seeds=tuple(int(r["seed"]) for r in mine),
                values=values,
                parameters=mine[0].get("parameters"),
                tokens_per_s=tuple(float(r["tokens_per_s"]) for r in mine if r.get("tokens_per_s")),
                extra=dict(mine[0].get("positions") or {}),
            )
        )
    return summaries


def judge_claim(claim: Claim, summaries: Sequence[RunSummary]) -> tuple[str, list[Verdict]]:
    """The claim's verdict and each comparison's (`verdict.py` holds the rule)."""
    by_name = {s.name: s for s in summaries}
    verdicts = []
    for comparison in claim.comparisons:
        better, worse = by_name.get(comparison.better), by_name.get(comparison.worse)
        verdicts.append(
            judge(
                better.values.get(comparison.metric, ()) if better else (),
                worse.values.get(comparison.metric, ()) if worse else (),
                higher_is_better(comparison.metric),
            )
        )
    return combine(verdicts), verdicts


# --- tables --------------------------------------------------------------------------------------


def _digits(metric: str) -> int:
    return 1 if metric == "ppl" else 2


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _metrics_of(experiment: Experiment) -> tuple[str, ...]:
    return ("ppl",) if experiment.task == "language_model" else ("bleu", "chrf")


def runs_table(experiment: Experiment, summaries: Sequence[RunSummary]) -> str:
    """A row per run: recipe, seeds, the metrics (mean ± std), parameters, tokens/s."""
    metrics = _metrics_of(experiment)
    header = ["run", "recipe", "seeds"] + [metric_title(m) for m in metrics]
    header += ["parameters", "train tokens/s"]
    positions = experiment.table == "bins"
    if positions:
        header += ["longest train source", "test sources longer", "max_len (cut)"]
    rows = []
    for s in summaries:
        row = [s.title, f"`{s.recipe}`", str(len(s.seeds))]
        row += [format_mean_std(s.values.get(m, ()), _digits(m)) for m in metrics]
        row.append("—" if s.parameters is None else f"{s.parameters:,}")
        row.append(f"{mean_std(s.tokens_per_s)[0]:,.0f}" if s.tokens_per_s else "—")
        if positions:
            e = s.extra
            row.append(f"{e.get('longest_train_source', '—')} subwords")
            row.append(f"{e.get('test_sources_longer_than_train', '—')}")
            row.append(
                "—" if e.get("max_len") is None else f"{e['max_len']} ({e['test_sources_cut']})"
            )
        rows.append(row)
    return _table(header, rows)


def _rows_and_columns(summaries: Sequence[RunSummary]) -> tuple[list[str], list[str]]:
    labels = list(dict.fromkeys(s.label for s in summaries))
    columns = list(dict.fromkeys(s.column for s in summaries))
    return labels, columns


def grid_table(experiment: Experiment, summaries: Sequence[RunSummary]) -> str:
    """Rows = run labels, columns = `Run.column`, cells = the experiment's metric."""
    labels, columns = _rows_and_columns(summaries)
    cell = {(s.label, s.column): s for s in summaries}
    header = [f"{metric_title(experiment.metric)} / {experiment.x_label}", *columns]
    rows = []
    for label in labels:
        row = [label]
        for column in columns:
            s = cell.get((label, column))
            values = s.values.get(experiment.metric, ()) if s else ()
            row.append(format_mean_std(values, _digits(experiment.metric)))
        rows.append(row)
    return _table(header, rows)


def bin_edges(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """The bin titles (`"41–48 words (n = 380)"`) of the first result that has bins."""
    for result in results:
        if result.get("bins"):
            return [
                f"{b['low']}{'' if b['low'] == b['high'] else '–' + str(b['high'])} words "
                f"(n = {b['n']})"
                for b in result["bins"]
            ]
    return []


def bins_table(summaries: Sequence[RunSummary], titles: Sequence[str]) -> str:
    """Rows = run labels, columns = source-length bins, cells = test BLEU (mean ± std)."""
    header = ["test BLEU / source length", *titles, "all"]
    rows = []
    for s in summaries:
        row = [s.title]
        row += [
            format_mean_std(s.values.get(f"bleu_bin{i}", ())) for i in range(1, len(titles) + 1)
        ]
        row.append(format_mean_std(s.values.get("bleu", ())))
        rows.append(row)
    return _table(header, rows)


def claims_markdown(experiment: Experiment, summaries: Sequence[RunSummary], level: str) -> str:
    """Each claim with its verdict and the measured comparisons (mean ± std)."""
    by_name = {s.name: s for s in summaries}
    parts = []
    for claim in experiment.claims:
        verdict, verdicts = judge_claim(claim, summaries)
        parts.append(f"{level} {claim.paper}\n\n> {claim.text}\n\n**Verdict: {verdict}.**\n")
        for comparison, v in zip(claim.comparisons, verdicts, strict=True):
            a, b = by_name.get(comparison.better), by_name.get(comparison.worse)
            digits = _digits(comparison.metric)
            left = format_mean_std(a.values.get(comparison.metric, ()) if a else (), digits)
            right = format_mean_std(b.values.get(comparison.metric, ()) if b else (), digits)
            name_a = a.title if a else experiment.run(comparison.better).label
            name_b = b.title if b else experiment.run(comparison.worse).label
            numbers = ""
            if v.difference is not None:
                numbers = f"; d = {v.difference:+.{digits}f}"
                numbers += "" if v.spread is None else f", s = {v.spread:.{digits}f}"
            parts.append(
                f"- {metric_title(comparison.metric)}: {name_a} {left} vs {name_b} {right}"
                f"{numbers}: {v.text}"
            )
        parts.append("")
    return "\n".join(parts)


# --- the figure ----------------------------------------------------------------------------------


def plot(
    experiment: Experiment,
    summaries: Sequence[RunSummary],
    titles: Sequence[str],
    output: Path,
) -> Path | None:
    """Draw the experiment's figure into `output` (PNG); None when there is nothing to draw."""
    from matplotlib.figure import Figure

    metric = experiment.metric
    if not any(s.values.get(metric) for s in summaries):
        return None
    figure = Figure(figsize=(7.5, 4.2), layout="constrained")
    axis = figure.subplots()
    labels, columns = _rows_and_columns(summaries)
    cell = {(s.label, s.column): s for s in summaries}

    def stats(s: RunSummary | None, key: str) -> tuple[float, float]:
        values = s.values.get(key, ()) if s else ()
        if not values:
            return float("nan"), 0.0
        mean, std = mean_std(values)
        return mean, std or 0.0

    # Points with error bars rather than bars from zero: the differences between architectures
    # are small next to the scores themselves, and a bar's length would hide them.
    if experiment.plot == "points":
        means, errors = zip(*(stats(s, metric) for s in summaries), strict=True)
        rows = list(range(len(summaries)))[::-1]
        axis.errorbar(means, rows, xerr=errors, fmt="o", color="#4878a8", capsize=3)
        axis.set_yticks(rows, [f"{s.title} ({len(s.seeds)})" for s in summaries])
        for y, mean in zip(rows, means, strict=True):
            axis.annotate(
                f"{mean:.2f}",
                (mean, y),
                xytext=(0, 6),
                textcoords="offset points",
                ha="center",
                fontsize=8,
            )
        axis.set(xlabel=metric_title(metric) + " (mean ± std over seeds; seeds in brackets)")
    elif experiment.plot == "grouped-points":
        offset = 0.5 / max(1, len(columns))
        for j, column in enumerate(columns):
            points = [stats(cell.get((label, column)), metric) for label in labels]
            means, errors = zip(*points, strict=True)
            xs = [i + (j - (len(columns) - 1) / 2) * offset for i in range(len(labels))]
            axis.errorbar(xs, means, yerr=errors, fmt="o", capsize=3, label=column)
        axis.set_xticks(range(len(labels)), labels)
        axis.set(ylabel=metric_title(metric) + " (mean ± std)")
        axis.legend(title=experiment.x_label)
    else:  # lines over the grid's columns, or over the length bins
        if experiment.plot == "lines":
            xs = [float(c) if _is_number(c) else i for i, c in enumerate(columns)]
            keys = [(c, metric) for c in columns]
            axis.set(xlabel=experiment.x_label)
            if all(_is_number(c) for c in columns):
                axis.set_xticks(xs)
        else:
            xs = list(range(len(titles)))
            keys = [("", f"bleu_bin{i}") for i in range(1, len(titles) + 1)]
            axis.set_xticks(xs, [t.replace(" (", "\n(") for t in titles], fontsize=8)
            axis.set(xlabel="test source length (words)")
        for label in labels:
            points = [stats(cell.get((label, c)), key) for c, key in keys]
            means, errors = zip(*points, strict=True)
            axis.errorbar(xs, means, yerr=errors, marker="o", capsize=3, label=label)
        axis.set(ylabel="test BLEU (mean ± std)" if metric != "ppl" else metric_title(metric))
        axis.legend()
    axis.set_title(experiment.title, fontsize=10)
    axis.grid(alpha=0.3)
    with atomic_path(output) as tmp:
        figure.savefig(tmp, format="png", dpi=110)
    return output


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# --- the files -----------------------------------------------------------------------------------


def write_report(
    experiment: Experiment, aggregate: Mapping[str, Any], out: Path
) -> tuple[Path, Path | None]:
    """Write `OUT/NAME.json`, `OUT/NAME.png` and `OUT/NAME.md` for one experiment.

    **Arguments:**

    - `experiment`: the declaration (claims, tables, plot).
    - `aggregate`: what the runner gathered (`command`, `budget`, `results`, ...).
    - `out`: the folder.

    **Returns:** `(markdown path, figure path or None)`.
    """
    name = experiment.name
    write_json(out / f"{name}.json", aggregate)
    results = aggregate["results"]
    summaries = summarize(experiment, results)
    titles = bin_edges(results)
    figure = plot(experiment, summaries, titles, out / f"{name}.png")
    parts = [f"# {experiment.title}\n", f"{experiment.analogue}.\n"]
    if experiment.table == "runs":
        parts.append(runs_table(experiment, summaries) + "\n")
    elif experiment.table == "grid":
        parts.append(grid_table(experiment, summaries) + "\n")
    elif experiment.table == "bins":
        parts.append(bins_table(summaries, titles) + "\n")
        parts.append(
            "Bins: the test sources' length in words (whitespace-separated), cut at the "
            "nearest-rank quartiles of the test set.\n"
        )
    if figure is not None:
        parts.append(f"![{experiment.title}]({figure.name})\n")
    parts.append("## Claims and verdicts\n")
    parts.append(claims_markdown(experiment, summaries, "###"))
    if experiment.table != "runs":
        parts.append("## Runs\n")
        parts.append(runs_table(experiment, summaries) + "\n")
    if experiment.table == "bins":
        parts.append(
            "Source lengths in the last three columns are in subwords of the run's vocabulary. "
            "*test sources longer*: test sources longer than every training source (positions "
            "no training sentence reached; a learned table never updated them). *max_len "
            "(cut)*: a learned table's size, and how many test sources were cut to it before "
            "translation (as training cuts its sentences).\n"
        )
    parts.append(_how(experiment, aggregate))
    path = out / f"{name}.md"
    write_text(path, "\n".join(parts))
    return path, figure


def _how(experiment: Experiment, aggregate: Mapping[str, Any]) -> str:
    preset = aggregate["preset"]
    sizes = (
        f"d_model {preset['d_model']}, {preset['n_heads']} heads, d_ffn {preset['d_ffn']}, "
        f"{preset['encoder_layers']} + {preset['decoder_layers']} layers unless the run says "
        f"otherwise, vocabulary {preset['vocab_size']}, max_tokens {preset['max_tokens']}, "
        f"lr {preset['lr']:g}, warmup {preset['warmup_updates']}, dropout {preset['dropout']:g}, "
        f"label smoothing {preset['label_smoothing']:g}"
    )
    if experiment.task == "translation":
        d = aggregate["decoding"]
        evaluation = (
            f"test split, checkpoint_{d['checkpoint']}, "
            + ("greedy" if d["beam"] == 1 else f"beam {d['beam']}")
            + f" decoding (max length {d['max_len_a']:g} · source + {d['max_len_b']}), "
            "detokenized sacreBLEU and chrF (signatures in the JSON)"
        )
    else:
        evaluation = "validation perplexity 2^(nll bits per subword) at the last update"
    seconds = float(aggregate.get("wall_seconds", 0.0))
    wall = f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"
    return "\n".join(
        [
            "## How these numbers were made\n",
            f"- Command: `{aggregate['command']}`",
            f"- Budget: {aggregate['budget']} updates per run, the same for every run.",
            f"- Sizes: `{aggregate['sizes']}` preset: {sizes}.",
            f"- Data: `{aggregate['data']}`; task: {aggregate['task']}.",
            f"- Evaluation: {evaluation}; train tokens/s count target tokens of training steps, "
            "timed inside each run on a shared machine, not side by side (speed ratios: "
            "`butcherflow bench train`, [benchmarks](../benchmarks.md)).",
            f"- Machine: {aggregate['machine']}; finished {aggregate['date']}; wall time of "
            f"the runs in this table (training and evaluation, each as last run): {wall}.",
            f"- Per-run details: `{experiment.name}.json`. Verdict rule: [index](index.md).",
            "",
        ]
    )


def read_aggregate(path: Path) -> dict[str, Any]:
    """An `OUT/NAME.json` (a clear error naming the file when it is unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ButcherflowError(f"{path} is not a readable experiment result ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ButcherflowError(f"{path} is not an experiment result (no 'results' list)")
    return data


def write_index(out: Path, experiments: Mapping[str, Experiment]) -> Path:
    """Rebuild `OUT/index.md` from every `OUT/NAME.json` of the declared experiments.

    **Returns:** the index's path.
    """
    summary_rows, sections = [], []
    for name, experiment in experiments.items():
        path = out / f"{name}.json"
        if not path.is_file():
            summary_rows.append(
                [f"{name}", "—", f"not run yet: `butcherflow experiment {name}`", "—"]
            )
            continue
        aggregate = read_aggregate(path)
        summaries = summarize(experiment, aggregate["results"])
        for claim in experiment.claims:
            verdict, _ = judge_claim(claim, summaries)
            summary_rows.append([f"[{name}]({name}.md)", claim.paper, claim.text, verdict])
        seeds = sorted({int(r["seed"]) for r in aggregate["results"]})
        sections.append(
            f"## [{experiment.title}]({name}.md)\n\n{experiment.analogue}.\n\n"
            f"Measured with `{aggregate['command']}` ({aggregate['budget']} updates per run, "
            f"`{aggregate['sizes']}` sizes, seeds {', '.join(map(str, seeds))}; "
            f"{aggregate['machine']}; {aggregate['date']}).\n\n"
            + claims_markdown(experiment, summaries, "###")
        )
    text = "\n".join(
        [
            "# Experiments: the papers' claims, measured\n",
            "Generated by `butcherflow experiment NAME` from the `*.json` results in this folder; "
            "every number can be regenerated by the command printed beside it (rerunning a "
            "command reuses finished runs). Values are mean ± sample standard deviation over "
            "seeds (— for one seed).\n",
            "## How a verdict is decided\n",
            RULE,
            "## Summary\n",
            _table(["experiment", "paper", "claim", "verdict"], summary_rows) + "\n",
            *sections,
        ]
    )
    path = out / "index.md"
    write_text(path, text)
    return path
