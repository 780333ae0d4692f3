"""Stage 3, compile: integrators -> PyTorch blocks (torch.fx graphs you can read)."""

from .api import COMPILERS, compile, compile_stack, example_fields, spans_layers
from .coefficients import POLICIES, StageGate
from .continuous import ContinuousOptions
from .general_linear import GeneralLinearOptions, GeneralLinearStack, stream_bounds
from .multistep import MultistepOptions
from .options import FieldSizes
from .program import CompiledBlock
from .runge_kutta import RungeKuttaBlock, RungeKuttaOptions
from .splitting import SplittingOptions

__all__ = [
    "COMPILERS",
    "POLICIES",
    "CompiledBlock",
    "ContinuousOptions",
    "FieldSizes",
    "GeneralLinearOptions",
    "GeneralLinearStack",
    "MultistepOptions",
    "RungeKuttaBlock",
    "RungeKuttaOptions",
    "SplittingOptions",
    "StageGate",
    "compile",
    "compile_stack",
    "example_fields",
    "spans_layers",
    "stream_bounds",
]
