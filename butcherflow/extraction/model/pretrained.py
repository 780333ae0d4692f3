"""`bf.load_pretrained(dir)`: a rewired transformers model saved with `save_pretrained`, loaded
back rewired.

`bf.rewire` records the integrator of every block in `config.butcherflow` (the declaration,
its proof summary, the block's field chains and how the method's fields map onto them), and
`save_pretrained` writes it into `config.json` beside the weights, whose keys are the original
model's (a rewired block holds the original's sub-modules under their own names). Loading
builds the saved architecture with transformers (`config.architectures[0]`, from the folder:
nothing is downloaded) and puts the recorded integrators back on its blocks.

Why a function of butcherflow rather than `AutoModelForCausalLM.from_pretrained` after
`import butcherflow`: the folder's `model_type` stays the original's (`llama`, `gpt2`), so
that transformers alone still loads the weights, and transformers maps a model type to one
class; making that class rewire itself would mean replacing transformers' own class for every
Llama (writing into its Auto tables), which butcherflow does not do. `trust_remote_code` would
make the folder run code it carries. transformers alone loads such a folder as the original
architecture with these weights (its blocks compute their original integrator), and keeps the
record as `config.butcherflow`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torch import nn

from ...errors import ExtractionError
from ...methods.files import from_dict
from ..layer.rewire import rewire_layer
from ..probe import Chain
from .blocks import Blocks
from .rewire import (
    RECORD_FORMAT,
    capture_generating,
    example_call,
    guard_cache,
    layer_record,
    set_record,
)


def load_pretrained(path: str | Path, **kwargs: Any) -> nn.Module:
    """The rewired model saved in `path` (a `save_pretrained` folder of a `bf.rewire` model).

    **Arguments:**

    - `path`: the folder.
    - `kwargs`: passed to transformers' `from_pretrained` (`dtype=`, ...); the attention
      and experts kernels are the ones the model was saved with unless `attn_implementation=`
      or `experts_implementation=` says others.

    **Returns:** the model, its blocks computing the recorded integrators, in eval mode (as
    `from_pretrained` returns it); raises `ExtractionError` for a folder without a record.
    """
    import transformers  # the audit extra: never imported by butcherflow at its top

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise ExtractionError(
            f"{folder}: no config.json; valid: a folder written by save_pretrained of a model "
            "bf.rewire returned"
        )
    config = transformers.AutoConfig.from_pretrained(folder)
    record = getattr(config, "butcherflow", None)
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise ExtractionError(
            f"{folder / 'config.json'}: key 'butcherflow' missing or not format "
            f"{RECORD_FORMAT} (got {type(record).__name__}); valid: a folder saved from a "
            "model bf.rewire returned (transformers.AutoModelForCausalLM loads this one)"
        )
    architecture = (getattr(config, "architectures", None) or [None])[0]
    cls = getattr(transformers, str(architecture), None)
    if cls is None:
        raise ExtractionError(
            f"{folder / 'config.json'}: architectures = {architecture!r}, which transformers "
            f"{transformers.__version__} does not have; valid: a model class of transformers"
        )
    for key in ("attn_implementation", "experts_implementation"):
        kernel = record.get(key)
        if kernel and key not in kwargs:
            kwargs = {**kwargs, key: kernel}
    model = cls.from_pretrained(folder, **kwargs)
    return rewire_recorded(model, record)


def rewire_recorded(model: nn.Module, record: dict[str, Any]) -> nn.Module:
    """`model` (in place) with the integrators of a `config.butcherflow` record on its blocks."""
    stack = str(record["stack"])
    try:
        parent = model.get_submodule(stack) if stack else model
    except AttributeError:
        raise ExtractionError(
            f"config.butcherflow: stack '{stack}' is no sub-module of {type(model).__name__}"
        ) from None
    blocks = Blocks(stack, tuple(parent), None)  # type: ignore[arg-type]
    args, call = example_call(model)
    mode = model.training
    calls = capture_generating(model, blocks, args, call)
    entries = []
    for entry in record["layers"]:
        i = int(entry["index"])
        chains = tuple(Chain(n, tuple(p)) for n, p in entry["chains"].items())
        groups = {g: tuple(p) for g, p in entry["groups"].items()}
        streams = entry.get("streams")
        streams = tuple(streams) if isinstance(streams, list) else streams
        layer = layer_record(
            blocks.modules[i], calls[i], chains, streams, int(entry.get("values", 1)), groups
        )
        fields = {op: f for op, f in entry["fields"].items() if not isinstance(f, list)}
        summed = {op: f for op, f in entry["fields"].items() if isinstance(f, list)}
        for op, parts in summed.items():  # a field summed of parallel chains: its group
            fields[op] = next(g for g, p in groups.items() if list(p) == parts)
        rewired = rewire_layer(layer, from_dict(entry["declaration"]), fields=fields)
        blocks.put(model, i, rewired)
        entries.append(entry)
    guard_cache(model, [blocks.get(model, int(e["index"])) for e in record["layers"]])
    set_record(model, blocks, entries)
    model.train(mode)
    return model
