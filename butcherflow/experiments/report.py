"""An experiment's page: its results as markdown tables, its figures, its verdicts.

`write_report` turns one experiment's aggregate (the `OUT/NAME.json` the runner writes: every
run's `result.json` and how they were made) into `OUT/NAME.md` and its figures (`figures.py`);
`index.py` builds `OUT/index.md` and the README's summary from every `OUT/NAME.json` on disk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..savedir.atomic import write_json, write_text
from ..tasks import task_named
from .curves import curves_rows
from .figures import plot, plot_paired
from .spec import Experiment, metric_title
from .summary import RunSummary, judge_claim, rows_and_columns, stop_rule, summarize
from .verdict import format_mean_std, mean_std

DEFAULT_OUT = "docs/experiments"  # where `butcherflow experiment` writes (its --out default)

# --- tables --------------------------------------------------------------------------------------


def digits(metric: str) -> int:
    return {"ppl": 1, "bpb": 3}.get(metric, 2)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def runs_table(experiment: Experiment, summaries: Sequence[RunSummary]) -> str:
    """A row per run: recipe, seeds, the metrics (mean ± std), parameters, tokens/s; a declared
    run with no result yet is a row saying so (no number stands in for it). A metric of the
    task that no result measured (bits per byte in a record made before it was) has no column."""
    measured = {m for s in summaries for m in s.values}
    task_metrics = task_named(experiment.task).metrics
    metrics = tuple(m for m in task_metrics if m in measured or m == experiment.metric)
    header = ["run", "recipe", "seeds"] + [metric_title(m) for m in metrics]
    header += ["parameters", "train tokens/s"]
    positions = experiment.table == "bins"
    if positions:
        header += ["longest train source", "test sources longer", "max_len (cut)"]
    by_name = {s.name: s for s in summaries}
    rows = []
    for run in experiment.runs:
        s = by_name.get(run.name)
        if s is None:
            title = f"{run.label}, {run.column}" if run.column else run.label
            rows.append([title, f"`{run.recipe_name}`", "0", "not run yet"])
            rows[-1] += ["—"] * (len(header) - len(rows[-1]))
            continue
        row = [s.title, f"`{s.recipe}`", str(len(s.seeds))]
        row += [format_mean_std(s.values.get(m, ()), digits(m)) for m in metrics]
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
    return table(header, rows)


def grid_table(experiment: Experiment, summaries: Sequence[RunSummary]) -> str:
    """Rows = run labels, columns = `Run.column`, cells = the experiment's metric."""
    labels, columns = rows_and_columns(summaries)
    cell = {(s.label, s.column): s for s in summaries}
    header = [f"{metric_title(experiment.metric)} / {experiment.x_label}", *columns]
    rows = []
    for label in labels:
        row = [label]
        for column in columns:
            s = cell.get((label, column))
            values = s.values.get(experiment.metric, ()) if s else ()
            row.append(format_mean_std(values, digits(experiment.metric)))
        rows.append(row)
    return table(header, rows)


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
    return table(header, rows)


