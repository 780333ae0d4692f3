"""`bf.extract`: the integrator a PyTorch module computes, read with probes on its fields."""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..analysis import check
from ..errors import ExtractionError
from .declare import declare
from .probe import (
    CACHE_KEYWORDS,
    Probe,
    Run,
    computes_below_float64,
    module_name,
    parse_fields,
    read,
    replace_input,
    small_on_one_thread,
    tensor_input,
)
from .probe import to_float64 as float64
from .result import Extracted, Session, variation
from .solve import FLOAT32_PRECISION, Fit, fit, fraction_fit, reading_precision
from .streams import Streams, check_streams, stream_count, tokens

ROWS_PER_UNKNOWN = 8


def extract(
    module: nn.Module,
    *args: Any,
    fields: Mapping[str, str | Sequence[str]],
    streams: int | tuple[str, int] | None = None,
    frozen: Sequence[str] = (),
    runs: int = 2,
    seed: int = 0,
    precision: float | None = None,
    **kwargs: Any,
) -> Extracted:
    """Read the integrator `module(*args, **kwargs)` computes.

    **Arguments:**

    - `module`: the layer (in eval mode); it is not modified: extraction runs on a float64 copy.
    - `args`, `kwargs`: a call of it; its state is the first positional tensor (or the first
      tensor keyword argument).
    - `fields`: field name -> attribute path of a sub-module, or a chain of paths whose first
      member reads the stage value and whose last returns the field value
      (`{"attn": ("input_layernorm", "self_attn"), "mlp": ("post_attention_layernorm", "mlp")}`).
    - `streams`: where the state holds r streams (hyper-connections), if it does: an axis
      (`2` for `(batch, time, r, d)`) or `("batch", r)` for streams folded into the batch axis
      as `(batch·r, time, d)`, stream index fastest (lucidrains' `(b s)`).
    - `frozen`: paths of sub-modules through which coefficients read the state (a
      hyper-connection's input norm): in probe runs they return what they returned at the
      module's input, so the per-token coefficients at that input are read.
    - `runs`: probe runs (each with fresh random field values).
    - `seed`: of the random field values.
    - `precision`: the relative precision the module computes to, when below float64 (1e-6
      for float32). None: float64, or float32 when the fit's residual is at float32 round-off
      (a module that casts to float32 itself, as mHC). The coefficients are then read to it
      and declared numeric at it (a condition its digits cannot decide is undetermined), and
      `verify()` is within it.

    **Returns:** an `Extracted` (`.method`, `.report`, `.varies`, `.verify()`, `.rewire()`).

    A small state runs on one CPU thread (`probe.small_on_one_thread`).
    """
    state = next((a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)), None)
    with small_on_one_thread(state):
        return _extract(module, args, kwargs, fields, streams, frozen, runs, seed, precision)


