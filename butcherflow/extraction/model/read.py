"""A whole model read: every block's integrator and the depth method, from one call of the model.

`read_model` finds the repeated blocks (`blocks.find_blocks`), captures each block's call and
discovers its fields (`blocks.discover`), reads each block as `bf.extract` reads a layer, and
reads the stream across the stack (`depth.read_depth`). `ExtractedModel.verify()` is the whole
model's round trip; `ExtractedModel.rewire(method)` (and `bf.rewire`) a new model.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, final

import torch
from torch import Tensor, nn

from ...analysis import Report
from ...errors import ExtractionError
from ..layer.read import DEFAULTS, Options, extract_layer
from ..layer.refusals import NotLinear, Undetermined, require_eval
from ..layer.rewire import rewire_layer
from ..probe import (
    Run,
    computes_below_float64,
    first_output,
    module_name,
    replace_input,
    tensor_input,
)
from ..probe import to_float64 as float64
from ..recognise import recognised
from ..result import ROUND_TRIP, Extracted
from ..solve import FLOAT32_PRECISION
from .blocks import (
    BlockCall,
    Blocks,
    capture,
    discover,
    find_blocks,
    model_kwargs,
    stage_shape_of,
    stream_axis,
)
from .depth import Depth, depth_residual, read_depth, streams_depth
from .rewire import rewire_read

FieldPaths = Mapping[str, str | Sequence[str]]


@final
@dataclass(frozen=True)
class ModelSession:
    """What a model's reading ran on (for `verify` and `rewire`; not part of its value): the
    user's model, its stack, the call read (`user_args`, `user_kwargs`), each block's call as
    read, and the depth method's float64 copy of the model and its reference run (None when
    the depth was not probed)."""

    original: nn.Module
    blocks: Blocks
    user_args: tuple[Any, ...]
    user_kwargs: dict[str, Any]
    calls: tuple[BlockCall, ...]
    work: nn.Module | None
    depth_run: Run | None


@final
@dataclass(frozen=True)
class ExtractedModel:
    """The integrators a whole model computes. Build it with `bf.extract(model, *inputs)`.

    **Attributes:**

    - `model`: the model's class name; `stack`: the path of its block list; `readout`: the
      module that reads the stream after the last block (the final norm), if any.
    - `layers`: each block's reading, an `Extracted` (`.method`, `.report`, `.fields`, ...);
      `indices`: the blocks they read (all, unless `layers=` chose some).
    - `depth`: the residual stream across the stack as one declaration (`.method`,
      `.report`, `.notes`; `depth.py`).
    - `notes`: what was found on the way (fields discovered, frozen sub-modules found).
    """

    model: str
    stack: str
    readout: str | None
    layers: tuple[Extracted, ...]
    depth: Depth
    indices: tuple[int, ...]
    notes: tuple[str, ...] = ()
    session: ModelSession = field(repr=False, compare=False, default=None)  # type: ignore

    @functools.cached_property
    def round_trips(self) -> dict[str, float]:
        """The parts of `verify()`: `"layers"` (the worst block's own round trip), `"model"`
        (the float64 model with every static block computing its declaration on its own
        sub-modules, output against the float64 model's) and `"depth"` (the depth method's
        rows against the stream of a forward)."""
        layers = max(layer.verify() for layer in self.layers)
        depth = (
            0.0
            if self.session.depth_run is None
            else depth_residual(self.depth, self.session.depth_run)
        )
        return {"layers": layers, "model": self._model_round_trip(), "depth": depth}

    def verify(self) -> float:
        """The whole model's round trip: the largest of `round_trips` (float64 round-off,
        ~1e-15 of the output's size, when the reading is right; within `tolerance`)."""
        return max(self.round_trips.values())

    @property
    def tolerance(self) -> float:
        """What `verify()` is within for a right reading: `result.ROUND_TRIP` (float64), or
        the precision of the coarsest block that computes below float64 (Mamba's float32
        residual, mHC's float32 mixing)."""
        coarsest = [layer.precision for layer in self.layers if layer.precision is not None]
        if not coarsest and self.below_float64:
            return FLOAT32_PRECISION
        return max(coarsest, default=ROUND_TRIP)

    @functools.cached_property
    def below_float64(self) -> bool:
        """The float64 model computes something below float64 (a `.to(torch.float32)` of its
        residual, as Mamba's `residual_in_fp32`): its round trip then carries that rounding."""
        s = self.session
        work = s.work if s.work is not None else copy.deepcopy(s.original).to(torch.float64)
        args, kwargs = float64(s.user_args), float64(s.user_kwargs)
        return computes_below_float64(lambda: work(*args, **kwargs))

    def _model_round_trip(self) -> float:
        s = self.session
        work = s.work if s.work is not None else copy.deepcopy(s.original).to(torch.float64)
        rewired = copy.deepcopy(work)
        blocks = s.blocks.on(rewired)
        for i, layer in zip(self.indices, self.layers, strict=True):
            if layer.varies.token or layer.seconds:
                continue  # per-token coefficients, second states: its own round trip covers it
            record = dataclasses.replace(layer.record(), module=blocks.modules[i])
            blocks.put(rewired, i, rewire_layer(record, layer.method))
        args, kwargs = float64(s.user_args), float64(s.user_kwargs)
        with torch.no_grad():
            expected = first_output(work(*args, **kwargs), self.model)
            got = first_output(rewired(*args, **kwargs), self.model)
        scale = float(expected.abs().max()) or 1.0
        return float((got - expected).abs().max()) / scale

    def rewire(
        self,
        method: Any = None,
        layers: Sequence[int] | None = None,
        field: str | None = None,
        fields: Mapping[str, Any] | None = None,
    ) -> nn.Module:
        """A new model (the original unchanged) whose blocks compute `method` on their own
        sub-modules; `method=None`: each block its own reading (see `api.rewire`)."""
        return rewire_read(self, method, layers=layers, field=field, fields=fields)

    def table(self) -> list[tuple[str, str, str, str, str]]:
        """Per layer: (path, class, fields, declaration, order); equal readings are listed once
        with their layers' range."""
        rows = []
        every = self.session.blocks.names()
        names = [every[i] for i in self.indices]
        i = 0
        while i < len(self.layers):
            j = i
            while j + 1 < len(self.layers) and _same_reading(self.layers[j + 1], self.layers[i]):
                j += 1
            layer = self.layers[i]
            where = names[i] if i == j else f"{names[i]}..{self.indices[j]}"
            rows.append(
                (
                    where,
                    layer.module,
                    ", ".join(layer.fields),
                    describe(layer.method),
                    _order(layer.report),
                )
            )
            i = j + 1
        return rows

    def __str__(self) -> str:
        lines = [
            f"{self.model}: {len(self.layers)} blocks at {self.stack or '(the model)'}, "
            f"read-out {self.readout or '(none)'}",
        ]
        for where, cls, fields, declaration, order in self.table():
            lines.append(f"  {where} ({cls}): {declaration}, order {order}; fields {fields}")
        d = self.depth
        lines.append(
            f"  depth: {describe(d.method)}, order {_order(d.report)}{_zero_stable(d.report)}"
        )
        lines += [f"  note: {n}" for n in (*d.notes, *self.notes)]
        return "\n".join(lines)

    def __repr__(self) -> str:
        kinds = sorted({describe(layer.method) for layer in self.layers})
        return (
            f"ExtractedModel({self.model}, {len(self.layers)} blocks at '{self.stack}': "
            f"{'; '.join(kinds)}; depth {describe(self.depth.method)})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The reading as plain data: the stack, each layer's `to_dict()`, the depth method."""
        return {
            "model": self.model,
            "stack": self.stack,
            "readout": self.readout,
            "layers": [layer.to_dict() for layer in self.layers],
            "depth": {
                "declaration": self.depth.method.to_table(),
                "notes": list(self.depth.notes),
                "report": json.loads(self.depth.report.to_json()),
            },
            "notes": list(self.notes),
        }


def _same_reading(a: Extracted, b: Extracted) -> bool:
    return (
        a.module == b.module
        and a.fields == b.fields
        and describe(a.method) == describe(b.method)
        and not a.varies.token
        and not b.varies.token
    )


def describe(method: Any) -> str:
    """A declaration in a few words: its family, its coefficients' shape, the catalog entry it
    equals."""
    table = method.to_table()

    def listed(values: Sequence[Any]) -> str:
        return "(" + ", ".join(str(v) for v in values) + ")"

    if "steps" in table:
        body = " ".join(f"{op}({c})" for op, c in table["steps"])
    elif "alpha" in table:
        body = f"alpha {listed(table['alpha'])}, beta {listed(table['beta'])}"
    elif "V" in table:
        body = f"{len(table['V'])} values, {len(table['A'])} stage(s)"
    elif "b" in table:
        body = f"b = {listed(table['b'])}"
    else:
        body = ""
    known = recognised(method)
    same = f" = catalog '{known}'" if known else ""
    return f"{table['family']} [{body}]{same}"


def _order(report: Report) -> str:
    return str(report.order)


def _zero_stable(report: Report) -> str:
    value = getattr(report, "zero_stable", None)
    return "" if value is None else f", zero-stable {'yes' if value else 'no'}"


def _layer(
    block: nn.Module,
    call: BlockCall,
    fields: FieldPaths | None,
    options: Options,
    where: str,
) -> tuple[Extracted, tuple[str, ...]]:
    """One block read as its model calls it; its fields discovered when not given, the
    sub-modules through which its coefficients read the state frozen when the first reading
    names them (a hyper-connection's norms), and its streams found from its fields' shape."""
    chains: dict[str, Any] = dict(fields) if fields is not None else dict(discover(block, call))
    if options.streams is None and fields is None:
        axis = stream_axis(call.state.shape, stage_shape_of(chains, call))
        options = dataclasses.replace(options, streams=axis)
    streams = options.streams

    args, kwargs = call.args, call.kwargs

    def read(frozen_now: Sequence[str]) -> Extracted:
        now = dataclasses.replace(options, frozen=frozen_now)
        try:
            return extract_layer(block, args, kwargs, chains, now)
        except Undetermined:
            if streams is None:
                raise
            # equal streams (a hyper-connection stack's first layer): read at distinct ones
            state = call.state
            generator = torch.Generator().manual_seed(options.seed)
            spread = torch.randn(state.shape, generator=generator, dtype=state.dtype)
            moved = replace_input(args, kwargs, tensor_input(args, kwargs, where), spread)
            notes.append(
                f"{where}: its input's streams are equal (the expanded embedding), so its "
                "coefficients, which depend on the state, were read at a random state"
            )
            return extract_layer(block, *moved, chains, now)

    notes: list[str] = []
    try:
        return read(options.frozen), tuple(notes)
    except NotLinear as first:
        if options.frozen or fields is not None or not first.between or streams is None:
            raise _at(where, first) from None
        try:
            found = read(first.between)
        except ExtractionError:
            raise _at(where, first) from None
        if not found.varies.state:
            raise _at(where, first) from None
        notes.append(
            f"{where}: the coefficients read the streams through {', '.join(first.between)} "
            "(frozen in the probe runs: the per-token coefficients at the block's input)"
        )
        return found, tuple(notes)
    except ExtractionError as error:
        raise _at(where, error) from None


def _self_weight(layer: Extracted) -> Tensor:
    """A block's weight of its own state at each token, as its reading found it (V's first
    entry: 1 for y + F(y), 0 for a branch the model adds itself), shaped to multiply it."""
    state = layer.session.state
    lead = state.shape[:-2] if layer.seconds else state.shape[:-1]
    v = torch.as_tensor(layer.fit.V[:, 0, 0], dtype=torch.float64)
    return v.reshape(*lead, 1)


def _at(where: str, error: ExtractionError) -> ExtractionError:
    return ExtractionError(f"{where}: {error}")


def read_model(
    model: nn.Module,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    fields: FieldPaths | None = None,
    options: Options = DEFAULTS,
    layers: Sequence[int] | None = None,
    depth: bool = True,
    shapes_only: bool = False,
) -> ExtractedModel:
    """Read a whole model (see `api.extract`; `layers`: read only these blocks, `depth`:
    read the depth method too; `shapes_only`: a block of the class and fields of one read
    before shares its reading, which gives a rewiring its fields and groups, not its
    coefficients)."""
    who = module_name(model)
    require_eval(model, who)
    call_kwargs = model_kwargs(model, kwargs, cache=False)
    if call_kwargs.get("use_cache"):
        raise ExtractionError(
            f"{who}: use_cache=True; the reading calls every block several times and a cache "
            "would grow with each call; valid: use_cache=False (the default here)"
        )
    blocks = find_blocks(model, args, call_kwargs)
    calls = capture(model, blocks, args, call_kwargs)
    chosen = _chosen_blocks(layers, blocks, who)
    readings, notes = _read_blocks(blocks, calls, chosen, fields, options, shapes_only, who)
    work, run = None, None
    if any(r.streams is not None and not r.seconds for r in readings) or not depth:
        stack: Depth = streams_depth([r.method for r in readings])
    else:
        work = copy.deepcopy(model).to(torch.float64)
        args64, kwargs64 = float64(args), float64(call_kwargs)
        stack, run = read_depth(
            work,
            blocks.on(work),
            lambda: work(*args64, **kwargs64),
            options.runs,
            torch.Generator().manual_seed(options.seed),
            options.precision,
            [_self_weight(r) for r in readings],
        )
    session = ModelSession(model, blocks, tuple(args), call_kwargs, tuple(calls), work, run)
    return ExtractedModel(
        model=who,
        stack=blocks.path,
        readout=blocks.readout,
        layers=tuple(readings),
        depth=stack,
        indices=tuple(chosen),
        notes=tuple(notes),
        session=session,
    )


def _chosen_blocks(layers: Sequence[int] | None, blocks: Blocks, who: str) -> list[int]:
    """The indices of the blocks to read (every one for None), refused unless each is one."""
    names = blocks.names()
    chosen = list(range(len(blocks.modules))) if layers is None else list(layers)
    if not chosen or any(
        isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(names) for i in chosen
    ):
        raise ExtractionError(
            f"{who}: layers={layers!r}; valid: indices of its {len(names)} blocks "
            f"(0..{len(names) - 1}, {blocks.path})"
        )
    return chosen


def _read_blocks(
    blocks: Blocks,
    calls: Sequence[BlockCall],
    chosen: Sequence[int],
    fields: FieldPaths | None,
    options: Options,
    shapes_only: bool,
    who: str,
) -> tuple[list[Extracted], list[str]]:
    """The reading of each chosen block at its call (with `shapes_only`, a block of the class
    and fields of one read before shares its reading), and the notes the readings gave."""
    names = blocks.names()
    readings: list[Extracted] = []
    notes: list[str] = []
    seen: dict[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], Extracted] = {}
    for i in chosen:
        block = blocks.modules[i]
        shape = (
            module_name(block),
            tuple(discover(block, calls[i]).items()) if fields is None else (),
        )
        if shapes_only and shape in seen:
            readings.append(seen[shape])
            continue
        found, said = _layer(block, calls[i], fields, options, f"{who}.{names[i]}")
        seen[shape] = found
        readings.append(found)
        notes += said
    return readings, notes