def claims_markdown(experiment: Experiment, summaries: Sequence[RunSummary], level: str) -> str:
    """Each claim with its verdicts and a table of its comparisons under both rules."""
    by_name = {s.name: s for s in summaries}
    parts = []
    for claim in experiment.claims:
        outcome = judge_claim(claim, summaries)
        parts.append(
            f"{level} {claim.paper}\n\n> {claim.text}\n\n**Verdict: {outcome.verdict}** "
            f"(decided by the {outcome.rule} rule; unpaired: {outcome.unpaired}; paired: "
            f"{outcome.paired}).\n"
        )
        header = ["comparison", "A", "B", "unpaired d (s)", "unpaired verdict"]
        header += ["A − B per seed", "paired d̄ ± s_d", "seeds A wins", "paired verdict"]
        rows = []
        for comparison, unpaired, paired in outcome.comparisons:
            a, b = by_name.get(comparison.better), by_name.get(comparison.worse)
            metric = comparison.metric
            places = digits(metric)
            name_a = a.title if a else experiment.run(comparison.better).label
            name_b = b.title if b else experiment.run(comparison.worse).label
            rows.append(
                [
                    f"{metric_title(metric)}: {name_a} vs {name_b}" + _budget_note(a, b),
                    format_mean_std(a.values.get(metric, ()) if a else (), places),
                    format_mean_std(b.values.get(metric, ()) if b else (), places),
                    _signed(unpaired.difference, places)
                    + ("" if unpaired.spread is None else f" ({unpaired.spread:.{places}f})"),
                    unpaired.text,
                    ", ".join(
                        f"{seed}: {_signed(d, places)}"
                        for seed, d in zip(paired.seeds, paired.differences, strict=True)
                    )
                    or "—",
                    _signed(paired.mean, places)
                    + ("" if paired.spread is None else f" ± {paired.spread:.{places}f}"),
                    f"{paired.positive}/{len(paired.differences)}" if paired.differences else "—",
                    paired.text,
                ]
            )
        parts.append(table(header, rows) + "\n")
    parts.append(
        "*d*: the claimed direction is positive (for perplexity, B − A). The claim text's "
        "direction is what is judged; [index](index.md) states both rules.\n"
        if experiment.claims
        else ""
    )
    return "\n".join(parts)


def _signed(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:+.{digits}f}"


def _budget_note(a: RunSummary | None, b: RunSummary | None) -> str:
    """` (600 vs 3000 updates)` when the two sides were trained with different budgets."""
    if a is None or b is None or a.budget == b.budget:
        return ""
    return f" ({a.budget} vs {b.budget})"


def budgets_text(experiment: Experiment, results: Sequence[Mapping[str, Any]]) -> str:
    """`"1000 updates per run"`, or each budget (and patience) with the runs trained at it."""
    groups: dict[tuple[Any, int], list[str]] = {}
    titles = {
        run.name: (f"{run.label}, {run.column}" if run.column else run.label)
        for run in experiment.runs
    }
    for result in results:
        key = (result.get("budget"), int(result.get("patience") or 0))
        title = titles.get(str(result.get("run")), str(result.get("run")))
        if title not in groups.setdefault(key, []):
            groups[key].append(title)

    def stop(budget: Any, patience: int) -> str:
        return stop_rule({"budget": budget, "patience": patience})

    if len(groups) == 1:
        ((budget, patience),) = groups
        return stop(budget, patience) + " per run, the same for every run"
    return "; ".join(f"{stop(b, p)}: {', '.join(names)}" for (b, p), names in groups.items())


