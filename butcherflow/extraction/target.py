"""What `butcherflow extract FACTORY` runs: a module with its inputs (and a layer's fields), and
the factory that builds it, named `package.module:callable` or `path/to/file.py:callable`.

A factory is a callable without arguments returning a `Target`: a layer with a call of it, its
fields and where its state keeps its streams, or a whole model with its inputs and no fields
(its blocks and their fields are found). The audit's own targets (`butcherflow.zoo`) are
factories of this kind, so anyone can rerun an entry of the audit page from the command line.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, final

from torch import nn

from ..errors import ExtractionError
from .api import extract
from .model.read import ExtractedModel
from .result import Extracted
from .streams import Streams

FieldPaths = str | tuple[str, ...]
VALID_FACTORY = (
    "a factory 'package.module:callable' of an installed package, or "
    "'path/to/file.py:callable', whose callable takes no arguments and returns a "
    "butcherflow.extraction.Target"
)


@final
@dataclass(frozen=True)
class Target:
    """A module to extract, with everything `bf.extract` needs to run it.

    **Arguments:**

    - `module`: the module (in eval mode; extraction runs on a float64 copy).
    - `args`: the positional arguments of its forward (a layer: the state first).
    - `fields`: a layer's field name -> sub-module path or chain of paths (see
      `bf.extract`); None: the module is read as a whole model (or a layer whose fields are
      discovered).
    - `kwargs`: keyword arguments of its forward (a model's `input_ids`).
    - `streams`: where the state holds its streams: an axis, `("batch", r)` for r streams
      folded into the batch axis, or None (one stream); see `bf.extract`.
    - `frozen`: paths of sub-modules through which per-token coefficients read the state.
    - `title`: one line saying what the module is (its class and configuration).
    """

    module: nn.Module
    args: tuple[Any, ...]
    fields: Mapping[str, FieldPaths] | None = None
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    streams: Streams = None
    frozen: tuple[str, ...] = ()
    title: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.module, nn.Module):
            raise ExtractionError(
                f"a Target's module must be a torch.nn.Module, got {type(self.module).__name__}"
            )
        if not isinstance(self.args, tuple) or not (self.args or self.kwargs):
            raise ExtractionError(
                f"{type(self.module).__name__}: a Target needs a call: args, a tuple (a layer's "
                f"state first), or kwargs (a model's input_ids), got args={self.args!r}"
            )

    def extract(self) -> Extracted | ExtractedModel:
        """`bf.extract` on this module, its call, fields, streams and frozen sub-modules."""
        if self.fields is None:
            return extract(
                self.module, *self.args, streams=self.streams, frozen=self.frozen, **self.kwargs
            )
        return extract(
            self.module,
            *self.args,
            fields=self.fields,
            streams=self.streams,
            frozen=self.frozen,
            **self.kwargs,
        )


def _split(spec: str) -> tuple[str, str]:
    where, colon, name = spec.rpartition(":")
    if not colon or not where or not name.isidentifier():
        raise ExtractionError(
            f"factory '{spec}' is not of the form X:callable; valid: {VALID_FACTORY}"
        )
    return where, name


def _module_of_file(path: Path, spec: str) -> Any:
    if not path.is_file():
        raise ExtractionError(f"factory '{spec}': no file {path}; valid: {VALID_FACTORY}")
    name = f"_butcherflow_factory_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise ExtractionError(
            f"factory '{spec}': {path} is not a Python file; valid: {VALID_FACTORY}"
        )
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[name] = module
    loader_spec.loader.exec_module(module)
    return module


def load_factory(spec: str) -> Callable[[], Any]:
    """The callable named by `spec`.

    **Arguments:**

    - `spec`: `package.module:callable` (an importable module) or `path/to/file.py:callable`.

    **Returns:** the callable; raises `ExtractionError` (one line) for a malformed name, a module
    or file that does not exist, or a name that is not a callable in it.
    """
    where, name = _split(spec)
    if where.endswith(".py") or "/" in where or "\\" in where:
        module = _module_of_file(Path(where), spec)
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as error:
            raise ExtractionError(
                f"factory '{spec}': no module named '{error.name}' is installed; valid: "
                f"{VALID_FACTORY}"
            ) from None
    found = getattr(module, name, None)
    if not callable(found):
        raise ExtractionError(
            f"factory '{spec}': {where} has no callable named '{name}'; valid: {VALID_FACTORY}"
        )
    return found


def build_target(spec: str) -> Target:
    """Call the factory named by `spec` and check that it returned a `Target`."""
    factory = load_factory(spec)
    try:
        inspect.signature(factory, follow_wrapped=False).bind()
    except TypeError as error:
        raise ExtractionError(
            f"factory '{spec}' cannot be called without arguments ({error}); valid: {VALID_FACTORY}"
        ) from None
    except ValueError:  # a builtin without a signature: call it and see
        pass
    made = factory()
    if not isinstance(made, Target):
        raise ExtractionError(
            f"factory '{spec}' returned {type(made).__name__}, not a Target; valid: {VALID_FACTORY}"
        )
    return made
