"""butcherflow: compile numerical integrators into neural-network layers."""

from . import nn
from .analysis import Report, check
from .assemble import LanguageModel, Recipe, Seq2Seq, load_recipe, warm_start
from .compiler import CompiledBlock, compile, compile_stack
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
    GeneralLinear,
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
    "CompiledBlock",
    "ContinuousDynamics",
    "DeclarationError",
    "GeneralLinear",
    "LanguageModel",
    "LinearMultistep",
    "Method",
    "OrderClaimError",
    "Recipe",
    "Report",
    "Seq2Seq",
    "Splitting",
    "UnknownNameError",
    "__version__",
    "catalog",
    "check",
    "compile",
    "compile_stack",
    "load",
    "load_recipe",
    "nn",
    "warm_start",
]
