"""What the papers' released code computes, declared and proved beside what the papers write.

Each `AuditEntry` pairs the paper's formula (a declaration: usually a catalog name) with what
the released code computes (a declaration typed from the code we read, or a line saying why it
cannot be declared), and cites the repository, commit, file and line range it was read from.
`audit_page()` renders the gallery page "What the reference code computes": every order on it is
`check`ed when the page is built, never typed.

The code's blocks are written in terms of the paper's field F (the residual-free branch). The
ODE Transformer's code stores each stage as the whole layer L(y) = y + F(y); a tableau (A, b)
applied to L is, in F, the general linear method
U = (I − A)⁻¹1, A' = (I − A)⁻¹A, B = bᵀ(I − A)⁻¹, V = 1 + bᵀ(I − A)⁻¹1 (the tests derive each
declaration below from the code's own coefficients this way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, final

import tomli_w

from ..analysis import Report, check
from ..analysis.general_linear import GeneralLinearReport
from ..analysis.splitting import SplittingReport
from ..experiments import EXPERIMENTS
from ..methods import (
    ButcherTableau,
    ContinuousDynamics,
    GeneralLinear,
    Method,
    Splitting,
    catalog,
)
from .text import cell, fence, table

ODE_REPO = "libeineu/ODE-Transformer"
ODE_FILE = "fairseq/models/ode_transformer.py"
ODE_GATED = "e57b2e732ab8e82a4d3ba4aefcbbb217ec3fdb1f"  # gate always on; RK3/RK4 build
ODE_TYPED = "00003f868be6ae742f067adee045b33b0171562b"  # rk_type branches; only RK2 builds
CONFORMER_REPO = "lucidrains/conformer"
CONFORMER_COMMIT = "0cb3a555be745b4e29c021f5338d52d461efa632"
FLOATER_REPO = "xuanqing94/FLOATER"
FLOATER_COMMIT = "6f9652f43f916aac6b4d51f52b4c4819ee7abbe5"  # model, attention, flow field
FLOATER_LAYER_COMMIT = "e327c02503abaac83cd95d2cfb1e757277cf6342"  # the layers, as stored
FLOATER_MODEL = "fairseq/models/flow_transformer.py"
TORCHDIFFEQ_REPO = "rtqichen/torchdiffeq"
X_REPO = "lucidrains/x-transformers"
X_COMMIT = "b8a9add6bb5eb6099e0755869d0caeeda4b1eb31"  # version 2.1.36
X_FILE = "x_transformers/x_transformers.py"


@final
@dataclass(frozen=True)
class Source:
    """Where a fact was read: repository, commit, file and the first and last line."""

    repo: str
    commit: str
    path: str
    lines: tuple[int, int]
    what: str

    def __post_init__(self) -> None:
        first, last = self.lines
        if not (self.repo and self.commit and self.path) or not 0 < first <= last:
            raise ValueError(f"a source needs repo, commit, path and lines: {self}")

    @property
    def citation(self) -> str:
        first, last = self.lines
        where = f"L{first}" if first == last else f"L{first}–L{last}"
        return f"`{self.repo}` @ `{self.commit[:10]}`, `{self.path}` {where}"


@final
@dataclass(frozen=True)
class Side:
    """One reading of a block: a declaration (`check`ed on the page) or why there is none."""

    label: str
    method: Method | None
    note: str = ""


@final
@dataclass(frozen=True)
class Trained:
    """Where the code's block trains: `code_run` of `experiment` beside `paper_run`, the
    corrected version (run names of `experiments.EXPERIMENTS`)."""

    experiment: str
    code_run: str
    paper_run: str


@final
@dataclass(frozen=True)
class AuditEntry:
    """A paper's formula and what its released code computes, with the code cited."""

    title: str
    paper: Side
    code: tuple[Side, ...]
    sources: tuple[Source, ...]
    findings: tuple[str, ...]
    trained: tuple[Trained, ...] = ()


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
# Conformer block: FFN1(½), SAN, Conv, FFN2(½) with two FFNs: P = ½FFN1 and Q = ½FFN2 are two
# operators (the ½ goes into the field), so the block is a Lie composition of four flows.
CONFORMER_SEPARATE = Splitting(
    [("P", 1), ("B", 1), ("C", 1), ("Q", 1)],
    substep="euler",
    name="conformer-block-separate",
    title="Conformer block, separate half-step FFNs P = ½FFN₁, Q = ½FFN₂",
    reference=CONFORMER_REPO,
)
CONFORMER_SHARED = Splitting(
    [("A", "1/2"), ("B", 1), ("C", 1), ("A", "1/2")],
    substep="euler",
    name="conformer-block-shared",
    title="Conformer block if the two half-step FFNs were one",
    reference=CONFORMER_REPO,
)
MACARON_SEPARATE = Splitting(
    [("P", 1), ("B", 1), ("Q", 1)],
    substep="euler",
    name="macaron-separate",
    title="Macaron layer with separate half-step FFNs P = ½FFN₁, Q = ½FFN₂",
    reference="Lu et al. (2019)",
)

