"""`butcherflow show RUN_DIR`: what a trained run's blocks compute now, read back by `bf.extract`.

Each compiled block of the model (encoder and decoder) is extracted with its own field
sub-modules as fields and its coefficient modules (stage gates) frozen, on a random state of the
model's width: the learned coefficients (gates per token, learned weights) come back as a
declaration with its proof, beside the declaration the run started from. Stacks whose
coefficients span the layers (general linear and multistep stacks) have no per-block fields;
their learned stream-mixing matrices are reported by `stream_bounds`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from ..analysis import check
from ..compiler import CompiledBlock
from ..compiler.coefficients import StageGate
from ..errors import ExtractionError
from ..extract import Extracted, extract
from ..nn import Field
from .proofs import order_table

BATCH, LENGTH, MEMORY = 2, 6, 5  # the random state a block is read at


def block_fields(block: nn.Module) -> tuple[dict[str, str], tuple[str, ...]]:
    """(field name -> path, frozen paths) of a compiled block: its `Field` sub-modules and its
    stage gates (which read the field values: frozen, so that the gates stay those of the
    block's own run)."""
    fields: dict[str, str] = {}
    frozen: list[str] = []
    for name, module in block.named_modules():
        if isinstance(module, Field) and not any(name.startswith(p + ".") for p in fields.values()):
            fields[name.rsplit(".", 1)[-1]] = name
        elif isinstance(module, StageGate):
            frozen.append(name)
    return fields, tuple(frozen)


def blocks(model: nn.Module) -> Iterator[tuple[str, int, nn.Module]]:
    """(side, index, block) for every compiled block of the model's encoder and decoder."""
    for side in ("encoder", "decoder"):
        for index, block in enumerate(getattr(model, side, None) or ()):
            yield side, index, block


def read_back(block: nn.Module, side: str, d_model: int, seed: int = 0) -> Extracted:
    """The integrator one trained block computes, read at a random state.

    **Arguments:**

    - `block`: a compiled block of the model (in eval mode).
    - `side`: `"encoder"` or `"decoder"` (a decoder block also reads a random memory).
    - `d_model`: the model's width.
    - `seed`: of the random state.

    **Returns:** the extraction; raises `ExtractionError` for a block without field
    sub-modules of its own.
    """
    fields, frozen = block_fields(block)
    if not fields:
        raise ExtractionError(
            f"{type(block).__name__}: no field sub-modules of its own (a stack whose "
            "coefficients span the layers); its learned V is reported by stream bounds"
        )
    generator = torch.Generator().manual_seed(seed)
    state = torch.randn(BATCH, LENGTH, d_model, generator=generator)
    kwargs: dict[str, Any] = {}
    if side == "decoder":
        kwargs["memory"] = torch.randn(BATCH, MEMORY, d_model, generator=generator)
    return extract(block.eval(), state, fields=fields, frozen=frozen, **kwargs)


def describe(side: str, index: int, block: nn.Module, d_model: int) -> list[str]:
    """Lines for one block: the declaration it started from and what it computes now."""
    started = getattr(block, "method", None)
    head = f"{side} layer {index} ({type(block).__name__})"
    if not isinstance(block, CompiledBlock):
        return [f"{head}: not a compiled block, nothing to read back"]
    try:
        found = read_back(block, side, d_model)
    except ExtractionError as refusal:
        return [f"{head}: not read back: {refusal}"]
    lines = [f"{head}:"]
    if started is not None:
        lines += [
            "  started from:",
            *("    " + row for row in order_table([check(started)]).splitlines()),
        ]
    lines += ["  computes now (bf.extract at a random state):"]
    lines += ["    " + row for row in str(found).splitlines()]
    lines.append(f"    round trip: relative difference {found.verify():.2g}")
    return lines
