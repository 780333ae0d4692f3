"""The experiments stage: the five declarations, the verdict rule, and the runner end to end.

The runner runs at the `tiny` preset (d_model 16, vocabulary 200) on tests/data/tiny with a
budget of 2 updates; the numbers it produces mean nothing, the files and the bookkeeping do.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import TINY

import butcherflow as bf
from butcherflow import DeclarationError
from butcherflow.assemble import count_parameters, load_recipe
from butcherflow.cli import main
from butcherflow.errors import ButcherflowError, UnknownNameError
from butcherflow.experiments import (
    EXPERIMENTS,
    PRESETS,
    Claim,
    Comparison,
    Experiment,
    Run,
    Variant,
    combine,
    judge,
    plan,
    run_experiment,
    write_reports,
)
from butcherflow.experiments.evaluation import length_bins, throughput
from butcherflow.experiments.index import (
    README_END,
    README_START,
    readme_summary,
    write_readme_summary,
)
from butcherflow.experiments.report import runs_table
from butcherflow.experiments.runner import prepare_recipe, train_config
from butcherflow.experiments.summary import judge_claim, summarize
from butcherflow.experiments.verdict import (
    FEW_PAIRS,
    NOT_MEASURED,
    NOT_SUPPORTED,
    ONE_SEED,
    PAIRED,
    PAIRED_WITHIN_NOISE,
    SEEDS_DISAGREE,
    SUPPORTED,
    UNPAIRED,
    WITHIN_NOISE,
    decide,
    format_mean_std,
    judge_paired,
)
from butcherflow.savedir import read_commit, read_recipe, run_sizes
from butcherflow.savedir.curves import read_log
from butcherflow.train import Interrupted, loop
from butcherflow.train.config import resolve_recipe

ROOT = Path(__file__).parent.parent
TINY_DATA = f"{TINY}:de-en"


pytestmark = pytest.mark.usefixtures("vocab_cache")  # conftest.py


# --- the declarations ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_declaration_is_well_formed(name: str) -> None:
    experiment = EXPERIMENTS[name]
    assert experiment.name == name and experiment.claims and experiment.budget >= 1
    recipes = experiment.recipes()  # every recipe and variant loads and validates
    names = [run.name for run in experiment.runs]
    assert len(set(names)) == len(names) and set(recipes) == set(names)
    for run in experiment.runs:
        assert re.fullmatch(r"[a-z0-9-]+", run.name), run.name  # a save-dir name
        assert len(set(run.seeds)) == len(run.seeds) >= 1
        if experiment.task == "translation":  # the decoder cross-attends: a Seq2Seq recipe
            assert recipes[run.name].decoder is not None
    for claim in experiment.claims:
        for comparison in claim.comparisons:
            assert {comparison.better, comparison.worse} <= set(names)
            assert comparison.better != comparison.worse


def seeds(name: str) -> dict[str, int]:
    return {run.name: len(run.seeds) for run in EXPERIMENTS[name].runs}


def test_every_run_has_the_three_seeds_issue_16_asks_for() -> None:
    for name in EXPERIMENTS:
        assert set(seeds(name).values()) == {3}, name
    assert len(seeds("translation")) == 10 and len(seeds("truncation")) == 8
    assert len(seeds("depth")) == 12 and len(seeds("extrapolation")) == 3
    assert len(seeds("connections")) == 7
    assert seeds("coefficients") == dict.fromkeys(("exact", "unit", "learned", "gated", "tanh"), 3)


def test_translation_trains_the_released_codes_rk2_beside_the_papers() -> None:
    """The audit's RK2 entry trains: the same recipe as `rk2` but for `stage = "layer"`, and a
    claim compares the two; before it has trained it is a row saying so, and no number."""
    translation = EXPERIMENTS["translation"]
    recipes = translation.recipes()
    paper, code = recipes["rk2"], recipes["rk2-code"]
    assert code.encoder is not None and paper.encoder is not None
    assert code.encoder.method == paper.encoder.method == "heun"
    assert dict(code.encoder.options) == {"stage": "layer"}
    comparisons = [c for claim in translation.claims for c in claim.comparisons]
    assert Comparison("rk2", "rk2-code", "bleu") in comparisons
    results = [
        {"run": "rk2", "seed": seed, "metrics": {"bleu": 19.0 + seed, "chrf": 40.0}}
        for seed in (1, 2)
    ]
    summaries = summarize(translation, results)
    table = runs_table(translation, summaries).splitlines()
    assert table[2].startswith("| residual (transformer-small) | `transformer-small` | 0 |")
    assert table[3].startswith("| RK2 | `ode-transformer-rk2` | 2 | 20.50 ± 0.71 |")
    code_row = "| RK2 as the released code computes it | `ode-transformer-rk2-code` | 0 |"
    assert table[4] == code_row + " not run yet | — | — | — |"
    claim = next(c for c in translation.claims if c.comparisons[0].worse == "rk2-code")
    assert judge_claim(claim, summaries).verdict == NOT_MEASURED


def test_declared_budgets_and_patience(tmp_path: Path) -> None:
    """Truncation: the one-layer runs and the two-layer residual stack go on until the valid loss
    stops improving (patience 5, validated every 100 updates) or 3000 updates; the two-layer RK
    stacks keep 600. `--budget` replaces every run's budget (patience stays declared)."""
    invocation = plan("truncation", runs_dir=tmp_path)
    long = {"residual-1layer", "rk2-1layer", "rk2-gated-1layer", "rk4-1layer", "residual-2layer"}
    for run in invocation.experiment.runs:
        config = train_config(invocation, run, 1)
        expected = (3000, 5) if run.name in long else (600, 0)
        assert (config.max_update, config.patience) == expected, run.name
        assert config.validate_interval_updates == 100
    assert "--budget" not in invocation.command()
    capped = plan("truncation", budget=50, runs_dir=tmp_path)
    assert {capped.budget_of(run) for run in capped.experiment.runs} == {50}
    assert "--budget 50" in capped.command()
    for name in ("translation", "coefficients", "extrapolation", "depth"):
        experiment = EXPERIMENTS[name]
        assert experiment.budget == 1000 and all(r.budget is None for r in experiment.runs)
        assert all(r.patience == 0 for r in experiment.runs)


