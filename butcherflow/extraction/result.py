"""What `bf.extract` returns: the declaration, its proof, how the coefficients vary, the round
trip, and a readable summary."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, final

import numpy as np
import tomli_w
import torch
from torch import Tensor, nn

from ..analysis import Report, check
from ..errors import ExtractionError
from ..methods import Method
from ..nn import Field
from .declare import Declared, declare
from .evaluate import evaluate_glm
from .families import On, wiring
from .fields import ChainField, SumField
from .layer.choice import FieldChoice, LayerRecord
from .layer.rewire import Rewired, rewire_layer
from .probe import Call, Chain, small_on_one_thread
from .solve import (
    EXACT_TOLERANCE,
    FLOAT32_PRECISION,
    MAX_DENOMINATOR,
    Fit,
    fixed_tolerance,
    residual_tolerance,
)
from .streams import Streams, stream_count

PROPERTY_TOLERANCE = 1e-9  # how close a per-token row sum must be to 1 to count as 1
# The largest `verify()` of a right reading of a float64 module: the declaration recompiled on
# the module's own sub-modules reproduces its output to float64 round-off (~1e-15 of its size;
# sums of a few dozen terms, as a 24-branch stack, stay below 1e-13). The one home of this
# bound: tests and the sweep import it.
ROUND_TRIP = 1e-12


@final
@dataclass(frozen=True)
class Variation:
    """Whether and how the coefficients vary.

    - `token`: they differ between tokens of the input.
    - `state`: they depend on the state (a run from another state gives others, or they are
      read through `frozen` sub-modules).
    - `U`, `A`, `B`, `V`: the per-token coefficients at the module's input, `(T, ...)`.
    - `ranges`: per matrix, the smallest and largest entry over the tokens.
    - `holds`: properties, each True when it holds at every token (within
      `PROPERTY_TOLERANCE`, or the precision of a module computing below float64):
      `"U 1 = 1"` (each stage reads y when all streams are y),
      `"V 1 = 1"` (preconsistency with every input a copy of y), `"V doubly stochastic"`,
      `"V power-bounded"` (‖V‖∞ ≤ 1 or spectral radius < 1); with one stream also
      `"Σ b = 1"` when every call is of one field (a Runge-Kutta step's consistency).
    - `worst`: per property, its largest violation over the tokens.
    - `at_token`: per property, whether it holds at each token, `(T,)` bool.
    """

    token: bool
    state: bool
    U: np.ndarray
    A: np.ndarray
    B: np.ndarray
    V: np.ndarray
    ranges: dict[str, tuple[float, float]]
    holds: dict[str, bool]
    worst: dict[str, float]
    at_token: dict[str, np.ndarray]

    def __bool__(self) -> bool:
        return self.token or self.state


def variation(fit: Fit, state_dependent: bool, precision: float | None = None) -> Variation:
    """The `Variation` of a fit at the module's input (properties judged within
    `PROPERTY_TOLERANCE`, or the reading `precision` of a module below float64)."""
    tol = PROPERTY_TOLERANCE if precision is None else precision
    ones_r = np.ones(fit.streams)
    tokens = fit.V.shape[0]
    U_sum = np.abs(fit.U @ ones_r - 1).max(axis=1) if fit.stages else np.zeros(tokens)
    V_rows = np.abs(fit.V @ ones_r - 1).max(axis=1)
    V_cols = np.abs(fit.V.sum(axis=1) - 1).max(axis=1)
    negative = np.maximum(0.0, -fit.V.min(axis=(1, 2)))
    inf_norm = np.abs(fit.V).sum(axis=2).max(axis=1)
    radius = np.abs(np.linalg.eigvals(fit.V)).max(axis=1)
    # ‖V‖∞ ≤ 1 bounds every power; ρ(V) < 1 does too (up to a constant)
    violation = {
        "U 1 = 1": U_sum,
        "V 1 = 1": V_rows,
        "V doubly stochastic": np.maximum(np.maximum(V_rows, V_cols), negative),
        "V power-bounded": np.minimum(inf_norm - 1, radius - 1 + 2 * tol),
    }
    if fit.streams == 1 and len(set(fit.labels)) == 1:  # one field: Runge-Kutta consistency
        violation["Σ b = 1"] = np.abs(fit.B.sum(axis=(1, 2)) - 1)
    elif fit.streams == 1:  # distinct fields: each field's weights sum to 1 (coloured order 1)
        per_field = [
            np.abs(fit.B[:, 0, [i for i, x in enumerate(fit.labels) if x == field]].sum(axis=1) - 1)
            for field in dict.fromkeys(fit.labels)
        ]
        violation["Σ b = 1 per field"] = np.max(per_field, axis=0)
    at_token = {k: v <= tol for k, v in violation.items()}
    worst = {k: float(v.max()) for k, v in violation.items()}
    holds = {k: bool(v.all()) for k, v in at_token.items()}
    ranges = {
        k: (float(m.min()), float(m.max())) if m.size else (0.0, 0.0)
        for k, m in (("U", fit.U), ("A", fit.A), ("B", fit.B), ("V", fit.V))
    }
    return Variation(
        token=fit.spread() > fixed_tolerance(precision),
        state=state_dependent,
        U=fit.U,
        A=fit.A,
        B=fit.B,
        V=fit.V,
        ranges=ranges,
        holds=holds,
        worst=worst,
        at_token=at_token,
    )


@dataclass(frozen=True)
class Session:
    """What extraction ran on, kept for `verify` and `rewire` (not part of the result's value).

    - `original`: the user's module; `work`: its float64 copy the probes ran on.
    - `chains`, `templates`, `outputs`: the fields, each member's recorded call and output.
    - `args`, `kwargs`: the float64 call; `state`: its state tensor; `output`: the reference
      output; `returned`: the output as the module returned it (its structure); `stage_shapes`:
      the shape of each stage value.
    """

    original: nn.Module
    work: nn.Module
    chains: tuple[Chain, ...]
    templates: dict[str, list[Call]]
    outputs: dict[str, list[Any]]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    state: Tensor
    output: Tensor
    returned: Any
    stage_shapes: tuple[torch.Size, ...]


@final
@dataclass(frozen=True)
class Extracted:
    """The integrator a module computes. Build it with `bf.extract`.

    **Attributes:**

    - `method`: the declaration (for coefficients varying per token: the one at the first
      token; every token's is in `varies`).
    - `report`: `bf.check(method)` (proved when first read).
    - `varies`: a `Variation` (falsy when the coefficients are fixed).
    - `fields`: field name -> the module's sub-module paths.
    - `declared`: how the declaration's fields map to the module's (`groups`), and notes.
    - `fit`: the per-token least-squares solution and its residuals.
    - `module`: the module's class name; `streams`: the state's stream axis.
    """

    module: str
    method: Method
    varies: Variation
    fields: dict[str, tuple[str, ...]]
    declared: Declared
    fit: Fit
    streams: Streams
    session: Session = field(repr=False, compare=False)
    seconds: tuple[str, ...] = ()  # second states read beside the state (`layer.SecondStates`)

    @functools.cached_property
    def report(self) -> Report:
        """`bf.check(method)`, proved on first use (a rewiring needs the reading only)."""
        return check(self.method)

    @property
    def notes(self) -> tuple[str, ...]:
        return self.declared.notes

    @functools.cached_property
    def token_orders(self) -> np.ndarray:
        """The order proved at each token, `bf.check(at_token(t)).order`, `(T,)`; the
        declaration's alone, `(1,)`, when the coefficients do not vary per token. Tokens whose
        coefficients agree to 12 decimals are proved once."""
        if not self.varies.token:
            return np.array([self.report.order])
        f, proved = self.fit, {}
        orders = []
        for t in range(f.V.shape[0]):
            rows = np.concatenate([m[t].ravel() for m in (f.U, f.A, f.B, f.V)])
            key = np.round(rows, 12).tobytes()
            if key not in proved:
                proved[key] = check(self.at_token(t)).order
            orders.append(proved[key])
        return np.array(orders)

    @property
    def precision(self) -> float | None:
        """The relative precision the coefficients were read to when the module computes
        below float64 (float32: 1e-6), which bounds `verify()`; None for float64."""
        return self.declared.precision

    def field_modules(self, work: bool = True) -> dict[str, ChainField]:
        """Each field as a `ChainField` on the module's own members, called as recorded
        (`work`: on the float64 copy extraction ran on, else on the user's module)."""
        root = self.session.work if work else self.session.original
        found = {}
        for chain in self.session.chains:
            calls = self.session.templates[chain.name]
            members = [root.get_submodule(p) for p in chain.paths]
            found[chain.name] = ChainField(chain.name, members, calls.__getitem__)
        return found

    def declared_fields(self, chains: dict[str, ChainField]) -> dict[str, Field]:
        """The declaration's fields (summed where the module's branches are parallel)."""
        return {
            group: chains[parts[0]] if len(parts) == 1 else SumField([chains[p] for p in parts])
            for group, parts in self.declared.groups.items()
        }

    def verify(self) -> float:
        """Run the declaration, compiled, on the module's own field sub-modules (float64) with
        the same inputs, and compare with the module's output.

        **Returns:** the largest relative difference, max |out − ref| / max |ref| (float64
        round-off, ~1e-15, when the extraction is right; within `precision` for a module that
        computes below float64, whose output carries its own round-off). Tableaux and
        splittings compile with `bf.compile`, a multistep stack with `bf.compile_stack`; a
        general linear method over
        one layer's streams (the stack compiler adds a read-in and a read-out), and coefficients
        that vary per token, run through `evaluate.evaluate_glm` (the same equations per token).
        """
        s = self.session
        fields = self.declared_fields(self.field_modules())
        on = On(
            fields,
            self.declared.stage_fields,
            int(s.state.shape[-1]),
            self.streams,
            stream_count(s.state, self.streams),
        )
        with torch.no_grad(), small_on_one_thread(s.state):
            runs = not self.varies.token and all(
                op in fields for op in wiring(self.method).operators(self.method)
            )
            step = wiring(self.method).run(self.method, on) if runs else None
            if step is not None:
                out = step(s.state)
            else:
                stage = [fields[g] for g in self.declared.stage_fields]
                coefficients: tuple[np.ndarray, ...] = (
                    self.fit.U,
                    self.fit.A,
                    self.fit.B,
                    self.fit.V,
                )
                if self.declared.stage_fields != tuple(self.fit.labels):
                    coefficients = _merged(self.fit, self.declared)
                out = evaluate_glm(coefficients, stage, s.stage_shapes, s.state, self.streams)
        scale = float(s.output.abs().max()) or 1.0
        return float((out - s.output).abs().max()) / scale

    def at_token(self, token: int) -> Method:
        """The declaration of one token (coefficients that vary per token).

        **Arguments:** `token`: the index into the flattened leading axes of the state.

        **Returns:** the numeric declaration the coefficients at that token are, of the same
        family as `method` (prove it with `bf.check`).
        """
        f = self.fit
        coefficients = (f.U[token], f.A[token], f.B[token], f.V[token])
        name = f"{self.module}-token-{token}"
        return declare(*coefficients, labels=f.labels, name=name, precision=self.precision).method

    def record(self) -> LayerRecord:
        """The module, its fields and the call read, as `rewire_layer` takes them."""
        if self.seconds:
            raise ExtractionError(
                f"rewire: {self.module} reads {', '.join(self.seconds)} beside its state (a "
                "general linear method over both); a rewired layer computes one state from "
                "its state: valid: a layer whose fields read its state alone"
            )
        s = self.session
        return LayerRecord(
            module=s.original,
            name=self.module,
            chains=s.chains,
            templates=s.templates,
            outputs=s.outputs,
            args=s.args,
            kwargs=s.kwargs,
            returned=s.returned,
            width=int(s.state.shape[-1]),
            streams=self.streams,
            values=stream_count(s.state, self.streams),
            groups=self.declared.groups,
        )

    def rewire(
        self,
        method: Method | str,
        field: str | None = None,
        fields: dict[str, FieldChoice] | None = None,
    ) -> Rewired:
        """A module computing `method` (a declaration, catalog name or file) on this module's
        own sub-modules, called as the module (see `rewire.rewire_layer`)."""
        return rewire_layer(self.record(), method, field=field, fields=fields)

    def to_dict(self) -> dict[str, Any]:
        """The summary as plain data: fields, declaration (its file's table), coefficients'
        precision, variation, notes and the report (`Report.to_json`'s content)."""
        varies: dict[str, Any] = {"token": self.varies.token, "state": self.varies.state}
        if self.varies:
            varies |= {
                "ranges": self.varies.ranges,
                "holds": self.varies.holds,
                "worst": self.varies.worst,
            }
        return {
            "module": self.module,
            "fields": {k: list(v) for k, v in self.fields.items()},
            "declaration_fields": {k: list(v) for k, v in self.declared.groups.items()},
            "declaration": self.method.to_table(),
            "coefficients": self._precision(),
            "exact": self.declared.exact,
            "precision": self.precision,
            "varies": varies,
            "notes": list(self.notes),
            "report": json.loads(self.report.to_json()),
        }

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), indent=kwargs.pop("indent", 2), **kwargs)

    def to_markdown(self) -> str:
        lines = [f"## {self.module}: {self.method.family} `{self.method.name}`", ""]
        lines += [f"- {line.strip()}" for line in self._summary()]
        lines += ["", "```toml", declaration_text(self.method), "```", ""]
        return "\n".join(lines) + self.report.to_markdown()

    def _summary(self) -> list[str]:
        lines = [f"  field {name}: {' -> '.join(paths)}" for name, paths in self.fields.items()]
        for group, parts in self.declared.groups.items():
            if len(parts) > 1 or group != parts[0]:
                lines.append(f"  declaration field {group} = {' + '.join(parts)}")
        lines.append("  coefficients: " + self._precision())
        if self.varies:
            lines.append(
                f"  varies: per token {self.varies.token}, with the state {self.varies.state}; "
                + ", ".join(
                    f"{k} in [{lo:.4g}, {hi:.4g}]" for k, (lo, hi) in self.varies.ranges.items()
                )
            )
            lines += [
                f"  at every token: {k}: {'yes' if ok else 'no'} (worst {self.varies.worst[k]:.3g})"
                for k, ok in self.varies.holds.items()
            ]
            if self.varies.token:
                low, high = int(self.token_orders.min()), int(self.token_orders.max())
                shown = str(low) if low == high else f"{low} to {high}"
                lines.append(
                    f"  order at every token: {shown} ({len(self.token_orders)} tokens, "
                    "each proved: found.token_orders)"
                )
        return lines + [f"  note: {n}" for n in self.notes]

    def __repr__(self) -> str:
        """A few words: the module, the declaration, its fields, how it varies (the arrays are
        in `fit` and `varies`)."""
        varies = (
            "static"
            if not self.varies
            else ("per token" if self.varies.token else "with the state")
        )
        fields = ", ".join(self.fields)
        return (
            f"Extracted({self.module}: {self.method.family} '{self.method.name}', fields "
            f"{fields}; {varies})"
        )

    def __str__(self) -> str:
        lines = [f"{self.module}: {self.method.family} '{self.method.name}'", *self._summary()]
        lines += ["", declaration_text(self.method), "", str(self.report)]
        return "\n".join(lines)

    def _precision(self) -> str:
        p = self.precision
        fit = (
            f"float64 least squares per token, relative residual <= {residual_tolerance(p):g}; "
            f"a rational p/q (q <= {MAX_DENOMINATOR}) is taken within "
            f"{EXACT_TOLERANCE if p is None else p:g}·max(1, |c|) of the fit"
        )
        if p is not None:
            below = "float32" if p == FLOAT32_PRECISION else "below float64"
            return (
                f"the module computes in {below}: coefficients read to {p:g}, declared with "
                f"precision = {p:g} ({fit})"
            )
        if self.declared.exact:
            return f"exact ({fit})"
        return f"rationals where recognised, the others the floats read ({fit})"


def declaration_text(method: Method) -> str:
    """The declaration as the lines of its TOML file, each array on one line."""
    lines = []
    for key, value in method.to_table().items():
        if value is None:
            continue
        if isinstance(value, dict):
            lines.append(tomli_w.dumps({key: value}).rstrip())
        else:
            lines.append(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    return "\n".join(lines)


def _merged(fit: Fit, declared: Declared) -> tuple[np.ndarray, ...]:
    """The per-token coefficients with parallel calls merged as the declaration merges them."""
    heads, seen = [], 0
    for group in _group_sizes(fit.labels, declared):
        heads.append(seen)
        seen += group
    idx = np.array(heads)
    return fit.U[:, idx], fit.A[:, idx][:, :, idx], fit.B[:, :, idx], fit.V


def _group_sizes(labels: tuple[str, ...], declared: Declared) -> list[int]:
    sizes = []
    for g in declared.stage_fields:
        parts = declared.groups[g]
        sizes.append(len(parts))
    assert sum(sizes) == len(labels)
    return sizes
