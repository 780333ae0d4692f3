"""Fixed coefficients -> the declaration they are: a Butcher tableau, a splitting, an additive
Runge-Kutta method, a multistep stack or a general linear method.

- Calls of distinct fields that read the same stage value and enter every later combination
  with the same weight are one call of their summed field ("parallel" branches, as GPT-J's
  attention and MLP): y + F_attn(y) + F_mlp(y) is Euler on F = F_attn + F_mlp. The methods
  package has no additive family; a summed field is what the existing families hold exactly.
- One field (or one summed field) with every stage reading y and the output keeping y: a
  `ButcherTableau` (A, b); otherwise (a stage or the output scaling y) a `GeneralLinear`.
- Distinct fields, each call reading everything before it with its output weight
  (Yᵢ = y + Σ_{l<i} b_l K_l): a `Splitting` with Euler sub-steps, step i = (field, bᵢ).
- A stack across depth that a k-step recurrence holds: a `LinearMultistep`.
- Any other arrangement of distinct fields that keeps y (U = 1, V = 1): an
  `AdditiveRungeKutta`, call by call (LIMe's mixtures of earlier states).
- Streams (r > 1): a `GeneralLinear` over the calls.
Distinct fields with the state scaled (r = 1, U or V not 1) are an additive general linear
method, which no family declares: refused with the coefficients.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

import numpy as np

from ..errors import ExtractionError
from ..methods import (
    AdditiveRungeKutta,
    ButcherTableau,
    GeneralLinear,
    LinearMultistep,
    Method,
    Splitting,
)
from .solve import all_exact, entries, fixed_tolerance, recognise


@final
@dataclass(frozen=True)
class Declared:
    """A declaration and how its fields map to the module's.

    - `method`: the declaration.
    - `groups`: each field of the declaration (an operator of a splitting, `"F"` for the one
      field of a tableau or GLM) -> the module's fields summed into it.
    - `stage_fields`: per stage (call) of the declaration, its field.
    - `exact`: every coefficient is a small-denominator rational.
    - `notes`: what the reader should know.
    - `precision`: the relative precision the coefficients were read to when the module
      computes below float64 (float32: 1e-6), declared as the method's `precision`; None for
      float64.
    """

    method: Method
    groups: dict[str, tuple[str, ...]]
    stage_fields: tuple[str, ...]
    exact: bool
    notes: tuple[str, ...]
    precision: float | None = None


def close(a: np.ndarray, b: np.ndarray, precision: float | None = None) -> bool:
    """Whether `a` and `b` agree to the coefficients' tolerance (`solve.fixed_tolerance`)."""
    tol = fixed_tolerance(precision)
    return bool(np.allclose(a, b, rtol=tol, atol=tol))


def _parallel(
    U: np.ndarray, A: np.ndarray, B: np.ndarray, i: int, j: int, precision: float | None
) -> bool:
    """Calls i and j read the same stage value and are weighted alike everywhere after."""
    later = slice(j + 1, None)
    return (
        close(U[i], U[j], precision)
        and close(A[i], A[j], precision)
        and close(A[later, i], A[later, j], precision)
        and close(B[:, i], B[:, j], precision)
    )


def group_calls(
    U: np.ndarray,
    A: np.ndarray,
    B: np.ndarray,
    labels: Sequence[str],
    precision: float | None = None,
) -> list[list[int]]:
    """Runs of adjacent calls of distinct fields that are parallel (`_parallel`)."""
    groups: list[list[int]] = []
    for j in range(len(labels)):
        head = groups[-1] if groups else None
        if (
            head is not None
            and labels[j] not in {labels[i] for i in head}
            and all(_parallel(U, A, B, i, j, precision) for i in head)
        ):
            head.append(j)
        else:
            groups.append([j])
    return groups


def _shown(m: np.ndarray, precision: float | None = None) -> list[list[str]]:
    """A matrix's recognised entries as text, for a message."""
    return [[str(x) for x in row] for row in entries(m, precision)]


def precision_text(precision: float | None) -> str | None:
    """The declaration's `precision` for coefficients read to `precision` (None: float64): the
    decimal it is (1e-06, not the nearest double)."""
    return None if precision is None else format(precision, "g")


def declare(
    U: np.ndarray,
    A: np.ndarray,
    B: np.ndarray,
    V: np.ndarray,
    labels: Sequence[str],
    name: str,
    precision: float | None = None,
) -> Declared:
    """The declaration of fixed coefficients (one token's). Each coefficient is declared as it
    was read: a recognised rational exactly (a `Fraction`), any other as the float it is (its
    binary value, known to 2⁻⁴⁴ of its size, `methods/entries/numbers.py`), every one judged at
    `precision` when the module computes below float64.

    **Arguments:**

    - `U` `(s, r)`, `A` `(s, s)`, `B` `(r, s)`, `V` `(r, r)`: the combination.
    - `labels`: the field of each of the s calls.
    - `name`: the module's name, for the declaration and messages.
    - `precision`: the relative precision the coefficients were read to (None: float64); the
      declaration is numeric at it.

    **Returns:** a `Declared`; raises `ExtractionError` for distinct fields in an arrangement
    no family holds.
    """
    groups = group_calls(U, A, B, labels, precision)
    heads = [g[0] for g in groups]
    U, A, B = U[heads], A[np.ix_(heads, heads)], B[:, heads]
    names = ["_".join(labels[i] for i in g) for g in groups]
    exact = all(all_exact(entries(m, precision)) for m in (U, A, B, V))
    summed = {n: tuple(labels[i] for i in g) for n, g in zip(names, groups, strict=True)}
    notes = [
        f"fields {', '.join(parts)} read the same stage value with equal weights: one field "
        f"{' + '.join(parts)} (parallel branches)"
        for parts in summed.values()
        if len(parts) > 1
    ]
    method, note = _method(U, A, B, V, names, name, precision)
    notes += [note] if note else []
    distinct = list(dict.fromkeys(names))
    if method.family in ("runge-kutta", "general-linear") and V.shape[0] == 1 == len(distinct):
        fields, stage_fields = {"F": summed[distinct[0]]}, ("F",) * len(names)
    else:
        fields, stage_fields = {n: summed[n] for n in distinct}, tuple(names)
    return Declared(method, fields, stage_fields, exact, tuple(notes), precision)


