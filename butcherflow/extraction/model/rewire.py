"""`bf.rewire(model, method)`: a new model whose blocks compute another integrator on their own
sub-modules, generating right with its KV cache, and carrying its integrator in its config.

The new model is a deep copy (the original is left unchanged, nothing mutable is shared). Its
blocks are `Rewired` layers built from a call of the copy read with its cache on
(`use_cache=True` where the forward takes it), so that each attention's cache argument is
bound by identity to the block's. A method that calls a cached field more than once per step
(Heun on the whole layer, Strang with the attention as its half-step) cannot use the cache,
which holds one entry per layer and step: the new model's `config.use_cache` and
`generation_config.use_cache` are False, and a call that asks for a cache is refused before
any block runs, in one line that says `use_cache=False`.

The record (`config.butcherflow`, written by `save_pretrained` into `config.json`) holds, per
rewired block, the declaration's table, its proof summary, the block's field chains and the
map of the method's fields onto them: `pretrained.load_pretrained(dir)` rebuilds the same
model from it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, final

import torch
from torch import nn

from ...analysis import check
from ...errors import ExtractionError
from ...methods import Method
from ..fields import ChainField, SumField
from ..layer.choice import LayerField, LayerRecord
from ..layer.rewire import Rewired, resolve_method, rewire_layer
from ..probe import Call, Chain, module_name, tensor_input
from ..streams import Streams
from .blocks import BlockCall, Blocks, capture, model_kwargs

if TYPE_CHECKING:  # the reading a rewiring starts from (model.py imports this module)
    from .read import ExtractedModel

RECORD_FORMAT = 1
EXAMPLE_LENGTH = 4  # tokens of the example call a causal LM is read with when none is given


def example_call(model: nn.Module) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A call to read a model with when the caller gives none: `input_ids` of
    `EXAMPLE_LENGTH` tokens for a model with a `config.vocab_size` (a transformers LM)."""
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if not isinstance(vocab, int) or vocab < 2:
        raise ExtractionError(
            f"{module_name(model)}: no example call given and no config.vocab_size to make one "
            "from; valid: bf.rewire(model, method, *inputs) with a call of the model"
        )
    ids = (torch.arange(EXAMPLE_LENGTH) % (vocab - 1) + 1)[None]
    return (), {"input_ids": ids}


