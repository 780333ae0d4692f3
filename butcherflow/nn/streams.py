"""The stream kernels of general linear stacks: read a stage from r streams, write the next
streams, Sinkhorn-project a mixing matrix. Each has two forms that compute the same numbers:

- **eager**: matrix products (`mm`, `bmm`), the fastest form one kernel at a time;
- **fused**, taken while `torch.compile` traces (`torch.compiler.is_compiling()`): the same
  sums written as broadcast products summed over the stream axis. Inductor unrolls a sum over
  at most `FUSED_STREAMS` entries into pointwise code (its `unroll_reductions_threshold`), so a
  layer's read, its update and the Sinkhorn iterations each become one loop over the tokens,
  fused with their neighbours (the field's LayerNorm, its last addition), on a CPU (C++) and a
  GPU (Triton) alike. A stream count or dtype the fused form does not cover keeps the eager
  form inside the compiled graph, with one warning (`fusable`).

The streams are indexed stream-first, `(r, batch, time, d)`. Under static coefficients they
are stored so (stream k is the contiguous block streams[k]): eager mixing is one (r×r)·(r×N)
matrix product with no copies, and a stage's input is a contiguous block. Per-token
coefficients mix by one batched product over the tokens, whose result is stored token-major
and returned as a transposed view; the next layer reads it through `tokens`, again without a
copy.
"""

from __future__ import annotations

import warnings
from typing import Any, final

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# The most streams the fused form takes: inductor unrolls reductions of at most this many
# entries into pointwise code (torch._inductor.config.unroll_reductions_threshold's default);
# past it each per-token sum would be a reduction kernel of its own, slower than the product.
FUSED_STREAMS = 8
FUSED_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
_WARNED: set[str] = set()


def fusable(streams: Tensor, stages: int) -> bool:
    """Whether the fused form covers these streams `(r, ...)` and `stages` stages; if not, one
    warning per reason (the compiled graph then keeps the matrix products)."""
    r, dtype = streams.shape[0], streams.dtype
    why = None
    if max(r, stages) > FUSED_STREAMS:
        why = f"{r} streams and {stages} stages (the fused form takes at most {FUSED_STREAMS})"
    elif dtype not in FUSED_DTYPES:
        why = f"dtype {dtype} (the fused form takes {', '.join(map(str, FUSED_DTYPES))})"
    if why is not None and why not in _WARNED:
        _WARNED.add(why)
        warnings.warn(
            f"general linear stack under torch.compile: stream mixing left as matrix "
            f"products for {why}",
            stacklevel=2,
        )
    return why is None


def _fused(streams: Tensor, stages: int) -> bool:
    return torch.compiler.is_compiling() and fusable(streams, stages)


def _fused_rows(x: Tensor) -> bool:
    """Whether `normalised_projection` takes its fused form (per row: no stream-count limit)."""
    return torch.compiler.is_compiling() and x.dtype in FUSED_DTYPES


def read_in(x: Tensor, u: Tensor) -> Tensor:
    """(batch, time, d) -> the streams u ⊗ x, (r, batch, time, d)."""
    return u.to(x.dtype).view(-1, 1, 1, 1) * x


def read_out(streams: Tensor, w: Tensor) -> Tensor:
    """(r, batch, time, d) -> Σₖ wₖ yₖ, (batch, time, d)."""
    r = streams.shape[0]
    w = w.to(streams.dtype)
    if _fused(streams, 1):
        return (w.view(r, 1, 1, 1) * streams).sum(0)
    flat = torch.mm(w.view(1, r), streams.reshape(r, -1))
    return flat.view(streams.shape[1:])


def tokens(streams: Tensor) -> Tensor:
    """(r, batch, time, d) -> the strided view (batch·time, r, d)."""
    r, d = streams.shape[0], streams.shape[-1]
    return streams.view(r, -1, d).transpose(0, 1)


def _mix(M: Tensor, streams: Tensor) -> Tensor:
    """Σₖ M[..., i, k] yₖ for every row i, as broadcast products summed over k (the fused
    form): M static `(n, r)` or per token `(batch, time, n, r)`; returns `(n, batch, time, d)`."""
    if M.dim() == 2:
        out: Tensor = _StaticMix.apply(M, streams)
        return out
    weights = M.permute(2, 3, 0, 1).unsqueeze(-1)  # (b, t, n, r) -> (n, r, b, t, 1)
    return (weights * streams.unsqueeze(0)).sum(1)


