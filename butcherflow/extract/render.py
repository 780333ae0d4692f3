"""An extraction as JSON and as Markdown (the text form is `str(found)`), with its round trip:
what `butcherflow extract --format json|markdown` prints and the audit page shows."""

from __future__ import annotations

import json
from typing import Any

from ..analysis.report import jsonable
from .result import Extracted, declaration_text


def as_dict(found: Extracted, difference: float | None = None) -> dict[str, Any]:
    """The extraction as plain data.

    **Arguments:**

    - `found`: what `bf.extract` returned.
    - `difference`: `found.verify()`, if it was run.

    **Returns:** the module, its fields, the declaration (its declaration-file table), whether
    the coefficients are exact, how they vary (per-token ranges and the properties that hold at
    every token), the notes, the proof (`report.to_json()`'s data) and the round trip.
    """
    varies = found.varies
    return {
        "module": found.module,
        "fields": {name: list(paths) for name, paths in found.fields.items()},
        "declaration": found.method.to_table(),
        "exact": found.declared.exact,
        "varies": {
            "token": varies.token,
            "state": varies.state,
            "ranges": {k: list(v) for k, v in varies.ranges.items()},
            "holds": varies.holds,
            "worst": varies.worst,
        },
        "notes": list(found.notes),
        "report": json.loads(found.report.to_json()),
        "round_trip": difference,
    }


def to_json(found: Extracted, difference: float | None = None) -> str:
    """`as_dict` as indented JSON."""
    return json.dumps(jsonable(as_dict(found, difference)), indent=2)


def round_trip_line(difference: float) -> str:
    """One line saying what `verify()` measured."""
    return (
        f"round trip: the declaration compiled on the module's own sub-modules reproduces its "
        f"output to a relative difference of {difference:.2g} (float64)"
    )


def to_markdown(found: Extracted, difference: float | None = None) -> str:
    """The extraction as Markdown: fields, coefficients, the declaration and its proof."""
    lines = [f"**{found.module}**: {found.method.family} `{found.method.name}`", ""]
    lines += ["| field | sub-modules |", "|---|---|"]
    lines += [f"| `{name}` | `{' → '.join(paths)}` |" for name, paths in found.fields.items()]
    lines.append("")
    varies = found.varies
    if varies:
        ranges = ", ".join(f"{k} ∈ [{lo:.4g}, {hi:.4g}]" for k, (lo, hi) in varies.ranges.items())
        lines.append(
            f"- coefficients vary: per token {varies.token}, with the state {varies.state}; "
            f"{ranges}"
        )
        lines += [
            f"- at every token, {k}: {'yes' if ok else 'no'} (worst {varies.worst[k]:.3g})"
            for k, ok in varies.holds.items()
        ]
    else:
        lines.append(f"- coefficients fixed, {'exact' if found.declared.exact else 'numeric'}")
    lines += [f"- {note}" for note in found.notes]
    if difference is not None:
        lines.append(f"- {round_trip_line(difference)}")
    lines += ["", "```toml", declaration_text(found.method), "```", ""]
    lines.append(found.report.to_markdown())
    return "\n".join(lines).rstrip() + "\n"