def test_the_runs_vary_what_the_issue_says() -> None:
    truncation = EXPERIMENTS["truncation"]
    assert truncation.task == "language_model" and truncation.data == "bible:de-en"
    methods = {
        (load_recipe(run.recipe_name).encoder.method, run.encoder_layers)  # type: ignore[union-attr]
        for run in truncation.runs
    }
    assert methods == {(m, n) for m in ("euler", "rk2-gated", "heun", "rk4") for n in (1, 2)}
    gated = [r for r in truncation.runs if r.recipe_name == "ode-transformer-rk2-gated"]
    assert {r.encoder_layers for r in gated} == {1, 2}
    # the coefficient experiment trains Heun's stages under each policy: either the policy on
    # heun, or the catalog declaration that is that policy (rk2-gated, rk2-unit)
    heun = bf.catalog["heun"]
    for run, recipe in zip(
        EXPERIMENTS["coefficients"].runs,
        EXPERIMENTS["coefficients"].recipes().values(),
        strict=True,
    ):
        side = recipe.encoder
        assert side is not None
        trains = bf.catalog[side.method].with_coefficients(
            side.options.get("coefficients", "exact")
        )
        expected = heun.with_coefficients(run.name)
        assert (trains.A, trains.b, trains.parameters) == (
            expected.A,
            expected.b,
            expected.parameters,
        ), run.name
    extrapolation = EXPERIMENTS["extrapolation"]
    assert extrapolation.data == "bible:de-en:short2long"
    positions = {n: r.position for n, r in extrapolation.recipes().items()}
    assert positions == {"sinusoidal": "sinusoidal", "learned": "learned", "floater": "floater"}
    assert extrapolation.recipes()["learned"].max_len == 1024
    depth = EXPERIMENTS["depth"]
    assert {(r.recipe_name, r.encoder_layers) for r in depth.runs} == {
        (recipe, n)
        for recipe in ("transformer-small", "ode-transformer-rk2-gated", "ode-transformer-rk4")
        for n in (1, 2, 3, 6)
    }


def test_the_connections_experiment_trains_each_connection_at_the_small_preset(
    tmp_path: Path,
) -> None:
    """`butcherflow experiment connections`: residual, DLCL, DenseFormer, hyper-connections
    static/dynamic, mHC, PCformer on bible:de-en, three seeds each (paired by seed), the
    encoder's connections across depth varied and nothing else."""
    experiment = EXPERIMENTS["connections"]
    assert experiment.data == "bible:de-en" and experiment.task == "translation"
    assert seeds("connections") == dict.fromkeys(
        ("residual", "dlcl", "denseformer", "hc", "hc-dynamic", "mhc", "pcformer"), 3
    )
    assert {run.seeds for run in experiment.runs} == {(1, 2, 3)}  # the same seeds: paired
    encoders = {
        name: (recipe.encoder.method, recipe.encoder.options.get("coefficients"))  # type: ignore[union-attr]
        for name, recipe in experiment.recipes().items()
    }
    assert encoders == {
        "residual": ("euler", None),
        "dlcl": ("dlcl", None),
        "denseformer": ("denseformer-4", "learned"),
        "hc": ("hyper-connections-4", "learned"),
        "hc-dynamic": ("hyper-connections-4", "dynamic"),
        "mhc": ("hyper-connections-4", "sinkhorn"),
        "pcformer": ("pcformer", "learned"),
    }
    assert all(r.decoder.method == "euler" for r in experiment.recipes().values())  # type: ignore[union-attr]
    invocation = plan("connections", runs_dir=tmp_path)
    assert "experiment connections" in invocation.command()
    for run in experiment.runs:
        config = train_config(invocation, run, 2)
        assert (config.d_model, config.encoder_layers, config.max_update) == (128, 2, 1000)
        assert config.seed == 2 and config.data == "bible:de-en"