# x-transformers with sandwich_norm: the post-branch LayerNorm cancels the ½ (LN(½u) = LN(u)),
# so each half step is a whole step; were the two FFNs one field, the block would step it twice.
MACARON_CANCELLED_SHARED = Splitting(
    [("A", 1), ("B", 1), ("A", 1)],
    substep="euler",
    name="macaron-half-cancelled-shared",
    title="Macaron layer whose ½ a later norm cancels, if the two FFNs were one",
    reference=X_REPO,
)


# FLOATER's encoder and decoder on a forward that re-solves: torchdiffeq's "rk4" (upstream's
# fixed-grid RK4 takes the 3/8 rule's step) at step_size = time_dt/5 = 1/500, so five steps
# between neighbouring positions i/100, adjoint gradients, the time appended to the field's input.
FLOATER_CODE = ContinuousDynamics(
    "rk-3-8",
    grid="positions",
    delta="1/100",
    steps=5,
    adjoint=True,
    time="concat",
    name="floater-code",
    title="FLOATER code on a re-solving forward: torchdiffeq rk4, step δ/5, adjoint",
    reference=FLOATER_REPO,
)


def _floater(path: str, lines: tuple[int, int], what: str, commit: str = FLOATER_COMMIT) -> Source:
    return Source(FLOATER_REPO, commit, path, lines, what)


def _ode(commit: str, lines: tuple[int, int], what: str) -> Source:
    return Source(ODE_REPO, commit, ODE_FILE, lines, what)


def entries() -> tuple[AuditEntry, ...]:
    """The audited blocks, in the order the page shows them."""
    layer = _ode(
        ODE_TYPED,
        (722, 747),
        "the encoder layer returns y + SAN + FFN with both residuals: L(y) = y + F(y)",
    )
    return (
        AuditEntry(
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
        ),
        AuditEntry(
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
                "The code's gate reads [L₁; L₂] = [y + F₁; 2y + F₁ + F₂], "
                "not the paper's [F₁; F₂].",
            ),
        ),
        AuditEntry(
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
        ),
        AuditEntry(
            "ODE Transformer: the RK4 block",
            Side("paper, Table 7: y + (F₁ + 2F₂ + 2F₃ + F₄)/6", catalog["rk4"]),
            (Side("code as computed (stages store L)", CODE_RK4),),
            (
                _ode(ODE_GATED, (382, 386), "stage inputs y + ½L₁, y + ½L₂, y + L₃"),
                _ode(ODE_GATED, (394, 396), "output y + (L₁ + 2L₂ + 2L₃ + L₄)/6"),
                _ode(ODE_TYPED, (324, 334), "at this commit RK4 cannot be built (ValueError)"),
            ),
            (),
        ),
        AuditEntry(
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
            (
                "With the default dec_calculate_num = 1 the decoder is the paper's residual "
                "decoder.",
            ),
        ),
        AuditEntry(
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
        ),
        AuditEntry(
            "Macaron: separate half-step FFNs",
            Side(
                "paper, Eq. 14–16: Strang–Marchuk, half steps of one field G around F",
                catalog["strang"],
            ),
            (
                Side(
                    "paper, Eq. 17–19: FFN with W^down, attention, FFN with W^up",
                    MACARON_SEPARATE,
                    "P = ½FFN₁ and Q = ½FFN₂ are different fields: "
                    "a Lie composition of three flows",
                ),
            ),
            (),
            (
                "Strang's second order (the paper's Theorem 1) needs both half steps to be the "
                "flow of the same field; the layer of Eq. 17–19 gives them separate weights, so "
                "each half step is its own operator. butcherflow's `macaron` recipe follows "
                "Eq. 17–19 (separate FFNs; `share = true` ties them into Eq. 14–16).",
                "With Euler sub-steps, as every such layer computes, both are first order.",
            ),
        ),
        AuditEntry(
            "Macaron in the Conformer (lucidrains/conformer)",
            Side("paper's Macaron layer", catalog["strang"]),
            (
                Side("code: FFN₁(½), SAN, Conv, FFN₂(½) with separate FFNs", CONFORMER_SEPARATE),
                Side("the same block if the two FFNs were one", CONFORMER_SHARED),
                Side(
                    "the LayerNorm after the block",
                    None,
                    "not declared: normalising the state is no step of a vector field",
                ),
            ),
            (
                Source(
                    CONFORMER_REPO,
                    CONFORMER_COMMIT,
                    "conformer/conformer.py",
                    (184, 195),
                    "two FeedForward modules, each ff_mult = 4 wide (not halved)",
                ),
                Source(
                    CONFORMER_REPO,
                    CONFORMER_COMMIT,
                    "conformer/conformer.py",
                    (198, 201),
                    "Scale(0.5, PreNorm(...)) on each; a post_norm LayerNorm",
                ),
                Source(
                    CONFORMER_REPO,
                    CONFORMER_COMMIT,
                    "conformer/conformer.py",
                    (203, 209),
                    "x + ½FFN₁, + SAN, + Conv, + ½FFN₂, then post_norm",
                ),
            ),
            (
                "Both FFNs are full width (ff_mult = 4): the Macaron paper halves the width to "
                "keep the parameter count.",
                "Even with one shared FFN the SAN and Conv steps form a Lie step, so the "
                "block is first order with exact flows.",
            ),
        ),
        _x_transformers_entry(),
        _floater_entry(),
    )


