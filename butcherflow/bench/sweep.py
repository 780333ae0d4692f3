"""`butcherflow bench sweep`: every causal LM class of the installed transformers, read, rewired,
trained a step, generating, saved and reloaded (`zoo.sweep`), timed.

It writes the table to `docs/causal-lms.md` (beside the `--output` file; the docs gallery's
audit page, "What the reference code computes", carries it) and the counts, the total time
(target < 15 minutes on 2 cores) and the slowest architecture to the `sweep` section of
`docs/benchmarks.md`. Each architecture's row is appended to `build/bench-sweep.jsonl` as it is
measured: a run that is stopped continues there when started again, and a finished run deletes
the file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from importlib.metadata import version
from pathlib import Path

from ..gallery.build import SWEEP_PAGE as PAGE
from ..zoo.sweep import SweepRow, counts_line, one_per_class, one_thread, sweep_one, sweep_table
from . import write_section
from .order import machine

PROGRESS = Path("build/bench-sweep.jsonl")
TARGET = 15 * 60.0  # seconds, the whole sweep


def _measured(progress: Path) -> list[SweepRow]:
    if not progress.is_file():
        return []
    lines = progress.read_text(encoding="utf-8").splitlines()
    return [SweepRow(**json.loads(line)) for line in lines if line.strip()]


def _sweep(progress: Path) -> list[SweepRow]:
    """Every class's row: those `progress` holds from a stopped run, then the others."""
    rows = _measured(progress)
    done = {r.model_type for r in rows}
    progress.parent.mkdir(parents=True, exist_ok=True)
    import transformers

    transformers.logging.set_verbosity_error()  # loading bars and notes of save/reload
    with one_thread(), warnings.catch_warnings(), progress.open("a", encoding="utf-8") as out:
        warnings.simplefilter("ignore")
        for model_type in one_per_class():
            if model_type in done:
                continue
            row = sweep_one(model_type)
            out.write(json.dumps(dataclasses.asdict(row)) + "\n")
            out.flush()
            rows.append(row)
    return rows


def run_sweep(output: str | Path, command: str, progress: Path = PROGRESS) -> list[SweepRow]:
    """Run the sweep, write its page beside `output` and its section of `output`.

    **Arguments:**

    - `output`: the benchmarks markdown file (its other sections are kept); the table goes
      to `causal-lms.md` in the same folder.
    - `command`: the command line the page and the section name.
    - `progress`: the rows measured so far (a stopped run continues from them).

    **Returns:** one `SweepRow` per causal LM class.
    """
    rows = _sweep(progress)
    total = sum(sum(r.seconds.values()) for r in rows)
    slowest = max(rows, key=lambda r: sum(r.seconds.values()))
    where = (
        f"`{command}` on {machine()}, transformers {version('transformers')}, one thread, "
        f"load average {os.getloadavg()[0]:.1f} at the end (the machine is shared)"
    )
    page = [
        "# Every causal LM of transformers, read",
        "",
        "Each `*ForCausalLM` class of the installed transformers, built from a tiny "
        "configuration with random weights (nothing downloaded), read by `bf.extract(model, "
        "input_ids=ids)` with no configuration, compiled back (the round trip, a relative "
        "difference), rewired to its own method (`own`: the original's tokens with the KV "
        "cache, greedy and sampled with a seed), to Strang with the MLP's half steps around "
        "the attention (`strang`) and to the explicit midpoint method on the whole block "
        "(`midpoint`: two calls of each block per step, the cache off), each trained one "
        "step and generating, and saved and loaded back by `bf.load_pretrained` (`reload`: "
        "identical logits). `refused` is butcherflow's one-line reason; `traceback` or "
        "`mismatch` would be a defect.",
        "",
        f"Measured by {where}.",
        "",
        counts_line(rows),
        "",
        sweep_table(rows),
    ]
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    Path(output).with_name(PAGE).write_text("\n".join(page), encoding="utf-8")
    verdict = "PASS" if total < TARGET else "FAIL"
    body = [
        "## The causal LMs of transformers: the sweep",
        "",
        f"{where}. The table is [{PAGE}]({PAGE}).",
        "",
        counts_line(rows),
        "",
        f"Total {total:.0f} s {verdict} (target < {TARGET:.0f} s, the whole sweep on 2 cores); "
        f"slowest: {slowest.architecture}, {sum(slowest.seconds.values()):.1f} s.",
    ]
    write_section(output, "sweep", "\n".join(body))
    progress.unlink()
    print("\n".join(body))
    return rows