def normalised_projection(x: Tensor, norm: nn.LayerNorm, weight: Tensor) -> Tensor:
    """`weight · norm(x)` over the last dimension: `(..., d)` -> `(..., k)` for a `(k, d)` weight.

    Fused, the normalisation is moved after the product, as mHC does (Xie et al. 2025):
    W diag(γ) (x − μ) σ⁻¹ + W β, where LayerNorm's mean and variance and the k dot products are
    sums over the same row of x, so inductor reads each row once and stores neither the
    normalised x nor its gradient. x is centred before the products (not μ subtracted after):
    no cancellation when a row's mean is large against its spread. The gradient of the
    weights stays one matrix product over all rows (`_RowProjection`)."""
    if not _fused_rows(x):
        return F.linear(norm(x), weight)
    mean = x.mean(-1, keepdim=True)
    centred = x - mean
    rstd = torch.rsqrt(centred.square().mean(-1, keepdim=True) + norm.eps)
    scaled = weight * norm.weight.to(weight.dtype)  # W diag(γ), (k, d)
    out: Tensor = _RowProjection.apply(scaled, centred)
    return rstd * out + F.linear(norm.bias.to(weight.dtype), weight)


@final
class _RowProjection(torch.autograd.Function):
    """`apply(W, x)`: x Wᵀ over the last dimension as k sums per row (fused with the row's other
    sums); its backward takes W's gradient as one matrix product over all rows, as `_StaticMix`
    does, and x's as k broadcast products summed (pointwise)."""

    @staticmethod
    def forward(ctx: Any, W: Tensor, x: Tensor) -> Tensor:
        ctx.save_for_backward(W, x)
        return (x.unsqueeze(-2) * W).sum(-1)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        W, x = ctx.saved_tensors
        grad_W = grad_x = None
        if ctx.needs_input_grad[0]:
            k, d = W.shape
            grad_W = torch.mm(grad.reshape(-1, k).t(), x.reshape(-1, d))
        if ctx.needs_input_grad[1]:
            grad_x = (grad.unsqueeze(-1) * W).sum(-2)
        return grad_W, grad_x


def _broadcast_sum(M: Tensor, streams: Tensor) -> Tensor:
    return (M.view(*M.shape, 1, 1, 1) * streams.unsqueeze(0)).sum(1)


@final
class _StaticMix(torch.autograd.Function):
    """`apply(M, streams)`: Σₖ M[i, k] yₖ for a static `(n, r)` M, as a broadcast sum (fused
    with its neighbours), whose backward takes M's gradient (learned coefficients) as one
    matrix product over all tokens: written as sums, each of M's n·r entries would be a
    reduction of its own, reading two stream-sized tensors each."""

    @staticmethod
    def forward(ctx: Any, M: Tensor, streams: Tensor) -> Tensor:
        ctx.save_for_backward(M, streams)
        return _broadcast_sum(M, streams)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, Tensor | None]:
        M, streams = ctx.saved_tensors
        n, r = M.shape
        grad_M = grad_streams = None
        if ctx.needs_input_grad[0]:
            grad_M = torch.mm(grad.reshape(n, -1), streams.reshape(r, -1).t())
        if ctx.needs_input_grad[1]:
            grad_streams = _broadcast_sum(M.t(), grad)
        return grad_M, grad_streams


def read_stages(U: Tensor, streams: Tensor) -> Tensor:
    """Σₖ U[i, k] yₖ for every stage i at once.

    **Arguments:**

    - `U`: a static `(s, r)` matrix, or one per token, `(batch, time, s, r)`.
    - `streams`: the r input streams y, `(r, batch, time, d)`.

    **Returns:** the s stage inputs, `(s, batch, time, d)`.
    """
    r, shape = streams.shape[0], streams.shape[1:]
    if _fused(streams, U.shape[-2]):
        return _mix(U, streams)
    if U.dim() == 2:
        return torch.mm(U, streams.reshape(r, -1)).view(-1, *shape)
    Y = torch.bmm(U.reshape(-1, U.shape[-2], r), tokens(streams))  # (tokens, s, d)
    return Y.transpose(0, 1).view(-1, *shape)


