"""FLOATER's released flow (xuanqing94/FLOATER): the solver it runs, and what happens around it."""

from __future__ import annotations

from ...methods import ContinuousDynamics, catalog
from .records import AuditEntry, Side, Source

FLOATER_REPO = "xuanqing94/FLOATER"
FLOATER_COMMIT = "6f9652f43f916aac6b4d51f52b4c4819ee7abbe5"  # model, attention, flow field
FLOATER_LAYER_COMMIT = "e327c02503abaac83cd95d2cfb1e757277cf6342"  # the layers, as stored
FLOATER_MODEL = "fairseq/models/flow_transformer.py"
TORCHDIFFEQ_REPO = "rtqichen/torchdiffeq"


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


# What the released code computes, beside the paper's flow
_CODE_SIDES = (
    Side(
        "code, on a forward that re-solves: torchdiffeq rk4 at step_size = δ/5, odeint_adjoint",
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
)


# What the entry says beside its sides
_NOTES = (
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
)


def _floater(path: str, lines: tuple[int, int], what: str, commit: str = FLOATER_COMMIT) -> Source:
    return Source(FLOATER_REPO, commit, path, lines, what)


def floater_entry() -> AuditEntry:
    """FLOATER's released flow: the solver it runs, and what happens around the solver."""
    return AuditEntry(
        "FLOATER: the position flow (xuanqing94/FLOATER)",
        Side(
            "paper (the catalog's declaration): p(t) solves dp/dt = h(t, p; w), position i at "
            "t = i/100",
            catalog["floater"],
        ),
        _CODE_SIDES,
        _sources(),
        _NOTES,
    )


def _sources() -> tuple[Source, ...]:
    """The lines of FLOATER's code and of torchdiffeq that the entry cites."""
    model, layer = FLOATER_MODEL, "fairseq/modules/flow_transformer_layer.py"
    attention = "fairseq/modules/flow_attention.py"
    return (
        _floater(model, (11, 11), "odeint is torchdiffeq's odeint_adjoint"),
        _floater(model, (247, 254), "time_dt 0.01, max_seq_len 255, update_flow_every 400, cache"),
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
    )
