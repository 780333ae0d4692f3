"""One layer read: the integrator a PyTorch module computes, read with probes on its fields
(`bf.extract(layer, x, fields=...)`)."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, final

import torch
from torch import Tensor, nn

from ...errors import ExtractionError
from ..binding import Signature
from ..declare import Declared, declare
from ..probe import (
    Probe,
    Run,
    Where,
    computes_below_float64,
    first_output,
    module_name,
    parse_fields,
    read,
    replace_input,
    tensor_input,
)
from ..probe import to_float64 as float64
from ..result import Extracted, Session, Variation, variation
from ..solve import FLOAT32_PRECISION, Fit, fit, fraction_fit, reading_precision
from ..streams import Streams, check_streams, stage_shape, stream_count, tokens
from .refusals import (
    NotLinear,
    Undetermined,
    explain_break,
    refuse_cache,
    refuse_fractions,
    require_called,
    require_eval,
)

ROWS_PER_UNKNOWN = 8


@final
@dataclasses.dataclass(frozen=True)
class Options:
    """How `bf.extract` reads (see `api.extract`, whose arguments these are): `streams`,
    `frozen`, `runs`, `seed`, `precision`; the defaults are `bf.extract`'s."""

    streams: Streams = None
    frozen: Sequence[str] = ()
    runs: int = 2
    seed: int = 0
    precision: float | None = None


DEFAULTS = Options()


def extract_layer(
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fields: Mapping[str, str | Sequence[str]],
    options: Options,
) -> Extracted:
    """`bf.extract` on one layer with its fields (see `api.extract`). A layer that is no
    linear combination of its state and field values, and that takes other tensors of its
    state's shape as arguments (modded-nanogpt's embedding `x0`), is read again with them as
    second states (`SecondStates`): a general linear method over (state, x0, ...), the second
    states carried unchanged."""
    try:
        return _read(module, args, kwargs, fields, options)
    except NotLinear as refusal:
        seconds = second_states(module, args, kwargs)
        if not seconds or options.streams is not None:
            raise
        wrapper = SecondStates(module, args, kwargs, seconds)
        prefixed = {
            name: tuple(f"layer.{p}" for p in ((spec,) if isinstance(spec, str) else spec))
            for name, spec in fields.items()
        }
        try:
            found = _read(
                wrapper,
                (wrapper.stacked(),),
                {},
                prefixed,
                dataclasses.replace(
                    options, streams=wrapper.axis, frozen=[f"layer.{p}" for p in options.frozen]
                ),
            )
        except ExtractionError:
            names = ", ".join(n for n, _ in seconds)
            raise NotLinear(
                f"{refusal}; it takes {names} of its state's shape too, and read as second "
                "states they leave it no linear combination either",
                refusal.between,
            ) from None
        return _as_second_states(found, module_name(module), [n for n, _ in seconds])


