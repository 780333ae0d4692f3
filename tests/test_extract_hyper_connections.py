"""`bf.extract` on lucidrains' hyper-connections (the `audit` extra, pinned): what its
connections compute.

The package keeps the r streams in the batch axis (`'(b s) ... d'`): the targets name them
`streams=("batch", 4)`. The expected declarations are read from the
pinned source, hyper_connections 0.4.11:

- `HyperConnections.width_connection` (hyper_connections.py L263-L372): with
  `alpha = static_alpha + dynamic_alpha_scale·tanh(norm(h) @ dynamic_alpha_fn)` of shape
  (r, 1 + r), the branch reads `Σ_s alpha[s, 0] h_s` and stream t keeps `Σ_s alpha[s, 1+t] h_s`;
  `depth_connection` adds `beta_t · branch(...)` with `beta = static_beta +
  dynamic_beta_scale·tanh(norm(h) @ dynamic_beta_fn)`. As a general linear method with one
  stage: U = alpha[:, 0]ᵀ, V[t, s] = alpha[s, 1 + t], B = beta. It is initialised (L224-L232)
  with alpha[:, 0] the indicator of stream `layer_index % r`, the identity mixing, beta = 1, and
  the dynamic weights zero.
- `ManifoldConstrainedHyperConnections` (mHC) computes the mixing in float32 whatever its
  input (`normed.float()`, `residuals.float()`, L359, L410): extraction reads it at float32's
  precision (1e-6).
- `num_fracs` (frac-connections) splits the feature axis into fractions with their own weights:
  refused, naming the fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy

from butcherflow.errors import ExtractionError
from butcherflow.extraction import extract

pytest.importorskip("hyper_connections")

from butcherflow import zoo as libraries

ROUND_OFF = 1e-13  # the round trip in float64


def exact(rows: object) -> tuple[tuple[sympy.Expr, ...], ...]:
    return tuple(tuple(sympy.Rational(str(Fraction(str(x)))) for x in row) for row in rows)  # type: ignore[attr-defined]


def test_static_hyper_connection_is_the_glm_of_its_weights() -> None:
    found = libraries.hyper_connections_static().extract()
    alpha = exact(libraries.STATIC_ALPHA)
    assert found.method.family == "general-linear"
    assert not found.varies
    assert (tuple(row[0] for row in alpha),) == found.method.U
    assert tuple(tuple(alpha[s][1 + t] for s in range(4)) for t in range(4)) == found.method.V
    assert tuple((b,) for b in exact([libraries.STATIC_BETA])[0]) == found.method.B
    report = found.report
    # V is doubly stochastic and U 1 = 1 (preconsistent, zero-stable), but the branch writes
    # ½, ¼ and 2 of its output into streams 1-3: they step y + βhf, no approximation of y(x + h)
    # unless β = 1 (B 1 = 1 is the consistency condition with every input y(x)).
    assert (report.preconsistent, report.zero_stable, report.consistent) == (True, True, False)
    assert report.order == 0
    assert found.verify() < ROUND_OFF


def test_initialised_hyper_connection_is_euler_on_every_stream() -> None:
    found = libraries.hyper_connections_init().extract()  # layer_index = 1
    one, zero = sympy.Integer(1), sympy.Integer(0)
    assert ((zero, one, zero, zero),) == found.method.U
    assert (
        tuple(tuple(one if s == t else zero for s in range(4)) for t in range(4)) == found.method.V
    )
    assert ((one,),) * 4 == found.method.B
    assert found.report.order == 1 and found.report.zero_stable
    assert found.verify() < ROUND_OFF


def test_dynamic_hyper_connection_varies_within_its_tanh_bound() -> None:
    target = libraries.hyper_connections_dynamic()
    found = target.extract()
    hc = target.module
    scale_a = abs(float(hc.dynamic_alpha_scale.detach()))
    scale_b = abs(float(hc.dynamic_beta_scale.detach()))
    varies = found.varies
    assert varies.token and varies.state
    # static part as initialised (stream 0 read, identity mixing, beta 1) plus scale·tanh(·)
    read = np.zeros(4)
    read[0] = 1.0
    assert np.abs(varies.U[:, 0, :] - read).max() <= scale_a + 1e-12
    assert np.abs(varies.V - np.eye(4)).max() <= scale_a + 1e-12
    assert np.abs(varies.B[:, :, 0] - 1.0).max() <= scale_b + 1e-12
    assert np.abs(varies.V - np.eye(4)).max() > 1e-3  # it does move
    assert found.verify() < ROUND_OFF


def test_mhc_computes_in_float32_and_is_read_to_its_precision() -> None:
    # Its mixing runs in float32 whatever the input: the fit's residual is float32 round-off,
    # so the coefficients are read to 1e-6 and the declaration is numeric at that precision.
    found = libraries.hyper_connections_mhc().extract()
    assert found.precision == 1e-6
    assert found.method.family == "general-linear"
    assert len(found.method.V) == 4
    assert found.method.precision == Fraction(1, 10**6)
    assert any("computes in float32" in note for note in found.notes)
    assert found.varies.token and found.varies.state
    # Sinkhorn (20 iterations, float32): V doubly stochastic at every token within 1e-6
    V = found.varies.V
    assert V.min() >= 0
    assert np.abs(V.sum(axis=1) - 1).max() < 1e-6 and np.abs(V.sum(axis=2) - 1).max() < 1e-6
    assert found.varies.holds["V doubly stochastic"]
    assert found.verify() < found.precision


def test_an_explicit_precision_must_be_a_small_positive_number() -> None:
    target = libraries.hyper_connections_mhc()
    with pytest.raises(ExtractionError, match=r"precision=0\.5"):
        extract(
            target.module, *target.args, fields=target.fields, streams=target.streams, precision=0.5
        )


def test_fractional_connections_mix_feature_fractions() -> None:
    # Each fraction of the feature axis has its own weights (initialised so that the branch
    # reads fraction 0 twice): no combination of whole states with one coefficient each.
    with pytest.raises(ExtractionError, match=r"cut into 2 fractions.*num_fracs=2") as refusal:
        libraries.hyper_connections_fractional().extract()
    assert "reads, fraction by fraction, [1·y[0]; 1·y[0]]" in str(refusal.value)
    assert "inconsistent (the stages do not read y, the field values are not added whole)" in str(
        refusal.value
    )
