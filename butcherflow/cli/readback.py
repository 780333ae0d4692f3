"""`butcherflow show RUN_DIR`: what a trained run's blocks compute now, read back by `bf.extract`.

Each compiled block of the model (every side it is built from: encoder and decoder, or a
language model's one stack, `model.sides()`) is extracted with its own field
sub-modules as fields and its coefficient modules (stage gates) frozen, on a random state of the
model's width: the learned coefficients (gates per token, learned weights) come back as a
declaration with its proof, beside the declaration the run started from. A general linear
stack (hyper-connections) is read layer by layer: layer m as a module of the r streams
(`StackLayer`, the stack's own mixing and field), extracted over its stream axis, gives that
layer's learned U, B and V (per token under dynamic coefficients) with their proof. Multistep
stacks, whose coefficients span the layers, have no per-layer reading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast, final

import torch
from torch import nn

from ..analysis import check
from ..assemble import LanguageModel, Seq2Seq, cross_attends
from ..compiler import CompiledBlock, GeneralLinearStack
from ..compiler.coefficients import StageGate
from ..errors import ExtractionError
from ..extraction import Extracted, extract
from ..nn import Context, Field
from ..nn.streams import advance, read_stages
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


def blocks(model: Seq2Seq | LanguageModel) -> Iterator[tuple[str, int, nn.Module, bool]]:
    """(side, index, block, whether it reads an encoder's memory) for every block of the model,
    side by side (`sides()`: a translation model's encoder and decoder, a language model's
    one stack)."""
    for where, (side, stack) in model.sides().items():
        for index, block in enumerate(stack):
            yield where, index, block, cross_attends(side)


def read_back(block: nn.Module, memory: bool, d_model: int, seed: int = 0) -> Extracted:
    """The integrator one trained block computes, read at a random state.

    **Arguments:**

    - `block`: a compiled block of the model (in eval mode).
    - `memory`: the block cross-attends (a translation decoder's): it also reads a random
      memory.
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
    if memory:
        kwargs["memory"] = torch.randn(BATCH, MEMORY, d_model, generator=generator)
    return extract(block.eval(), state, fields=fields, frozen=frozen, **kwargs)


@final
class StackLayer(nn.Module):
    """Layer m of a `GeneralLinearStack` as a module of its streams: `(r, batch, time, d)` ->
    the next streams, computed by the stack's own mixing (`mix`) and field (`field`).

    **Arguments:** `stack`: the stack; `m`: the layer's index.
    """

    def __init__(self, stack: GeneralLinearStack, m: int) -> None:
        super().__init__()
        self.mix = stack.program.get_submodule(f"mix{m}")
        self.field = stack.program.get_submodule(f"layer{m}")
        self.A = [[float(a) for a in row] for row in stack.method.A]
        self.causal = stack.causal

    def forward(self, streams: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        ctx = Context(causal=self.causal, memory=memory)
        U, B, V = self.mix(streams)
        read = read_stages(U, streams)
        values: list[torch.Tensor] = []
        for i, row in enumerate(self.A):
            Y = read[i] + sum((a * values[j] for j, a in enumerate(row[:i]) if a), torch.zeros(()))
            values.append(self.field(Y, ctx, i))
        out: torch.Tensor = advance(V, streams, B, *values)
        return out


def read_back_layers(stack: GeneralLinearStack, memory: bool, seed: int = 0) -> list[Extracted]:
    """Every layer of a general linear stack read back over its streams (`StackLayer`), at
    random streams: its learned U, B, V as a general linear method (the mixing is frozen, so
    that dynamic coefficients stay those of the layer's own input)."""
    generator = torch.Generator().manual_seed(seed)
    r, d = stack.method.values, stack.d_model
    assert d is not None  # a stack's width is known once it is built
    found = []
    for m in range(stack.layers):
        layer = StackLayer(stack, m).eval()
        streams = torch.randn(r, BATCH, LENGTH, d, generator=generator)
        kwargs: dict[str, Any] = {}
        if memory:
            kwargs["memory"] = torch.randn(BATCH, MEMORY, d, generator=generator)
        found.append(
            extract(layer, streams, fields={"F": "field"}, streams=0, frozen=("mix",), **kwargs)
        )
    return found


def _stack_lines(stack: nn.Module, memory: bool, d_model: int) -> list[str]:
    """A general linear stack: every layer read back over its streams."""
    gl = cast(GeneralLinearStack, stack)  # READERS keys it by this class
    lines = []
    for m, found in enumerate(read_back_layers(gl, memory)):
        lines += [f"  layer {m} computes now (bf.extract over its {gl.method.values} streams):"]
        lines += ["    " + row for row in str(found).splitlines()]
        lines.append(f"    round trip: relative difference {found.verify():.2g}")
    return lines


def _block_lines(block: nn.Module, memory: bool, d_model: int) -> list[str]:
    """A compiled block: read back at a random state."""
    found = read_back(block, memory, d_model)
    lines = ["  computes now (bf.extract at a random state):"]
    lines += ["    " + row for row in str(found).splitlines()]
    lines.append(f"    round trip: relative difference {found.verify():.2g}")
    return lines


# How a kind of compiled block is read back (any other compiled block: `_block_lines`).
READERS: dict[type, Callable[[nn.Module, bool, int], list[str]]] = {
    GeneralLinearStack: _stack_lines
}


def describe(side: str, index: int, block: nn.Module, memory: bool, d_model: int) -> list[str]:
    """Lines for one block: the declaration it started from and what it computes now
    (`memory`: the block cross-attends)."""
    started = getattr(block, "method", None)
    head = f"{side} layer {index} ({type(block).__name__})"
    if not isinstance(block, CompiledBlock):
        return [f"{head}: not a compiled block, nothing to read back"]
    lines = [f"{head}:"]
    if started is not None:
        lines += [
            "  started from:",
            *("    " + row for row in order_table([check(started)]).splitlines()),
        ]
    try:
        return lines + READERS.get(type(block), _block_lines)(block, memory, d_model)
    except ExtractionError as refusal:
        return [*lines, f"  not read back: {refusal}"]
