"""The round trip beside an extraction's summary: what `butcherflow extract` prints and the audit
page shows after `found.verify()` (the summary itself is `str(found)`, `found.to_json()`,
`found.to_markdown()`)."""

from __future__ import annotations

import json

from ..analysis.report import jsonable
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


def to_json(found: Extracted, difference: float) -> str:
    """`found.to_dict()` with the round trip (`"round_trip"`), as indented JSON."""
    return json.dumps(jsonable({**found.to_dict(), "round_trip": difference}), indent=2)


def to_markdown(found: Extracted, difference: float) -> str:
    """`found.to_markdown()` with the round trip as its last line."""
    return found.to_markdown().rstrip() + f"\n\n{round_trip_line(difference, found.precision)}\n"
