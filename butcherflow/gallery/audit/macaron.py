"""Macaron's half-step FFNs: the paper's layer, the Conformer (lucidrains/conformer) and
x-transformers (lucidrains/x-transformers), declared and cited."""

from __future__ import annotations

from ...methods import Splitting, catalog
from .records import AuditEntry, Side, Source

CONFORMER_REPO = "lucidrains/conformer"
CONFORMER_COMMIT = "0cb3a555be745b4e29c021f5338d52d461efa632"
X_REPO = "lucidrains/x-transformers"
X_COMMIT = "b8a9add6bb5eb6099e0755869d0caeeda4b1eb31"  # version 2.1.36
X_FILE = "x_transformers/x_transformers.py"

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


def macaron_entries() -> tuple[AuditEntry, ...]:
    """The paper's Macaron layer, the Conformer's block and x-transformers' `macaron`."""
    return (
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
