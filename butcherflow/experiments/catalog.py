"""The seven experiments of the papers, declared (their sizes: `presets.py`).

Every run of an experiment trains at the preset's sizes; a run overrides only what the experiment
varies (the depth of a language model or of the encoder). Decoders are residual in every
translation recipe (as in the ODE Transformer paper, which changes the encoder only).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .spec import Claim, Comparison, Experiment, Run, Variant

ODE = "ODE Transformer (Li et al., 2022)"
MACARON = "Macaron Net (Lu et al., 2019)"
FLOATER = "FLOATER (Liu et al., 2020)"
THREE = (1, 2, 3)

# --- 1. truncation error: one- and two-layer language models -------------------------------------

_BLOCKS = (
    ("residual", "residual (Euler)", "transformer-small"),
    ("rk2", "RK2 (Heun)", "ode-transformer-rk2"),
    ("rk2-gated", "RK2-gated", "ode-transformer-rk2-gated"),
    ("rk4", "RK4", "ode-transformer-rk4"),
)
# The one-layer claims (and the two-layer residual stack the RK2 claim compares with) train until
# the validation loss stops improving (patience) or LONG_BUDGET updates; the two-layer RK stacks
# keep their 600-update results (SHORT_BUDGET), so the report marks comparisons across budgets.
SHORT_BUDGET, LONG_BUDGET, PATIENCE, LM_VALIDATE_INTERVAL = 600, 3000, 5, 100
# The language-model experiments train one verse per sample, as their records were trained
# (before context windows across lines became a language model's default): `--sample-break-mode
# eos`, the preset's label smoothing.
LM_SETTINGS = {"sample_break_mode": "eos"}


def _long(name: str, layers: int) -> bool:
    return layers == 1 or name == "residual"


_LM_RUNS = tuple(
    Run(
        f"{name}-{layers}layer",
        label,
        recipe,
        THREE,
        encoder_layers=layers,
        column=f"{layers} layer" + ("s" if layers > 1 else ""),
        budget=LONG_BUDGET if _long(name, layers) else None,
        patience=PATIENCE if _long(name, layers) else 0,
    )
    for layers in (1, 2)
    for name, label, recipe in _BLOCKS
)


def _beats(better: str, worse: tuple[str, ...], metric: str) -> tuple[Comparison, ...]:
    return tuple(Comparison(better, other, metric) for other in worse)


TRUNCATION = Experiment(
    name="truncation",
    title="Truncation error: one- and two-layer language models",
    analogue=f"{ODE}, Table 5 (Penn Treebank perplexity of 1- and 2-layer language models); "
    "here: the English side of bible:de-en (World English Bible), the run's joint de+en BPE "
    "vocabulary, validation perplexity per subword token",
    data="bible:de-en",
    task="language_model",
    settings=LM_SETTINGS,
    runs=_LM_RUNS,
    claims=(
        Claim(
            f"{ODE}, Table 5",
            "With one layer (no error propagated between layers), every higher-order block "
            "reaches a lower perplexity than the residual (Euler) block.",
            tuple(
                Comparison(f"{n}-1layer", "residual-1layer", "ppl")
                for n in ("rk2", "rk2-gated", "rk4")
            ),
        ),
        Claim(
            f"{ODE}, Table 5",
            "RK4 reaches the lowest perplexity, at one layer and at two.",
            _beats("rk4-1layer", ("residual-1layer", "rk2-1layer", "rk2-gated-1layer"), "ppl")
            + _beats("rk4-2layer", ("residual-2layer", "rk2-2layer", "rk2-gated-2layer"), "ppl"),
        ),
        Claim(
            f"{ODE}, Table 5",
            "A one-layer RK2 block reaches a lower perplexity than a two-layer residual stack.",
            (Comparison("rk2-1layer", "residual-2layer", "ppl"),),
        ),
    ),
    budget=SHORT_BUDGET,
    table="grid",
    metric="ppl",
    plot="grouped-points",
    x_label="layers",
    validate_interval_updates=LM_VALIDATE_INTERVAL,
)

# --- 2. translation quality ----------------------------------------------------------------------

TRANSLATION = Experiment(
    name="translation",
    title="Translation quality: Runge-Kutta, splitting, multistep and FLOATER models",
    analogue=f"{ODE} Tables 1 and 7, {MACARON} Table 1, {FLOATER} Table 2; here: German -> "
    "English Bible verses, every model trained for the same number of updates",
    data="bible:de-en",
    task="translation",
    runs=(
        Run("residual", "residual (transformer-small)", "transformer-small", THREE),
        Run("rk2", "RK2", "ode-transformer-rk2", THREE),
        Run("rk2-code", "RK2 as the released code computes it", "ode-transformer-rk2-code", THREE),
        Run("rk2-unit", "RK2, γ = 1", "ode-transformer-rk2-unit", THREE),
        Run("rk2-gated", "RK2-gated", "ode-transformer-rk2-gated", THREE),
        Run("rk4", "RK4", "ode-transformer-rk4", THREE),
        Run("macaron", "Macaron (parameter-matched)", "macaron", THREE),
        Run("leapfrog", "leapfrog", "leapfrog", THREE),
        Run("dlcl", "DLCL", "dlcl", THREE),
        Run("floater", "FLOATER", "floater", THREE),
    ),
    claims=(
        Claim(
            f"{ODE}, Table 1",
            "Runge-Kutta encoder blocks (RK2, RK2-gated, RK4) translate better than the "
            "residual Transformer of the same depth.",
            _beats("rk2-gated", ("residual",), "bleu")
            + _beats("rk4", ("residual",), "bleu")
            + _beats("rk2", ("residual",), "bleu"),
        ),
        Claim(
            f"{ODE}, Table 7",
            "Runge-Kutta blocks beat the multistep schemas (leapfrog, DLCL).",
            _beats("rk2-gated", ("leapfrog", "dlcl"), "bleu")
            + _beats("rk4", ("leapfrog", "dlcl"), "bleu"),
        ),
        Claim(
            f"{ODE}, Eq. 12–14 against its released code",
            "The RK2 block the paper writes, y + ½(F₁ + F(y + F₁)) (second order), translates "
            "better than the block its released code computes, y + ½(L₁ + L(y + L₁)) with "
            "L = y + F (order 0 in F: the gallery's 'What the reference code computes').",
            (Comparison("rk2", "rk2-code", "bleu"),),
        ),
        Claim(
            f"{MACARON}, Table 1",
            "The Strang-splitting layer FFN(½)-SAN-FFN(½) beats the Transformer at the same "
            "parameter count.",
            (Comparison("macaron", "residual", "bleu"),),
        ),
        Claim(
            f"{FLOATER}, Table 2",
            "FLOATER position biases at every block beat sinusoidal positions alone.",
            (Comparison("floater", "residual", "bleu"),),
        ),
    ),
    budget=1000,
    table="runs",
    metric="bleu",
    plot="points",
)

# --- 3. coefficient policies of the RK2 block ----------------------------------------------------

COEFFICIENTS = Experiment(
    name="coefficients",
    title="Coefficient policies of the RK2 block",
    analogue=f"{ODE}, Table 10 (scaling functions of the RK2 block on WMT'14 En-De); here: "
    "bible:de-en, the encoder's RK2 blocks under five coefficient policies",
    data="bible:de-en",
    task="translation",
    runs=(
        Run("exact", "exact (½, ½)", "ode-transformer-rk2", THREE),
        Run("unit", "unit (γ = 1)", "ode-transformer-rk2-unit", THREE),
        Run(
            "learned",
            "learned scalars",
            Variant(
                "ode-transformer-rk2-learned",
                "ode-transformer-rk2",
                encoder={"coefficients": "learned"},
                description="coefficients = 'learned' (one scalar per b_i, starting at 1/2)",
            ),
            THREE,
        ),
        Run("gated", "gated (g, 1 − g)", "ode-transformer-rk2-gated", THREE),
        Run(
            "tanh",
            "tanh",
            Variant(
                "ode-transformer-rk2-tanh",
                "ode-transformer-rk2",
                encoder={"coefficients": "tanh"},
                description="coefficients = 'tanh' (per-token tanh weights, one per stage)",
            ),
            THREE,
        ),
    ),
    claims=(
        Claim(
            f"{ODE}, Table 10",
            "The sigmoid gate (γ₁ = g, γ₂ = 1 − g) gives the best RK2 block.",
            _beats("gated", ("exact", "unit", "learned", "tanh"), "bleu"),
        ),
        Claim(
            f"{ODE}, Table 10",
            "tanh coefficients hurt: they do worse than the exact RK2 weights.",
            (Comparison("exact", "tanh", "bleu"),),
        ),
    ),
    budget=1000,
    table="runs",
    metric="bleu",
    plot="points",
)

# --- 4. length extrapolation ---------------------------------------------------------------------

LEARNED_POSITIONS = Variant(
    "transformer-small-learned",
    "transformer-small",
    embedding={"position": "learned", "max_len": 1024},
    description="learned positions (max_len = 1024, fairseq's default); positions beyond the "
    "training lengths are never updated",
)

EXTRAPOLATION = Experiment(
    name="extrapolation",
    title="Length extrapolation: train on short verses, test on long ones",
    analogue=f"{FLOATER}, Figure 2 (WMT'14 En-De short-to-long, BLEU by source-length bin); "
    "here: bible:de-en:short2long (train = verses up to the 75th length percentile, test = "
    "verses beyond the 95th)",
    data="bible:de-en:short2long",
    task="translation",
    runs=(
        Run("sinusoidal", "sinusoidal", "transformer-small", THREE),
        Run("learned", "learned", LEARNED_POSITIONS, THREE),
        Run("floater", "FLOATER", "floater", THREE),
    ),
    claims=(
        Claim(
            f"{FLOATER}, Figure 2",
            "FLOATER extrapolates best: on the longest test sources it beats sinusoidal and "
            "learned positions.",
            _beats("floater", ("sinusoidal", "learned"), "bleu_bin4"),
        ),
    ),
    budget=1000,
    table="bins",
    metric="bleu",
    plot="bins",
)

# --- 5. order against depth ----------------------------------------------------------------------

DEPTHS = (1, 2, 3, 6)
_DEPTH_RECIPES = (
    ("residual", "residual", "transformer-small"),
    ("rk2-gated", "RK2-gated", "ode-transformer-rk2-gated"),
    ("rk4", "RK4", "ode-transformer-rk4"),
)

DEPTH = Experiment(
    name="depth",
    title="BLEU against encoder depth",
    analogue=f"{ODE}, Figure 3 left (BLEU against encoder depth 6-48 on WMT'14 En-De); here: "
    f"bible:de-en, encoder depths {', '.join(map(str, DEPTHS))}, the preset's decoder",
    data="bible:de-en",
    task="translation",
    runs=tuple(
        Run(f"{name}-enc{depth}", label, recipe, THREE, encoder_layers=depth, column=str(depth))
        for name, label, recipe in _DEPTH_RECIPES
        for depth in DEPTHS
    ),
    claims=(
        Claim(
            f"{ODE}, Figure 3",
            "Runge-Kutta blocks (RK2-gated, RK4) beat the residual baseline at every encoder "
            "depth.",
            tuple(
                Comparison(f"{name}-enc{depth}", f"residual-enc{depth}", "bleu")
                for name in ("rk2-gated", "rk4")
                for depth in DEPTHS
            ),
        ),
        Claim(
            f"{ODE}, Figure 3",
            "RK4 leads at the shallowest depth; RK2-gated overtakes it when the encoder deepens.",
            (
                Comparison(f"rk4-enc{DEPTHS[0]}", f"rk2-gated-enc{DEPTHS[0]}", "bleu"),
                Comparison(f"rk2-gated-enc{DEPTHS[-1]}", f"rk4-enc{DEPTHS[-1]}", "bleu"),
            ),
        ),
    ),
    budget=1000,
    table="grid",
    metric="bleu",
    plot="lines",
    x_label="encoder layers",
)

# --- 6. learned connections across depth (general linear methods) ------------------------------

HC = "Hyper-Connections (Zhu et al., 2025)"
MHC = "mHC (Xie et al., 2025)"
DENSEFORMER = "DenseFormer (Pagliardini et al., 2024)"


def _connection_claims(metric: str, beat: str) -> tuple[Claim, ...]:
    """The claims of the hyper-connection, mHC and DenseFormer papers, shared by the
    translation and the language-model experiments (runs keyed hc, hc-dynamic, mhc,
    denseformer, residual).

    **Arguments:**

    - `metric`: the metric compared (`"bleu"`, `"ppl"`).
    - `beat`: how the claims word "does better than" for that metric.

    **Returns:** the claims, in the order the experiments list them.
    """
    return (
        Claim(
            f"{HC}, Table 1",
            f"Hyper-connections (static and dynamic, n = 4) {beat} the residual connection.",
            (Comparison("hc", "residual", metric), Comparison("hc-dynamic", "residual", metric)),
        ),
        Claim(
            f"{HC}, Table 1",
            "Dynamic hyper-connections beat static ones.",
            (Comparison("hc-dynamic", "hc", metric),),
        ),
        Claim(
            f"{MHC}",
            "mHC (doubly stochastic V) matches or beats unconstrained hyper-connections.",
            (Comparison("mhc", "hc-dynamic", metric),),
        ),
        Claim(
            DENSEFORMER,
            f"Depth-weighted averages of earlier layers {beat} the residual Transformer.",
            (Comparison("denseformer", "residual", metric),),
        ),
    )


CONNECTIONS = Experiment(
    name="connections",
    title="Learned connections across depth: DLCL, DenseFormer, hyper-connections, mHC, PCformer",
    analogue=f"{HC} (static and dynamic, n = 4), {MHC}, {DENSEFORMER}, "
    "PCformer (Li et al., 2024), DLCL (Wang et al., 2019); here: bible:de-en, the encoder's "
    "connections across depth as general linear methods, the decoder residual",
    data="bible:de-en",
    task="translation",
    runs=(
        Run("residual", "residual (transformer-small)", "transformer-small", THREE),
        Run("dlcl", "DLCL", "dlcl", THREE),
        Run("denseformer", "DenseFormer (window 4)", "denseformer", THREE),
        Run("hc", "hyper-connections, static", "hyper-connections", THREE),
        Run("hc-dynamic", "hyper-connections, dynamic", "hyper-connections-dynamic", THREE),
        Run("mhc", "mHC (Sinkhorn)", "mhc", THREE),
        Run("pcformer", "PCformer (Heun + AM3)", "pcformer", THREE),
    ),
    claims=(
        *_connection_claims("bleu", "beat"),
        Claim(
            "PCformer (Li et al., 2024)",
            "The predictor-corrector layer beats the residual Transformer and DLCL.",
            _beats("pcformer", ("residual", "dlcl"), "bleu"),
        ),
    ),
    budget=1000,
    table="runs",
    metric="bleu",
    plot="points",
)

# --- 7. the same connections in decoder-only language models --------------------------------------

LM_CONNECTIONS = Experiment(
    name="lm-connections",
    title="Connections across depth in decoder-only language models",
    analogue=f"{HC} (OLMo language models), {MHC}, {DENSEFORMER} (OpenWebText2 perplexity), "
    f"{ODE} Table 5, {MACARON}; here: decoder-only models (models/lm-*.toml) on one side of "
    "the Bible, bible:en (World English Bible), at the preset's width and encoder depth, "
    "validation perplexity per subword token, paired seeds",
    data="bible:en",
    task="language_model",
    settings=LM_SETTINGS,
    runs=(
        Run("residual", "residual", "lm-residual", THREE),
        Run("rk2-gated", "RK2-gated", "lm-rk2-gated", THREE),
        Run("rk4", "RK4", "lm-rk4", THREE),
        Run("macaron", "Macaron (parameter-matched)", "lm-macaron", THREE),
        Run("hc", "hyper-connections, static", "lm-hyper-connections", THREE),
        Run("hc-dynamic", "hyper-connections, dynamic", "lm-hyper-connections-dynamic", THREE),
        Run("mhc", "mHC (Sinkhorn)", "lm-mhc", THREE),
        Run("denseformer", "DenseFormer (window 4)", "lm-denseformer", THREE),
        Run(
            "designed",
            "designed depth method (order 2, V doubly stochastic)",
            "lm-designed-depth",
            THREE,
        ),
    ),
    claims=(
        *_connection_claims("ppl", "reach a lower perplexity than"),
        Claim(
            "bf.design (issue 37)",
            "A designed depth method (4 streams, order 2 from one field call per layer, V kept "
            "doubly stochastic in training) reaches a lower perplexity than the residual, "
            "dynamic hyper-connections and mHC at the same FLOPs.",
            _beats("designed", ("residual", "hc-dynamic", "mhc"), "ppl"),
        ),
        Claim(
            f"{ODE}, Table 5",
            "Runge-Kutta blocks (RK2-gated, RK4) reach a lower perplexity than residual layers.",
            _beats("rk2-gated", ("residual",), "ppl") + _beats("rk4", ("residual",), "ppl"),
        ),
        Claim(
            f"{MACARON}, Table 1",
            "The Strang-splitting layer FFN(½)-SAN-FFN(½) beats the residual layer at about the "
            "same parameter count.",
            (Comparison("macaron", "residual", "ppl"),),
        ),
    ),
    budget=SHORT_BUDGET,
    table="runs",
    metric="ppl",
    plot="points",
    validate_interval_updates=LM_VALIDATE_INTERVAL,
)

EXPERIMENTS: Mapping[str, Experiment] = MappingProxyType(
    {
        e.name: e
        for e in (
            TRUNCATION,
            TRANSLATION,
            COEFFICIENTS,
            EXTRAPOLATION,
            DEPTH,
            CONNECTIONS,
            LM_CONNECTIONS,
        )
    }
)
