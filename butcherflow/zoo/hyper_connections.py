"""lucidrains' hyper-connections as `bf.extract` reads them (`libraries` lists them)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import torch
from torch import Tensor, nn

from ..extraction.target import Target
from .common import BATCH, D_MODEL, FOLDED, LENGTH, STREAMS, _state, randomise


def _branch() -> nn.Module:
    return nn.Sequential(
        nn.LayerNorm(D_MODEL),
        nn.Linear(D_MODEL, 2 * D_MODEL),
        nn.GELU(),
        nn.Linear(2 * D_MODEL, D_MODEL),
    )


def _hyper(module: nn.Module, title: str) -> Target:
    return Target(
        module,
        (_state(BATCH * STREAMS, LENGTH, D_MODEL),),
        {"branch": "branch"},
        streams=FOLDED,
        title=title,
    )


# Static HC with exact weights: stream 0 and 1 read half each, streams 2 and 3 average each
# other; the branch writes 1, ½, ¼ and 2 of its output into the four streams.
STATIC_ALPHA = (
    ("1/2", 1, 0, 0, 0),
    ("1/2", 0, 1, 0, 0),
    (0, 0, 0, "1/2", "1/2"),
    (0, 0, 0, "1/2", "1/2"),
)
STATIC_BETA = (1, "1/2", "1/4", 2)


def _exact(rows: Any) -> Tensor:
    return torch.tensor(
        [[float(Fraction(str(x))) for x in row] for row in rows], dtype=torch.float64
    )


def hyper_connections_static() -> Target:
    """`HyperConnections(4)`, static: the dynamic weights zero (their initial value), the static
    `alpha` and `beta` set to exact values (`STATIC_ALPHA`, `STATIC_BETA`)."""
    from hyper_connections import HyperConnections

    module: Any = HyperConnections(STREAMS, dim=D_MODEL, branch=_branch(), layer_index=0)
    module = randomise(module, skip=("static_", "dynamic_alpha_fn", "dynamic_beta_fn"))
    with torch.no_grad():
        module.static_alpha.copy_(_exact(STATIC_ALPHA))
        module.static_beta.copy_(_exact([STATIC_BETA])[0])
    return _hyper(
        module, "hyper_connections.HyperConnections(4, dim=16), static (dynamic weights 0)"
    )


def hyper_connections_init() -> Target:
    """`HyperConnections(4, layer_index=1)` as initialised: its own static weights."""
    from hyper_connections import HyperConnections

    module = HyperConnections(STREAMS, dim=D_MODEL, branch=_branch(), layer_index=1)
    module = randomise(module, skip=("static_", "dynamic_"))
    return _hyper(
        module, "hyper_connections.HyperConnections(4, dim=16, layer_index=1), initialised"
    )


def hyper_connections_dynamic() -> Target:
    """`HyperConnections(4)`, dynamic: the static weights as initialised (stream 0 read, the
    identity mixing, every stream written with 1), the dynamic weights and scales random."""
    from hyper_connections import HyperConnections

    module = HyperConnections(STREAMS, dim=D_MODEL, branch=_branch(), layer_index=0)
    module = randomise(module, skip=("static_",))
    return _hyper(module, "hyper_connections.HyperConnections(4, dim=16), dynamic (random weights)")


def hyper_connections_mhc() -> Target:
    """`hyper_connections.mHC(4)` (ManifoldConstrainedHyperConnections): every weight random."""
    from hyper_connections import mHC

    module = randomise(mHC(STREAMS, dim=D_MODEL, branch=_branch(), layer_index=0))
    return _hyper(module, "hyper_connections.mHC(4, dim=16, sinkhorn_iters=20), random weights")


def hyper_connections_fractional() -> Target:
    """`HyperConnections(1, num_fracs=2)`: frac-connections (one stream, two fractions of the
    feature axis) as initialised."""
    from hyper_connections import HyperConnections

    module = HyperConnections(1, dim=D_MODEL, branch=_branch(), layer_index=0, num_fracs=2)
    module = randomise(module, skip=("static_", "dynamic_"))
    return Target(
        module,
        (_state(BATCH, LENGTH, D_MODEL),),
        {"branch": "branch"},
        title="hyper_connections.HyperConnections(1, dim=16, num_fracs=2), initialised",
    )


# transformers ----------------------------------------------------------------------------------