def test_the_small_preset_is_make_demos() -> None:
    """The CPU preset and the Makefile's demo target must not drift apart."""
    demo = (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    flags = dict(re.findall(r"--([a-z-]+) ([0-9.e-]+)", demo))
    small = PRESETS["small"]
    for field in ("d_model", "n_heads", "d_ffn", "encoder_layers", "decoder_layers"):
        assert int(flags[field.replace("_", "-")]) == getattr(small, field), field
    for field in ("vocab_size", "max_tokens", "warmup_updates"):
        assert int(flags[field.replace("_", "-")]) == getattr(small, field), field
    assert float(flags["lr"]) == small.lr and float(flags["dropout"]) == small.dropout
    base = PRESETS["base"]
    transformer_base = load_recipe("transformer-base")
    assert (base.d_model, base.n_heads, base.d_ffn) == tuple(
        transformer_base.sizes[k] for k in ("d_model", "n_heads", "d_ffn")
    )
    assert base.encoder_layers == transformer_base.encoder.layers == 6  # type: ignore[union-attr]


def test_macaron_matches_the_residual_model_at_the_preset(tmp_path: Path) -> None:
    """param_budget is applied at the preset's sizes, d_ffn included (not transformer-small's)."""
    invocation = plan("translation", sizes="small", runs_dir=tmp_path)
    macaron = train_config(invocation, invocation.experiment.run("macaron"), 1)
    residual = train_config(invocation, invocation.experiment.run("residual"), 1)
    assert macaron.d_ffn is None and residual.d_ffn == 512
    vocab = 4000
    matched = count_parameters(resolve_recipe(macaron, vocab), vocab)
    target = count_parameters(resolve_recipe(residual, vocab), vocab)
    assert abs(matched - target) / target < 0.005, (matched, target)
    recipe, budgeted = prepare_recipe(invocation.experiment.run("rk4"), PRESETS["small"], tmp_path)
    assert (recipe, budgeted) == ("ode-transformer-rk4", False)  # a catalog recipe: no file


def test_a_variant_is_validated_like_a_recipe_file() -> None:
    bad = Variant("x", "transformer-small", embedding={"max_len": 9})  # sinusoidal has no max
    with pytest.raises(DeclarationError, match=r"embedding\.max_len"):
        bad.recipe()
    tanh = Variant("rk2-tanh", "ode-transformer-rk2", encoder={"coefficients": "tanh"}).recipe()
    assert tanh.name == "rk2-tanh" and tanh.encoder.options["coefficients"] == "tanh"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"runs": (Run("a", "A", "transformer-small"), Run("a", "B", "dlcl"))}, "same name"),
        (
            {"claims": (Claim("p", "t", (Comparison("a", "nowhere", "bleu"),)),)},
            "'nowhere'",
        ),
        ({"task": "language_model"}, "perplexity"),
        ({"table": "pie"}, "'pie'"),
        ({"metric": "rouge"}, "'rouge'"),
        ({"budget": 0}, "budget"),
        ({"runs": (Run("a", "A", "transformer-small", seeds=(1, 1)),)}, "seeds"),
        ({"table": "grid"}, "column"),
        ({"runs": (Run("A b", "A", "transformer-small"),)}, "save dir"),
        ({"runs": (Run("a", "A", "transformer-small", budget=0),)}, "a.budget"),
        ({"runs": (Run("a", "A", "transformer-small", patience=-1),)}, "a.patience"),
        ({"validate_interval_updates": -1}, "validate_interval_updates"),
    ],
)
def test_bad_declarations_are_refused(changes: dict[str, Any], fragment: str) -> None:
    good = dict(
        name="x",
        title="x",
        analogue="x",
        data="bible:de-en",
        task="translation",
        runs=(Run("a", "A", "transformer-small"), Run("b", "B", "dlcl")),
        claims=(Claim("p", "t", (Comparison("a", "b", "bleu"),)),),
        budget=1,
        table="runs",
        metric="bleu",
        plot="points",
    )
    Experiment(**good)  # type: ignore[arg-type]
    with pytest.raises(DeclarationError) as info:
        Experiment(**{**good, **changes})  # type: ignore[arg-type]
    assert fragment in str(info.value)


# --- the verdict rule ----------------------------------------------------------------------------


