"""butcherflow: compile numerical integrators into neural-network layers.

Declarations and proofs (`bf.ButcherTableau`, `bf.check`, ...) load without torch, so a proof
answers in a fraction of a second; the names that need tensors (`bf.compile`, `bf.Seq2Seq`,
`bf.nn`, ...) import their stage on first use (PEP 562 module `__getattr__`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .analysis import Report, check
from .analysis.bseries import (
    BSeries,
    bseries,
    compose,
    modified_equation,
    modifying_integrator,
    substitute,
    symplectic,
)
from .errors import (
    AnalysisError,
    ButcherflowError,
    DeclarationError,
    DesignError,
    ExtractionError,
    OrderClaimError,
    UnknownNameError,
)
from .methods import (
    AdditiveRungeKutta,
    ButcherTableau,
    ContinuousDynamics,
    GeneralLinear,
    LinearMultistep,
    Method,
    Splitting,
    catalog,
    load,
)

if TYPE_CHECKING:
    from . import design, nn
    from .assemble import LanguageModel, Recipe, Seq2Seq, load_recipe, warm_start
    from .compiler import CompiledBlock, compile, compile_stack
    from .extraction import Extracted, ExtractedModel, extract, load_pretrained, rewire

# The public names that need torch (or, `design`, the optimisers of the design extra), and the
# stage that defines each.
_WITH_TORCH = {
    "design": ".design",
    "nn": ".nn",
    "LanguageModel": ".assemble",
    "Recipe": ".assemble",
    "Seq2Seq": ".assemble",
    "load_recipe": ".assemble",
    "warm_start": ".assemble",
    "CompiledBlock": ".compiler",
    "compile": ".compiler",
    "compile_stack": ".compiler",
    "Extracted": ".extraction",
    "ExtractedModel": ".extraction",
    "extract": ".extraction",
    "rewire": ".extraction",
    "load_pretrained": ".extraction",
}


def __getattr__(name: str) -> Any:
    stage = _WITH_TORCH.get(name)
    if stage is None:
        raise AttributeError(f"module 'butcherflow' has no attribute {name!r}")
    module = importlib.import_module(stage, __name__)
    value = module if name in ("nn", "design") else getattr(module, name)
    globals()[name] = value  # once imported, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__version__ = "0.1.0"
__all__ = [
    "AdditiveRungeKutta",
    "AnalysisError",
    "BSeries",
    "ButcherTableau",
    "ButcherflowError",
    "CompiledBlock",
    "ContinuousDynamics",
    "DeclarationError",
    "DesignError",
    "Extracted",
    "ExtractedModel",
    "ExtractionError",
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
    "bseries",
    "catalog",
    "check",
    "compile",
    "compile_stack",
    "compose",
    "design",
    "extract",
    "load",
    "load_pretrained",
    "load_recipe",
    "modified_equation",
    "modifying_integrator",
    "nn",
    "rewire",
    "substitute",
    "symplectic",
    "warm_start",
]
