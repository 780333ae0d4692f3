"""The round trip beside an extraction's summary: what `butcherflow extract` prints and the audit
page shows after `found.verify()` (the summary itself is `str(found)`, `found.to_json()`,
`found.to_markdown()`)."""

from __future__ import annotations

import json

from ..analysis.report import jsonable
from .result import Extracted


def round_trip_line(difference: float) -> str:
    """One line saying what `verify()` measured."""
    return (
        "round trip: the declaration compiled on the module's own sub-modules reproduces its "
        f"output to a relative difference of {difference:.2g} (float64)"
    )


def to_json(found: Extracted, difference: float) -> str:
    """`found.to_dict()` with the round trip (`"round_trip"`), as indented JSON."""
    return json.dumps(jsonable({**found.to_dict(), "round_trip": difference}), indent=2)


def to_markdown(found: Extracted, difference: float) -> str:
    """`found.to_markdown()` with the round trip as its last line."""
    return found.to_markdown().rstrip() + f"\n\n{round_trip_line(difference)}\n"
