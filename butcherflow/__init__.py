"""butcherflow: compile numerical integrators into neural-network layers."""

from .analysis import Report, check
from .errors import (
    AnalysisError,
    ButcherflowError,
    DeclarationError,
    OrderClaimError,
    UnknownNameError,
)
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
    "Report",
    "Splitting",
    "UnknownNameError",
    "__version__",
    "catalog",
    "check",
    "load",
]
