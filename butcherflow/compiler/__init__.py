"""Stage 3, compile: integrators -> PyTorch blocks (torch.fx graphs you can read)."""

from .additive import AdditiveBlock, AdditiveOptions
from .api import (
    COMPILERS,
    Declaration,
    compile,
    compile_stack,
    example_fields,
    resolve,
    spans_layers,
)
from .coefficients import POLICIES, StageGate
from .continuous import ContinuousOptions
from .dlcl import DLCL, DLCLStack, LayerCombination, stack_construct
from .general_linear import GeneralLinearOptions, GeneralLinearStack, stream_bounds
from .multistep import MultistepOptions
from .options import FieldSizes
from .program import CompiledBlock
from .runge_kutta import RungeKuttaBlock, RungeKuttaOptions
from .splitting import SplittingOptions

__all__ = [
    "COMPILERS",
    "DLCL",
    "POLICIES",
    "AdditiveBlock",
    "AdditiveOptions",
    "CompiledBlock",
    "ContinuousOptions",
    "DLCLStack",
    "Declaration",
    "FieldSizes",
    "GeneralLinearOptions",
    "GeneralLinearStack",
    "LayerCombination",
    "MultistepOptions",
    "RungeKuttaBlock",
    "RungeKuttaOptions",
    "SplittingOptions",
    "StageGate",
    "compile",
    "compile_stack",
    "example_fields",
    "resolve",
    "spans_layers",
    "stack_construct",
    "stream_bounds",
]
