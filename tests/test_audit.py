"""The page "What the reference code computes": its declarations are what the released code
computes (derived from the code's own coefficients, and run against a transcription of the
code's stage loop), its verdicts are what the analyses prove, and every citation is complete."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import sympy
import torch

import butcherflow as bf
from butcherflow.experiments import EXPERIMENTS
from butcherflow.gallery import build_gallery
from butcherflow.gallery.audit import (
    CODE_DECODER_TWICE,
    CODE_GATED,
    CODE_RK2,
    CODE_RK3,
    CODE_RK3_READING,
    CODE_RK4,
    CONFORMER_SEPARATE,
    CONFORMER_SHARED,
    FLOATER_CODE,
    MACARON_CANCELLED_SHARED,
    MACARON_SEPARATE,
    X_COMMIT,
    Source,
    audit_page,
    entries,
    verdict,
)
from butcherflow.methods import ContinuousDynamics
from butcherflow.methods.general_linear import GeneralLinear
from butcherflow.nn.floater import FloaterPositions

HALF, SIXTH = sympy.Rational(1, 2), sympy.Rational(1, 6)
(g,) = CODE_GATED.symbols  # the declaration's own symbol (with its assumptions)
# The stage inputs and weights the encoder loop uses (ode_transformer.py, e57b2e7 L379-L405),
# in the stored stages K_i = L(Y_i); RK3 reads runge_kutta_list[1], its second stage.
CODE_COEFFICIENTS = {
    "rk2": ([[0, 0], [1, 0]], [HALF, HALF], CODE_RK2),
    "rk2-gated": ([[0, 0], [1, 0]], [g, 1 - g], CODE_GATED),
    "rk3": ([[0, 0, 0], [HALF, 0, 0], [0, 1, 0]], [SIXTH, 4 * SIXTH, SIXTH], CODE_RK3),
    "rk4": (
        [[0, 0, 0, 0], [HALF, 0, 0, 0], [0, HALF, 0, 0], [0, 0, 1, 0]],
        [SIXTH, 2 * SIXTH, 2 * SIXTH, SIXTH],
        CODE_RK4,
    ),
}


def _on_whole_layer(A: list, b: list) -> tuple[sympy.Matrix, ...]:
    """A tableau applied to L = id + F, written in F: (A', U, B, V)."""
    A_, b_ = sympy.Matrix(A), sympy.Matrix([b])
    inverse = (sympy.eye(A_.rows) - A_).inv()
    ones = sympy.ones(A_.rows, 1)
    return inverse * A_, inverse * ones, b_ * inverse, sympy.Matrix([[1]]) + b_ * inverse * ones


@pytest.mark.parametrize("name", sorted(CODE_COEFFICIENTS))
def test_each_code_declaration_is_its_tableau_applied_to_the_whole_layer(name: str) -> None:
    A, b, glm = CODE_COEFFICIENTS[name]
    A_, U, B, V = _on_whole_layer(A, b)
    for declared, derived in ((glm.A, A_), (glm.U, U), (glm.B, B), (glm.V, V)):
        assert (sympy.Matrix(declared) - derived).applyfunc(sympy.simplify) == sympy.zeros(
            *derived.shape
        )


def _code_encoder_block(y: np.ndarray, F, stages: int, gate: float = 0.5) -> np.ndarray:
    """The released encoder loop's arithmetic for one block (our transcription, numpy)."""
    layer = lambda x: x + F(x)  # noqa: E731  (the layer returns x + F(x))
    residual, x, kept = y, y, []
    for step in range(stages):
        x = layer(x)
        kept.append(x)
        if stages == 4:
            x = residual + 0.5 * x if step in (0, 1) else (residual + x if step == 2 else x)
        elif stages == 3 and step == 0:
            x = residual + 0.5 * x
        elif stages == 3 and step == 1:
            x = residual - kept[1] + 2 * x  # kept[1] is the second stage, as in the code
        elif stages == 2:
            x = residual + x
    if stages == 4:
        return residual + (kept[0] + 2 * kept[1] + 2 * kept[2] + kept[3]) / 6
    if stages == 3:
        return residual + (kept[0] + 4 * kept[1] + kept[2]) / 6
    return residual + gate * kept[0] + (1 - gate) * kept[1]


def _run_glm(glm: GeneralLinear, y: np.ndarray, F, values: dict | None = None) -> np.ndarray:
    def num(x: sympy.Expr) -> float:
        return float(x.subs(values or {}))

    derivatives: list[np.ndarray] = []
    for i in range(glm.stages):
        stage = num(glm.U[i][0]) * y + sum(num(glm.A[i][j]) * derivatives[j] for j in range(i))
        derivatives.append(F(stage))
    return num(glm.V[0][0]) * y + sum(num(glm.B[0][j]) * d for j, d in enumerate(derivatives))


@pytest.mark.parametrize(
    ("glm", "stages", "gate"),
    [(CODE_RK2, 2, 0.5), (CODE_GATED, 2, 0.3), (CODE_RK3, 3, 0.5), (CODE_RK4, 4, 0.5)],
)
def test_the_declarations_compute_what_the_code_loop_computes(
    glm: GeneralLinear, stages: int, gate: float
) -> None:
    rng = np.random.default_rng(0)
    W = rng.standard_normal((5, 5)) / 3

    def F(x: np.ndarray) -> np.ndarray:
        return np.tanh(W @ x) + 0.1

    y = rng.standard_normal(5)
    expected = _code_encoder_block(y, F, stages, gate)
    assert _run_glm(glm, y, F, {g: gate}) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_the_code_decoder_twice_is_two_euler_steps() -> None:
    rng = np.random.default_rng(1)
    W = rng.standard_normal((4, 4)) / 2

    def F(x: np.ndarray) -> np.ndarray:
        return np.sin(W @ x)

    y = rng.standard_normal(4)
    twice = (y + F(y)) + F(y + F(y))
    A, b, h = CODE_DECODER_TWICE.A, CODE_DECODER_TWICE.b, 2.0
    k1 = F(y)
    k2 = F(y + h * float(A[1][0]) * k1)
    assert y + h * (float(b[0]) * k1 + float(b[1]) * k2) == pytest.approx(twice, rel=1e-12)


def test_the_verdicts_are_what_the_analyses_prove() -> None:
    assert bf.check("heun").order == 2
    for glm in (CODE_RK2, CODE_GATED, CODE_RK3, CODE_RK4):
        report = bf.check(glm)
        assert not report.preconsistent and report.order == 0
        assert verdict(report) == "not preconsistent: order 0"
    assert bf.check(CODE_RK3_READING).order == 2  # the RK3 branch is second order even in F
    assert bf.check("kutta-3").order == 3  # what the branch was meant to be
    assert bf.check(CODE_DECODER_TWICE).order == 1
    assert bf.check("strang").order == 2
    for splitting in (MACARON_SEPARATE, CONFORMER_SEPARATE, CONFORMER_SHARED):
        assert bf.check(splitting).order == 1


def test_every_citation_names_repository_commit_file_and_lines() -> None:
    cited = [s for e in entries() for s in e.sources]
    assert len(cited) >= 15
    for source in cited:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", source.repo)
        assert re.fullmatch(r"[0-9a-f]{40}", source.commit)
        assert source.path.endswith(".py")
        first, last = source.lines
        assert 0 < first <= last
    with pytest.raises(ValueError, match="needs repo, commit, path and lines"):
        Source("libeineu/ODE-Transformer", "0" * 40, "x.py", (0, 0), "no line")


def test_the_page_shows_every_entry_with_its_proved_verdicts() -> None:
    page = audit_page()
    for entry in entries():
        assert f"## {entry.title}" in page
        for side in (entry.paper, *entry.code):
            if side.method is not None:
                assert f"`{side.method.name}`" in page
            else:
                assert "cannot be declared" in page
    assert "| `heun` | paper, Eq. 12–14" in page and "| order 2 |" in page
    assert "| `ode-transformer-code-rk2` |" in page and "not preconsistent: order 0" in page
    assert 'V = [["5/2"]]' in page  # the declaration itself, as a file would hold it
    assert "L380–L399" in page and page.endswith("\n") and not page.endswith("\n\n")


def test_the_gallery_build_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "gallery"
    build_gallery(out, names=["euler"], recipes=[])
    page = (out / "reference-code.md").read_text(encoding="utf-8")
    assert page.startswith(audit_page())  # the hand-cited entries, then the extracted ones
    assert "## Read by `bf.extract` from the libraries" in page


def _torchdiffeq_rk4_alt(F, t: float, dt: float, y: np.ndarray) -> np.ndarray:
    """torchdiffeq's rk4_alt_step_func (rk_common.py L96-L103), transcribed: the increment."""
    k1 = F(t, y)
    k2 = F(t + dt / 3, y + dt * k1 / 3)
    k3 = F(t + dt * 2 / 3, y + dt * (k2 - k1 / 3))
    k4 = F(t + dt, y + dt * (k1 - k2 + k3))
    return (k1 + 3 * (k2 + k3) + k4) * dt * 0.125


def test_the_floater_code_declaration_solves_what_the_released_solver_loop_solves() -> None:
    # The code: odeint(rk4, step_size = time_dt / 5) over the grid i * time_dt, time_dt = 0.01.
    # A fast rotating field (h's output layer 30·S, S skew) so that the classical RK4 step, or
    # one step per position, misses by 1e-6 or more: only the declared solver matches.
    generator = torch.Generator().manual_seed(1)
    flow = FloaterPositions(FLOATER_CODE, d_model=4, n_values=3, hidden=4).double()
    with torch.no_grad():
        for param in flow.parameters():
            param.copy_(0.3 * torch.randn(param.shape, generator=generator, dtype=param.dtype))
        skew = torch.randn(4, 4, generator=generator, dtype=torch.float64)
        flow.dynamics.outer.weight.copy_(30 * (skew - skew.T))

    def F(t: float, y: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            out = flow.dynamics(torch.tensor(t, dtype=torch.float64), torch.from_numpy(y))
        return out.numpy()

    time_dt, length = 0.01, 7
    y = flow.initial.detach().numpy().copy()
    expected = [y]
    for i in range(length - 1):
        for j in range(5):
            t = i * time_dt + j * time_dt / 5
            y = y + _torchdiffeq_rk4_alt(F, t, time_dt / 5, y)
        expected.append(y)
    with torch.no_grad():
        table = flow(length).numpy()  # (n_values, length, d_model)
    assert table == pytest.approx(np.stack(expected, axis=1), rel=1e-12, abs=1e-12)


def test_the_floater_entry_declares_the_code_solver_and_cites_every_defect() -> None:
    assert isinstance(FLOATER_CODE, ContinuousDynamics)
    assert (FLOATER_CODE.method, FLOATER_CODE.steps, FLOATER_CODE.adjoint) == ("rk-3-8", 5, True)
    assert FLOATER_CODE.delta == sympy.Rational(1, 100) and FLOATER_CODE.time == "concat"
    assert verdict(bf.check(FLOATER_CODE)) == "order 4" == verdict(bf.check("floater"))
    classical = ContinuousDynamics("rk4", grid="positions", delta="1/100", steps=5, adjoint=True)
    assert bf.check(classical).order == 4  # the fork's rk4, if classical: the same verdict
    (entry,) = [e for e in entries() if e.title.startswith("FLOATER")]
    assert entry.paper.method is not None and entry.paper.method.name == "floater"
    assert [side.method is None for side in entry.code] == [False, True, True]
    cited = {(s.path.rsplit("/", 1)[-1], s.lines) for s in entry.sources}
    for where in (
        ("flow_transformer.py", (247, 254)),  # 255, 400, the cache
        ("flow_transformer.py", (323, 335)),  # the stale branch
        ("flow_transformer.py", (654, 654)),  # the cross-attention bias: last row only
        ("flow_transformer_layer.py", (290, 293)),
    ):
        assert where in cited
    page = audit_page()
    assert "| `floater-code` |" in page and "L323–L335" in page
    assert "FLOATER's released flow" not in page  # no longer "not audited"


def test_a_trained_entry_names_the_recipe_that_computes_its_code_declaration() -> None:
    """The RK2 entry trains: its code run's recipe compiles, with layer stages, to the entry's
    code declaration, and its paper run's recipe is the entry's paper declaration."""
    trained = [(e, t) for e in entries() for t in e.trained]
    assert [(e.title, t.code_run) for e, t in trained] == [
        ("ODE Transformer: the RK2 block", "rk2-code")
    ]
    for entry, t in trained:
        recipes = EXPERIMENTS[t.experiment].recipes()
        code, paper = recipes[t.code_run].encoder, recipes[t.paper_run].encoder
        assert code is not None and paper is not None
        assert code.options.get("stage") == "layer" and "stage" not in paper.options
        assert entry.paper.method is bf.catalog[paper.method]
        declared = entry.code[0].method
        assert isinstance(declared, GeneralLinear)
        derived = GeneralLinear.from_layer_stages(bf.catalog[code.method])
        for key in ("A", "U", "B", "V"):
            assert sympy.Matrix(getattr(derived, key)) == sympy.Matrix(getattr(declared, key))
    page = audit_page()
    assert "[`ode-transformer-rk2-code`](models/ode-transformer-rk2-code.md)" in page
    assert "run `rk2-code` of the [translation experiment](../experiments/translation.md)" in page


def test_the_x_transformers_entry_cites_a_pinned_commit_and_proves_each_reading() -> None:
    (entry,) = [e for e in entries() if "x-transformers" in e.title]
    assert {s.commit for s in entry.sources} == {X_COMMIT}
    cited = {s.lines for s in entry.sources}
    assert {(2088, 2089), (2249, 2251), (2565, 2568), (718, 731)} <= cited
    assert [side.method for side in entry.code] == [
        MACARON_SEPARATE,
        MACARON_CANCELLED_SHARED,
        None,
    ]
    assert verdict(bf.check(MACARON_SEPARATE)).startswith("order 1 (exact flows)")
    report = bf.check(MACARON_CANCELLED_SHARED)  # ½ cancelled, one FFN: stepped twice
    assert report.order == 0 and report.substep_order == 0
    # the fact the cancellation rests on: a LayerNorm does not see a scale of its input
    u = torch.randn(3, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    norm = torch.nn.LayerNorm(16, elementwise_affine=False, eps=0.0).double()
    torch.testing.assert_close(norm(0.5 * u), norm(u), rtol=1e-12, atol=1e-12)
    page = audit_page()
    assert "| `macaron-half-cancelled-shared` |" in page and "`b8a9add6bb`" in page