def _x(lines: tuple[int, int], what: str) -> Source:
    return Source(X_REPO, X_COMMIT, X_FILE, lines, what)


def _x_transformers_entry() -> AuditEntry:
    """x-transformers' `macaron = True`: separate half-step FFNs, the ½ kept unless a
    sandwich norm cancels it."""
    return AuditEntry(
        "Macaron in x-transformers (lucidrains/x-transformers)",
        Side("paper's Macaron layer", catalog["strang"]),
        (
            Side(
                "code, pre-norm (the default): x + ½FFN₁(LN x), + SAN, + ½FFN₂ with separate FFNs",
                MACARON_SEPARATE,
            ),
            Side(
                "code with sandwich_norm = True, if the two FFNs were one",
                MACARON_CANCELLED_SHARED,
                "the norm after each branch cancels the ½: the shared field would be stepped twice",
            ),
            Side(
                "code with pre_norm = False",
                None,
                "a LayerNorm after every residual add renormalises the state: no step of a "
                "vector field",
            ),
        ),
        (
            _x((1925, 1932), "AttentionLayers options: macaron, pre_norm = True, sandwich_norm"),
            _x((2088, 2089), "macaron prepends a feed-forward: the block is ('f', 'a', 'f')"),
            _x(
                (2249, 2251),
                "each 'f' is a new FeedForward with the same ff_ options, wrapped in "
                "Scale(0.5, ·) when macaron",
            ),
            _x((1189, 1194), "FeedForward's width: mult = 4 by default, the same for both"),
            _x((718, 731), "Scale multiplies the branch's output by 0.5"),
            _x((2295, 2297), "per branch: pre-norm, sandwich (post-branch) norm, post-norm"),
            _x((2565, 2568), "the sandwich norm acts on the scaled output, before x + out"),
            _x((733, 753), "LayerNorm: nn.LayerNorm without affine, times gamma"),
            _x((2579, 2580), "with pre_norm = False: x = LayerNorm(x + out) after every branch"),
        ),
        (
            "Both half-step FFNs are separate modules at full width (mult = 4, nothing halved) "
            "and keep the ½ by default: the block is the Macaron paper's Eq. 17–19, a Lie "
            "composition of three flows, first order.",
            "With sandwich_norm = True the norm comes after Scale(0.5): LayerNorm(½u) = "
            "LayerNorm(u) (up to its ε), so the ½ is cancelled and each half step is a whole "
            "step. With separate FFNs the ½ was only a rescaling of each field, so the verdict "
            "does not change; with one shared FFN it would (coefficient sum 2: not consistent).",
        ),
    )


