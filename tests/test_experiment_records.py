"""The committed experiment records: every number of docs/experiments/index.md and of the README's
summary is recomputed here from docs/experiments/*.json.

Two checks: the pages are exactly what this version's code generates from the JSON (nothing was
retyped or left stale), and, independently of that code, the numbers in them are the means,
standard deviations and per-seed differences of the JSON's values (computed with `statistics`).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from butcherflow.experiments import EXPERIMENTS
from butcherflow.experiments.index import README_END, README_START, index_text, readme_summary
from butcherflow.experiments.spec import higher_is_better

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs" / "experiments"
RECORDED = [name for name in EXPERIMENTS if (DOCS / f"{name}.json").is_file()]


def readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split(README_START, 1)[1].split(README_END, 1)[0].strip()


def values(name: str) -> dict[tuple[str, str], dict[int, float]]:
    """(run, metric) -> seed -> value, straight from the JSON."""
    record = json.loads((DOCS / f"{name}.json").read_text(encoding="utf-8"))
    out: dict[tuple[str, str], dict[int, float]] = {}
    for result in record["results"]:
        for metric, value in result["metrics"].items():
            if value is not None:
                out.setdefault((result["run"], metric), {})[int(result["seed"])] = float(value)
    return out


def stats(xs: list[float], places: int) -> str:
    mean = f"{statistics.fmean(xs):.{places}f}"
    return f"{mean} ± " + (f"{statistics.stdev(xs):.{places}f}" if len(xs) > 1 else "—")


def test_there_is_a_record() -> None:
    assert RECORDED, "docs/experiments holds no experiment JSON"


def test_index_and_readme_are_what_the_json_gives() -> None:
    """Regenerate with `butcherflow experiment all --report-only --readme README.md`."""
    assert (DOCS / "index.md").read_text(encoding="utf-8") == index_text(DOCS, EXPERIMENTS)
    assert readme_section() == readme_summary(Path("docs/experiments"), EXPERIMENTS)


@pytest.mark.parametrize("name", RECORDED)
def test_every_comparison_number_is_recomputed_from_the_json(name: str) -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    rows = [line for line in index.splitlines() if line.startswith("| ")]
    table = values(name)
    checked = 0
    for claim in EXPERIMENTS[name].claims:
        for c in claim.comparisons:
            a, b = table.get((c.better, c.metric), {}), table.get((c.worse, c.metric), {})
            if not a or not b:
                continue
            places = 1 if c.metric == "ppl" else 2
            sign = 1 if higher_is_better(c.metric) else -1
            d = sign * (statistics.fmean(a.values()) - statistics.fmean(b.values()))
            pairs = sorted(set(a) & set(b))
            diffs = [sign * (a[s] - b[s]) for s in pairs]
            cells = [stats(list(a.values()), places), stats(list(b.values()), places)]
            per_seed = ", ".join(f"{s}: {x:+.{places}f}" for s, x in zip(pairs, diffs, strict=True))
            wins = f"{sum(x > 0 for x in diffs)}/{len(diffs)}"
            paired = f"{statistics.fmean(diffs):+.{places}f}"
            if len(diffs) > 1:
                paired += f" ± {statistics.stdev(diffs):.{places}f}"
            expected = f"| {cells[0]} | {cells[1]} | {d:+.{places}f}"
            matches = [
                row
                for row in rows
                if expected in row and f"| {per_seed} | {paired} | {wins} |" in row
            ]
            assert matches, (name, c, expected, per_seed, paired, wins)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", RECORDED)
def test_every_readme_number_is_recomputed_from_the_json(name: str) -> None:
    line = next(
        line for line in readme_section().splitlines() if f"(docs/experiments/{name}.md)**" in line
    )
    experiment = EXPERIMENTS[name]
    metrics = {experiment.metric} | {
        c.metric for claim in experiment.claims for c in claim.comparisons
    }
    for run in experiment.runs:
        for metric in metrics:
            seeds = values(name).get((run.name, metric))
            if seeds:
                places = 1 if metric == "ppl" else 2
                assert f"{run.label} {stats(list(seeds.values()), places)}" in line, (run, metric)
    record: dict[str, Any] = json.loads((DOCS / f"{name}.json").read_text(encoding="utf-8"))
    hours = sum(float(r.get("wall_seconds") or 0) for r in record["results"]) / 3600
    assert f"{len(record['results'])} runs" in line and f"{hours:.1f} h" in line


def test_the_readme_verdicts_are_the_index_verdicts() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    ours = [r for r in readme_section().splitlines() if r.startswith("| [")]
    theirs = [r for r in index.split("## Summary", 1)[1].splitlines() if r.startswith("| [")]
    assert [r.replace("](docs/experiments/", "](") for r in ours] == theirs[: len(ours)]
    assert len(ours) == len(theirs) == sum(len(EXPERIMENTS[n].claims) for n in RECORDED)