def _extract(
    module: nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fields: Mapping[str, str | Sequence[str]],
    streams: Any,
    frozen: Sequence[str],
    runs: int,
    seed: int,
    precision: float | None,
) -> Extracted:
    who = module_name(module)
    if not isinstance(module, nn.Module):
        raise ExtractionError(f"bf.extract takes an nn.Module, not {type(module).__name__}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ExtractionError(f"{who}: runs={runs!r}; valid: a positive number of probe runs")
    _require_eval(module, who)
    _refuse_cache(kwargs, who)
    work = copy.deepcopy(module).to(torch.float64)
    call_args, call_kwargs = float64(args), float64(kwargs)
    chains = parse_fields(work, fields)
    where = tensor_input(call_args, call_kwargs, f"{who} (its state)")
    state = read(call_args, call_kwargs, where)
    streams = check_streams(state, streams, who)
    probe = Probe(work, chains, frozen, seed)

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

    reference = once(state, probing=False, reference=True)
    _require_called(reference, chains, who)
    if not torch.allclose(once(state, probing=False).output, reference.output, 1e-12, 0):
        raise ExtractionError(
            f"{who}: two identical calls give different outputs (randomness: dropout, sampling, "
            "noise); extract a deterministic module (module.eval(), no sampling)"
        )
    runs = _runs_needed(runs, len(reference.labels), state, streams)
    probes = [once(state, probing=True) for _ in range(runs)]
    found = _fit(probes, [state] * runs, streams, who)
    precision = reading_precision(
        found, precision, who, lambda: computes_below_float64(lambda: once(state, probing=False))
    )
    if found.broken(precision) is not None:
        cut = fraction_fit(probes, [state] * runs, streams, precision)
        _refuse_fractions(cut, probes[0].labels, stream_count(state, streams), who)
    _explain_break(found, probes[0], who, frozen, precision)
    starts = [
        torch.randn(state.shape, dtype=state.dtype, generator=probe.generator) for _ in range(runs)
    ]
    moved = [once(x, probing=True) for x in starts]
    elsewhere = fit(moved, starts, streams)
    state_dependent = (
        bool(frozen)
        or elsewhere.broken(precision) is not None
        or not elsewhere.same_as(found, precision)
    )
    if not found.determined.all():
        if state_dependent or not elsewhere.determined.all():
            raise ExtractionError(
                f"{who}: the state's streams and the field values are linearly dependent at "
                f"{int((~found.determined).sum())} token(s) (a zero state, equal streams, or "
                "fewer channels than streams plus field calls) and the coefficients depend on "
                "the state; pass a state whose streams differ and are non-zero at every token"
            )
        found = found.filled(elsewhere)
    varies = variation(found, state_dependent, precision)
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
    session = Session(
        original=module,
        work=work,
        chains=chains,
        templates=probe.templates,
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
        report=check(declared.method),
        varies=varies,
        fields={c.name: c.paths for c in chains},
        declared=declared,
        fit=found,
        streams=streams,
        session=session,
    )


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


def _refuse_cache(kwargs: dict[str, Any], who: str) -> None:
    """Extraction calls the layer several times with the same arguments: a KV cache among
    them would grow with each call (the second run then attends to twice the keys)."""
    for key in CACHE_KEYWORDS:
        if kwargs.get(key) is not None:
            raise ExtractionError(
                f"{who} gets a cache ({key}={type(kwargs[key]).__name__}), which grows with "
                "every call, and extraction calls it several times; call it (or its model, "
                "to capture the layer's arguments) with use_cache=False"
            )


def _require_eval(module: nn.Module, who: str) -> None:
    if not module.training:
        return
    dropout = [
        f"{name} (p={m.p})"
        for name, m in module.named_modules()
        if isinstance(m, nn.modules.dropout._DropoutNd) and m.p > 0
    ]
    has = f" with dropout at {', '.join(dropout)}" if dropout else ""
    raise ExtractionError(
        f"{who} is in training mode{has}; call module.eval() first (extraction needs the "
        "deterministic forward: a training-mode forward is random and normalises by batch)"
    )


def _require_called(run: Run, chains: Sequence[Any], who: str) -> None:
    called = set(run.labels)
    for chain in chains:
        if chain.name not in called:
            raise ExtractionError(
                f"{who}: field '{chain.name}' ({' -> '.join(chain.paths)}) is never called by "
                "this forward; name sub-modules the forward calls on the hidden states"
            )


def _fit(runs: Sequence[Run], states: Sequence[Tensor], streams: Streams, who: str) -> Fit:
    labels = {tuple(r.labels) for r in runs}
    if len(labels) > 1:
        raise ExtractionError(
            f"{who}: the field calls differ between two runs ({sorted(labels)}); the order of "
            "field calls must not depend on their values"
        )
    return fit(runs, states, streams)


FRACTION_SHOWN = 1e-9  # a fraction's weight below this share of the largest is not shown


def _refuse_fractions(
    cut: tuple[int, np.ndarray] | None, labels: Sequence[str], r: int, who: str
) -> None:
    """Refuse, in one line, a module whose combinations are per fraction of the feature axis,
    with what the first field's input reads at the first token and whether, read as a general
    linear method whose coefficients are f×f fraction matrices, it is consistent."""
    if cut is None:
        return
    f, solution = cut
    names = [f"y{k}" if r > 1 else "y" for k in range(r)] + list(labels)
    parts = []
    for piece in range(f):  # the first stage input's fraction `piece`
        weights = solution[:, piece]
        terms = [
            f"{w:.4g}·{names[c // f]}[{c % f}]"
            for c, w in enumerate(weights)
            if abs(w) > FRACTION_SHOWN * float(np.abs(weights).max(initial=0.0))
        ]
        parts.append(" + ".join(terms) or "0")
    raise ExtractionError(
        f"{who}: the feature axis is cut into {f} fractions, and every fraction of the "
        "branch input and of the output is a combination of the fractions of the state and of "
        "the field value, each fraction with its own coefficients (frac-connections, as "
        f"hyper_connections' num_fracs={f}, arXiv:2503.14125); at the first token field "
        f"'{labels[0]}' reads, fraction by fraction, [{'; '.join(parts)}] (y[j]: fraction j "
        f"of the state), {_fraction_consistency(solution, f, r, len(labels))}; an integrator's "
        "coefficients are numbers, the same for every feature (a change of feature coordinates "
        "commutes with it), and these act on fractions: no butcherflow declaration holds "
        "them, only a module with one fraction (num_fracs=1) is an integrator it declares"
    )


def _fraction_consistency(solution: np.ndarray, f: int, r: int, s: int) -> str:
    """Whether the fraction matrices are those of a consistent step: every stage reads y
    (Σ over streams of its fraction matrix = I), every output stream keeps y (likewise) and
    adds each field value whole (its fraction matrix = I); in words."""
    eye, tol = np.eye(f), FRACTION_SHOWN**0.5

    def block(row: int, column: int) -> np.ndarray:  # the f×f matrix of target row-block
        return solution[column * f : (column + 1) * f, row * f : (row + 1) * f].T

    reads_y = all(np.allclose(sum(block(i, k) for k in range(r)), eye, atol=tol) for i in range(s))
    keeps_y = all(
        np.allclose(sum(block(s + t, k) for k in range(r)), eye, atol=tol) for t in range(r)
    )
    adds = all(np.allclose(block(s + t, r + i), eye, atol=tol) for t in range(r) for i in range(s))
    if reads_y and keeps_y and adds:
        return "which, read as fraction matrices, is a consistent step"
    broken = [
        what
        for what, ok in (
            ("the stages do not read y", reads_y),
            ("the output streams do not keep y", keeps_y),
            ("the field values are not added whole", adds),
        )
        if not ok
    ]
    return (
        "so that, read as fraction matrices, the step is inconsistent (" + ", ".join(broken) + ")"
    )


def _explain_break(
    found: Fit, run: Run, who: str, frozen: Sequence[str], precision: float | None
) -> None:
    """Refuse, in one line naming where, a module whose stages or output are not linear
    combinations of the state and the field values."""
    target = found.broken(precision)
    if target is None:
        return
    s = found.stages
    if target < s:
        what = f"the input of call {target + 1} (field '{found.labels[target]}')"
        end = _nth_event(run.trail, "start", target)
    else:
        what = "the output"
        end = len(run.trail)
    begin = max((i for i, e in enumerate(run.trail[:end]) if e[0] == "field"), default=-1)
    between = [name for kind, name in run.trail[begin + 1 : end] if kind == "module"]
    kinds = dict(run.kinds)
    after = f"field '{run.trail[begin][1]}'" if begin >= 0 else "the module's input"
    where = (
        f"linearity breaks in {', '.join(f'{n} ({kinds[n]})' for n in _leaves(between))} "
        f"(called between {after} and it)"
        if between
        else "no sub-module runs between them: the nonlinearity is in the forward's own code"
    )
    hint = (
        ""
        if frozen
        else "; if the coefficients are computed from the state (gates, hyper-connections), name "
        "the sub-modules through which they read it with frozen=[...]"
    )
    raise ExtractionError(
        f"{who}: {what} is not a linear combination of the state and the field values "
        f"(relative residual {found.residual[target]:.2g}): {where}; an integrator combines "
        "whole states with one number per term, and a norm on a residual sum (post-norm), a "
        f"per-channel scale of the residual or a gate on it makes a block none{hint}"
    )


def _nth_event(trail: list[tuple[str, str]], kind: str, n: int) -> int:
    seen = -1
    for i, (k, _) in enumerate(trail):
        if k == kind:
            seen += 1
            if seen == n:
                return i
    return len(trail)


def _leaves(names: list[str]) -> list[str]:
    """Module paths without those that contain another listed one (the LayerNorm, not the
    sub-layer around it)."""
    unique = list(dict.fromkeys(names))
    return [n for n in unique if not any(o.startswith(n + ".") for o in unique if o != n)]
