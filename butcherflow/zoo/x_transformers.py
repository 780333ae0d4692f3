"""x-transformers layers as `bf.extract` reads them (`libraries` lists them)."""

from __future__ import annotations

from typing import Any, final

import torch
from torch import Tensor, nn

from ..extraction.target import Target
from .common import (
    BATCH,
    D_MODEL,
    DIM_HEAD,
    FOLDED,
    HEADS,
    LENGTH,
    SEED,
    STREAMS,
    _state,
    randomise,
)


def _encoder(dim: int = D_MODEL, **config: Any) -> nn.Module:
    from x_transformers import Encoder

    # The stack ends in a LayerNorm (`final_norm`) unless told not to: the read-out, after the
    # integrator, not a step of it (with it the output is no linear combination of anything).
    encoder = Encoder(
        dim=dim, heads=HEADS, attn_dim_head=DIM_HEAD, pre_norm_has_final_norm=False, **config
    )
    return randomise(encoder)


def branches(types: str, inner: str = "", post: bool = False) -> dict[str, tuple[str, ...]]:
    """Field chains of an x-transformers stack: layer i is `layers.i = (norms, block, residual)`;
    a branch reads through the pre-norm `norms.0` and (sandwich) ends in the post-norm `norms.1`."""
    fields, seen = {}, dict.fromkeys(types, 0)
    for i, kind in enumerate(types):
        seen[kind] += 1
        name = {"a": "attn", "f": "ff", "c": "cross"}[kind] + str(seen[kind])
        chain = (f"layers.{i}.0.0", f"layers.{i}.1{inner if kind == 'f' else ''}")
        fields[name] = chain + ((f"layers.{i}.0.1",) if post else ())
    return fields


def x_transformers_default(depth: int = 2, dim: int = D_MODEL, length: int = LENGTH) -> Target:
    """`x_transformers.Encoder(depth=depth)`: attention, feed-forward, ..., one pair a layer."""
    return Target(
        _encoder(dim, depth=depth),
        (_state(BATCH, length, dim),),
        branches("af" * depth),
        title=(
            f"x_transformers.Encoder(dim={dim}, depth={depth}, heads={HEADS}, "
            "pre_norm_has_final_norm=False)"
        ),
    )


def x_transformers_decoder() -> Target:
    """`x_transformers.Decoder(depth=1, cross_attend=True)`: the causal stack with cross-attention
    over a context (passed as `context=`): self-attention, cross-attention, feed-forward."""
    from x_transformers import Decoder

    decoder = Decoder(
        dim=D_MODEL,
        depth=1,
        heads=HEADS,
        attn_dim_head=DIM_HEAD,
        cross_attend=True,
        pre_norm_has_final_norm=False,
    )
    context = torch.randn(BATCH, 3, D_MODEL, generator=torch.Generator().manual_seed(SEED + 2))
    return Target(
        randomise(decoder),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("acf"),
        kwargs={"context": context.to(torch.float64)},
        title=(
            "x_transformers.Decoder(dim=16, depth=1, heads=2, cross_attend=True, "
            "pre_norm_has_final_norm=False)"
        ),
    )


def x_transformers_macaron() -> Target:
    """`macaron=True`: FFN, attention, FFN; each FFN wrapped in `Scale(0.5, ...)`, the field is
    the FFN inside it (`layers.i.1.fn`), so the ½ is a coefficient of the step."""
    return Target(
        _encoder(depth=1, macaron=True),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("faf", inner=".fn"),
        title="x_transformers.Encoder(dim=16, depth=1, macaron=True)",
    )


def x_transformers_sandwich() -> Target:
    """`sandwich_norm=True`: each branch ends in its own LayerNorm (`norms.1`), inside the field."""
    return Target(
        _encoder(depth=1, sandwich_norm=True),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("af", post=True),
        title="x_transformers.Encoder(dim=16, depth=1, sandwich_norm=True)",
    )


def x_transformers_integrate_layers(depth: int = 1) -> Target:
    """`integrate_layers=True` (LIMe): every branch but the first attention reads a per-token
    softmax mixture of the states before each earlier layer (the later attentions one mixture
    per query, key and value). The mixtures' weights read the state through
    `layer_integrators.i.to_weights`, frozen so that they stay those of the module's input."""
    return Target(
        _encoder(depth=depth, integrate_layers=True),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("af" * depth),
        frozen=tuple(f"layer_integrators.{i}.to_weights" for i in range(1, 2 * depth)),
        title=f"x_transformers.Encoder(dim=16, depth={depth}, integrate_layers=True)",
    )


def x_transformers_value_residual() -> Target:
    """`add_value_residual=True` (ResFormer): later attentions mix the first attention's values
    into their own, an argument computed inside the stack."""
    return Target(
        _encoder(depth=2, add_value_residual=True),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("afaf"),
        title="x_transformers.Encoder(dim=16, depth=2, add_value_residual=True)",
    )


@final
class XLayer(nn.Module):
    """One layer of an x-transformers `AttentionLayers`, called the way its forward calls it
    (x_transformers.py L3660, L3705-L3717): `residual.prepare`, the pre-norm, the branch, and
    the residual module; the state is the r streams folded into the batch.

    x-transformers keeps the streams inside the stack (expanded from, and summed back into, one
    state), so the streams of one layer are only visible this way.
    """

    norms: Any
    residual: Any

    def __init__(self, layer: nn.ModuleList) -> None:
        super().__init__()
        self.norms, self.block, self.residual = layer
        self.train(layer.training)

    def forward(self, x: Tensor) -> Tensor:
        x, inner, kwargs = self.residual.prepare(x)
        out = self.block(self.norms[0](x))
        out = out[0] if isinstance(out, tuple) else out
        result: Tensor = self.residual(out, inner, **kwargs)
        return result


def _x_streams(iterations: int, dim: int = D_MODEL, length: int = LENGTH) -> Target:
    encoder: Any = _encoder(
        dim, depth=1, num_residual_streams=STREAMS, hyper_conn_sinkhorn_iters=iterations
    )
    return Target(
        XLayer(encoder.layers[0]),
        (_state(BATCH * STREAMS, length, dim),),
        {"attn": ("norms.0", "block")},
        streams=FOLDED,
        title=(
            f"x_transformers.Encoder(dim={dim}, depth=1, num_residual_streams=4, "
            f"hyper_conn_sinkhorn_iters={iterations}): its first layer (HyperConnection)"
        ),
    )


def x_transformers_streams(dim: int = D_MODEL, length: int = LENGTH) -> Target:
    """`num_residual_streams=4` with its default 5 Sinkhorn iterations: one layer."""
    return _x_streams(5, dim, length)


def x_transformers_streams_no_sinkhorn() -> Target:
    """`num_residual_streams=4, hyper_conn_sinkhorn_iters=0`: one layer."""
    return _x_streams(0)
