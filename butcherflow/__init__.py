"""butcherflow: compile numerical integrators into neural-network layers."""

from .errors import AnalysisError, ButcherflowError, DeclarationError, OrderClaimError
from .methods import (
    ButcherTableau,
    ContinuousDynamics,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
    load,
)

__version__ = "0.1.0"
__all__ = [
    "AnalysisError",
    "ButcherTableau",
    "ButcherflowError",
    "ContinuousDynamics",
    "DeclarationError",
    "LinearMultistep",
    "Method",
    "OrderClaimError",
    "Splitting",
    "__version__",
    "catalog",
    "load",
]