def _method(
    U: np.ndarray,
    A: np.ndarray,
    B: np.ndarray,
    V: np.ndarray,
    names: list[str],
    name: str,
    precision: float | None,
) -> tuple[Method, str | None]:
    """The family that holds the combination of the calls `names` (one per field or summed
    field), with the note the reader needs (None: none)."""
    title, declared, distinct = f"{name}-extracted", precision_text(precision), set(names)
    keeps = close(U, np.ones_like(U), precision) and close(V, np.ones_like(V), precision)
    if V.shape[0] > 1:
        note = None
        if len(distinct) > 1:
            note = (
                f"stages evaluate distinct fields ({', '.join(names)}): the report proves the "
                "general linear method with one field f in every stage (the fields equal); with "
                "distinct fields it is an additive method, whose order is not proved here"
            )
        return glm(U, A, B, V, title, precision), note
    a, b = entries(A, precision), entries(B, precision)[0]
    if len(distinct) == 1 and keeps:
        return ButcherTableau(a, b, name=title, precision=declared), None
    if len(distinct) == 1:
        note = "the stages or the output scale the state: a general linear method"
        return glm(U, A, B, V, title, precision), note
    sequential = all(close(A[i, :i], B[0, :i], precision) for i in range(len(names)))
    if keeps and sequential:
        scale = float(np.abs(B[0]).max())
        steps = [
            (n, recognise(float(c), scale, precision)) for n, c in zip(names, B[0], strict=True)
        ]
        return Splitting(steps, substep="euler", name=title, precision=declared), None
    stack = _multistep(A, B[0], name, precision) if keeps and len(distinct) == len(names) else None
    if stack is not None:
        return stack, (
            f"a stack across depth: call n evaluates field {names[0]}, ..., {names[-1]} in turn, "
            f"the first {stack.steps - 1} by forward Euler (the starter of bf.compile_stack)"
        )
    if keeps:
        return AdditiveRungeKutta(a, b, names, name=title, precision=declared), (
            f"fields {', '.join(dict.fromkeys(names))} are combined neither as sequential Euler "
            "steps nor as parallel branches: an additive Runge-Kutta method, its order proved "
            "over trees coloured by field"
        )
    raise ExtractionError(
        f"{name}: fields {', '.join(dict.fromkeys(names))} are combined with the state scaled "
        f"(state {_shown(U, precision)}, output {_shown(V, precision)}), stage coefficients "
        f"{_shown(A, precision)}, weights {_shown(B, precision)[0]}: an additive general "
        "linear method, which no butcherflow family declares (an additive Runge-Kutta "
        "method keeps y: every stage and the output read it with weight 1)"
    )


MAX_STEPS = 4  # the longest history a stack is read as a multistep method with


def _multistep(
    A: np.ndarray, b: np.ndarray, name: str, precision: float | None
) -> LinearMultistep | None:
    """A stack y_{m+1} = Σᵢ aᵢ y_{m−i} + Σᵢ cᵢ F_{m−i}(y_{m−i}) (i < k) with Euler starting
    layers, read from the rows of (A; b): the state before call m is x + Σⱼ Rₘⱼ Kⱼ. The
    smallest k ≤ `MAX_STEPS` whose recurrence holds exactly gives the k-step method
    Σⱼ αⱼ y_{n+j} = Σⱼ βⱼ f_{n+j} (α_k = 1, explicit); None when none does."""
    L = len(b)
    R = np.vstack([A, b[None, :]])  # R[m]: the state before call m (R[L]: the output)
    eye = np.eye(L)
    for k in range(2, min(MAX_STEPS, L - 1) + 1):
        if not all(close(R[m + 1], R[m] + eye[m], precision) for m in range(k - 1)):
            continue  # the first k − 1 layers are Euler steps
        rows, rhs = [], []
        for m in range(k - 1, L):
            rows.append(np.stack([R[m - i] for i in range(k)] + [eye[m - i] for i in range(k)], 1))
            rhs.append(R[m + 1])
        system, target = np.concatenate(rows), np.concatenate(rhs)
        if len(target) < 2 * k + 1 or np.linalg.matrix_rank(system) < 2 * k:
            continue
        solution, *_ = np.linalg.lstsq(system, target, rcond=None)
        if not close(system @ solution, target, precision):
            continue
        a, c = solution[:k], solution[k:]
        scale = float(np.abs(solution).max())
        alpha = [recognise(-float(a[k - 1 - j]), scale, precision) for j in range(k)] + [1]
        beta = [recognise(float(c[k - 1 - j]), scale, precision) for j in range(k)] + [0]
        return LinearMultistep(
            alpha, beta, name=f"{name}-extracted", precision=precision_text(precision)
        )
    return None


def glm(
    U: np.ndarray,
    A: np.ndarray,
    B: np.ndarray,
    V: np.ndarray,
    name: str,
    precision: float | None = None,
) -> GeneralLinear:
    """The general linear method of coefficients (exact where recognised; numeric at
    `precision` when the module computes below float64)."""
    rows = [entries(m, precision) for m in (A, U, B, V)]
    return GeneralLinear(*rows, name=name, precision=precision_text(precision))
