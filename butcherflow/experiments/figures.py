"""An experiment's figures: the metric per run (mean ± std over seeds) and the paired differences.

Plots use matplotlib's object API with the Agg canvas (no pyplot state). Every PNG carries the
command that regenerates it in its metadata (`Description`), and its page prints it beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..savedir.atomic import atomic_path
from .spec import Experiment, metric_title
from .summary import RunSummary, judge_claim, rows_and_columns
from .verdict import mean_std


def plot(
    experiment: Experiment,
    summaries: Sequence[RunSummary],
    titles: Sequence[str],
    output: Path,
    command: str = "",
) -> Path | None:
    """Draw the experiment's figure into `output` (PNG, `command` in its metadata); None when
    there is nothing to draw."""
    from matplotlib.figure import Figure

    metric = experiment.metric
    if not any(s.values.get(metric) for s in summaries):
        return None
    figure = Figure(figsize=(7.5, 4.2), layout="constrained")
    axis = figure.subplots()
    labels, columns = rows_and_columns(summaries)
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
    return _save(figure, output, command)


def plot_paired(
    experiment: Experiment, summaries: Sequence[RunSummary], output: Path, command: str = ""
) -> Path | None:
    """Draw every comparison of the claims as its per-seed differences A − B (claimed direction
    positive) with their mean ± standard deviation, beside zero: the paired rule at a glance.

    **Returns:** `output`, or None when no comparison has a pair of seeds.
    """
    from matplotlib.figure import Figure

    rows = []
    seen = set()
    for claim in experiment.claims:
        for comparison, _, paired in judge_claim(claim, summaries).comparisons:
            if comparison in seen or not paired.differences:
                continue
            seen.add(comparison)
            names = {s.name: s.title for s in summaries}
            title = f"{names[comparison.better]} vs {names[comparison.worse]}"
            if len({c.metric for claim in experiment.claims for c in claim.comparisons}) > 1:
                title += f" ({metric_title(comparison.metric)})"
            rows.append((title, paired))
    if not rows:
        return None
    figure = Figure(figsize=(8.5, 1.4 + 0.32 * len(rows)), layout="constrained")
    axis = figure.subplots()
    ys = list(range(len(rows)))[::-1]
    seeds = sorted({seed for _, paired in rows for seed in paired.seeds})
    markers = dict(zip(seeds, "os^DvP*X", strict=False))
    for y, (_, paired) in zip(ys, rows, strict=True):
        if paired.spread is not None and paired.mean is not None:
            axis.errorbar(paired.mean, y, xerr=paired.spread, fmt="|", color="black", capsize=4)
        for seed, d in zip(paired.seeds, paired.differences, strict=True):
            color = "#3a7d44" if d > 0 else "#b33c3c"
            axis.plot(d, y, markers.get(seed, "o"), color=color, alpha=0.8)
    for seed in seeds:
        axis.plot([], [], markers.get(seed, "o"), color="gray", label=f"seed {seed}")
    axis.plot([], [], "|", color="black", markersize=10, label="mean ± std")
    axis.axvline(0.0, color="gray", linewidth=1)
    axis.set_yticks(ys, [title for title, _ in rows], fontsize=8)
    metrics = {c.metric for claim in experiment.claims for c in claim.comparisons}
    what = metric_title(next(iter(metrics))) if len(metrics) == 1 else "the claim's metric"
    axis.set_xlabel(f"A vs B at the same seed, {what}: claimed direction > 0")
    axis.legend(fontsize=8, loc="best")
    axis.set_title(f"{experiment.name}: paired by seed", fontsize=10)
    axis.grid(alpha=0.3, axis="x")
    return _save(figure, output, command)


def _save(figure: Any, output: Path, command: str) -> Path:
    """Write `figure` as a PNG atomically, with the command that regenerates it in its
    metadata."""
    metadata = {"Description": f"regenerate: {command}"} if command else {}
    with atomic_path(output) as tmp:
        figure.savefig(tmp, format="png", dpi=110, metadata=metadata)
    return output


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
