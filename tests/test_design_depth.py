"""bf.design.depth_method: depth methods over r streams with a doubly stochastic V.

The order is proved by bf.check on the declaration (an Adams method in other streams: AB2 in
the streams y and y − h f(x − h) has V = [[1/2, 1/2], [1/2, 1/2]]); zero-stability holds for the
whole Birkhoff parametrisation (checked symbolically), and the compiled layer
(coefficients="birkhoff") starts at the declaration and keeps V doubly stochastic in training.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import butcherflow as bf
from butcherflow.design import depth_method, family_theorem
from butcherflow.nn.birkhoff import birkhoff_weights


@pytest.fixture(scope="module")
def ab2() -> bf.design.DepthMethod:
    return depth_method(2, 2)


@pytest.fixture(scope="module")
def four() -> bf.design.DepthMethod:
    return depth_method(4, 2)


def test_two_streams_give_adams_bashforth_2_with_the_uniform_mixing(ab2):
    assert [[str(x) for x in row] for row in ab2.method.V] == [["1/2", "1/2"], ["1/2", "1/2"]]
    assert ab2.method.start_text() == ["y(x)", "-1*h*f(x - 1*h) + y(x)"]
    assert ab2.report.order == 2


@pytest.mark.parametrize("r,p", [(3, 3), (4, 2)])
def test_every_designed_depth_method_is_reproved_and_zero_stable(r, p, four):
    found = four if (r, p) == (4, 2) else depth_method(r, p)
    report = bf.check(found.method)
    assert report.order == p
    assert "doubly stochastic" in str(report)
    assert found.margin > 0


def test_the_family_theorem_is_checked_symbolically():
    assert "‖Vⁿ‖∞ = 1" in family_theorem(3)


def test_birkhoff_weights_rebuild_the_designed_mixing(four):
    V = np.array([[float(x) for x in row] for row in four.method.V])
    w = birkhoff_weights(V)
    assert w.min() > 0
    perms = bf.nn.birkhoff.Birkhoff(4).perms.numpy()
    assert np.abs(np.einsum("k,kij->ij", w, perms) - V).max() < 1e-12


def test_the_birkhoff_layer_starts_at_the_declaration_and_stays_doubly_stochastic(four):
    torch.manual_seed(0)
    sizes = dict(fields=["san+ffn"] * 2, d_model=16, n_heads=2, d_ffn=32)
    exact = bf.compile_stack(four.method, coefficients="exact", **sizes)
    trained = bf.compile_stack(four.method, coefficients="birkhoff", **sizes)
    trained.load_state_dict(exact.state_dict(), strict=False)  # the same fields
    x = torch.randn(2, 5, 16)
    exact.eval(), trained.eval()
    assert (exact(x) - trained(x)).abs().max() < 1e-6
    before = trained.stream_matrices()
    optimiser = torch.optim.Adam(trained.parameters(), lr=0.1)
    for _ in range(5):
        optimiser.zero_grad()
        trained(x).pow(2).mean().backward()
        optimiser.step()
    after = trained.stream_matrices()
    for V in after:
        assert np.abs(V.sum(axis=0) - 1).max() < 1e-12 and np.abs(V.sum(axis=1) - 1).max() < 1e-12
        assert V.min() >= 0
        assert np.abs(np.linalg.matrix_power(V, 64)).sum(axis=1).max() <= 1 + 1e-9
    assert max(np.abs(V - V0).max() for V, V0 in zip(after, before, strict=True)) > 1e-4


def test_birkhoff_refuses_a_mixing_that_is_not_doubly_stochastic():
    method = bf.GeneralLinear(A=[[0]], U=[[1, 0]], B=[[1], [0]], V=[[1, 0], [1, 0]])
    with pytest.raises(bf.DeclarationError, match="doubly stochastic"):
        bf.compile_stack(method, coefficients="birkhoff", fields=["ffn"], d_model=8, d_ffn=16)


@pytest.mark.parametrize(
    "call,fragment",
    [
        (lambda: depth_method(3, 4), "order 3 at most"),
        (lambda: depth_method(7, 2), "at most 6 streams"),
        (lambda: depth_method(0, 1), "streams must be"),
        (lambda: depth_method(2, 2, starts=0), "starts must be"),
    ],
)
def test_bad_input_is_one_clear_line(call, fragment):
    with pytest.raises(bf.DesignError) as info:
        call()
    assert fragment in str(info.value)