def _floater_entry() -> AuditEntry:
    """FLOATER's released flow: the solver it runs, and what happens around the solver."""
    model, layer = FLOATER_MODEL, "fairseq/modules/flow_transformer_layer.py"
    attention = "fairseq/modules/flow_attention.py"
    return AuditEntry(
        "FLOATER: the position flow (xuanqing94/FLOATER)",
        Side(
            "paper (the catalog's declaration): p(t) solves dp/dt = h(t, p; w), position i at "
            "t = i/100",
            catalog["floater"],
        ),
        (
            Side(
                "code, on a forward that re-solves: torchdiffeq rk4 at step_size = δ/5, "
                "odeint_adjoint",
                FLOATER_CODE,
                "five 3/8-rule steps between neighbouring positions",
            ),
            Side(
                "code, on the other 399 of every 400 forwards",
                None,
                "the biases are a detached copy of an earlier solve (weights up to 399 "
                "forwards old) and the flow's output enters multiplied by 0.0, so its gradient "
                "is zero; a cache is no step of a solver",
            ),
            Side(
                "code, decoder cross-attention while generating",
                None,
                "every source key and value gets the bias of the last source position, "
                "p((S − 1)/100), where training gave key j its own p(j/100): a mismatch "
                "between training and generation, not a step of the dynamics",
            ),
        ),
        (
            _floater(model, (11, 11), "odeint is torchdiffeq's odeint_adjoint"),
            _floater(
                model, (247, 254), "time_dt 0.01, max_seq_len 255, update_flow_every 400, cache"
            ),
            _floater(model, (266, 269), "method rk4, step_size time_dt/5"),
            _floater(
                "fairseq/modules/flow_funcs.py",
                (101, 133),
                "the field: Linear_t, ReLU, Linear_t, each with t appended to its input (L25–L41)",
            ),
            _floater(
                model,
                (323, 335),
                "encoder: assert length ≤ 255; solve when k_updates % 400 == 0, else "
                "0.0 × field + cached_bias[:tok_len].detach(); k_updates += 1 every forward",
            ),
            _floater(model, (342, 342), "block lid gets row i of the padded batch ↦ p(i/100)"),
            _floater(model, (488, 496), "decoder: the same cap, period and caches"),
            _floater(model, (660, 686), "decoder training path: the same re-solve and cache"),
            _floater(
                model, (630, 638), "generating: the cross-attention flow solved on the source grid"
            ),
            _floater(model, (654, 654), "but only its last row is kept: [-1:]"),
            _floater(
                layer,
                (290, 293),
                "that row is cross-attention's bias_k and bias_v, static_kv=True",
                FLOATER_LAYER_COMMIT,
            ),
            _floater(attention, (121, 126), "k += bias_k.unsqueeze(1): one row, every key"),
            _floater(attention, (130, 135), "the keys are kept for the later steps (static_kv)"),
            Source(
                TORCHDIFFEQ_REPO,
                "03c6e63bdd5dd8c689134ff77f427a480dbb8451",
                "torchdiffeq/_impl/fixed_grid.py",
                (33, 41),
                "upstream's fixed-grid RK4 steps with rk4_alt_step_func",
            ),
            Source(
                TORCHDIFFEQ_REPO,
                "cb0de6e8000ac61ad67b830277e1506d2b66ae9d",
                "torchdiffeq/_impl/rk_common.py",
                (96, 103),
                "rk4_alt_step_func: stages at 1/3, 2/3, 1; weights (1, 3, 3, 1)/8: the 3/8 rule",
            ),
        ),
        (
            "Between re-solves the flow is frozen twice over: the biases come from weights up "
            "to 399 forwards old, and the flow's parameters get a gradient on one forward in "
            "400. k_updates counts forwards, not updates: validation batches and each "
            "--update-freq micro-batch advance it too.",
            "Length cap: the grid has 255 points (max_seq_len = 255, '255 or 490' in the "
            "comment); a longer source or target stops the forward with an AssertionError.",
            "Padding shift: the encoder gives row i of the padded batch the bias p(i/100) "
            "(cached_bias[:tok_len]); the padding mask reaches attention only. A source padded "
            "on the left by k tokens starts at p(k/100), so its positions move with the longest "
            "sentence in its batch. (fairseq's translation task pads sources on the left by "
            "default, '--left-pad-source' 'True' in the fairseq copies we searched; FLOATER's "
            "copy of the task is not in the index we read, so that default is not cited.)",
            "The solver itself is order 4 either way: the README installs the author's fork of "
            "torchdiffeq, whose fixed-grid solver is not in the index we read; upstream's 'rk4' "
            "is the 3/8 rule declared here, and the classical step would give the same order.",
        ),
    )


