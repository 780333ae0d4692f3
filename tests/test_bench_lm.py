"""`butcherflow bench train --task language_model`: the nanoGPT-style reference is a causal GPT
of the recipe's sizes, and both models are timed on the same packed batches."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import TINY
from torch import nn

from butcherflow.assemble import LanguageModel, Recipe, load_recipe
from butcherflow.bench import table_rows
from butcherflow.bench.train.lm import GPT, LMRow, run_lm_bench
from butcherflow.cli import main

SIZES = {"d_model": 16, "n_heads": 2, "d_ffn": 32, "dropout": 0.0}
VOCAB, BLOCK = 50, 12


def _recipe() -> Recipe:
    recipe = load_recipe("lm-residual")
    assert recipe.decoder is not None
    recipe = replace(recipe, sizes={**recipe.sizes, **SIZES}, param_budget=None)
    return replace(recipe, decoder=replace(recipe.decoder, layers=2))


def _tiny_bench(benchmarks_md: Path, updates: int, **options: Any) -> list[LMRow]:
    """`run_lm_bench` on the tiny corpus at tiny sizes, one layer, 16-token windows."""
    return run_lm_bench(
        str(benchmarks_md),
        "butcherflow bench train --task language_model (test)",
        data=f"{TINY}:de-en",
        vocab_size=200,
        max_tokens=64,
        tokens_per_sample=16,
        updates=updates,
        sizes={**SIZES, "decoder_layers": 1},
        **options,
    )


def test_the_reference_has_the_recipes_parameters_and_a_learned_position_table() -> None:
    recipe = _recipe()
    ours = LanguageModel(recipe, VOCAB)
    theirs = GPT(recipe, VOCAB, BLOCK)
    count = sum(p.numel() for p in ours.parameters())
    # the same blocks, norms and tied embedding; nanoGPT learns its positions, the recipe's are
    # sinusoidal (no parameters)
    assert sum(p.numel() for p in theirs.parameters()) == count + BLOCK * SIZES["d_model"]


def test_the_reference_is_initialised_as_nanogpt() -> None:
    """N(0, 0.02²) weights, N(0, 0.02² / 2L) residual projections, zero biases: with torch's
    defaults the tied logits are spread enough for subnormal gradients (a 14× slower CPU step)."""
    torch.manual_seed(0)
    model = GPT(_recipe(), 4000, BLOCK)
    block = model.h[0]
    spread = {
        "wte": model.wte.weight.std().item(),
        "c_attn": block.c_attn.weight.std().item(),
        "c_proj": block.c_proj.weight.std().item() * math.sqrt(2 * len(model.h)),
        "mlp.2": block.mlp[2].weight.std().item() * math.sqrt(2 * len(model.h)),
    }
    biases = [m.bias for m in model.modules() if isinstance(m, nn.Linear) and m.bias is not None]
    zero = all(not b.any() for b in biases)
    assert zero and all(abs(s - 0.02) < 0.004 for s in spread.values()), (zero, spread)


def test_the_reference_is_causal() -> None:
    torch.manual_seed(0)
    model = GPT(_recipe(), VOCAB, BLOCK).eval()
    ids = torch.randint(0, VOCAB, (1, BLOCK))
    changed = ids.clone()
    changed[0, 7:] = (ids[0, 7:] + 1) % VOCAB
    with torch.no_grad():
        a, b = model(ids), model(changed)
    assert torch.equal(a[0, :7], b[0, :7]) and not torch.allclose(a[0, 7:], b[0, 7:])


def test_both_models_train_on_the_same_packed_batches(benchmarks_md: Path) -> None:
    rows = _tiny_bench(benchmarks_md, updates=3)
    assert [r.name for r in rows] == ["lm-residual", "nanoGPT-style GPT (16/2/32, 1 layer)"]
    assert 0 < rows[0].tokens == rows[1].tokens <= 3 * 64  # four 16-token windows a batch
    text = benchmarks_md.read_text()
    section = text[text.index("bench:train-lm:start") :]
    table = table_rows(section)
    assert [row["vs nanoGPT-style GPT"] for row in table][1] == "1.000"
    assert "16-token windows across lines" in section and "padding 0.00%" in section
    assert "kept" in text  # the other section stays


def test_the_language_model_bench_refuses_a_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "train", "--task", "language_model", "--profile", "p"]) == 1
    err = capsys.readouterr().err
    assert "--profile" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_compiled_models_are_timed_in_a_section_of_their_own(benchmarks_md: Path) -> None:
    """Issue 38: `bench train --task language_model --compile` times lm-mhc's fused stack and
    the GPT, each compiled block by block, beside the eager section."""
    rows = _tiny_bench(benchmarks_md, updates=2, recipes=("lm-mhc",), compile=True)
    assert rows[0].tokens == rows[1].tokens > 0
    section = benchmarks_md.read_text().split("bench:train-lm-compiled:start")[1]
    assert "torch.compile per block" in section and "| lm-mhc |" in section


def test_where_it_cannot_compile_the_eager_rows_keep_the_eager_section(
    benchmarks_md: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--compile` without a working inductor runs eagerly, saying so, and writes the eager
    section: the compiled rows on the page stay what compiled models measured."""
    import butcherflow.devices as devices

    monkeypatch.setattr(devices, "compile_problem", lambda device_type: "no compiler here")
    _tiny_bench(benchmarks_md, updates=1, compile=True)
    text = benchmarks_md.read_text()
    assert "bench:train-lm:start" in text and "train-lm-compiled" not in text
