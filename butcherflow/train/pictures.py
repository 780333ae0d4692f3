"""What a model's learned coefficients look like now: the pictures `--tensorboard` adds at every
validation (`tracking.TensorBoard.pictures`).

- `gates/<module>/<symbol>`: a histogram of a gate's per-token values (`StageGate`: the gated
  RK2 block's g, softmax and tanh gates) over the non-pad tokens of the first validation batch.
- `streams/<stack>_layer_<m>/V`: under per-token coefficients (`dynamic`, `sinkhorn`), a
  histogram of the entries of layer m's V over the same tokens.
- `streams/<stack>`: an image of each layer's U, B and V (the static part, Sinkhorn-projected
  under `sinkhorn`: the V whose power-boundedness the `streams/.../spectral_radius` scalars
  report), one row per layer, each entry written in its cell.

The batch runs once more through the model, in eval mode and without gradients, eagerly: a
block compiled in place runs its Python code (`torch.compiler.set_stance("force_eager")`), so
that the forward hooks see every gate. The caller skips a sharded (FSDP) model, whose processes
each hold part of the weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, final

import numpy as np
import torch
from torch import Tensor, nn

from ..assemble import LanguageModel, Seq2Seq
from ..compiler import GeneralLinearStack
from ..compiler.coefficients import StageGate
from ..data import Batch

Matrices = tuple[np.ndarray, np.ndarray, np.ndarray]  # one layer's U, B, V


@final
@dataclass(frozen=True)
class Learned:
    """A model's learned coefficients on one batch.

    **Arguments:**

    - `histograms`: tag -> the per-token values (float64, 1-D): gates, per-token V entries.
    - `mixing`: stack module name -> each layer's static (U, B, V).
    """

    histograms: dict[str, np.ndarray]
    mixing: dict[str, list[Matrices]]


def _tag(name: str) -> str:
    return name.replace(" ", "_")


def _static(stack: GeneralLinearStack) -> list[Matrices]:
    layers = []
    for m in range(stack.layers):
        mix: Any = stack.program.get_submodule(f"mix{m}")
        U, B = (x.detach().to(torch.float64).cpu().numpy() for x in (mix.U, mix.B))
        layers.append((U, B, mix.static_v()))
    return layers


@torch.no_grad()
def read_learned(model: Seq2Seq | LanguageModel, batch: Batch) -> Learned:
    """The gates' and stream mixings' values on `batch` (module docstring).

    **Arguments:**

    - `model`: the bare model (not DDP-wrapped, not sharded), on the batch's device.
    - `batch`: a validation batch.

    **Returns:** a `Learned` (empty for a model without gates or stream mixing).
    """
    pad = model.pad_index
    target = batch.prev_output.ne(pad)
    source = batch.src.ne(pad) if batch.src.numel() else target
    histograms: dict[str, list[Tensor]] = {}
    hooks = []

    def keep(tag: str, values: Tensor, side: Tensor) -> None:
        histograms.setdefault(tag, []).append(values[side].detach().double().cpu().reshape(-1))

    mixing: dict[str, list[Matrices]] = {}
    for name, module in model.named_modules():
        side = source if name.startswith("encoder") else target  # the tokens a block reads
        if isinstance(module, StageGate):
            for i, symbol in enumerate(module.names):
                tag = f"gates/{_tag(name)}/{symbol}"
                hook = _output_hook(lambda out, t=tag, s=side, i=i: keep(t, out[i], s))
                hooks.append(module.register_forward_hook(hook))
        elif isinstance(module, GeneralLinearStack) and module.policy != "exact":
            mixing[name or "stack"] = _static(module)
            for m in range(module.layers):
                mix: Any = module.program.get_submodule(f"mix{m}")
                if mix.dynamic:  # per token (batch, time, r, r)
                    tag = f"streams/{_tag(f'{name} layer {m}')}/V"
                    hook = _output_hook(lambda out, t=tag, s=side: keep(t, out[2], s))
                    hooks.append(mix.register_forward_hook(hook))
    was_training = model.training
    model.eval()
    try:
        with torch.compiler.set_stance("force_eager"):
            if isinstance(model, LanguageModel):
                model(batch.prev_output)
            else:
                model(batch.src, batch.prev_output)
    finally:
        for handle in hooks:
            handle.remove()
        model.train(was_training)
    joined = {tag: torch.cat(parts).numpy() for tag, parts in histograms.items()}
    return Learned(joined, mixing)


def _output_hook(use: Any) -> Any:
    def hook(module: nn.Module, args: Any, output: Any) -> None:
        use(output)

    return hook


def mixing_figure(stack: str, layers: Sequence[Matrices]) -> Any:
    """One row per layer of a stack, its U, B and V as heat maps with their entries written.

    **Arguments:** `stack`: the stack's module name (the title); `layers`: each layer's static
    (U, B, V).

    **Returns:** a matplotlib `Figure` (the object API: no pyplot state, no window).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 1.9 * len(layers) + 0.6))
    axes = fig.subplots(len(layers), 3, squeeze=False)
    for m, matrices in enumerate(layers):
        for ax, label, matrix in zip(axes[m], "UBV", matrices, strict=True):
            bound = max(float(np.abs(matrix).max()), 1e-12)
            ax.imshow(matrix, cmap="RdBu_r", vmin=-bound, vmax=bound)
            if matrix.size <= 64:  # hyper-connections' few streams: each entry legible
                for (i, j), value in np.ndenumerate(matrix):
                    colour = "white" if abs(value) > 0.6 * bound else "black"  # legible on dark
                    ax.text(
                        j, i, f"{value:.2f}", ha="center", va="center", fontsize=7, color=colour
                    )
            ax.set_title(f"layer {m}: {label}", fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle(f"{stack}: stream mixing (static part)", fontsize=9)
    return fig
