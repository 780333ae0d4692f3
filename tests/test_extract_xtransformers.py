"""`bf.extract` on x-transformers (the `audit` extra, pinned): what its layers compute.

Every module is built from a small configuration with random weights
(`butcherflow.zoo`). The expected declarations are read from the pinned
source, x_transformers/x_transformers.py of x-transformers 2.31.10:

- a layer is `layers[i] = (norms, block, residual)`; the forward computes
  `x = residual(post_norm(block(pre_norm(x))), x)` with `Residual` adding (L3660-L3717), so a
  stack is one Euler step per branch, in turn: a Lie-Trotter splitting of its branches;
- `macaron=True` puts a feed-forward first and wraps both in `Scale(0.5, ...)` (L3009, L3237);
- `sandwich_norm=True` adds a norm on each branch's output, inside the branch (L3302, L3715);
- `num_residual_streams=4`: `HyperConnection.prepare` (L1419-L1458) reads the branch input with
  `sigmoid` weights, writes it with `2·sigmoid` weights, and mixes the streams with
  `sinkhorn(alpha_residual)` after `rearrange('... (s1 s2) -> ... s1 s2', s2=streams)` (L1436)
  of a tensor whose last axis holds only the r output streams: s1 = 1, so Sinkhorn normalises a
  1×r matrix: the softmax over its axis of length 1 is 1, and so is every later normalisation:
  every entry of the mixing matrix is 1, whatever the iterations and the learned weights;
- `integrate_layers=True`: `DynamicLIMe` (L1549-L1591) feeds a branch a per-token softmax
  mixture of the states before each earlier layer, and the residual adds to the current state.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import sympy
import torch

import butcherflow as bf
from butcherflow.errors import ExtractionError
from butcherflow.extraction import extract

pytest.importorskip("x_transformers")

from butcherflow import zoo as libraries

ROUND_OFF = 1e-13  # the round trip in float64


def steps(method: bf.Method) -> list[tuple[str, Fraction]]:
    assert isinstance(method, bf.Splitting)
    return [(name, Fraction(str(c))) for name, c in method.to_table()["steps"]]


def test_default_stack_is_one_euler_step_per_branch_in_turn() -> None:
    found = libraries.x_transformers_default().extract()
    one = Fraction(1)
    assert steps(found.method) == [("attn1", one), ("ff1", one), ("attn2", one), ("ff2", one)]
    assert found.method.substep.name == "euler"
    assert not found.varies
    assert (found.report.order, found.report.substep_order) == (1, 1)
    assert found.verify() < ROUND_OFF


def test_decoder_with_cross_attention_is_the_same_composition() -> None:
    found = libraries.x_transformers_decoder().extract()
    one = Fraction(1)
    assert steps(found.method) == [("attn1", one), ("cross1", one), ("ff1", one)]
    assert found.verify() < ROUND_OFF


def test_macaron_half_steps_of_two_separate_feed_forwards() -> None:
    found = libraries.x_transformers_macaron().extract()
    half, one = Fraction(1, 2), Fraction(1)
    assert steps(found.method) == [("ff1", half), ("attn1", one), ("ff2", half)]
    # Two feed-forwards with their own weights, each advanced by h/2 once: the splitting of the
    # three fields is inconsistent (Σ ff1 = ½); the paper's Strang-Marchuk order 2 needs one.
    assert found.report.order == 0
    assert bf.check("strang").order == 2
    assert found.verify() < ROUND_OFF


def test_sandwich_norm_is_inside_the_branch() -> None:
    found = libraries.x_transformers_sandwich().extract()
    assert steps(found.method) == [("attn1", Fraction(1)), ("ff1", Fraction(1))]
    assert found.verify() < ROUND_OFF


def test_the_final_norm_is_refused_where_it_breaks_linearity() -> None:
    from x_transformers import Encoder

    encoder = libraries.randomise(Encoder(dim=16, depth=1, heads=2, attn_dim_head=8))
    state = libraries.x_transformers_default(depth=1).args[0]
    with pytest.raises(ExtractionError, match="final_norm"):
        extract(encoder, state, fields=libraries.branches("af"))


@pytest.mark.parametrize(
    "factory", [libraries.x_transformers_streams, libraries.x_transformers_streams_no_sinkhorn]
)
def test_residual_streams_mix_with_the_all_ones_matrix(factory: object) -> None:
    found = factory().extract()  # type: ignore[operator]
    varies = found.varies
    assert found.method.family == "general-linear"
    assert ((sympy.Integer(1),) * 4,) * 4 == found.method.V  # exact ones in the declaration
    assert np.allclose(varies.V, 1.0, rtol=0, atol=1e-12)  # at every token
    assert varies.token  # the sigmoid read and write weights depend on the token
    lo, hi = varies.ranges["U"]
    assert lo > 0 and hi < 1  # sigmoid
    lo, hi = varies.ranges["B"]
    assert lo > 0 and hi < 2  # 2·sigmoid
    assert not varies.holds["V 1 = 1"] and not varies.holds["V power-bounded"]
    assert found.report.preconsistent is False
    assert found.report.zero_stable is False  # V = 11ᵀ has the eigenvalue 4
    assert found.verify() < ROUND_OFF


@pytest.fixture(scope="module")
def lime() -> Any:
    return libraries.x_transformers_integrate_layers().extract()


def test_integrate_layers_is_an_additive_method_with_a_weight_per_token(lime: Any) -> None:
    # The feed-forward reads y + w·F_attn (w a softmax weight per token, in (0, 1)) while the
    # output adds F_attn with weight 1: neither sequential Euler steps nor parallel branches.
    assert isinstance(lime.method, bf.AdditiveRungeKutta)
    assert lime.method.fields == ("attn1", "ff1") and lime.varies.token
    low, high = lime.varies.ranges["A"]
    assert low == 0.0 and 0.0 < high < 1.0  # A = [[0, 0], [w, 0]]
    assert np.allclose(lime.varies.ranges["B"], 1.0, rtol=0, atol=ROUND_OFF)


def test_integrate_layers_round_trip_per_token(lime: Any) -> None:
    assert lime.verify() < ROUND_OFF


def test_a_later_attention_reading_three_mixtures_is_refused() -> None:
    with pytest.raises(ExtractionError, match="field 'attn2' reads 3 stage values at once"):
        libraries.x_transformers_integrate_layers(depth=2).extract()


def test_integrate_layers_has_coloured_order_one_at_every_token(lime: Any) -> None:
    assert lime.varies.holds["Σ b = 1 per field"]
    token = bf.check(lime.at_token(3))
    assert isinstance(token.method, bf.AdditiveRungeKutta) and token.order == 1
    assert set(lime.token_orders) == {1} and len(lime.token_orders) == lime.fit.V.shape[0]
    assert "order at every token: 1 (" in str(lime)


def test_a_layer_rewired_to_strang_with_half_step_feed_forwards() -> None:
    target = libraries.x_transformers_default(depth=1)
    encoder, x = target.module, target.args[0]
    found = target.extract()
    assert torch.allclose(found.rewire(found.method)(x), encoder(x), rtol=0, atol=1e-13)
    strang = bf.Splitting([("ff1", "1/2"), ("attn1", 1), ("ff1", "1/2")], substep="euler")
    rewired = found.rewire(strang)

    def attn(y: torch.Tensor) -> torch.Tensor:  # layers.0 = (norms, Attention, Residual)
        return encoder.layers[0][1](encoder.layers[0][0][0](y))

    def ff(y: torch.Tensor) -> torch.Tensor:
        return encoder.layers[1][1](encoder.layers[1][0][0](y))

    with torch.no_grad():
        y = x + ff(x) / 2
        y = y + attn(y)
        expected = y + ff(y) / 2
        assert torch.allclose(rewired(x), expected, rtol=0, atol=1e-12)
    assert bf.check(strang).order == 2  # Strang on the layer's own feed-forward and attention


def test_a_layer_rewired_to_an_additive_method_as_lime_at_one_half() -> None:
    """The default layer rewired to y + F_attn(y) + F_ff(y + ½F_attn(y)): LIMe's arrangement
    with a fixed weight, on the layer's own sub-modules."""
    target = libraries.x_transformers_default(depth=1)
    encoder, x = target.module, target.args[0]
    lime = bf.AdditiveRungeKutta([[0, 0], ["1/2", 0]], [1, 1], ["attn1", "ff1"], name="lime")
    rewired = target.extract().rewire(lime)
    with torch.no_grad():
        k1 = encoder.layers[0][1](encoder.layers[0][0][0](x))
        expected = x + k1 + encoder.layers[1][1](encoder.layers[1][0][0](x + k1 / 2))
        assert torch.allclose(rewired(x), expected, rtol=0, atol=1e-12)


def test_value_residuals_couple_the_attentions_so_rewire_refuses() -> None:
    # Later attentions read the first attention's values (an argument computed inside the
    # stack): the coefficients are the pre-norm composition, but no new integrator may be put
    # on fields that are not functions of their own stage.
    found = libraries.x_transformers_value_residual().extract()
    one = Fraction(1)
    assert steps(found.method) == [("attn1", one), ("ff1", one), ("attn2", one), ("ff2", one)]
    with pytest.raises(ExtractionError, match="value_residual"):
        found.rewire(found.method)


def test_a_per_channel_residual_scale_is_refused_naming_the_residual() -> None:
    """`scale_residual=True` multiplies the residual by a learned vector: a combination with one
    number per channel, not one per state."""
    from x_transformers import Encoder

    from butcherflow.zoo.common import randomise

    encoder = randomise(
        Encoder(
            dim=16,
            depth=1,
            heads=2,
            attn_dim_head=8,
            pre_norm_has_final_norm=False,
            scale_residual=True,
        )
    )
    x = torch.randn(2, 5, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    with pytest.raises(ExtractionError, match=r"breaks in layers\.0\.2 \(Residual\).*per-channel"):
        bf.extract(encoder, x, fields=libraries.x_transformers.branches("af"))
