"""Stage 4, extraction: the compiler's inverse. `bf.extract(module, x, fields=...)` reads the
integrator a PyTorch module computes (its field sub-modules replaced by probes), proves it, and
verifies it by compiling it back onto the module's own sub-modules; `found.rewire(method)` puts
another integrator on the same sub-modules.

The package is named `extraction`, not `extract`, so that importing it never rebinds the
attribute `bf.extract` (the function) to a module."""

from .api import extract
from .declare import Declared
from .result import Extracted, Variation
from .target import Target

__all__ = ["Declared", "Extracted", "Target", "Variation", "extract"]
