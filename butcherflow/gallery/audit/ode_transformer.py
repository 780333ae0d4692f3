"""The ODE Transformer's released code (libeineu/ODE-Transformer), declared and cited.

The code stores each stage as the whole layer L(y) = y + F(y); a tableau (A, b) applied to L is,
in F, the general linear method U = (I − A)⁻¹1, A' = (I − A)⁻¹A, B = bᵀ(I − A)⁻¹,
V = 1 + bᵀ(I − A)⁻¹1 (`GeneralLinear.from_layer_stages`; the tests derive each declaration
below from the code's own coefficients this way).
"""

from __future__ import annotations

from ...methods import ButcherTableau, GeneralLinear, catalog
from .records import AuditEntry, Side, Source, Trained

ODE_REPO = "libeineu/ODE-Transformer"
ODE_FILE = "fairseq/models/ode_transformer.py"
ODE_GATED = "e57b2e732ab8e82a4d3ba4aefcbbb217ec3fdb1f"  # gate always on; RK3/RK4 build
ODE_TYPED = "00003f868be6ae742f067adee045b33b0171562b"  # rk_type branches; only RK2 builds


def _glm(name: str, A: list, U: list, B: list, V: list, title: str) -> GeneralLinear:
    return GeneralLinear(A, U, B, V, name=name, title=title, reference=ODE_REPO)


# What the ODE Transformer's encoder loop computes, in the paper's F (derivation: module doc).
CODE_RK2 = _glm(
    "ode-transformer-code-rk2",
    [[0, 0], [1, 0]],
    [[1], [2]],
    [[1, "1/2"]],
    [["5/2"]],
    "ODE Transformer code, RK2: y + ½(L(y) + L(y + L(y)))",
)
CODE_GATED = _glm(
    "ode-transformer-code-rk2-gated",
    [[0, 0], [1, 0]],
    [[1], [2]],
    [[1, "1 - g"]],
    [["3 - g"]],
    "ODE Transformer code, gated RK2: y + g L(y) + (1 − g) L(y + L(y))",
)
CODE_RK3_READING = ButcherTableau(
    [[0, 0, 0], ["1/2", 0, 0], [0, 1, 0]],
    ["1/6", "2/3", "1/6"],
    name="ode-transformer-code-rk3-tableau",
    title="ODE Transformer code, RK3 branch read as a tableau in F",
    reference=ODE_REPO,
)
CODE_RK3 = _glm(
    "ode-transformer-code-rk3",
    [[0, 0, 0], ["1/2", 0, 0], ["1/2", 1, 0]],
    [[1], ["3/2"], ["5/2"]],
    [["7/12", "5/6", "1/6"]],
    [["31/12"]],
    "ODE Transformer code, RK3 branch as computed (stages store L)",
)
CODE_RK4 = _glm(
    "ode-transformer-code-rk4",
    [[0, 0, 0, 0], ["1/2", 0, 0, 0], ["1/4", "1/2", 0, 0], ["1/4", "1/2", 1, 0]],
    [[1], ["3/2"], ["7/4"], ["11/4"]],
    [["11/24", "7/12", "1/2", "1/6"]],
    [["65/24"]],
    "ODE Transformer code, RK4 as computed (stages store L)",
)
# dec_calculate_num = 2: the same decoder layer applied twice, L(L(y)): two Euler steps of F,
# i.e. this tableau at step size 2.
CODE_DECODER_TWICE = ButcherTableau(
    [[0, 0], ["1/2", 0]],
    ["1/2", "1/2"],
    name="ode-transformer-code-decoder-2",
    title="ODE Transformer code, decoder with dec_calculate_num = 2 (at step size 2)",
    reference=ODE_REPO,
)


def _ode(commit: str, lines: tuple[int, int], what: str) -> Source:
    return Source(ODE_REPO, commit, ODE_FILE, lines, what)


def ode_entries() -> tuple[AuditEntry, ...]:
    """The ODE Transformer's blocks, in the order the page shows them."""
    return (_rk2(), _shared_gate(), _rk3(), _rk4(), _decoder(), _layer_history())


def _rk2() -> AuditEntry:
    layer = _ode(
        ODE_TYPED,
        (722, 747),
        "the encoder layer returns y + SAN + FFN with both residuals: L(y) = y + F(y)",
    )
    return AuditEntry(
        "ODE Transformer: the RK2 block",
        Side("paper, Eq. 12–14: y + ½(F₁ + F(y + F₁))", catalog["heun"]),
        (
            Side("code: y + ½(L₁ + L(y + L₁)) = 5/2 y + F₁ + ½F(2y + F₁)", CODE_RK2),
            Side(
                "code read as Heun for another ODE, y' = L(y) = y + F(y)",
                catalog["heun"],
                "second order, but for a field with an extra identity term: the state "
                "grows like eᵗ even where F = 0",
            ),
        ),
        (
            _ode(ODE_TYPED, (380, 399), "each stage stores the layer's output L, not F"),
            _ode(ODE_TYPED, (414, 416), "rk_type standard: y + ½(L₁ + L₂)"),
            layer,
            _ode(ODE_GATED, (406, 407), "the other commit: standard RK2 commented out"),
        ),
        (
            "The stage loop feeds y + L₁ = 2y + F₁ to the second stage and adds y to "
            "½(L₁ + L₂), so the block's state coefficient is 5/2: no step size makes it a "
            "method for y' = F(y) (not preconsistent).",
        ),
        (Trained("translation", "rk2-code", "rk2"),),
    )


