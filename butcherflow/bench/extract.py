"""`butcherflow bench extract`: how long does reading the integrator out of a module take?

`bf.extract` with its proof (the probe runs, the per-token least squares, the declaration and
`bf.check`) on one layer (target < 2 s) and on a 12-layer stack (target < 10 s), on CPU, at a
working size; the round trip (`verify()`) is timed beside it. The modules: a block compiled by
butcherflow (classical RK4 on a `san+ffn` field: four field calls, an order-4 proof), and
x-transformers layers and stacks built with random weights (the `audit` extra). Each time is
the median of the repeats; the worst case of each kind decides.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ..compiler import compile as compile_method
from ..errors import ButcherflowError
from ..extraction.target import Target
from ..zoo import x_transformers_default, x_transformers_streams
from . import write_section
from .order import machine

D_MODEL, N_HEADS, D_FFN, BATCH, LENGTH = 256, 4, 1024, 2, 32
LAYER_TARGET, STACK_TARGET = 2.0, 10.0  # seconds


@dataclass(frozen=True)
class Case:
    kind: str  # "layer" or "stack"
    name: str
    build: Callable[[], Target]


@dataclass(frozen=True)
class Row:
    case: Case
    extract: float  # seconds, with the proof
    verify: float
    declaration: str
    difference: float

    @property
    def target(self) -> float:
        return LAYER_TARGET if self.case.kind == "layer" else STACK_TARGET


def _rk4() -> Target:
    block = compile_method("rk4", field="san+ffn", d_model=D_MODEL, n_heads=N_HEADS, d_ffn=D_FFN)
    state = torch.randn(BATCH, LENGTH, D_MODEL, generator=torch.Generator().manual_seed(0))
    return Target(block.eval(), (state,), {"F": "program.field"}, title="bf.compile('rk4')")


CASES = (
    Case("layer", "butcherflow RK4 block (san+ffn)", _rk4),
    Case(
        "layer",
        "x-transformers Encoder(depth=1)",
        lambda: x_transformers_default(1, D_MODEL, LENGTH),
    ),
    Case(
        "layer",
        "x-transformers HyperConnection layer (4 streams)",
        lambda: x_transformers_streams(D_MODEL, LENGTH),
    ),
    Case(
        "stack",
        "x-transformers Encoder(depth=12): 24 branches",
        lambda: x_transformers_default(12, D_MODEL, LENGTH),
    ),
)


def _time(case: Case, repeats: int) -> Row:
    target = case.build()
    extracting, verifying, difference, declaration = [], [], 0.0, ""
    for _ in range(repeats):
        start = time.perf_counter()
        found = target.extract()
        extracting.append(time.perf_counter() - start)
        start = time.perf_counter()
        difference = found.verify()
        verifying.append(time.perf_counter() - start)
        declaration = f"{found.method.family}, order {found.report.order}"
    return Row(
        case,
        statistics.median(extracting),
        statistics.median(verifying),
        declaration,
        difference,
    )


def run_extract(
    output: str | Path, repeats: int, command: str, cases: Sequence[Case] = CASES
) -> list[Row]:
    """Time every case, print the rows, and write the `extract` section of `output`.

    **Arguments:**

    - `output`: the markdown file (its other sections are kept).
    - `repeats`: timings are the median of this many extractions.
    - `command`: the command line the section names.
    - `cases`: what to time (each kind, "layer" and "stack", at least once).

    **Returns:** one `Row` per case.
    """
    try:
        import x_transformers  # noqa: F401  (the audit extra: the stacks are its modules)
    except ImportError:
        raise ButcherflowError(
            "bench extract times x-transformers modules: install the audit extra "
            "(pip install -e '.[audit]')"
        ) from None
    load = os.getloadavg()[0]  # a shared machine's load stretches every time below
    rows = []
    for case in cases:
        row = _time(case, repeats)
        print(
            f"{case.name:<52} extract {row.extract:6.2f} s  verify {row.verify:6.2f} s", flush=True
        )
        rows.append(row)
    lines = [
        "## Extraction (`butcherflow bench extract`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}, CPU, load average {load:.1f} at the start. Each time is the "
        f"median of {repeats} repeats of `bf.extract` with its proof (probe runs, per-token "
        "float64 least squares, the declaration and `bf.check`) on a "
        f"({BATCH}, {LENGTH}, {D_MODEL}) state "
        f"(n_heads={N_HEADS}; the RK4 block's d_ffn={D_FFN}, x-transformers' feed-forward "
        "4·d_model), and of the round trip `verify()`. Targets: one layer < 2 s, a 12-layer "
        "stack < 10 s.",
        "",
        "| kind | module | declaration | extract + proof (s) | target | verify (s) | round trip |",
        "|---|---|---|--:|--:|--:|--:|",
    ]
    for r in rows:
        verdict = "PASS" if r.extract < r.target else "FAIL"
        lines.append(
            f"| {r.case.kind} | {r.case.name} | {r.declaration} | {r.extract:.2f} {verdict} | "
            f"< {r.target:g} | {r.verify:.2f} | {r.difference:.1e} |"
        )
    lines.append("")
    for kind in ("layer", "stack"):
        worst = max((r for r in rows if r.case.kind == kind), key=lambda r: r.extract)
        lines.append(
            f"Worst {kind}: {worst.case.name}, {worst.extract:.2f} s (target < {worst.target:g} s)."
        )
        lines.append("")
    body = "\n".join(lines)
    print(body)
    write_section(output, "extract", body)
    return rows
