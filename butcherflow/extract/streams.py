"""Streams folded into the batch axis, as lucidrains' `hyper-connections` keeps them.

That package holds the r streams of a hyper-connection state in the batch axis: a state
`(b·r, ..., d)` whose row `b·r + i` is stream i of example b (einops `'(b s) ... d'`), and every
`HyperConnections` layer unfolds it, mixes the streams and folds them back. `bf.extract` reads
streams on an axis of the state; `Unfolded` is the module with the streams on axis 1,
`(b, r, ..., d)`, folding them into the batch for the module it wraps and unfolding its output,
so a folded module is extracted (and verified, and rewired) as one whose streams sit on an axis.
"""

from __future__ import annotations

from typing import Any, final

from torch import Tensor, nn

from ..errors import ExtractionError

STREAM_AXIS = 1  # where `Unfolded` keeps the streams: (batch, streams, ..., d)
INNER = "folded"  # the attribute holding the wrapped module: field paths start with it


def fold(x: Tensor, streams: int) -> Tensor:
    """`(b, r, ...)` -> `(b·r, ...)`, stream i of example b at row b·r + i."""
    return x.reshape(x.shape[0] * streams, *x.shape[2:])


def unfold(x: Tensor, streams: int, who: str) -> Tensor:
    """`(b·r, ...)` -> `(b, r, ...)`; raises `ExtractionError` when r does not divide the batch."""
    if x.dim() < 2 or x.shape[0] % streams:
        raise ExtractionError(
            f"{who}: a state folded with {streams} streams needs a batch axis divisible by "
            f"{streams}; got shape {tuple(x.shape)} (valid: (batch·{streams}, ..., d))"
        )
    return x.reshape(x.shape[0] // streams, streams, *x.shape[1:])


@final
class Unfolded(nn.Module):
    """A module whose state holds r streams folded into its batch, run on a state whose streams
    sit on axis 1.

    **Arguments:**

    - `module`: the folded module (say, `hyper_connections.HyperConnections` with its branch);
      it becomes the sub-module `folded`, so its field paths read `folded.<path>`.
    - `streams`: r, the number of streams folded into the batch.

    The forward takes the state `(b, r, ..., d)` (and whatever else the module takes, passed on
    unchanged) and returns the module's output unfolded the same way.
    """

    def __init__(self, module: nn.Module, streams: int) -> None:
        super().__init__()
        if not isinstance(streams, int) or isinstance(streams, bool) or streams < 1:
            raise ExtractionError(
                f"{type(module).__name__}: streams folded into the batch must be a positive "
                f"integer, got {streams!r}"
            )
        self.folded = module
        self.streams = streams
        self.train(module.training)  # an eval-mode module stays one when wrapped

    def forward(self, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        out = self.folded(fold(x, self.streams), *args, **kwargs)
        if not isinstance(out, Tensor):
            raise ExtractionError(
                f"{type(self.folded).__name__} returns {type(out).__name__}; a module with "
                "folded streams must return the folded state as one tensor"
            )
        return unfold(out, self.streams, type(self.folded).__name__)


def inner_path(path: str) -> str:
    """A field path of the folded module as a path of its `Unfolded` wrapper."""
    return f"{INNER}.{path}"