def test_the_verdict_rule_on_constructed_numbers() -> None:
    # d = 1.0, s = stdev([20, 21, 22]) = 1.0 for the baseline: d > s needs more than one std
    assert judge([21.0, 22.0, 23.0], [20.0, 21.0, 22.0], True).text == WITHIN_NOISE
    clear = judge([23.0, 23.5, 24.0], [20.0, 21.0, 22.0], True)
    assert clear.text == SUPPORTED and clear.difference == pytest.approx(2.5)
    assert clear.spread == pytest.approx(1.0)  # the larger of 0.5 and 1.0
    assert judge([17.0, 18.0, 19.0], [20.0, 21.0, 22.0], True).text == NOT_SUPPORTED
    # perplexity: lower is better, the sign follows
    assert judge([100.0, 101.0, 102.0], [110.0, 111.0, 112.0], False).text == SUPPORTED
    assert judge([110.0, 111.0, 112.0], [100.0, 101.0, 102.0], False).text == NOT_SUPPORTED
    # one seed borrows the other side's spread; one seed on both sides has none
    assert judge([25.0], [20.0, 21.0, 22.0], True).text == SUPPORTED
    assert judge([21.5], [20.0, 21.0, 22.0], True).text == WITHIN_NOISE
    lonely = judge([25.0], [20.0], True)
    assert lonely.text == ONE_SEED and lonely.difference == 5.0 and lonely.spread is None
    assert judge([], [1.0], True).text == NOT_MEASURED
    # exactly one standard deviation is still noise
    assert judge([22.0], [20.0, 22.0], True).text == WITHIN_NOISE  # s = √2, d = 1
    with pytest.raises(ValueError, match="non-finite"):
        judge([math.nan], [1.0, 2.0], True)


def test_the_paired_rule_on_constructed_numbers() -> None:
    # seed-correlated: the means differ by less than the seeds' spread, every seed agrees
    a, b = {1: 19.3, 2: 18.3, 3: 20.2}, {1: 19.0, 2: 18.0, 3: 19.8}
    assert judge(list(a.values()), list(b.values()), True).text == WITHIN_NOISE
    paired = judge_paired(a, b, True)
    assert paired.text == SUPPORTED and paired.seeds == (1, 2, 3) and paired.positive == 3
    assert paired.differences == pytest.approx((0.3, 0.3, 0.4))
    assert paired.mean == pytest.approx(1 / 3) and paired.spread == pytest.approx(0.0577, 1e-3)
    # perplexity: lower is better, the sign follows
    assert judge_paired({1: 50.0, 2: 51.0}, {1: 52.0, 2: 54.0}, False).text == SUPPORTED
    assert judge_paired({1: 52.0, 2: 54.0}, {1: 50.0, 2: 51.0}, False).text == NOT_SUPPORTED
    # one seed carries the difference: every sign agrees but the mean is within one std
    assert judge_paired({1: 1.1, 2: 1.1, 3: 9.0}, {1: 1.0, 2: 1.0, 3: 1.0}, True).text == (
        PAIRED_WITHIN_NOISE
    )
    # the signs disagree, however large the mean
    disagree = judge_paired({1: 5.0, 2: 5.0, 3: 0.9}, {1: 1.0, 2: 1.0, 3: 1.0}, True)
    assert disagree.text == SEEDS_DISAGREE and disagree.positive == 2
    # only the seeds both sides have are paired
    few = judge_paired({1: 2.0, 2: 3.0}, {2: 1.0, 3: 0.0}, True)
    assert few.text == FEW_PAIRS and few.seeds == (2,) and few.mean == 2.0 and few.spread is None
    assert judge_paired({}, {1: 1.0}, True).text == NOT_MEASURED
    # a zero difference is not a win
    assert judge_paired({1: 1.0, 2: 2.0}, {1: 1.0, 2: 1.0}, True).text == SEEDS_DISAGREE
    with pytest.raises(ValueError, match="non-finite"):
        judge_paired({1: math.inf}, {1: 1.0}, True)


def test_the_paired_rule_decides_when_every_comparison_has_two_pairs() -> None:
    supported = judge_paired({1: 2.0, 2: 3.0}, {1: 1.5, 2: 2.6}, True)
    lonely = judge_paired({1: 2.0}, {1: 1.5, 2: 2.6}, True)
    unpaired = [judge([2.0, 3.0], [1.5, 2.6], True)]
    assert unpaired[0].text == WITHIN_NOISE
    assert decide(unpaired, [supported]) == (SUPPORTED, PAIRED)
    assert decide(unpaired * 2, [supported, lonely]) == (WITHIN_NOISE, UNPAIRED)
    assert decide([], []) == (NOT_MEASURED, UNPAIRED)


def test_a_claim_combines_its_comparisons() -> None:
    def v(text: str) -> Any:
        return judge([0.0], [0.0], True).__class__(text)

    assert combine([v(SUPPORTED), v(SUPPORTED)]) == SUPPORTED
    assert combine([v(SUPPORTED), v(NOT_SUPPORTED), v(WITHIN_NOISE)]) == NOT_SUPPORTED
    assert combine([v(SUPPORTED), v(WITHIN_NOISE)]) == WITHIN_NOISE
    assert combine([v(ONE_SEED), v(SUPPORTED)]) == ONE_SEED
    assert combine([v(NOT_MEASURED)]) == NOT_MEASURED
    assert combine([v(SUPPORTED), v(NOT_MEASURED)]).startswith("inconclusive: not every")


def test_mean_and_std_are_formatted_with_a_dash_for_one_seed() -> None:
    assert format_mean_std([20.0, 21.0, 22.0]) == "21.00 ± 1.00"
    assert format_mean_std([123.456], 1) == "123.5 ± —"
    assert format_mean_std([]) == "—"


