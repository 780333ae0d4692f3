"""Validation curves: how each run's validation perplexity went, and how far a run stays from
the experiment's first run of its column (its baseline) as training goes on.

The runner records each run's curve (`valid_curve`: [update, valid perplexity] at every
validation, from its `log.jsonl`) in its result; `curves_rows` gives the seeds' mean at round
update counts that every seed of a run logged, with the paired gap to the baseline
(`truncation`'s "the gap to the residual block shrank from 300 to 600 updates; where does it
end?").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from statistics import mean
from typing import Any

MARKS = (300, 600, 1000, 1500, 2000, 2500, 3000, 5000, 10000)  # round update counts shown


def valid_curve(log: Iterable[Mapping[str, Any]]) -> list[list[float]]:
    """[update, valid perplexity] at every validation of a run's log (`log.jsonl` entries)."""
    return [
        [entry["update"], entry["valid_ppl"]]
        for entry in log
        if entry.get("kind") == "valid" and "valid_ppl" in entry
    ]


def curves_rows(results: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]] | None:
    """The header and rows of a table: per run (label, column) whose every seed recorded a
    curve, the seeds' mean validation perplexity at each round update count, and beside it the
    mean over seeds of its difference from the first such run of the same column (paired by
    seed); "—" where a seed did not log that update. None when no run recorded a curve."""
    runs: dict[tuple[str, str], dict[int, dict[int, float]]] = {}
    incomplete: set[tuple[str, str]] = set()
    for result in results:
        key = (str(result.get("label")), str(result.get("column") or ""))
        curve = result.get("valid_curve")
        if curve:
            runs.setdefault(key, {})[int(result["seed"])] = {int(u): float(p) for u, p in curve}
        else:
            incomplete.add(key)
    runs = {key: seeds for key, seeds in runs.items() if key not in incomplete}
    if not runs:
        return None
    marks = [m for m in MARKS if any(all(m in c for c in s.values()) for s in runs.values())]
    baselines: dict[str, tuple[str, str]] = {}
    for key in runs:
        baselines.setdefault(key[1], key)
    rows = []
    for key, seeds in runs.items():
        base = runs[baselines[key[1]]]
        rows.append([", ".join(part for part in key if part)])
        for m in marks:
            if not all(m in c for c in seeds.values()):
                rows[-1].append("—")
                continue
            cell = f"{mean(c[m] for c in seeds.values()):.1f}"
            paired = [s for s in seeds if s in base and m in base[s]]
            if key != baselines[key[1]] and paired:
                cell += f" ({mean(seeds[s][m] - base[s][m] for s in paired):+.1f})"
            rows[-1].append(cell)
    return ["run", *(f"{m} updates" for m in marks)], rows
