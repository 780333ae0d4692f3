"""Stage 3, compile: integrators -> PyTorch blocks (torch.fx graphs you can read)."""

from .api import compile, compile_stack
from .coefficients import POLICIES, StageGate
from .program import CompiledBlock
from .runge_kutta import RungeKuttaBlock

__all__ = ["POLICIES", "CompiledBlock", "RungeKuttaBlock", "StageGate", "compile", "compile_stack"]