def verdict(report: Report) -> str:
    """The proved verdict in a few words: order, and what decides it for GLMs and splittings."""
    if isinstance(report, GeneralLinearReport):
        if not report.preconsistent:
            return "not preconsistent: order 0"
        return f"order {report.order}"
    if isinstance(report, SplittingReport):
        return f"order {report.order} (exact flows), {report.substep_order} with Euler sub-steps"
    return f"order {report.block_order_text}"


def _toml(value: Any) -> str:
    """A TOML value on one line (matrices as rows of entries)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def _declaration(method: Method) -> list[str]:
    """The declaration as the lines of a declaration file, in a fenced block."""
    text = "\n".join(f"{k} = {_toml(v)}" for k, v in method.to_table().items())
    return fence(text, "toml").splitlines()


def _side(side: Side) -> tuple[list[str], list[str]]:
    """(a verdict table row, the declaration block) for one side."""
    if side.method is None:
        return ["—", side.label, "cannot be declared: " + side.note], []
    report = check(side.method)
    note = f" ({side.note})" if side.note else ""
    row = [f"`{side.method.name}`", side.label + note, verdict(report)]
    return row, [f"*{side.label}* — `{side.method.name}`:", "", *_declaration(side.method), ""]


def _trained(trained: Trained) -> str:
    """Where the code's block trains, beside the paper's: the recipes and the experiment."""
    experiment = EXPERIMENTS[trained.experiment]
    code, paper = experiment.run(trained.code_run), experiment.run(trained.paper_run)
    return (
        f"**Trained:** the code's block is the recipe "
        f"[`{code.recipe_name}`](models/{code.recipe_name}.md), run `{code.name}` of the "
        f"[{trained.experiment} experiment](../experiments/{trained.experiment}.md), beside "
        f"the paper's block, [`{paper.recipe_name}`](models/{paper.recipe_name}.md) (run "
        f"`{paper.name}`); a claim there compares them, and says 'not measured yet' until both "
        "have trained."
    )


def entry_section(entry: AuditEntry) -> str:
    """One entry: the verdicts side by side, the declarations, the cited lines, the findings."""
    rows, blocks, shown = [], [], set()
    for side in (entry.paper, *entry.code):
        row, block = _side(side)
        rows.append(row)
        if side.method is not None and side.method.name not in shown:
            shown.add(side.method.name)
            blocks += block
    lines = [f"## {entry.title}", "", table(["declaration", "reading", "bf.check"], rows), ""]
    lines += [f"- {finding}" for finding in entry.findings]
    lines += [""] if entry.findings else []
    lines += [_trained(t) for t in entry.trained]
    lines += [""] if entry.trained else []
    if entry.sources:
        lines += ["**Read in the code:**", ""]
        lines += [f"- {s.citation}: {cell(s.what)}" for s in entry.sources]
        lines += [""]
    lines += ['??? note "The declarations"', ""]
    lines += ["    " + line if line else "" for line in blocks]
    return "\n".join(lines).rstrip() + "\n"


def audit_page(audited: Sequence[AuditEntry] | None = None) -> str:
    """The gallery page "What the reference code computes", generated from `entries()`."""
    audited = entries() if audited is None else audited
    head = [
        "# What the reference code computes",
        "",
        "The papers butcherflow generalises released code, and the code does not always compute "
        "what the papers write. Each section declares both — the paper's formula and the "
        "released code's computation, in terms of the paper's field F (the residual-free "
        "branch) — and shows `bf.check`'s verdict for each, proved when this page is built. "
        "Code is cited by repository, commit, file and lines as we read it; facts carry "
        "over, code does not.",
        "",
        "*Not preconsistent* means the block's stages or output do not reproduce y when F = 0 "
        "(Butcher's preconsistency of a general linear method): it approximates no solution "
        "of y' = F(y), at any step size.",
        "",
    ]
    return "\n".join(head) + "\n" + "\n".join(entry_section(e) for e in audited)