# --- evaluating a finished run -------------------------------------------------------------------


def test_length_bins_cut_at_the_test_quartiles() -> None:
    sources = [" ".join(["w"] * n) for n in (8, 7, 6, 5, 4, 3, 2, 1)]
    references = [f"this is the reference sentence number {i} of eight" for i in range(8)]
    hypotheses = references[:4] + ["nothing alike"] * 4  # right for the long half only
    bins = length_bins(sources, references, hypotheses)
    assert [(b["low"], b["high"], b["n"]) for b in bins] == [
        (1, 2, 2),
        (3, 4, 2),
        (5, 6, 2),
        (7, 8, 2),
    ]
    assert [round(b["bleu"]) for b in bins] == [0, 0, 100, 100]
    ties = length_bins(["a b"] * 5 + ["a b c d e f"], ["x y"] * 6, ["x y"] * 6)
    assert [b["n"] for b in ties] == [5, 0, 0, 1] and ties[1]["bleu"] is None


def test_throughput_skips_the_window_after_a_resume(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    entries = [
        {"kind": "train", "train_tokens": 100, "tokens_per_s": 50.0},  # 2 s
        {"kind": "train", "train_tokens": 300, "tokens_per_s": 100.0},  # 2 s
        {"kind": "resume"},
        {"kind": "train", "train_tokens": 700, "tokens_per_s": 1.0},  # straddles the kill
        {"kind": "train", "train_tokens": 800, "tokens_per_s": 25.0},  # 4 s
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in entries))
    assert throughput(log) == pytest.approx((100 + 200 + 100) / (2 + 2 + 4))
    assert throughput(tmp_path / "missing.jsonl") is None


# --- end to end ----------------------------------------------------------------------------------

CLI = ["--sizes", "tiny", "--budget", "2", "--data", TINY_DATA, "--seeds", "1"]


