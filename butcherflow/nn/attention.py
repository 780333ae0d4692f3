"""Multi-head attention on `scaled_dot_product_attention`, with padding, causal masks and caches."""

from __future__ import annotations

from typing import final

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import DeclarationError
from .context import Context, ProjectionBias


def check_heads(d_model: int, n_heads: int) -> None:
    """Raise a `DeclarationError` (a `ValueError`) unless `n_heads` divides `d_model`."""
    if n_heads < 1 or d_model < 1 or d_model % n_heads != 0:
        divisors = [h for h in range(1, min(d_model, 64) + 1) if d_model % h == 0]
        raise DeclarationError(
            f"d_model={d_model} must be a positive multiple of n_heads={n_heads}",
            key="n_heads",
            value=n_heads,
            valid=f"n_heads must divide d_model, e.g. one of {divisors}" if divisors else None,
        )


def _add(x: Tensor, bias: Tensor | None) -> Tensor:
    return x if bias is None else x + bias


@final
class MultiheadAttention(nn.Module):
    """Multi-head attention; self-attention or cross-attention over an encoder `memory`.

    The q/k/v projections are one fused `(3·d_model, d_model)` matrix, laid out as in
    `torch.nn.MultiheadAttention` (`in_proj`: rows `[W_q; W_k; W_v]`), so weights copy over
    directly and self-attention projects with one matmul. A query whose keys are all masked
    (a fully padded source, say) gets an output of exactly zero instead of NaN.

    **Arguments:**

    - `d_model`: model width; must be a multiple of `n_heads`.
    - `n_heads`: number of heads, each of width `d_model // n_heads`.
    - `dropout`: dropout on the attention weights, in training only.
    - `bias`: whether the projections have biases.
    """

    d_model: int
    n_heads: int
    head_dim: int
    dropout: float

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        check_heads(d_model, n_heads)
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.dropout = dropout
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """`torch.nn.MultiheadAttention`'s initialisation (Xavier projections, zero biases)."""
        nn.init.xavier_uniform_(self.in_proj.weight)
        if self.in_proj.bias is not None:
            nn.init.zeros_(self.in_proj.bias)
            nn.init.zeros_(self.out_proj.bias)

    def forward(
        self,
        query: Tensor,
        key_value: Tensor,
        ctx: Context,
        slot: int,
        *,
        self_attention: bool,
    ) -> Tensor:
        """Attend from `query` to `key_value`.

        **Arguments:**

        - `query`: `(batch, q_len, d_model)`.
        - `key_value`: `(batch, kv_len, d_model)`; `query` itself for self-attention, `memory`
          for cross-attention.
        - `ctx`: masks, cache and projection biases. Self-attention uses `ctx.key_padding_mask`
          and `ctx.causal`; cross-attention uses `ctx.memory_key_padding_mask`.
        - `slot`: which field call this is (selects the self-attention cache).
        - `self_attention`: self- or cross-attention.

        **Returns:** `(batch, q_len, d_model)`.
        """
        batch, q_len, _ = query.shape
        extra = ctx.projection_bias(self, self_attention) or ProjectionBias()
        weight, bias = self.in_proj.weight, self.in_proj.bias
        d = self.d_model
        cache = ctx.cache
        if self_attention and key_value is query:
            q, k, v = F.linear(query, weight, bias).chunk(3, dim=-1)
            k, v = self._heads(_add(k, extra.k)), self._heads(_add(v, extra.v))
        else:
            q = F.linear(query, weight[:d], None if bias is None else bias[:d])

            def project() -> tuple[Tensor, Tensor]:
                kv = F.linear(key_value, weight[d:], None if bias is None else bias[d:])
                k, v = kv.chunk(2, dim=-1)
                return self._heads(_add(k, extra.k)), self._heads(_add(v, extra.v))

            # The memory's keys/values are projected once per decoding run.
            if cache is not None and not self_attention:
                k, v = cache.cross(id(self), project)
            else:
                k, v = project()
        q = self._heads(_add(q, extra.q))
        positions = None
        if self_attention:
            padding, causal = ctx.key_padding_mask, ctx.causal
            if cache is not None:
                compiled = torch.compiler.is_compiling()  # no count to read: see DecodeCache
                if padding is not None and not compiled:
                    _check_covers(padding, cache.length + q_len)
                positions = cache.position(q.device) + torch.arange(q_len, device=q.device)
                k, v = cache.append_self(slot, id(self), k, v)
                if q_len == 1 and not compiled:  # eager: the newest query sees every key given
                    positions, causal = None, False
        else:
            padding, causal = ctx.memory_key_padding_mask, False

        mask, is_causal, row_ok = _mask(q_len, k.shape[2], causal, padding, q.device, positions)
        out = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=is_causal,
        )
        out = self.out_proj(out.transpose(1, 2).reshape(batch, q_len, d))
        if row_ok is not None:
            out = out.masked_fill(~row_ok.view(row_ok.shape[0], -1, 1), 0.0)
        return out

    def _heads(self, x: Tensor) -> Tensor:
        """`(batch, time, d_model)` -> `(batch, heads, time, head_dim)`."""
        return x.view(x.shape[0], x.shape[1], self.n_heads, self.head_dim).transpose(1, 2)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, dropout={self.dropout}"


def _check_covers(padding: Tensor, keys: int) -> None:
    if padding.shape[-1] != keys:
        raise ValueError(
            f"a key padding mask of length {padding.shape[-1]} for {keys} keys (with a "
            "DecodeCache it must cover the cached keys too)"
        )


def _mask(
    q_len: int,
    k_len: int,
    causal: bool,
    padding: Tensor | None,
    device: torch.device,
    positions: Tensor | None = None,
) -> tuple[Tensor | None, bool, Tensor | None]:
    """The SDPA mask (True = attend), the `is_causal` flag, and which query rows see any key.

    Without `positions`, queries and keys both sit at `0, 1, ...` (SDPA's `is_causal`). With a
    `DecodeCache`, `positions` `(q_len,)` holds the queries' positions and key `j` sits at
    position `j` of the cache's time axis: the causal mask `j ≤ position` also hides the slots
    not written yet, and `padding` `(batch, length)` is extended to the whole axis.
    """
    if padding is not None:
        if padding.dtype != torch.bool:
            raise TypeError(f"padding masks must be bool (True = padding), got {padding.dtype}")
        if positions is not None:  # the cache's unwritten tail counts as padding
            padding = F.pad(padding, (0, k_len - padding.shape[-1]), value=True)
        else:
            _check_covers(padding, k_len)
    allowed = None
    if positions is not None:
        allowed = torch.arange(k_len, device=device)[None, :] <= positions[:, None]
    elif causal:
        if padding is None:
            return None, True, None
        key_pos = torch.arange(k_len, device=device)
        allowed = key_pos[None, :] <= torch.arange(q_len, device=device)[:, None]
    if padding is None:
        return allowed, False, None
    keep = ~padding[:, None, None, :]
    allowed = keep if allowed is None else keep & allowed
    row_ok = allowed.any(dim=-1, keepdim=True)
    # A row with no key would give NaN: let it see every key, then zero its output.
    return allowed | ~row_ok, False, row_ok
