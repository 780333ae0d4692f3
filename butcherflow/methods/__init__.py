"""Stage 1, declare: integrators as validated, frozen data."""

from .additive import AdditiveRungeKutta
from .base import Layer, Method, Named
from .continuous import ContinuousDynamics
from .entries.numbers import Number, parse_number
from .files import Catalog, catalog, load
from .general_linear import BIRKHOFF_MAX_STREAMS, GeneralLinear
from .multistep import LinearMultistep
from .parameters import Parameter
from .splitting import Splitting
from .tableau import POLICIES, ButcherTableau

__all__ = [
    "BIRKHOFF_MAX_STREAMS",
    "POLICIES",
    "AdditiveRungeKutta",
    "ButcherTableau",
    "Catalog",
    "ContinuousDynamics",
    "GeneralLinear",
    "Layer",
    "LinearMultistep",
    "Method",
    "Named",
    "Number",
    "Parameter",
    "Splitting",
    "catalog",
    "load",
    "parse_number",
]