def advance(V: Tensor, streams: Tensor, B: Tensor, *stages: Tensor) -> Tensor:
    """V y + B F(Y): the next streams. Eagerly, each B[:, i] Fᵢ is added in place into the
    fresh V y: one new stream-sized tensor per layer (on a CPU, fresh large tensors cost page
    faults, more than the arithmetic here); fused, the whole sum is one loop.

    **Arguments:**

    - `V`: a static `(r, r)` matrix, or one per token, `(batch, time, r, r)`.
    - `streams`: the r streams y, `(r, batch, time, d)`.
    - `B`: a static `(r, s)` matrix, or one per token, `(batch, time, r, s)` (static or per-token
      together with `V`).
    - `stages`: the s stage values Fᵢ, each `(batch, time, d)`.

    **Returns:** the next streams, `(r, batch, time, d)`.
    """
    r, shape, d = streams.shape[0], streams.shape[1:], streams.shape[-1]
    if _fused(streams, len(stages)):
        out = _mix(V, streams)
        B = B.to(out.dtype)  # under autocast, the field values' dtype may differ
        return out + _mix(B, torch.stack(stages).to(out.dtype))
    if V.dim() == 2:
        flat = torch.mm(V, streams.reshape(r, -1))
        B = B.to(flat.dtype)  # under autocast, mm's dtype (in-place products do not autocast)
        for i, F in enumerate(stages):
            flat.addmm_(B[:, i : i + 1], F.reshape(1, -1).to(flat.dtype))
        return flat.view(r, *shape)
    mixed = torch.bmm(V.reshape(-1, r, r), tokens(streams))  # (tokens, r, d)
    B = B.reshape(-1, r, len(stages)).to(mixed.dtype)
    for i, F in enumerate(stages):
        mixed.baddbmm_(B[..., i : i + 1], F.reshape(-1, 1, d).to(mixed.dtype))
    return mixed.transpose(0, 1).view(r, *shape)


def sinkhorn(logits: Tensor, iterations: int) -> Tensor:
    """Sinkhorn-Knopp on exp(logits) over the last two dimensions: alternately normalise columns
    and rows, `iterations` times; rows sum to 1 to rounding, columns up to convergence.

    The first iteration runs in log space, so that logits of any spread are safe; after it every
    row and column keeps a sum of at least 1/r² (each column had an entry ≥ 1/r, and each row
    sum is ≤ r), so the other iterations normalise exp(logits) directly: the same result to
    rounding, in two kernels per normalisation instead of logsumexp's many. The gradient is
    `Sinkhorn`'s: it stores the logits only and recomputes the iterations."""
    out: Tensor = Sinkhorn.apply(logits, iterations)
    return out


def _iterate(logits: Tensor, iterations: int, keep: list[Tensor] | None) -> Tensor:
    """The forward of `sinkhorn` on logits laid out `(r, r, tokens)` (rows, columns, then the
    tokens, so that the sums over rows and columns are sums of whole token vectors: full SIMD
    lanes in a fused loop); with `keep`, append what the backward needs: the first iteration's
    P, then (Q, total) of every later normalisation."""
    P = torch.softmax(torch.log_softmax(logits, dim=0), dim=1)
    if keep is not None:
        keep.append(P)
    for _ in range(iterations - 1):
        for dim in (0, 1):
            total = P.sum(dim, keepdim=True)
            P = P / total
            if keep is not None:
                keep += [P, total]
    return P


def _token_last(matrices: Tensor) -> Tensor:
    """(..., r, r) -> (r, r, tokens)."""
    r = matrices.shape[-1]
    return matrices.reshape(-1, r, r).permute(1, 2, 0)


def _token_first(planes: Tensor, shape: torch.Size) -> Tensor:
    """(r, r, tokens) -> (..., r, r) of `shape`."""
    return planes.permute(2, 0, 1).reshape(shape)


@final
class Sinkhorn(torch.autograd.Function):
    """`apply(logits, iterations)`: `sinkhorn`, whose backward stores only the logits (r×r per
    token) and recomputes the iterations, instead of keeping 2 tensors per normalisation from
    the forward to the backward. The gradient of the unrolled iteration is written out (for
    Q = P / Σ P, dP = (dQ − Σ dQ·Q) / Σ P, sums over the normalised dimension; then softmax's
    and log-softmax's), so that the backward is a few pointwise loops and no autograd graph of
    a hundred small nodes, and it is traced by torch.compile like the forward."""

    @staticmethod
    def forward(ctx: Any, logits: Tensor, iterations: int) -> Tensor:
        ctx.iterations = iterations
        ctx.save_for_backward(logits)
        return _token_first(_iterate(_token_last(logits), iterations, None), logits.shape)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        (logits,) = ctx.saved_tensors
        L = _token_last(logits)
        kept: list[Tensor] = []
        _iterate(L, ctx.iterations, kept)
        grad = _token_last(grad)
        for k in reversed(range((len(kept) - 1) // 2)):
            Q, total = kept[1 + 2 * k], kept[2 + 2 * k]
            grad = (grad - (grad * Q).sum(k % 2, keepdim=True)) / total
        P = kept[0]  # softmax over each row of the column-normalised logits C
        grad = P * (grad - (grad * P).sum(1, keepdim=True))  # d/dC
        columns = torch.softmax(L, dim=0)  # log_softmax's: dL = dC − softmax(L) Σ dC
        return _token_first(grad - columns * grad.sum(0, keepdim=True), logits.shape), None
