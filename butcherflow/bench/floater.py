"""`butcherflow bench floater`: what FLOATER positions cost a training step.

transformer-small (sinusoidal positions), `floater` (flow biases at every block) and
`floater-input` (at the first block of each side) train on the same batches: Adam steps,
forward + backward, timed side by side (interleaved repeats, median), so the ratios compare
like with like on a loaded machine.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from ..assemble import Seq2Seq, load_recipe
from . import write_section
from .block import side_by_side
from .order import machine

RECIPES = ("transformer-small", "floater", "floater-input")


def _trainer(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> Callable[[], None]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    loss = nn.CrossEntropyLoss()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        logits = model(src, tgt)
        loss(logits.reshape(-1, model.vocab_size), tgt.reshape(-1)).backward()
        optimizer.step()

    return step


def bench_floater(
    repeats: int,
    *,
    batch: int = 32,
    length: int = 32,
    vocab: int = 8000,
    sizes: Mapping[str, Any] | None = None,
) -> list[tuple[str, int, float]]:
    """Median seconds of one training step of each recipe of `RECIPES`.

    **Arguments:**

    - `repeats`: interleaved repeats per model (the median is kept).
    - `batch`, `length`: the batch is `batch × length` source and target tokens.
    - `vocab`: vocabulary size.
    - `sizes`: overrides of the recipes' `[sizes]` (small settings for a quick check).

    **Returns:** `(recipe, parameters, seconds)` per recipe.
    """
    torch.manual_seed(0)
    models = []
    for name in RECIPES:
        recipe = load_recipe(name)
        if sizes:
            recipe = dataclasses.replace(recipe, sizes={**recipe.sizes, **sizes})
        models.append(Seq2Seq(recipe, vocab))
    src = torch.randint(1, vocab, (batch, length))
    tgt = torch.randint(1, vocab, (batch, length))
    src[: batch // 2, -length // 4 :] = 0  # some padding: positions come from token_positions
    times = side_by_side(*[_trainer(m, src, tgt) for m in models], repeats=repeats)
    return [(n, m.num_parameters, t) for n, m, t in zip(RECIPES, models, times, strict=True)]


def run_floater(
    output: str,
    repeats: int,
    command: str,
    *,
    batch: int = 32,
    length: int = 32,
    vocab: int = 8000,
    sizes: Mapping[str, Any] | None = None,
) -> None:
    """Run `bench_floater` and write the `floater` section of `output` (see `bench_floater`)."""
    rows = bench_floater(repeats, batch=batch, length=length, vocab=vocab, sizes=sizes)
    base = rows[0][2]
    shown = {**load_recipe(RECIPES[0]).sizes, **(sizes or {})}
    lines = [
        "## FLOATER positions vs sinusoidal positions (`butcherflow bench floater`)",
        "",
        f"Command: `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}). "
        f"Machine: {machine()}. One Adam training step (forward + backward) on the same "
        f"{batch} × {length} source and target tokens (half the sources right-padded by a "
        f"quarter), vocabulary {vocab}, sizes d_model={shown['d_model']}, "
        f"n_heads={shown['n_heads']}, d_ffn={shown['d_ffn']}, dropout={shown['dropout']}; "
        f"median of {repeats} interleaved repeats. FLOATER uses the catalog's `floater` flow "
        "(RK4, one step per position, Δ = 1/100, backpropagation through the solver); each "
        "flow is solved once per step, shared by all blocks.",
        "",
        "| recipe | parameters | step (ms) | target tokens/s | step / sinusoidal |",
        "|---|--:|--:|--:|--:|",
    ]
    for name, count, seconds in rows:
        lines.append(
            f"| {name} | {count:,} | {seconds * 1e3:.1f} | {batch * length / seconds:,.0f} | "
            f"{seconds / base:.3f} |"
        )
    body = "\n".join(lines)
    print(body)
    write_section(output, "floater", body)
