"""Stage 1, declare: integrators as validated, frozen data."""

from .base import Method
from .continuous import ContinuousDynamics
from .files import Catalog, catalog, load
from .multistep import LinearMultistep
from .numbers import Number, parse_number
from .splitting import Splitting
from .tableau import ButcherTableau

__all__ = [
    "ButcherTableau",
    "Catalog",
    "ContinuousDynamics",
    "LinearMultistep",
    "Method",
    "Number",
    "Splitting",
    "catalog",
    "load",
    "parse_number",
]
