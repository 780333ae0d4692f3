"""Where a state holds its r streams: an axis (`streams=2` for `(batch, time, r, d)`, as
DeepSeek-V4 and x-transformers), or folded into the batch axis (`streams=("batch", r)` for
`(batch·r, time, d)`, stream index fastest, as lucidrains' hyper-connections `(b s)`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..errors import ExtractionError

Streams = int | tuple[str, int] | None


def check_streams(state: Tensor, streams: Any, who: str) -> Streams:
    """`streams` validated against the state's shape."""
    if streams is None:
        return None
    if isinstance(streams, int) and not isinstance(streams, bool):
        if -state.dim() <= streams < state.dim() and streams % state.dim() < state.dim() - 1:
            return streams  # as given (a negative axis fits states of any rank); never the last
    elif (
        isinstance(streams, tuple)
        and len(streams) == 2
        and streams[0] == "batch"
        and isinstance(streams[1], int)
        and streams[1] >= 1
        and state.shape[0] % streams[1] == 0
    ):
        return ("batch", streams[1])
    raise ExtractionError(
        f"{who}: streams={streams!r} does not fit the state of shape {tuple(state.shape)}; "
        "valid: an axis other than the last (the channels), or ('batch', r) with r dividing "
        "the batch size"
    )


def tokens(x: Tensor, streams: Streams) -> Tensor:
    """A state or output as `(T, r, d)` (r = 1 without streams)."""
    if streams is None:
        x = x.unsqueeze(-2)
    elif isinstance(streams, tuple):
        r = streams[1]
        x = x.reshape(x.shape[0] // r, r, *x.shape[1:]).movedim(1, -2)
    else:
        x = x.movedim(streams, -2)
    return x.reshape(-1, x.shape[-2], x.shape[-1])


def untokens(out: Tensor, like: Tensor, streams: Streams) -> Tensor:
    """`(T, r, d)` back to the layout of `like` (the state)."""
    if streams is None:
        return out.reshape(like.shape)
    if isinstance(streams, tuple):
        r = streams[1]
        moved = (like.shape[0] // r, *like.shape[1:-1], r, like.shape[-1])
        return out.reshape(moved).movedim(-2, 1).reshape(like.shape)
    moved_shape = like.movedim(streams, -2).shape
    return out.reshape(moved_shape).movedim(-2, streams)


def stream_count(state: Tensor, streams: Streams) -> int:
    return int(tokens(state, streams).shape[1])


def stage_shape(state: Tensor, streams: Streams) -> torch.Size:
    """The shape of one stream of the state (what a branch reads)."""
    x = tokens(state, streams)
    lead = state.shape[:-1] if streams is None else _lead(state, streams)
    return torch.Size((*lead, x.shape[-1]))


def _lead(state: Tensor, streams: int | tuple[str, int]) -> tuple[int, ...]:
    if isinstance(streams, tuple):
        return (state.shape[0] // streams[1], *state.shape[1:-1])
    return tuple(state.movedim(streams, -2).shape[:-2])
