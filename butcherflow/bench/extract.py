"""`butcherflow bench extract`: how long does reading the integrator out of a module take?

`bf.extract` with its proof (the probe runs, the per-token least squares, the declaration and
`bf.check`) on one layer (target < 2 s), on a 12-layer stack (target < 10 s) and on whole
12-layer models (every block and the depth method, with their proofs: target < 10 s; and
`bf.rewire(model, "strang")`, target < 2 s), on CPU, at a working size; the round trip
(`verify()`) is timed beside it. The modules: a block compiled by butcherflow (classical RK4 on
a `san+ffn` field: four field calls, an order-4 proof), x-transformers layers and stacks, and
transformers causal LMs (Llama, GPT-2, GPT-J, Gemma 2, Mixtral), all built with random weights
(the `audit` extra). Each time is the median of the repeats; the worst case of each kind
decides.
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
from ..extraction import Extracted, ExtractedModel, rewire
from ..extraction.target import Target
from ..zoo import x_transformers_default, x_transformers_streams
from ..zoo.causal_lm import architectures, tiny_config
from . import write_section
from .order import machine

D_MODEL, N_HEADS, D_FFN, BATCH, LENGTH = 256, 4, 1024, 2, 32
LAYER_TARGET, STACK_TARGET, REWIRE_TARGET = 2.0, 10.0, 2.0  # seconds
MODEL_LAYERS = 12


@dataclass(frozen=True)
class Case:
    kind: str  # "layer", "stack" or "model"
    name: str
    build: Callable[[], Target]


@dataclass(frozen=True)
class Row:
    case: Case
    extract: float  # seconds, with the proof
    verify: float
    declaration: str
    difference: float
    rewire: float | None = None  # seconds of bf.rewire(model, "strang"), for a model

    @property
    def target(self) -> float:
        return LAYER_TARGET if self.case.kind == "layer" else STACK_TARGET


def _rk4() -> Target:
    block = compile_method("rk4", field="san+ffn", d_model=D_MODEL, n_heads=N_HEADS, d_ffn=D_FFN)
    state = torch.randn(BATCH, LENGTH, D_MODEL, generator=torch.Generator().manual_seed(0))
    return Target(block.eval(), (state,), {"F": "program.field"}, title="bf.compile('rk4')")


def _model(model_type: str) -> Target:
    """A 12-layer causal LM of transformers at the working size, with its inputs."""
    import transformers  # the audit extra: imported when a model is timed

    sizes = {
        "num_hidden_layers": MODEL_LAYERS,
        "hidden_size": D_MODEL,
        "intermediate_size": D_FFN,
        "num_attention_heads": N_HEADS,
        "num_key_value_heads": N_HEADS,
        "head_dim": D_MODEL // N_HEADS,
        "vocab_size": 256,
        "rotary_dim": 16,
    }
    config = tiny_config(model_type, sizes)
    torch.manual_seed(0)
    model = getattr(transformers, architectures()[model_type])(config).eval()
    ids = torch.randint(0, 256, (BATCH, LENGTH), generator=torch.Generator().manual_seed(0))
    return Target(model, (), kwargs={"input_ids": ids}, title=architectures()[model_type])


MODEL_TYPES = ("llama", "gpt2", "gptj", "gemma2", "mixtral")

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
    *(
        Case("model", f"transformers {t} (12 layers)", lambda t=t: _model(t))  # type: ignore[misc]
        for t in MODEL_TYPES
    ),
)


def _time(case: Case, repeats: int) -> Row:
    target = case.build()
    extracting, verifying, rewiring, difference, declaration = [], [], [], 0.0, ""
    for _ in range(repeats):
        start = time.perf_counter()
        found = target.extract()
        declaration = _proved(found)  # the proofs are part of the reading's time
        extracting.append(time.perf_counter() - start)
        start = time.perf_counter()
        difference = found.verify()
        verifying.append(time.perf_counter() - start)
        if isinstance(found, ExtractedModel):
            start = time.perf_counter()
            rewire(target.module, "strang", *target.args, **target.kwargs)
            rewiring.append(time.perf_counter() - start)
    return Row(
        case,
        statistics.median(extracting),
        statistics.median(verifying),
        declaration,
        difference,
        statistics.median(rewiring) if rewiring else None,
    )


def _proved(found: Extracted | ExtractedModel) -> str:
    """The declaration in words, its proof (every layer's and the depth method's) run."""
    if isinstance(found, ExtractedModel):
        orders = sorted({str(layer.report.order) for layer in found.layers})
        depth = found.depth.report.order
        kinds = sorted({layer.method.family for layer in found.layers})
        return f"{', '.join(kinds)}, order {', '.join(orders)}; depth order {depth}"
    return f"{found.method.family}, order {found.report.order}"


def run_extract(
    output: str | Path, repeats: int, command: str, cases: Sequence[Case] = CASES
) -> list[Row]:
    """Time every case, print the rows, and write the `extract` section of `output`.

    **Arguments:**

    - `output`: the markdown file (its other sections are kept).
    - `repeats`: timings are the median of this many extractions.
    - `command`: the command line the section names.
    - `cases`: what to time ("layer", "stack" and "model" cases; the worst of each kind
      present is named).

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
        "4·d_model), and of the round trip `verify()`. A model is a transformers causal LM "
        f"with {MODEL_LAYERS} layers of that width (random weights; vocabulary 256), read "
        "whole with no configuration (every block and the depth method, each proved), "
        'and rewired by `bf.rewire(model, "strang")` (its own reading, without proofs, '
        "the copy, the capture with the cache and the new blocks). Targets: one layer < 2 s, "
        "a 12-layer stack or model < 10 s, rewiring a model < 2 s.",
        "",
        "| kind | module | declaration | extract + proof (s) | target | verify (s) | round trip "
        "| rewire (s) |",
        "|---|---|---|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        verdict = "PASS" if r.extract < r.target else "FAIL"
        rewired = (
            "—"
            if r.rewire is None
            else f"{r.rewire:.2f} {'PASS' if r.rewire < REWIRE_TARGET else 'FAIL'}"
        )
        lines.append(
            f"| {r.case.kind} | {r.case.name} | {r.declaration} | {r.extract:.2f} {verdict} | "
            f"< {r.target:g} | {r.verify:.2f} | {r.difference:.1e} | {rewired} |"
        )
    lines.append("")
    for kind in dict.fromkeys(r.case.kind for r in rows):
        worst = max((r for r in rows if r.case.kind == kind), key=lambda r: r.extract)
        lines.append(
            f"Worst {kind}: {worst.case.name}, {worst.extract:.2f} s (target < {worst.target:g} s)."
        )
        lines.append("")
    timed = [r for r in rows if r.rewire is not None]
    if timed:
        worst = max(timed, key=lambda r: r.rewire or 0.0)
        lines += [
            f"Worst rewiring: {worst.case.name}, {worst.rewire:.2f} s "
            f"(target < {REWIRE_TARGET:g} s).",
            "",
        ]
    body = "\n".join(lines)
    print(body)
    write_section(output, "extract", body)
    return rows
