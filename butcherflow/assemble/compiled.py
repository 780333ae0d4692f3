"""`compile_blocks`: a model whose blocks run under `torch.compile`, one block at a time.

Compiling a whole Transformer traces every layer into one graph, forward and backward, before
the first step: transformer-base and `torch.nn.Transformer` had not finished in 130 s on an
H100 (the first lease, dynamic shapes). Compiling each block on its own (torchtitan's
`apply_compile`) bounds that: a block's graph is small, and identical blocks trace to identical
graphs, which inductor's FX graph cache can serve after the first (how much that saves on a GPU
is not measured yet: docs/benchmarks.md, "On the GPU"). Each of butcherflow's blocks runs its
generated program (`CompiledBlock.program`, a `torch.fx.GraphModule` with code of its own), so
that is what gets compiled: dynamo keeps its graphs per code object, and twelve blocks sharing
one `forward` would overrun its limit of eight graphs per code object
(`torch._dynamo.config.recompile_limit`) and silently run eager from the ninth on. A block that
spans layers (a multistep, DLCL or general linear stack) is one program, compiled as one graph.
Other modules' blocks (`torch.nn.Transformer`'s layers) are compiled as modules.

The result is a view, not a copy: it shares every parameter and buffer with the model, whose
state dict, checkpoints and eager forward (validation, decoding) stay as they were. Graphs are
compiled with dynamic shapes by default, so the bounded set of shapes of bucketed batches
(`data.buckets`) costs one dynamo graph per block, not one per shape (tests/test_shapes.py:
ten blocks over three widths, ten graphs, through dynamo's eager backend; what inductor then
generates per shape on a GPU is not measured yet).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, cast

import torch
from torch import nn

from ..compiler import CompiledBlock


def compile_blocks(
    model: nn.Module, sides: Sequence[str] | None = None, **options: Any
) -> nn.Module:
    """A view of `model` whose blocks are compiled one by one (module docstring).

    **Arguments:**

    - `model`: a `Seq2Seq`, a `LanguageModel`, or any module with lists of blocks.
    - `sides`: dotted paths of the `nn.ModuleList`s of blocks (default: every `nn.ModuleList`
      among the model's children: a `Seq2Seq`'s encoder and decoder, a `LanguageModel`'s
      blocks).
    - `options`: for `torch.compile` (default `dynamic=True`).

    **Returns:** the view, sharing the model's parameters, to train or run forward.
    """
    options = {"dynamic": True, **options}
    if sides is None:
        sides = [n for n, child in model.named_children() if isinstance(child, nn.ModuleList)]
    view = _shallow(model)
    for path in sides:
        *parents, name = path.split(".")
        holder = view
        for part in parents:  # copy the modules along the path, so the model keeps its own
            child = _shallow(holder.get_submodule(part))
            holder._modules[part] = child
            holder = child
        blocks = cast(nn.ModuleList, holder.get_submodule(name))
        holder._modules[name] = nn.ModuleList(_compiled(block, options) for block in blocks)
    return view


def _compiled(block: nn.Module, options: dict[str, Any]) -> nn.Module:
    if isinstance(block, CompiledBlock):  # its program, which has code of its own
        view = _shallow(block)
        view._modules["program"] = cast(nn.Module, torch.compile(block.program, **options))
        return view
    return cast(nn.Module, torch.compile(block, **options))


def _shallow(module: nn.Module) -> nn.Module:
    """`module` with its own table of submodules (parameters and buffers shared)."""
    view = copy.copy(module)
    view._modules = dict(module._modules)
    return view


__all__ = ["compile_blocks"]