def _minutes(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "—"
    return f"{seconds / 3600:.2f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def _provenance(aggregate: Mapping[str, Any], key: str) -> str:
    if key in aggregate.get("carried_over", ()):
        return "carried over from the record"
    if key in aggregate.get("trained", ()):
        return "trained by this command"
    if key in aggregate.get("skipped", ()):
        return "result.json in its save dir"
    return "—"


def seeds_table(experiment: Experiment, aggregate: Mapping[str, Any]) -> str:
    """A row per run and seed: its budget and stop rule, where it ended, which checkpoint was
    evaluated, what stopped it, its wall time, torch threads, when it finished and how the
    result came here (trained, already on disk, or carried over from the committed record)."""
    order = {run.name: i for i, run in enumerate(experiment.runs)}
    results = sorted(
        aggregate["results"], key=lambda r: (order.get(r.get("run"), len(order)), r["seed"])
    )
    header = [
        "run",
        "seed",
        "budget",
        "ended at",
        "evaluated",
        "stopped by",
        "wall",
        "torch threads",
        "finished",
        "result",
    ]
    rows = []
    for r in results:
        run = next((x for x in experiment.runs if x.name == r.get("run")), None)
        title = (
            r.get("run", "?")
            if run is None
            else (f"{run.label}, {run.column}" if run.column else run.label)
        )
        evaluation = r.get("evaluation") or {}
        evaluated = evaluation.get("checkpoint", "last")
        if evaluation.get("update") is not None:
            evaluated += f" (update {evaluation['update']})"
        stopped = r.get("stopped") or "not recorded"
        budget = f"{r.get('budget')}" + (f", patience {r['patience']}" if r.get("patience") else "")
        sessions = r.get("sessions", 1)
        wall = _minutes(r.get("wall_seconds")) + (
            f" (last of {sessions} sessions)" if sessions > 1 else ""
        )
        rows.append(
            [
                title,
                str(r["seed"]),
                budget,
                str(r.get("updates", "—")),
                evaluated,
                stopped,
                wall,
                str(r.get("threads", "not recorded")),
                r.get("finished", "—"),
                _provenance(aggregate, f"{r.get('run')}-seed{r['seed']}"),
            ]
        )
    return table(header, rows)


# --- the files -----------------------------------------------------------------------------------


def write_report(
    experiment: Experiment, aggregate: Mapping[str, Any], out: Path
) -> tuple[Path, Path | None]:
    """Write `OUT/NAME.json`, `OUT/NAME.png` and `OUT/NAME.md` for one experiment.

    **Arguments:**

    - `experiment`: the declaration (claims, tables, plot).
    - `aggregate`: what the runner gathered (`command`, `budget`, `results`, ...).
    - `out`: the folder.

    **Returns:** `(markdown path, figure path or None)`; the paired figure, when a comparison
    has seeds on both sides, is `OUT/NAME-paired.png`.
    """
    name = experiment.name
    write_json(out / f"{name}.json", aggregate)
    results = aggregate["results"]
    summaries = summarize(experiment, results)
    titles = bin_edges(results)
    regenerate = f"butcherflow experiment {name} --report-only"
    if str(out) != DEFAULT_OUT:
        regenerate += f" --out {out}"
    figure = plot(experiment, summaries, titles, out / f"{name}.png", regenerate)
    paired = plot_paired(experiment, summaries, out / f"{name}-paired.png", regenerate)
    caption = (
        f"*Figure: rebuilt from `{name}.json` by `{regenerate}`; the runs behind it: "
        f"`{aggregate['command']}`.*\n"
    )
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
        parts.append(f"![{experiment.title}]({figure.name})\n\n{caption}")
    parts.append("## Claims and verdicts\n")
    parts.append(claims_markdown(experiment, summaries, "###"))
    if paired is not None:
        parts.append(f"![{experiment.title}: paired by seed]({paired.name})\n\n{caption}")
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
    curves = curves_rows(results)
    if curves is not None:
        parts.append("## Validation perplexity over updates\n")
        parts.append(
            "Mean over seeds at the validations every seed of a run logged; in parentheses, the "
            "mean over seeds of the difference from the first run of the same column (paired "
            "by seed). Runs whose save dirs are gone (carried over) have no curve.\n"
        )
        parts.append(table(*curves) + "\n")
    parts.append("## Every run and seed\n")
    parts.append(
        "*ended at*: the update training stopped at; *evaluated*: the checkpoint the metrics "
        "come from; *wall*: training and evaluation by the command that finished the run; "
        "*result*: whether the command that wrote this page trained the run or kept an earlier "
        "result (carried over from the committed JSON record when its save dir is gone).\n"
    )
    parts.append(seeds_table(experiment, aggregate) + "\n")
    parts.append(_how(experiment, aggregate))
    path = out / f"{name}.md"
    write_text(path, "\n".join(parts))
    return path, figure


def _how(experiment: Experiment, aggregate: Mapping[str, Any]) -> str:
    sizes = _sizes_text(aggregate["preset"])
    evaluation = _evaluation_text(experiment, aggregate)
    results = aggregate["results"]
    seconds = float(aggregate.get("wall_seconds", 0.0))
    wall = _minutes(seconds)
    provenance = _carried_note(aggregate, results)
    code_line = _code_line(results)
    patience = _patience_text(results)
    return "\n".join(
        [
            "## How these numbers were made\n",
            f"- Command: `{aggregate['command']}` (rebuild this page from the JSON alone: "
            f"`butcherflow experiment {experiment.name} --report-only`).",
            f"- Budget: {budgets_text(experiment, results)}.{patience}",
            provenance,
            f"- Sizes: `{aggregate['sizes']}` preset: {sizes}.",
            f"- Data: `{aggregate['data']}`; task: {aggregate['task']}.",
            f"- Evaluation: {evaluation}; train tokens/s count target tokens of training steps, "
            "timed inside each run on a shared machine, not side by side (speed ratios: "
            "`butcherflow bench train`, [benchmarks](../benchmarks.md)).",
            code_line + ".",
            f"- Machine: {aggregate['machine']}; "
            f"{aggregate.get('threads', 'torch threads not recorded')}; "
            f"finished {aggregate['date']}; wall time of the runs in this table (training and "
            f"evaluation, each by the command that finished it): {wall}.",
            f"- Per-run details: `{experiment.name}.json`. Verdict rule: [index](index.md).",
            "",
        ]
    )


def _sizes_text(preset: Mapping[str, Any]) -> str:
    """The preset's sizes and training settings, as one clause."""
    return (
        f"d_model {preset['d_model']}, {preset['n_heads']} heads, d_ffn {preset['d_ffn']}, "
        f"{preset['encoder_layers']} + {preset['decoder_layers']} layers unless the run says "
        f"otherwise, vocabulary {preset['vocab_size']}, max_tokens {preset['max_tokens']}, "
        f"lr {preset['lr']:g}, warmup {preset['warmup_updates']}, dropout {preset['dropout']:g}, "
        f"label smoothing {preset['label_smoothing']:g}"
    )


def _evaluation_text(experiment: Experiment, aggregate: Mapping[str, Any]) -> str:
    """What the metrics were measured on: a translation's decoding of the test split, or a
    language model's validation perplexity (and bits per byte) and its sample windows."""
    d = aggregate.get("decoding")
    if d:  # translation: the decoding of the test split
        return (
            f"test split, checkpoint_{d['checkpoint']}, "
            + ("greedy" if d["beam"] == 1 else f"beam {d['beam']}")
            + f" decoding (max length {d['max_len_a']:g} · source + {d['max_len_b']}), "
            "detokenized sacreBLEU and chrF (signatures in the JSON)"
        )
    windows = experiment.settings.get("sample_break_mode", "none")
    bpb = any("bpb" in r.get("metrics", {}) for r in aggregate["results"])
    return (
        "validation perplexity 2^(nll bits per subword)"
        + (" and bits per byte (nll bits over the UTF-8 bytes of the valid text)" if bpb else "")
        + " at the last update, or at the best checkpoint for a run with patience; samples: "
        f"break mode {windows} ("
        + ("one line each" if windows == "eos" else "context windows across lines")
        + ")"
    )


def _carried_note(aggregate: Mapping[str, Any], results: Sequence[Mapping[str, Any]]) -> str:
    """Which results were carried over from the committed record, and when they finished."""
    carried = aggregate.get("carried_over", [])
    kept = [r for r in results if f"{r.get('run')}-seed{r['seed']}" in carried]
    dates = sorted({str(r.get("finished", "?"))[:10] for r in kept})
    return (
        f"- Carried over from the committed record (save dirs gone; not retrained): "
        f"{len(kept)} of {len(results)} results, finished {', '.join(dates)}; see the last "
        "column of the table above."
        if kept
        else "- Every result was trained by this command or read from its save dir."
        if "trained" in aggregate
        else "- Which results were trained and which were reused: not recorded by the version "
        "that wrote this JSON."
    )


def _code_line(results: Sequence[Mapping[str, Any]]) -> str:
    """The code versions that trained the runs, with how many results each."""
    codes: dict[str, int] = {}
    for r in results:
        code = r.get("code") or "not recorded (a version before results recorded it)"
        codes[code] = codes.get(code, 0) + 1
    return "- Code that trained the runs: " + "; ".join(
        f"{code}, {count} of {len(results)} results" for code, count in sorted(codes.items())
    )


def _patience_text(results: Sequence[Mapping[str, Any]]) -> str:
    """How patience counts, for an experiment with a run that has patience ('' otherwise)."""
    interval = next(
        (r.get("validate_interval_updates") for r in results if r.get("patience")), None
    )
    return (
        f" Patience counts validations, every {interval} updates (fairseq's `--patience`: stop "
        "when the validation loss has not improved for that many validations in a row)."
        if interval
        else ""
    )
