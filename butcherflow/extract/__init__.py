"""Stage 4, extract: the compiler's inverse. `bf.extract(module, x, fields=...)` reads the
integrator a PyTorch module computes (its field sub-modules replaced by probes), proves it, and
verifies it by compiling it back onto the module's own sub-modules; `found.rewire(method)` puts
another integrator on the same sub-modules."""

import sys
from types import ModuleType
from typing import Any

from .api import extract
from .declare import Declared
from .result import Extracted, Variation

__all__ = ["Declared", "Extracted", "Variation", "extract"]


class _CallableStage(ModuleType):
    """This subpackage, callable as `extract`: importing `butcherflow.extract` (or a module in
    it) binds the subpackage as the attribute `extract` of `butcherflow`, over the function
    that `bf.extract` names; calling it calls the function, whichever was imported first."""

    def __call__(self, *args: Any, **kwargs: Any) -> Extracted:
        return extract(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableStage
