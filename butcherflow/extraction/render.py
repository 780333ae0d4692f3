"""The round trip beside a reading's summary: what `butcherflow extract` prints and the audit page
shows after `found.verify()` (the summary itself is `str(found)`, `found.to_json()`,
`found.to_markdown()`), for a layer and for a whole model."""

from __future__ import annotations

import json

from ..analysis.report import jsonable
from .model.read import ExtractedModel, describe
from .result import Extracted


def round_trip_line(difference: float, precision: float | None = None) -> str:
    """One line saying what `verify()` measured (`precision`: `found.precision`, the precision
    of a module that computes below float64, which bounds the difference)."""
    at = (
        "float64"
        if precision is None
        else f"within the module's precision {precision:g}: it computes below float64"
    )
    return (
        "round trip: the declaration compiled on the module's own sub-modules reproduces its "
        f"output to a relative difference of {difference:.2g} ({at})"
    )


def model_round_trip_line(found: ExtractedModel) -> str:
    """One line saying what a whole model's `verify()` measured, part by part."""
    parts = found.round_trips
    return (
        f"round trip: every block's declaration on its own sub-modules {parts['layers']:.2g}, "
        f"the model with every block rewired to its reading {parts['model']:.2g} (its "
        f"output), the depth method's rows {parts['depth']:.2g} (relative differences; a "
        f"right reading is within {found.tolerance:g})"
    )


def to_json(found: Extracted | ExtractedModel, difference: float) -> str:
    """`found.to_dict()` with the round trip (`"round_trip"`), as indented JSON."""
    extra: dict[str, object] = {"round_trip": difference}
    if isinstance(found, ExtractedModel):
        extra["round_trips"] = found.round_trips
    return json.dumps(jsonable({**found.to_dict(), **extra}), indent=2)


def to_markdown(found: Extracted | ExtractedModel, difference: float) -> str:
    """`found.to_markdown()` (a model: its table of layers and depth method) with the round
    trip as its last line."""
    if isinstance(found, ExtractedModel):
        return model_markdown(found).rstrip() + f"\n\n{model_round_trip_line(found)}\n"
    return found.to_markdown().rstrip() + f"\n\n{round_trip_line(difference, found.precision)}\n"


def model_markdown(found: ExtractedModel) -> str:
    """A whole model's reading as a markdown table: layer by layer, then the depth method."""
    lines = [
        f"## {found.model}: {len(found.layers)} blocks at `{found.stack}`",
        "",
        "| layers | block | fields | declaration | order |",
        "|---|---|---|---|--:|",
    ]
    for where, cls, fields, declaration, order in found.table():
        lines.append(f"| `{where}` | `{cls}` | {fields} | {declaration} | {order} |")
    d = found.depth
    zero = getattr(d.report, "zero_stable", None)
    stable = "" if zero is None else f", zero-stable {'yes' if zero else 'no'}"
    lines += ["", f"Depth method: {describe(d.method)}, order {d.report.order}{stable}.", ""]
    lines += [f"- {note}" for note in (*d.notes, *found.notes)]
    return "\n".join(lines) + "\n"
