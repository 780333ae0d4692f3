"""Stage 4, extract: the compiler's inverse. `bf.extract(module, x, fields=...)` reads the
integrator a PyTorch module computes (its field sub-modules replaced by probes), proves it, and
verifies it by compiling it back onto the module's own sub-modules; `found.rewire(method)` puts
another integrator on the same sub-modules."""

from .api import extract
from .declare import Declared
from .result import Extracted, Variation

__all__ = ["Declared", "Extracted", "Variation", "extract"]
