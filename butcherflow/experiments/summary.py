"""One experiment's results gathered per run, and its claims judged by both rules.

`summarize` turns the per-seed results of `OUT/NAME.json` into a `RunSummary` per run (values per
seed, budgets, throughput); `judge_claim` applies `verdict.py`'s unpaired and paired rules to a
claim's comparisons; `read_aggregate` reads an `OUT/NAME.json`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, final

from ..errors import ButcherflowError
from .spec import Claim, Comparison, Experiment, higher_is_better
from .verdict import PairedVerdict, Verdict, combine, decide, judge, judge_paired


@final
@dataclass(frozen=True)
class RunSummary:
    """The seeds of one run, gathered.

    **Arguments:**

    - `name`, `label`, `column`, `recipe`: from the declaration.
    - `seeds`: the seeds that have a result.
    - `values`: metric -> one value per seed (in `seeds` order).
    - `by_seed`: metric -> seed -> value (what the paired rule pairs).
    - `parameters`: the model's parameter count (the same for every seed).
    - `tokens_per_s`: training throughput per seed (target tokens/s).
    - `extra`: the first seed's `positions` facts (extrapolation), or empty.
    - `budget`: how long its seeds trained (`"600 updates"`, `"3000 updates or patience 5"`).
    """

    name: str
    label: str
    column: str
    recipe: str
    seeds: tuple[int, ...]
    values: Mapping[str, tuple[float, ...]]
    by_seed: Mapping[str, Mapping[int, float]]
    parameters: int | None
    tokens_per_s: tuple[float, ...]
    extra: Mapping[str, Any]
    budget: str = ""

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
        by_seed = {
            m: {
                int(r["seed"]): float(r["metrics"][m])
                for r in mine
                if r["metrics"].get(m) is not None
            }
            for m in metrics
        }
        values = {m: tuple(by_seed[m].values()) for m in metrics}
        summaries.append(
            RunSummary(
                name=run.name,
                label=run.label,
                column=run.column,
                recipe=run.recipe_name,
                seeds=tuple(int(r["seed"]) for r in mine),
                values=values,
                by_seed=by_seed,
                parameters=mine[0].get("parameters"),
                tokens_per_s=tuple(float(r["tokens_per_s"]) for r in mine if r.get("tokens_per_s")),
                extra=dict(mine[0].get("positions") or {}),
                budget=" / ".join(dict.fromkeys(stop_rule(r) for r in mine)),
            )
        )
    return summaries


@final
@dataclass(frozen=True)
class ClaimOutcome:
    """A claim judged by both rules (`verdict.py`).

    **Arguments:**

    - `unpaired`, `paired`: the claim's verdict under each rule.
    - `verdict`, `rule`: the deciding verdict and the rule that decided (`decide`).
    - `comparisons`: per comparison, its unpaired and paired verdicts.
    """

    unpaired: str
    paired: str
    verdict: str
    rule: str
    comparisons: tuple[tuple[Comparison, Verdict, PairedVerdict], ...]


def stop_rule(result: Mapping[str, Any]) -> str:
    """`"600 updates"` or `"3000 updates or patience 5"`: how long a result's run trained."""
    text = f"{result.get('budget')} updates"
    return text + (f" or patience {result['patience']}" if result.get("patience") else "")


def judge_claim(claim: Claim, summaries: Sequence[RunSummary]) -> ClaimOutcome:
    """The claim's verdicts under both rules, and each comparison's."""
    by_name = {s.name: s for s in summaries}
    rows = []
    for comparison in claim.comparisons:
        better, worse = by_name.get(comparison.better), by_name.get(comparison.worse)
        metric, direction = comparison.metric, higher_is_better(comparison.metric)
        unpaired = judge(
            better.values.get(metric, ()) if better else (),
            worse.values.get(metric, ()) if worse else (),
            direction,
        )
        paired = judge_paired(
            better.by_seed.get(metric, {}) if better else {},
            worse.by_seed.get(metric, {}) if worse else {},
            direction,
        )
        rows.append((comparison, unpaired, paired))
    unpaired_verdicts = [u for _, u, _ in rows]
    paired_verdicts = [p for _, _, p in rows]
    verdict, rule = decide(unpaired_verdicts, paired_verdicts)
    return ClaimOutcome(
        unpaired=combine(unpaired_verdicts),
        paired=combine(paired_verdicts),
        verdict=verdict,
        rule=rule,
        comparisons=tuple(rows),
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


def rows_and_columns(summaries: Sequence[RunSummary]) -> tuple[list[str], list[str]]:
    labels = list(dict.fromkeys(s.label for s in summaries))
    columns = list(dict.fromkeys(s.column for s in summaries))
    return labels, columns
