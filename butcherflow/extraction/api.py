"""`bf.extract` and `bf.rewire`: the integrator a layer or a whole model computes, and a new
model computing another one."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, overload

from torch import Tensor, nn

from ..errors import ExtractionError
from ..methods import Method
from .layer.read import Options, extract_layer
from .layer.refusals import require_eval
from .model.blocks import Blocks, NoStack, capture, discover
from .model.read import ExtractedModel, FieldPaths, read_model
from .model.rewire import example_call, rewire_read
from .probe import module_name, small_on_one_thread
from .result import Extracted
from .streams import Streams


@overload
def extract(
    module: nn.Module,
    *args: Any,
    fields: FieldPaths,
    streams: Streams = None,
    frozen: Sequence[str] = (),
    runs: int = 2,
    seed: int = 0,
    precision: float | None = None,
    **kwargs: Any,
) -> Extracted: ...


@overload
def extract(
    module: nn.Module,
    *args: Any,
    fields: None = None,
    streams: Streams = None,
    frozen: Sequence[str] = (),
    runs: int = 2,
    seed: int = 0,
    precision: float | None = None,
    block_fields: FieldPaths | None = None,
    layers: Sequence[int] | None = None,
    **kwargs: Any,
) -> Extracted | ExtractedModel: ...


def extract(
    module: nn.Module,
    *args: Any,
    fields: FieldPaths | None = None,
    streams: Streams = None,
    frozen: Sequence[str] = (),
    runs: int = 2,
    seed: int = 0,
    precision: float | None = None,
    block_fields: FieldPaths | None = None,
    layers: Sequence[int] | None = None,
    **kwargs: Any,
) -> Extracted | ExtractedModel:
    """Read the integrator a layer, or every block of a whole model, computes.

    **Arguments:**

    - `module`: a layer, or a model whose blocks sit in an `nn.ModuleList` (a transformers
      causal LM, a hand-written GPT), in eval mode; it is not modified (reading runs on
      copies).
    - `args`, `kwargs`: a call of it (a model: its inputs, e.g. `input_ids`; a layer: its
      state first, or by keyword); a model that takes `use_cache` is called with
      `use_cache=False`.
    - `fields`: field name -> attribute path of a sub-module, or a chain of paths whose first
      member reads the stage value and whose last returns the field value
      (`{"attn": ("input_layernorm", "self_attn"), "mlp": ("post_attention_layernorm", "mlp")}`):
      the module is read as one layer with them. None (the default): a model's stack is
      read, each block's fields discovered from one call (`model/blocks.py`), or, for a
      module without a stack, its own.
    - `streams`: where the state holds r streams (hyper-connections), if it does: an axis
      (`2` for `(batch, time, r, d)`) or `("batch", r)` for streams folded into the batch axis
      as `(batch·r, time, d)`, stream index fastest (lucidrains' `(b s)`); found from the
      fields' shape when they are discovered.
    - `frozen`: paths of sub-modules through which coefficients read the state (a
      hyper-connection's input norm): in probe runs they return what they returned at the
      module's input, so the per-token coefficients at that input are read. Discovered, a
      block's are those its first reading names where linearity breaks, kept when the
      second reading finds coefficients that depend on the state.
    - `runs`: probe runs (each with fresh random field values); `seed`: of their values.
    - `precision`: the relative precision the module computes to, when below float64 (1e-6
      for float32). None: float64, or float32 when the fit's residual is at float32 round-off
      (a module that casts to float32 itself, as mHC). The coefficients are then read to it
      and declared numeric at it (a condition its digits cannot decide is undetermined), and
      `verify()` is within it.
    - `block_fields`: for a model, the fields of every block (paths within a block), in place
      of the discovered ones.
    - `layers`: for a model, the indices of the blocks to read (default: all).

    **Returns:** for a layer an `Extracted` (`.method`, `.report`, `.varies`, `.verify()`,
    `.rewire()`); for a model an `ExtractedModel` (`.layers[i]`, each an `Extracted`;
    `.depth.method` and `.depth.report`, the stream across the stack; `.verify()`, the whole
    model's round trip; `.rewire(method)`).

    A small state runs on one CPU thread (`probe.small_on_one_thread`).
    """
    if not isinstance(module, nn.Module):
        raise ExtractionError(f"bf.extract takes an nn.Module, not {type(module).__name__}")
    state = next((a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)), None)
    options = Options(streams, frozen, runs, seed, precision)
    with small_on_one_thread(state):
        if fields is not None:
            return extract_layer(module, args, kwargs, fields, options)
        try:
            return read_model(module, args, kwargs, block_fields, options, layers)
        except NoStack as missing:
            if block_fields is not None:
                raise
            return _one_layer(module, args, kwargs, options, missing)


def _one_layer(
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    options: Options,
    missing: NoStack,
) -> Extracted:
    """A module without a stack read as one layer, its fields discovered from its call."""
    require_eval(module, module_name(module))
    itself = Blocks("", (module,), None)
    try:
        call = capture(module, itself, args, kwargs)[0]
        fields = discover(module, call)
    except ExtractionError as error:
        raise ExtractionError(f"{missing}; read as one layer: {error}") from None
    return extract_layer(module, args, kwargs, fields, options)


def rewire(
    model: nn.Module,
    method: Method | str,
    *args: Any,
    layers: Sequence[int] | None = None,
    field: str | None = None,
    fields: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> nn.Module:
    """A new model whose blocks compute `method` on their own sub-modules.

    **Arguments:**

    - `model`: a model (or one layer), in either mode; it is left unchanged: the new model is
      a deep copy sharing nothing mutable, in the same train/eval mode.
    - `method`: a declaration, a catalog name or a declaration file: a Butcher tableau (one
      field: by default the whole block, F(y) = block(y) − y), a splitting or an additive
      method (an operator per field), a general linear method with the blocks' streams.
    - `args`, `kwargs`: a call to read the model with (default for a transformers LM: four
      tokens of `input_ids`).
    - `layers`: the indices of the blocks to rewire (default: all).
    - `field`: a one-field method's field: a field name, the block's declaration field
      (`"F"`), or `"layer"` (the whole block).
    - `fields`: operator -> field name or chain of sub-module paths, as
      `bf.compile(fields=...)` takes them (`{"A": "mlp", "B": "self_attn"}`); default: by
      name where the operators are the fields, else the operators in order of first use onto
      the fields in call order.

    **Returns:** the new model. Generation is right with the KV cache (each block's call is
    bound by its forward's signature: positional or keyword caches, legacy tuples and
    `Cache` objects); a method that calls a cached field twice per step turns the cache off
    (`config.use_cache = False`) and refuses a call that asks for it. A transformers model
    records the integrator in `config.butcherflow`, so `save_pretrained` writes it and
    `bf.load_pretrained` rebuilds the same model.
    """
    resolved = method if isinstance(method, Method) else None
    if not args and not kwargs:
        args, kwargs = example_call(model)
    reading = copy.deepcopy(model).eval() if model.training else model
    state = next((a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)), None)
    with small_on_one_thread(state):
        try:
            found = read_model(reading, args, kwargs, layers=layers, depth=False, shapes_only=True)
        except NoStack as missing:
            layer = copy.deepcopy(model).eval()
            one = _one_layer(layer, args, kwargs, Options(), missing)
            new = one.rewire(resolved or method, field=field, fields=dict(fields or {}) or None)
            return new.train(model.training)
        return rewire_read(found, resolved or method, layers, field, fields, source=model)
