"""Why a module is not read as an integrator: the one-line refusals of `bf.extract`'s layer
read (`read.py`): not linear, undetermined, per-fraction coefficients, a cache, training mode,
a field never called."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from torch import nn

from ...errors import ExtractionError
from ..binding import Signature, caches
from ..probe import Run
from ..solve import Fit


class NotLinear(ExtractionError):
    """A stage or the output is no linear combination of the state and the field values;
    `between`: the sub-modules that ran between the two field calls where it breaks."""

    def __init__(self, message: str, between: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.between = between


class Undetermined(ExtractionError):
    """The state's streams and the field values are linearly dependent at some token (equal
    streams, as a hyper-connection stack's first layer gets) and the coefficients depend on
    the state, so no state-independent reading fills them."""


def refuse_cache(
    module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], who: str
) -> None:
    """Extraction calls the layer several times with the same arguments: a KV cache among
    them (passed positionally, as GPT-2's, or by keyword) would grow with each call (the
    second run then attends to twice the keys)."""
    for key, value in caches(Signature(module, who).named(args, kwargs)).items():
        raise ExtractionError(
            f"{who} gets a cache ({key}={type(value).__name__}), which grows with every call, "
            "and extraction calls it several times; call it (or its model, to capture the "
            "layer's arguments) with use_cache=False"
        )


def require_eval(module: nn.Module, who: str) -> None:
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


def require_called(run: Run, chains: Sequence[Any], who: str) -> None:
    called = set(run.labels)
    for chain in chains:
        if chain.name not in called:
            raise ExtractionError(
                f"{who}: field '{chain.name}' ({' -> '.join(chain.paths)}) is never called by "
                "this forward; name sub-modules the forward calls on the hidden states"
            )


FRACTION_SHOWN = 1e-9  # a fraction's weight below this share of the largest is not shown


def refuse_fractions(
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


def explain_break(
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
        else "no sub-module outside the fields runs between them: the nonlinearity is in the "
        "forward's own code, or the state passes through a field member (a norm whose output "
        "is also the residual, as post-norm's or MiniMax's residual = norm(x))"
    )
    hint = (
        ""
        if frozen
        else "; if the coefficients are computed from the state (gates, hyper-connections), name "
        "the sub-modules through which they read it with frozen=[...]"
    )
    raise NotLinear(
        f"{who}: {what} is not a linear combination of the state and the field values "
        f"(relative residual {found.residual[target]:.2g}): {where}; an integrator combines "
        "whole states with one number per term, and a norm on a residual sum (post-norm), a "
        f"per-channel scale of the residual or a gate on it makes a block none{hint}",
        tuple(_leaves(between)),
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