def test_the_command_end_to_end_then_skips_then_extends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, runs = tmp_path / "docs", tmp_path / "runs"
    where = ["--out", str(out), "--runs-dir", str(runs)]
    assert main(["experiment", "extrapolation", *CLI, *where]) == 0
    assert "3 run(s) trained, 0 already done" in capsys.readouterr().out
    results = {}
    for name in ("sinusoidal", "learned", "floater"):
        path = runs / "extrapolation" / f"{name}-seed1" / "result.json"
        results[name] = json.loads(path.read_text())
        r = results[name]
        assert r["updates"] == 2 and r["budget"] == 2 and r["sizes"] == "tiny"
        assert r["evaluation"]["beam"] == 1 and r["evaluation"]["sentences"] == 30
        assert 0 <= r["metrics"]["bleu"] <= 100 and r["tokens_per_s"] > 0
        assert sum(b["n"] for b in r["bins"]) == 30 and len(r["bins"]) == 4
        assert r["positions"]["longest_train_source"] > 0
    assert results["learned"]["positions"]["max_len"] == 1024
    assert results["learned"]["positions"]["test_sources_cut"] == 0
    assert results["sinusoidal"]["positions"]["max_len"] is None
    assert (runs / "extrapolation" / "recipes" / "transformer-small-learned.toml").is_file()

    report = (out / "extrapolation.md").read_text()
    assert "| test BLEU / source length |" in report and "| learned |" in report
    assert "| FLOATER |" in report and "![" in report
    command = "butcherflow experiment extrapolation --budget 2 --sizes tiny --device auto"
    assert f"`{command} --seeds 1 --data {TINY_DATA} --out {out} --runs-dir {runs}`" in report
    assert "Budget: 2 updates per run" in report and "Machine: " in report
    bleu = format_mean_std([results["floater"]["metrics"]["bleu"]])
    assert f"| FLOATER | `floater` | 1 | {bleu} |" in report
    assert (out / "extrapolation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    index = (out / "index.md").read_text()
    assert "## How a verdict is decided" in index and ONE_SEED in index
    assert "FLOATER extrapolates best" in index and "[extrapolation](extrapolation.md)" in index
    assert "not run yet: `butcherflow experiment translation`" in index
    assert json.loads((out / "extrapolation.json").read_text())["command"].startswith(command)

    # a rerun skips the finished runs and rewrites only the reports
    stamp = (runs / "extrapolation" / "sinusoidal-seed1" / "result.json").stat().st_mtime_ns
    assert main(["experiment", "extrapolation", *CLI, *where]) == 0
    assert "0 run(s) trained, 3 already done" in capsys.readouterr().out
    assert (runs / "extrapolation" / "sinusoidal-seed1" / "result.json").stat().st_mtime_ns == stamp

    # a larger budget resumes every run from its checkpoint and evaluates it again
    outcome = run_experiment(
        "extrapolation",
        sizes="tiny",
        budget=3,
        data=TINY_DATA,
        seeds=[1],
        out=out,
        runs_dir=runs,
        echo=lambda line: None,
    )
    assert len(outcome.trained) == 3 and all(r["updates"] == 3 for r in outcome.results)
    log = read_log(runs / "extrapolation" / "learned-seed1" / "log.jsonl")
    assert [e["kind"] for e in log].count("resume") == 1
    assert "--budget 3" in (out / "extrapolation.md").read_text()


def test_a_language_model_experiment_with_seeds_gives_verdicts(tmp_path: Path) -> None:
    experiment = Experiment(
        name="lm-check",
        title="two blocks",
        analogue="a test",
        data=TINY_DATA,
        task="language_model",
        runs=(
            Run("euler-1", "Euler", "transformer-small", (1, 2), encoder_layers=1, column="1"),
            Run("rk4-1", "RK4", "ode-transformer-rk4", (1, 2), encoder_layers=1, column="1"),
        ),
        claims=(Claim("a paper", "RK4 wins", (Comparison("rk4-1", "euler-1", "ppl"),)),),
        budget=2,
        table="grid",
        metric="ppl",
        plot="grouped-points",
        x_label="layers",
    )
    lines: list[str] = []
    outcome = run_experiment(
        experiment,
        sizes="tiny",
        out=tmp_path / "docs",
        runs_dir=tmp_path / "runs",
        echo=lines.append,
    )
    # Seed-major: every run's first seed before any second seed.
    order = [line.split()[1].split("/")[1].rstrip(":") for line in lines if "training" in line]
    assert order == ["euler-1-seed1", "rk4-1-seed1", "euler-1-seed2", "rk4-1-seed2"]
    ppl = {(r["run"], r["seed"]): r["metrics"]["ppl"] for r in outcome.results}
    assert len(ppl) == 4 and all(math.isfinite(v) and v > 1 for v in ppl.values())
    rk4, euler = [ppl[("rk4-1", s)] for s in (1, 2)], [ppl[("euler-1", s)] for s in (1, 2)]
    expected = judge(rk4, euler, higher_is_better=False)
    report = (tmp_path / "docs" / "lm-check.md").read_text()
    assert f"| RK4 | {format_mean_std(rk4, 1)} |" in report
    paired = judge_paired(dict(enumerate(rk4, 1)), dict(enumerate(euler, 1)), False)
    assert (
        f"**Verdict: {paired.text}** (decided by the paired rule; unpaired: {expected.text}; "
        f"paired: {paired.text})." in report
    )
    assert expected.spread is not None and len(paired.differences) == 2
    assert outcome.figure is not None and outcome.figure.is_file()
    run_dir = tmp_path / "runs" / "lm-check" / "rk4-1-seed2"
    config = json.loads((run_dir / "config.json").read_text())
    assert config["task"] == "language_model" and config["seed"] == 2
    assert run_sizes(read_recipe(run_dir))["encoder_layers"] == 1  # the sizes: in recipe.toml


def test_learned_positions_shorter_than_the_test_sources_are_reported(tmp_path: Path) -> None:
    short = Variant(
        "learned-8", "transformer-small", embedding={"position": "learned", "max_len": 8}
    )
    experiment = dataclasses.replace(
        EXPERIMENTS["extrapolation"],
        name="short-positions",
        runs=(Run("learned", "learned, 8 positions", short),),
        claims=(),
    )
    outcome = run_experiment(
        experiment,
        sizes="tiny",
        budget=1,
        data=TINY_DATA,
        out=tmp_path / "docs",
        runs_dir=tmp_path / "runs",
        echo=lambda line: None,
    )
    positions = outcome.results[0]["positions"]
    assert positions["max_len"] == 8 and positions["test_sources_cut"] > 0
    assert positions["test_sources_cut"] <= 30
    assert f"| 8 ({positions['test_sources_cut']}) |" in outcome.report.read_text()


def _one_language_model(**run: Any) -> Experiment:
    return Experiment(
        name="lm-one",
        title="one block",
        analogue="a test",
        data=TINY_DATA,
        task="language_model",
        runs=(
            Run("euler", "Euler", "transformer-small", (1,), encoder_layers=1, column="1", **run),
        ),
        claims=(),
        budget=2,
        table="grid",
        metric="ppl",
        plot="grouped-points",
        x_label="layers",
        validate_interval_updates=1,
    )


def test_a_result_in_the_committed_record_is_carried_over_not_retrained(tmp_path: Path) -> None:
    """The save dirs are gone (runs/ is not committed) but OUT/NAME.json holds the same run:
    the runner keeps that result and the report says so; any difference retrains."""
    out, runs = tmp_path / "docs", tmp_path / "runs"
    experiment = _one_language_model()
    where: dict[str, Any] = {"sizes": "tiny", "out": out, "echo": lambda line: None}
    first = run_experiment(experiment, runs_dir=runs, threads=1, **where)
    assert first.trained == ["euler-seed1"] and first.carried == []
    result = first.results[0]
    assert result["threads"] == 1 and result["wall_seconds"] > 0 and result["sessions"] == 1
    assert result["stopped"] == "max_update 2 reached" and result["updates"] == 2
    assert result["code"].startswith("butcherflow ")  # the version, and a checkout's commit
    code = f"- Code that trained the runs: {result['code']}, 1 of 1 results."
    assert code in (out / "lm-one.md").read_text()

    lines: list[str] = []
    again = run_experiment(
        experiment, runs_dir=tmp_path / "gone", **{**where, "echo": lines.append}
    )
    assert again.trained == [] and again.carried == ["euler-seed1"]
    assert again.results == [result] and not (tmp_path / "gone" / "lm-one" / "euler-seed1").exists()
    assert any("carried over from" in line and result["finished"] in line for line in lines)
    report = (out / "lm-one.md").read_text()
    assert "| carried over from the record |" in report
    assert f"1 of 1 results, finished {result['finished'][:10]}" in report
    assert json.loads((out / "lm-one.json").read_text())["carried_over"] == ["euler-seed1"]

    # another budget, another patience or another preset is another run: trained, not carried
    for changes in ({"budget": 3}, {"experiment": _one_language_model(patience=2)}):
        args = {"experiment": experiment, **changes}
        outcome = run_experiment(
            runs_dir=tmp_path / f"r{len(changes)}{id(changes)}", **args, **where
        )
        assert outcome.carried == [] and outcome.trained == ["euler-seed1"]
    record = json.loads((out / "lm-one.json").read_text())
    record["preset"]["lr"] = 1.0  # the record was made with other hyper-parameters
    (out / "lm-one.json").write_text(json.dumps(record))
    other = run_experiment(experiment, runs_dir=tmp_path / "p", **where)
    assert other.carried == [] and other.trained == ["euler-seed1"]


def test_a_signal_stops_the_experiment_and_the_stopped_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM during a run's first update: the loop commits that update, the experiment stops
    (no result.json for a model trained for half its budget, no next run), and the rerun resumes
    it to its budget. A result.json that an earlier runner wrote for a stopped run is resumed
    too, not reported."""
    experiment = dataclasses.replace(
        _one_language_model(),
        runs=(dataclasses.replace(_one_language_model().runs[0], seeds=(1, 2)),),
    )
    where: dict[str, Any] = {"sizes": "tiny", "out": tmp_path / "docs", "echo": lambda line: None}
    runs = tmp_path / "runs"
    real = loop.forward_backward

    def signalled(*args: Any, **kwargs: Any) -> Any:
        os.kill(os.getpid(), signal.SIGTERM)  # the handler only records it
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "forward_backward", signalled)
    with pytest.raises(Interrupted, match=r"interrupted \(SIGTERM\) at update 1 of .*euler-seed1"):
        run_experiment(experiment, runs_dir=runs, threads=1, **where)
    first = runs / "lm-one" / "euler-seed1"
    assert read_commit(first, "checkpoint_last")["update"] == 1  # type: ignore[index]
    assert not (first / "result.json").exists() and not (runs / "lm-one" / "euler-seed2").exists()
    assert not (tmp_path / "docs" / "lm-one.json").exists()

    # what the runner wrote before this fix: a result for the stopped run
    stale = {
        "experiment": "lm-one",
        "run": "euler",
        "seed": 1,
        "recipe": "transformer-small",
        "budget": 2,
        "patience": 0,
        "data": TINY_DATA,
        "sizes": "tiny",
        "updates": 1,
        "stopped": "interrupted",
    }
    (first / "result.json").write_text(json.dumps(stale))
    monkeypatch.setattr(loop, "forward_backward", real)
    outcome = run_experiment(experiment, runs_dir=runs, threads=1, **where)
    assert outcome.trained == ["euler-seed1", "euler-seed2"] and outcome.skipped == []
    resumed = outcome.results[0]
    assert (resumed["updates"], resumed["sessions"]) == (2, 2)
    assert resumed["stopped"] == "max_update 2 reached"


def test_the_experiment_command_exits_143_on_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def stopped(*args: Any, **kwargs: Any) -> Any:
        raise Interrupted(signal.SIGTERM, 3, "runs/experiments/coefficients/exact-seed1")

    monkeypatch.setattr("butcherflow.cli.pipeline.run_experiment", stopped)
    assert main(["experiment", "coefficients", "--out", str(tmp_path)]) == 143
    line = capsys.readouterr().err.strip()
    assert line == (
        "experiment coefficients: interrupted (SIGTERM) at update 3 of "
        "runs/experiments/coefficients/exact-seed1; its checkpoint_last is committed: rerun "
        "the same command to resume"
    )


def test_a_run_with_patience_is_evaluated_at_its_best_checkpoint(tmp_path: Path) -> None:
    outcome = run_experiment(
        _one_language_model(budget=4, patience=1),
        sizes="tiny",
        out=tmp_path / "docs",
        runs_dir=tmp_path / "runs",
        echo=lambda line: None,
    )
    result = outcome.results[0]
    save_dir = tmp_path / "runs" / "lm-one" / "euler-seed1"
    best = read_commit(save_dir, "checkpoint_best")
    assert best is not None and result["evaluation"]["checkpoint"] == "best"
    assert result["evaluation"]["update"] == result["best_update"] == best["update"]
    assert result["metrics"]["ppl"] == best["valid_ppl"]
    assert (result["budget"], result["patience"], result["validate_interval_updates"]) == (4, 1, 1)
    assert result["stopped"] == read_log(save_dir / "log.jsonl")[-1]["reason"]
    report = (tmp_path / "docs" / "lm-one.md").read_text()
    assert f"| 4, patience 1 | {result['updates']} | best (update {best['update']}) |" in report
    assert "Budget: 4 updates or patience 1 per run" in report
    assert "validations, every 1 updates" in report


def test_report_only_rebuilds_the_pages_from_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, runs = tmp_path / "docs", tmp_path / "runs"
    run_experiment(_one_language_model(), sizes="tiny", out=out, runs_dir=runs, echo=print)
    page = (out / "lm-one.md").read_text()
    shutil.rmtree(runs)
    (out / "lm-one.md").unlink()
    (out / "index.md").unlink()
    outcome = write_reports(_one_language_model(), out)
    assert (out / "lm-one.md").read_text() == page and outcome.trained == []
    assert (out / "index.md").is_file() and not runs.exists()
    capsys.readouterr()
    assert main(["experiment", "depth", "--report-only", "--out", str(out)]) == 1
    assert "depth.json does not exist" in capsys.readouterr().err
    assert main(["experiment", "all", "--out", str(out)]) == 1  # 'all' trains nothing
    assert "--report-only" in capsys.readouterr().err


def test_figures_carry_the_command_that_regenerates_them(tmp_path: Path) -> None:
    from PIL import Image

    experiment = dataclasses.replace(
        _one_language_model(),
        runs=(
            Run("euler", "Euler", "transformer-small", (1, 2), encoder_layers=1, column="1"),
            Run("rk4", "RK4", "ode-transformer-rk4", (1, 2), encoder_layers=1, column="1"),
        ),
        claims=(Claim("a paper", "RK4 wins", (Comparison("rk4", "euler", "ppl"),)),),
    )
    out = tmp_path / "docs"
    run_experiment(experiment, sizes="tiny", out=out, runs_dir=tmp_path / "r", echo=print)
    command = f"butcherflow experiment lm-one --report-only --out {out}"
    page = (out / "lm-one.md").read_text()
    assert "![one block: paired by seed](lm-one-paired.png)" in page
    assert page.count(f"rebuilt from `lm-one.json` by `{command}`") == 2
    for name in ("lm-one.png", "lm-one-paired.png"):
        with Image.open(out / name) as image:
            assert image.info["Description"] == f"regenerate: {command}"


def test_the_readme_summary_is_written_between_its_markers(tmp_path: Path) -> None:
    out = tmp_path / "docs"
    run_experiment(_one_language_model(), sizes="tiny", out=out, runs_dir=tmp_path / "r")
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{README_START}\nstale\n{README_END}\nafter\n")
    assert (
        main(["experiment", "all", "--report-only", "--out", str(out), "--readme", str(readme)])
        == 0
    )
    text = readme.read_text()
    assert text.startswith("# x\n\nbefore\n") and text.endswith(f"{README_END}\nafter\n")
    assert "stale" not in text and readme_summary(out, EXPERIMENTS) in text
    readme.write_text("no markers\n")
    with pytest.raises(ButcherflowError, match=re.escape(f"README.md has no '{README_START}'")):
        write_readme_summary(readme, out, EXPERIMENTS)


# --- bad inputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "fragments"),
    [
        (["experiment", "truncaton"], ["'truncaton'", "did you mean truncation", "depth"]),
        (["experiment", "depth", "--budget", "0"], ["--budget", "0", ">= 1"]),
        (["experiment", "depth", "--budget", "-5"], ["--budget", "-5"]),
        (["experiment", "depth", "--sizes", "huge"], ["--sizes", "'huge'", "small, base"]),
        (["experiment", "depth", "--seeds", "1", "1"], ["--seeds", "(1, 1)", "distinct"]),
        (["experiment", "depth", "--device", "tpu"], ["--device", "'tpu'", "cuda"]),
        (["experiment", "depth", "--threads", "0"], ["--threads", "0", ">= 1"]),
    ],
)
def test_bad_options_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], fragments: list[str]
) -> None:
    where = ["--out", str(tmp_path / "docs"), "--runs-dir", str(tmp_path / "runs")]
    assert main(argv + where) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    for fragment in fragments:
        assert fragment in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "docs").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_a_gpu_fails_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match="CUDA is not available"):
        run_experiment("depth", device="cuda", out=tmp_path / "d", runs_dir=tmp_path / "r")
    assert not any(tmp_path.iterdir())


def test_bad_options_raise_the_library_errors() -> None:
    with pytest.raises(UnknownNameError, match="experiments: truncation, translation"):
        plan("nope")
    with pytest.raises(DeclarationError, match="--budget"):
        plan("depth", budget=True)  # type: ignore[arg-type]
    with pytest.raises(DeclarationError, match="--data"):
        plan("depth", data=" ")
    with pytest.raises(ButcherflowError):
        plan("depth", seeds=[])