@final
class CacheRefusal:
    """A forward-pre-hook refusing a call that asks for a KV cache (a method calls a cached
    field more than once per step); an object, so that a copy of the model keeps it."""

    def __init__(self, message: str) -> None:
        self.message = message

    def __call__(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        if kwargs.get("use_cache") or kwargs.get("past_key_values") is not None:
            raise ExtractionError(self.message)


def _records(
    copy_: nn.Module,
    blocks: Blocks,
    found: ExtractedModel,
    indices: Sequence[int],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> dict[int, LayerRecord]:
    """Each chosen block of the copy, its fields as read, and its call with the cache on."""
    calls = capture_generating(copy_, blocks, args, kwargs)
    position = {i: n for n, i in enumerate(found.indices)}
    records = {}
    for i in indices:
        layer = found.layers[position[i]]
        records[i] = layer_record(
            blocks.modules[i],
            calls[i],
            layer.session.chains,
            layer.streams,
            layer.record().values,
            layer.declared.groups,
        )
    return records


def capture_generating(
    model: nn.Module, blocks: Blocks, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> list[BlockCall]:
    """Each block's call as generation makes it: the first forward of `model.generate` (one
    new token) for a model that generates, so that each block gets the cache generation
    passes it (some models build theirs only in `generate`); else a forward with
    `use_cache=True` where the model takes it. The model is read in eval mode, then put back
    in its mode."""
    mode = model.training
    model.eval()
    kwargs = {k: v for k, v in kwargs.items() if k != "use_cache"}  # the read's is False
    try:
        generates = callable(getattr(model, "generate", None)) and not args
        if generates and getattr(model, "can_generate", lambda: False)():
            options = {"max_new_tokens": 1, "do_sample": False, "pad_token_id": 0}
            generate: Any = model.generate
            try:
                return capture(
                    model, blocks, args, kwargs, run=lambda: generate(**kwargs, **options)
                )
            except ExtractionError:
                raise
            except Exception:  # a model whose generate needs more than its inputs
                pass
        return capture(model, blocks, args, model_kwargs(model, kwargs, cache=True))
    finally:
        model.train(mode)


def layer_record(
    block: nn.Module,
    call: BlockCall,
    chains: Sequence[Chain],
    streams: Streams,
    values: int,
    groups: Mapping[str, tuple[str, ...]],
) -> LayerRecord:
    """A block's `LayerRecord` from one observed call: each chain member's first call and
    output, the block's call and output."""
    templates: dict[str, list[Call]] = {}
    outputs: dict[str, list[Any]] = {}
    for chain in chains:
        templates[chain.name], outputs[chain.name] = [], []
        for path in chain.paths:
            seen = next((s for s in call.seen if s.path == path), None)
            if seen is None:
                raise ExtractionError(
                    f"{module_name(block)}: field '{chain.name}' member '{path}' is not called "
                    "in the call read; valid: fields the block's forward calls"
                )
            where = tensor_input(seen.args, seen.kwargs, f"{module_name(block)}.{path}")
            templates[chain.name].append(Call(seen.args, seen.kwargs, where))
            outputs[chain.name].append(seen.returned)
    return LayerRecord(
        module=block,
        name=module_name(block),
        chains=tuple(chains),
        templates=templates,
        outputs=outputs,
        args=call.args,
        kwargs=call.kwargs,
        returned=call.output,
        width=int(call.state.shape[-1]),
        streams=streams,
        values=values,
        groups=dict(groups),
    )


def rewire_read(
    found: ExtractedModel,
    method: Method | str | None,
    layers: Sequence[int] | None = None,
    field: str | None = None,
    fields: Mapping[str, Any] | None = None,
    source: nn.Module | None = None,
) -> nn.Module:
    """A new model from a reading (see `api.rewire`): a copy of `source` (default: the model
    read; the user's model when the reading ran on an eval copy), in its train/eval mode;
    `method=None`: each block its own reading."""
    s = found.session
    source = s.original if source is None else source
    new = copy.deepcopy(source)
    blocks = s.blocks.on(new)
    covered = list(found.indices)  # the blocks the reading covers (all, unless it read some)
    indices = covered if layers is None else _check_layers(layers, covered, found)
    records = _records(new, blocks, found, indices, s.user_args, s.user_kwargs)
    position = {i: n for n, i in enumerate(covered)}
    entries = []
    for i in indices:
        layer = found.layers[position[i]]
        if method is None and layer.varies.token:
            raise ExtractionError(
                f"{found.model}.{blocks.names()[i]}: its coefficients vary per token (they are "
                "computed from the state), so no one declaration is its own method; valid: a "
                "method to rewire it to"
            )
        chosen = layer.method if method is None else resolve_method(method)
        rewired = rewire_layer(records[i], chosen, field=field, fields=fields)
        blocks.put(new, i, rewired)
        entries.append(_entry(i, rewired, records[i], field))
    guard_cache(new, [blocks.get(new, i) for i in indices])
    set_record(new, blocks, entries)
    new.train(source.training)
    return new


def _check_layers(
    layers: Sequence[int], covered: Sequence[int], found: ExtractedModel
) -> list[int]:
    chosen = list(layers)
    bad = [i for i in chosen if i not in covered]
    if bad or not chosen:
        raise ExtractionError(
            f"rewire: layers={list(layers)!r} of {found.model}; valid: indices of its "
            f"{len(found.layers)} blocks read ({covered[0]}..{covered[-1]})"
        )
    return chosen


def _entry(index: int, rewired: Rewired, record: LayerRecord, field: str | None) -> dict[str, Any]:
    """What `config.butcherflow` keeps of one rewired block."""
    method = rewired.method
    on: dict[str, Any] = {}
    for op, f in rewired.fields.items():
        if isinstance(f, LayerField):
            on[op] = "layer"
        elif isinstance(f, SumField):
            on[op] = [str(p.name) for p in f.parts]
        else:
            assert isinstance(f, ChainField)
            on[op] = str(f.name)
    report = check(method)
    return {
        "index": index,
        "declaration": method.to_table(),
        "order": report.order,
        "proof": f"order {report.order}" + _substep(report),
        "chains": {c.name: list(c.paths) for c in record.chains},
        "streams": list(record.streams) if isinstance(record.streams, tuple) else record.streams,
        "values": record.values,
        "groups": {g: list(p) for g, p in record.groups.items()},
        "fields": on,
        "calls": dict(rewired.calls),
        "cached": sorted(rewired.cached),
    }


def _substep(report: Any) -> str:
    sub = getattr(report, "substep_order", None)
    return "" if sub is None else f" ({sub} with its sub-steps)"


def guard_cache(model: nn.Module, rewired: Sequence[nn.Module]) -> None:
    twice = [
        (r, name, count)
        for r in rewired
        if isinstance(r, Rewired)
        for name, count in r.calls.items()
        if count > 1 and name in r.cached
    ]
    if not twice:
        return
    layer, name, count = twice[0]
    message = (
        f"rewired {module_name(model)} ({layer.method.name}) calls the cached field '{name}' "
        f"{count} times per step, and a KV cache holds one entry per layer and step; call it "
        "with use_cache=False (the rewired model's default)"
    )
    for config in (getattr(model, "config", None), getattr(model, "generation_config", None)):
        if config is not None and hasattr(config, "use_cache"):
            config.use_cache = False
    model.register_forward_pre_hook(CacheRefusal(message), with_kwargs=True)


def set_record(model: nn.Module, blocks: Blocks, entries: list[dict[str, Any]]) -> None:
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "to_dict"):
        return
    config.butcherflow = {
        "format": RECORD_FORMAT,
        "stack": blocks.path,
        "layers": entries,
        "use_cache": bool(getattr(config, "use_cache", True)),
        # the attention and experts kernels the model ran with (transformers does not save
        # them): loaded with others (SDPA for eager), the logits differ by float rounding
        "attn_implementation": getattr(config, "_attn_implementation", None),
        "experts_implementation": getattr(config, "_experts_implementation", None),
        "note": (
            "the integrators bf.rewire put on the blocks; reload with "
            "butcherflow.load_pretrained(dir) (transformers alone loads the original blocks)"
        ),
    }