def state_dtype(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """The dtype of a call's first floating tensor, in words."""
    found = next(
        (a for a in (*args, *kwargs.values()) if isinstance(a, Tensor) and a.is_floating_point()),
        None,
    )
    return "its own dtype" if found is None else str(found.dtype).removeprefix("torch.")


def second_states(
    module: nn.Module, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> list[tuple[str, Where]]:
    """The tensor arguments of a call, other than the state, of the state's shape and floating
    type (an embedding skip's `x0`): (parameter name, where)."""
    who = module_name(module)
    where = tensor_input(args, kwargs, who)
    state = read(args, kwargs, where)
    names = Signature(module, who).named(args, kwargs)
    found = []
    places: list[Where] = [("arg", i) for i in range(len(args))]
    places += [("kw", k) for k in kwargs]
    for place in places:
        value = read(args, kwargs, place) if _tensor_at(args, kwargs, place) else None
        if place == where or value is None or value is state:
            continue
        if value.shape == state.shape and value.is_floating_point():
            name = next((k for k, v in names.items() if v is value), str(place[1]))
            found.append((name, place))
    return found


def _tensor_at(args: tuple[Any, ...], kwargs: Mapping[str, Any], place: Where) -> bool:
    value = args[place[1]] if place[0] == "arg" else kwargs[place[1]]
    return isinstance(value, Tensor)


@final
class SecondStates(nn.Module):
    """A layer called with its state and its second states stacked on a new stream axis (the
    one before the channels); it returns the layer's new state stacked with the second states,
    unchanged, so that `bf.extract` reads them as streams of a general linear method.

    **Arguments:** `layer`; `args`, `kwargs`: its call; `seconds`: (name, where) of each
    second state in the call (`second_states`).
    """

    def __init__(
        self,
        layer: nn.Module,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        seconds: Sequence[tuple[str, Where]],
    ) -> None:
        super().__init__()
        self.layer = layer
        self.call = (tuple(args), dict(kwargs))
        self.where = tensor_input(args, kwargs, module_name(layer))
        self.seconds = [w for _, w in seconds]
        self.axis = read(args, kwargs, self.where).dim() - 1
        self.train(layer.training)

    def stacked(self) -> Tensor:
        args, kwargs = self.call
        parts = [read(args, kwargs, w) for w in (self.where, *self.seconds)]
        return torch.stack(parts, dim=self.axis)

    def forward(self, stacked: Tensor) -> Tensor:
        args, kwargs = float64(self.call) if stacked.dtype == torch.float64 else self.call
        x, *others = stacked.unbind(self.axis)
        args, kwargs = replace_input(args, kwargs, self.where, x)
        for place, value in zip(self.seconds, others, strict=True):
            args, kwargs = replace_input(args, kwargs, place, value)
        out = first_output(self.layer(*args, **kwargs), module_name(self.layer))
        return torch.stack([out, *others], dim=self.axis)


def _as_second_states(found: Extracted, who: str, names: list[str]) -> Extracted:
    note = (
        f"{who} reads {', '.join(names)} (argument(s) of its state's shape) linearly beside its "
        f"state: a general linear method over the values (state, {', '.join(names)}), "
        f"{'each' if len(names) > 1 else 'the second'} carried unchanged"
    )
    declared = dataclasses.replace(found.declared, notes=(*found.declared.notes, note))
    fields = {n: tuple(p.removeprefix("layer.") for p in ps) for n, ps in found.fields.items()}
    return dataclasses.replace(
        found, module=who, fields=fields, declared=declared, seconds=tuple(names)
    )


def _read(
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fields: Mapping[str, str | Sequence[str]],
    options: Options,
) -> Extracted:
    who = module_name(module)
    if not isinstance(module, nn.Module):
        raise ExtractionError(f"bf.extract takes an nn.Module, not {type(module).__name__}")
    runs, frozen = options.runs, options.frozen
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ExtractionError(f"{who}: runs={runs!r}; valid: a positive number of probe runs")
    require_eval(module, who)
    refuse_cache(module, args, kwargs, who)
    work = copy.deepcopy(module).to(torch.float64)
    call_args, call_kwargs = float64(args), float64(kwargs)
    chains = parse_fields(work, fields)
    where = tensor_input(call_args, call_kwargs, f"{who} (its state)")
    state = read(call_args, call_kwargs, where)
    streams = check_streams(state, options.streams, who)
    probe = Probe(work, chains, frozen, options.seed)
    once = _caller(probe, call_args, call_kwargs, where, who)
    reference = _reference_run(once, state, args, kwargs, chains, who)
    runs = _runs_needed(runs, len(reference.labels), state, streams)
    checked = dataclasses.replace(options, streams=streams, runs=runs)
    found, precision = _fit_at_state(once, state, checked, who)
    checked = dataclasses.replace(checked, precision=precision)
    found, state_dependent = _fit_elsewhere(once, state, checked, probe, found, who)
    varies = variation(found, state_dependent, precision)
    declared = _declaration(found, varies, who, precision)
    session = Session(
        original=module,
        work=work,
        chains=chains,
        templates=probe.templates,
        outputs=probe.outputs,
        args=call_args,
        kwargs=call_kwargs,
        state=state,
        output=reference.output,
        returned=reference.structure,
        stage_shapes=tuple(y.shape for y in reference.stage_inputs),
    )
    return Extracted(
        module=who,
        method=declared.method,
        varies=varies,
        fields={c.name: c.paths for c in chains},
        declared=declared,
        fit=found,
        streams=streams,
        session=session,
    )


def _caller(
    probe: Probe, call_args: tuple[Any, ...], call_kwargs: dict[str, Any], where: Where, who: str
) -> Callable[..., Run]:
    """`once(x, probing, reference=False)`: one call of the float64 copy with the state `x`,
    refused if the call changed `x` in place."""

    def once(x: Tensor, probing: bool, reference: bool = False) -> Run:
        before = x.clone()
        a, k = replace_input(call_args, call_kwargs, where, x)
        with torch.no_grad():
            run = probe.run(a, k, probing=probing, reference=reference)
        if not torch.equal(before, x):
            raise ExtractionError(
                f"{who} updates its state in place (the input tensor changed during the call); "
                "extract a module that returns a new tensor (x = x + f(x), not x += f(x))"
            )
        return run

    return once


def _reference_run(
    once: Callable[..., Run],
    state: Tensor,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    chains: Sequence[Any],
    who: str,
) -> Run:
    """The unprobed call at the module's state, refused if the module does not run in float64,
    never calls a field, or gives another output when called again."""
    try:
        reference = once(state, probing=False, reference=True)
    except ExtractionError:
        raise
    except Exception as error:  # the module's own forward, in float64
        raise ExtractionError(
            f"{who} runs in {state_dtype(args, kwargs)} but not in float64 "
            f"({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); "
            "bf.extract reads a float64 copy (exact coefficients need float64 round-off): "
            "valid: a module whose forward runs in float64"
        ) from None
    require_called(reference, chains, who)
    if not torch.allclose(once(state, probing=False).output, reference.output, 1e-12, 0):
        raise ExtractionError(
            f"{who}: two identical calls give different outputs (randomness: dropout, sampling, "
            "noise); extract a deterministic module (module.eval(), no sampling)"
        )
    return reference


def _fit_at_state(
    once: Callable[..., Run], state: Tensor, options: Options, who: str
) -> tuple[Fit, float | None]:
    """The coefficients fitted from `runs` probed calls at the module's state (`options`, its
    streams checked), and the precision they are read to; a combination that is not linear is
    refused with its cause."""
    streams, runs, precision = options.streams, options.runs, options.precision
    probes = [once(state, probing=True) for _ in range(runs)]
    found = _fit(probes, [state] * runs, streams, who)
    precision = reading_precision(
        found, precision, who, lambda: computes_below_float64(lambda: once(state, probing=False))
    )
    if found.broken(precision) is not None:
        cut = fraction_fit(probes, [state] * runs, streams, precision)
        refuse_fractions(cut, probes[0].labels, stream_count(state, streams), who)
    explain_break(found, probes[0], who, options.frozen, precision)
    return found, precision


def _fit_elsewhere(
    once: Callable[..., Run], state: Tensor, options: Options, probe: Probe, found: Fit, who: str
) -> tuple[Fit, bool]:
    """The fit at random states (`options`: its streams, runs and precision read): whether the
    coefficients depend on the state, and `found` with its undetermined tokens filled from
    there when they do not."""
    precision, runs = options.precision, options.runs
    starts = [
        torch.randn(state.shape, dtype=state.dtype, generator=probe.generator) for _ in range(runs)
    ]
    moved = [once(x, probing=True) for x in starts]
    elsewhere = fit(moved, starts, options.streams)
    state_dependent = (
        bool(options.frozen)
        or elsewhere.broken(precision) is not None
        or not elsewhere.same_as(found, precision)
    )
    if not found.determined.all():
        if state_dependent or not elsewhere.determined.all():
            raise Undetermined(
                f"{who}: the state's streams and the field values are linearly dependent at "
                f"{int((~found.determined).sum())} token(s) (a zero state, equal streams, or "
                "fewer channels than streams plus field calls) and the coefficients depend on "
                "the state; pass a state whose streams differ and are non-zero at every token"
            )
        found = found.filled(elsewhere)
    return found, state_dependent


def _declaration(found: Fit, varies: Variation, who: str, precision: float | None) -> Declared:
    """The first token's declaration, with notes on the precision and on what varies."""
    first = (found.U[0], found.A[0], found.B[0], found.V[0])
    declared = declare(*first, labels=found.labels, name=who, precision=precision)
    if precision is not None:
        declared = dataclasses.replace(
            declared, notes=(*declared.notes, _precision_note(found, precision))
        )
    if varies:
        how = ", ".join(
            w for w, on in (("per token", varies.token), ("with the state", varies.state)) if on
        )
        declared = dataclasses.replace(
            declared,
            notes=(
                *declared.notes,
                f"the coefficients vary ({how}): the declaration is the first token's; "
                "found.at_token(t) is token t's, found.varies their ranges and the properties "
                "that hold at every token",
            ),
        )
    return declared


def _precision_note(found: Fit, precision: float) -> str:
    worst = float(found.residual.max(initial=0.0))
    below = "float32" if precision == FLOAT32_PRECISION else "below float64"
    return (
        f"the module computes in {below} (relative residual {worst:.2g} of the float64 "
        f"fit): coefficients read to {precision:g}, declared with precision = {precision:g}, "
        f"and verify() is within {precision:g}"
    )


def _runs_needed(runs: int, calls: int, state: Tensor, streams: Streams) -> int:
    """At least `runs`, and enough that each token's least-squares system has
    `ROWS_PER_UNKNOWN` times as many equations (channels × runs) as unknowns (streams + calls):
    a well-conditioned fit, accurate to a few units of float64 rounding."""
    x = tokens(state, streams)
    unknowns = x.shape[1] + calls
    return max(runs, math.ceil(ROWS_PER_UNKNOWN * unknowns / x.shape[2]))


def _fit(runs: Sequence[Run], states: Sequence[Tensor], streams: Streams, who: str) -> Fit:
    labels = {tuple(r.labels) for r in runs}
    if len(labels) > 1:
        raise ExtractionError(
            f"{who}: the field calls differ between two runs ({sorted(labels)}); the order of "
            "field calls must not depend on their values"
        )
    stream = stage_shape(states[0], streams)
    for run in runs:
        for label, given in zip(run.labels, run.stage_inputs, strict=True):
            if given.numel() != stream.numel():  # `fit` reads it as (tokens, -1)
                raise ExtractionError(
                    f"{who}: field '{label}' reads {given.numel()} numbers (shape "
                    f"{tuple(given.shape)}), but one stream of the state holds {stream.numel()} "
                    f"(shape {tuple(stream)}, streams={streams!r}); "
                    + (
                        "name the axis that holds the streams"
                        if streams is None
                        else "streams= must name the axis that holds them, or be left out"
                    )
                )
    return fit(runs, states, streams)
