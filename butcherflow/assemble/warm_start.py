"""The paper's warm start: a FLOATER model initialised from a sinusoidal Transformer's weights.

FLOATER's biases start at exactly zero (`FloaterInjection.reset_to_transformer`), so the warmed
model computes what the Transformer computes until the flows train.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch import Tensor, nn

from ..errors import DeclarationError
from .floater import FloaterInjection


def warm_start(
    model: nn.Module, transformer: nn.Module | Mapping[str, Tensor] | str | Path
) -> nn.Module:
    """Initialise a FLOATER model from a sinusoidal Transformer (the paper's warm start).

    Every weight of the Transformer is copied; the flows' output layers and initial values are
    zeroed, so every FLOATER bias is exactly zero and the model computes what the Transformer
    computes. The flows' first layers keep their random initialisation (h's output layer then
    has a non-zero gradient).

    **Arguments:**

    - `model`: a model built from a recipe with `[embedding] position = "floater"`.
    - `transformer`: the Transformer with the same sizes: an `nn.Module`, a state dict, or the
      path of a `.safetensors` file.

    **Returns:** `model`, updated in place.

    **Raises:** `DeclarationError` naming every missing, unexpected or mismatched key and shape.
    """
    floater = getattr(model, "floater", None)
    if not isinstance(floater, FloaterInjection):
        raise DeclarationError(
            "warm_start needs a FLOATER model",
            key="embedding.position",
            value=getattr(getattr(model, "recipe", None), "position", type(model).__name__),
            valid="a model whose recipe has [embedding] position = 'floater'",
        )
    state, source = _transformer_state(transformer)
    prefix = next(name for name, sub in model.named_modules() if sub is floater) + "."
    own = model.state_dict()
    expected = {k: v for k, v in own.items() if not k.startswith(prefix)}
    problems = _misfits(expected, state)
    if problems:
        shown = "; ".join(text for _, text in problems[:8])
        more = f" and {len(problems) - 8} more" if len(problems) > 8 else ""
        raise DeclarationError(
            f"the checkpoint does not fit this FLOATER model: {shown}{more}",
            key=problems[0][0],
            valid="the checkpoint of a sinusoidal Transformer built from the same recipe sizes "
            f"(every key of the FLOATER model except '{prefix}*')",
            source=source,
        )
    model.load_state_dict({**own, **{k: state[k] for k in expected}}, strict=True)
    floater.reset_to_transformer()
    return model


def _transformer_state(
    transformer: nn.Module | Mapping[str, Tensor] | str | Path,
) -> tuple[Mapping[str, Any], str | None]:
    """The warm start's weights (a module's state dict, a state dict, or a `.safetensors`
    file's tensors) and the file they came from (None for a module or a state dict)."""
    source: str | None = None
    if isinstance(transformer, nn.Module):
        if isinstance(getattr(transformer, "floater", None), FloaterInjection):
            raise DeclarationError(
                "the checkpoint is already a FLOATER model",
                key="transformer",
                valid="a sinusoidal Transformer (position = 'sinusoidal') of the same sizes",
            )
        state: Mapping[str, Any] = transformer.state_dict()
    elif isinstance(transformer, Mapping):
        state = transformer
    elif isinstance(transformer, (str, Path)):
        source = str(transformer)
        if Path(source).suffix != ".safetensors" or not Path(source).is_file():
            raise DeclarationError(
                "no such .safetensors file"
                if Path(source).suffix == ".safetensors"
                else "checkpoint files must be .safetensors",
                key="transformer",
                value=source,
                valid="the path of an existing .safetensors file of the Transformer's weights",
            )
        from safetensors.torch import load_file

        state = load_file(source)
    else:
        raise DeclarationError(
            "expected a module, a state dict or a .safetensors path",
            key="transformer",
            value=type(transformer).__name__,
        )
    return state, source


def _misfits(expected: Mapping[str, Tensor], state: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(key, what is wrong) for every missing, unexpected or mismatched key of `state`: the
    missing ones, then the unexpected ones, then the mismatched ones, each sorted."""
    problems: list[tuple[str, str]] = []
    for k in sorted(set(expected) - set(state)):
        problems.append((k, f"missing key '{k}' {tuple(expected[k].shape)}"))
    for k in sorted(set(state) - set(expected)):
        shape = tuple(getattr(state[k], "shape", ()))
        problems.append((k, f"unexpected key '{k}' {shape}"))
    for k in sorted(set(state) & set(expected)):
        if not isinstance(state[k], Tensor) or state[k].shape != expected[k].shape:
            got = tuple(state[k].shape) if isinstance(state[k], Tensor) else type(state[k])
            problems.append((k, f"key '{k}': checkpoint {got} vs model {tuple(expected[k].shape)}"))
    return problems