def _shared_gate() -> AuditEntry:
    return AuditEntry(
        "ODE Transformer: the gate shared by all blocks",
        Side(
            "paper, Eq. 25–26: y + g F₁ + (1 − g) F₂, g = σ([F₁, F₂]W + b)",
            catalog["rk2-gated"],
        ),
        (Side("code: y + g L₁ + (1 − g) L₂ = (3 − g) y + F₁ + (1 − g) F₂", CODE_GATED),),
        (
            _ode(ODE_GATED, (326, 327), "one Linear(2d → 1) built once for the whole encoder"),
            _ode(ODE_GATED, (402, 405), "every layer's block calls that one gate on [L₁; L₂]"),
            _ode(ODE_TYPED, (327, 329), "one gate, built for rk_type learnable"),
            _ode(ODE_TYPED, (411, 413), "its use"),
        ),
        (
            "The gate's weights are shared by every block of the encoder; sharing parameters "
            "does not change what one block is, so the order is a per-block verdict "
            "(butcherflow's `share_gate = true` recipe option is this sharing).",
            "The code's gate reads [L₁; L₂] = [y + F₁; 2y + F₁ + F₂], not the paper's [F₁; F₂].",
        ),
    )


def _rk3() -> AuditEntry:
    return AuditEntry(
        "ODE Transformer: the RK3 branch",
        Side("intended: Kutta's third-order method (Y₃ = y − K₁ + 2K₂)", catalog["kutta-3"]),
        (
            Side(
                "code read with F stages: Y₃ = y − K₂ + 2K₂ = y + K₂",
                CODE_RK3_READING,
                "runge_kutta_list[1] is the second stage, not the first",
            ),
            Side("code as computed (stages store L)", CODE_RK3),
        ),
        (
            _ode(ODE_GATED, (387, 391), "stage inputs y + ½K₁, y − runge_kutta_list[1] + 2K₂"),
            _ode(ODE_GATED, (399, 401), "output y + (K₁ + 4K₂ + K₃)/6"),
            _ode(ODE_TYPED, (324, 334), "only calculate_num 2 builds here (ValueError)"),
        ),
        (
            "With the index corrected to runge_kutta_list[0] the branch would be Kutta's "
            "method in F; as written it is second order even in F, and with L stages it is "
            "not preconsistent.",
        ),
    )


def _rk4() -> AuditEntry:
    return AuditEntry(
        "ODE Transformer: the RK4 block",
        Side("paper, Table 7: y + (F₁ + 2F₂ + 2F₃ + F₄)/6", catalog["rk4"]),
        (Side("code as computed (stages store L)", CODE_RK4),),
        (
            _ode(ODE_GATED, (382, 386), "stage inputs y + ½L₁, y + ½L₂, y + L₃"),
            _ode(ODE_GATED, (394, 396), "output y + (L₁ + 2L₂ + 2L₃ + L₄)/6"),
            _ode(ODE_TYPED, (324, 334), "at this commit RK4 cannot be built (ValueError)"),
        ),
        (),
    )


def _decoder() -> AuditEntry:
    return AuditEntry(
        "ODE Transformer: the decoder",
        Side(
            "paper: the ODE design on the encoder only; the decoder is residual (Euler)",
            catalog["euler"],
        ),
        (
            Side(
                "code, dec_calculate_num = 2: the same layer twice, L(L(y))",
                CODE_DECODER_TWICE,
                "two Euler steps of F (this tableau at step size 2), not an RK2 step",
            ),
            Side(
                "code at the other commit",
                None,
                "the decoder never sets calculate_num, so its forward fails "
                "(AttributeError); nothing to declare",
            ),
        ),
        (
            _ode(ODE_GATED, (121, 122), "--dec-calculate-num: 'the order for RK-block'"),
            _ode(ODE_GATED, (539, 539), "the decoder reads dec_calculate_num"),
            _ode(ODE_GATED, (600, 611), "and applies each layer that many times in a row"),
            _ode(ODE_TYPED, (607, 613), "same loop; __init__ L478–L551 sets none"),
        ),
        ("With the default dec_calculate_num = 1 the decoder is the paper's residual decoder.",),
    )


def _layer_history() -> AuditEntry:
    return AuditEntry(
        "ODE Transformer: a layer history around every block",
        Side("paper: block t reads y_t, the previous block's output", catalog["euler"]),
        (
            Side(
                "code: block t reads history.pop(), a combination of all earlier outputs",
                None,
                "not declared: with pre-norm the history normalises each stored output "
                "(LayerNorm) before combining, which no linear method across depth is",
            ),
        ),
        (
            _ode(ODE_GATED, (374, 378), "each block's input y is history.pop()"),
            _ode(ODE_GATED, (413, 414), "its output is added to the history"),
        ),
        (
            "The history type defaults to 'dense' (an average of the embedding and every "
            "earlier block output) in base_architecture; we read that default but did not "
            "pin its line number, so it is not cited.",
        ),
    )
