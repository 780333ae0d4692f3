"""`butcherflow bench train`'s FLOPs, MFU and memory: the FLOP count of the compiled blocks
against PyTorch's own counter, the table of device peaks, and the section a run writes.

The counts are checked against `torch.utils.flop_counter.FlopCounterMode`, which nobody here
wrote: with SDPA's math backend it sees every matrix product, attention's included, so it
checks the quadratic part and the memory's key/value projections; the blocks' count is higher
only by the elementwise axpys of the linear combinations (which the counter ignores).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from tiny_run import TINY
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import butcherflow as bf
from butcherflow.assemble import LanguageModel, load_recipe
from butcherflow.bench import read_section, table_rows
from butcherflow.bench.block import TorchTransformer
from butcherflow.bench.train.hardware import peak_of
from butcherflow.bench.train.section import run_train_bench, train_section_key
from butcherflow.bench.train.throughput import RECIPES, TrainRow
from butcherflow.bench.train.timing import forward_flops, transformer_twin
from butcherflow.cli import main
from butcherflow.data import Batch

VOCAB = 100
# every block family but FLOATER (its position solves are not counted: bench.train.throughput)
COUNTED = [
    "transformer-small",
    "ode-transformer-rk4",
    "ode-transformer-rk2-gated",
    "macaron",
    "leapfrog",
    "dlcl",
    "neural-ode",
]


def small(name: str) -> bf.Recipe:
    recipe = load_recipe(name)
    sizes = {**recipe.sizes, "d_model": 64, "n_heads": 4, "d_ffn": 256, "dropout": 0.0}
    recipe = replace(recipe, sizes=sizes, param_budget=None)
    assert recipe.encoder is not None and recipe.decoder is not None
    return replace(
        recipe, encoder=replace(recipe.encoder, layers=2), decoder=replace(recipe.decoder, layers=2)
    )


def batch() -> Batch:
    """Source 11 and target 7 tokens per row, no padding (the counter counts every position)."""
    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, VOCAB, (3, 11), generator=g)
    prev = torch.randint(4, VOCAB, (3, 7), generator=g)
    return Batch(src, prev, prev, prev.numel(), torch.arange(3))


def torch_count(model: torch.nn.Module, b: Batch, backward: bool = False) -> int:
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        out = model(b.src, b.prev_output)
        if backward:
            out.sum().backward()
    return int(counter.get_total_flops())


@pytest.mark.parametrize("name", COUNTED)
def test_the_block_count_matches_torchs_flop_counter(name: str) -> None:
    torch.manual_seed(0)
    model = bf.Seq2Seq(small(name), VOCAB)
    b = batch()
    ours, theirs = forward_flops(model, b, pad=0), torch_count(model, b)
    assert ours is not None
    assert 1.0 <= ours / theirs < 1.005, (ours, theirs)  # the axpys, uncounted by torch
    # the training step is 3 x the forward: the backward computes two products per forward one
    assert torch_count(model, b, backward=True) == 3 * theirs


def test_torch_nn_transformer_is_counted_as_its_pre_norm_twin() -> None:
    recipe = small("ode-transformer-rk4")
    twin = transformer_twin(recipe, VOCAB, pad=0)
    assert twin.encoder[0].method.name == "euler"
    torch.manual_seed(0)
    with pytest.warns(UserWarning, match="norm_first"):  # nested tensors: torch's own note
        theirs = TorchTransformer(twin)
    b = batch()
    ours = forward_flops(twin, b, pad=0)
    assert ours is not None
    assert 1.0 <= ours / torch_count(theirs, b) < 1.005


def test_padding_is_not_counted() -> None:
    model = bf.Seq2Seq(small("transformer-small"), VOCAB)
    b = batch()
    padded_src = b.src.clone()
    padded_src[0, 6:] = 0
    fewer = forward_flops(model, Batch(padded_src, b.prev_output, b.target, 21, b.indices), 0)
    full = forward_flops(model, b, 0)
    assert fewer is not None and full is not None and fewer < full


def test_an_adaptive_block_has_no_count() -> None:
    recipe = small("neural-ode")
    assert recipe.encoder is not None
    adaptive = replace(recipe, encoder=replace(recipe.encoder, method="neural-ode-dopri5"))
    assert forward_flops(bf.Seq2Seq(adaptive, VOCAB), batch(), 0) is None
    row = TrainRow("x", 1, 100, 2.0, None)
    assert row.tflops is None and row.mfu(peak_of("NVIDIA H100 80GB HBM3")) is None


@pytest.mark.parametrize(
    ("name", "product", "tflops"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM", 989.0),
        ("NVIDIA H100 PCIe", "H100 PCIe", 756.0),
        ("NVIDIA H100 NVL", "H100 NVL", 835.0),
        ("NVIDIA H200", "H200 SXM", 989.0),
        ("NVIDIA A100-SXM4-80GB", "A100", 312.0),
        ("NVIDIA A100 80GB PCIe", "A100", 312.0),
        ("NVIDIA L40S", "L40S", 362.0),
        ("NVIDIA L40", "L40", 181.0),
        ("NVIDIA L4", "L4", 121.0),
        ("NVIDIA A10", "A10", 125.0),
        ("Tesla V100-SXM2-16GB", "V100 SXM2", 125.0),
        ("Tesla V100-PCIE-32GB", "V100 PCIe", 112.0),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090", 165.2),
        ("NVIDIA GeForce RTX 3090", "GeForce RTX 3090", 71.0),
    ],
)
def test_device_names_find_their_peak(name: str, product: str, tflops: float) -> None:
    peak = peak_of(name)
    assert peak is not None and (peak.name, peak.tflops) == (product, tflops)
    assert peak.precision == ("fp16" if "V100" in name else "bf16")


@pytest.mark.parametrize("name", ["NVIDIA A10G", "NVIDIA GeForce RTX 3090 Ti", "AMD EPYC"])
def test_unlisted_devices_have_no_peak(name: str) -> None:
    assert peak_of(name) is None


def test_mfu_is_the_achieved_rate_over_the_peak() -> None:
    row = TrainRow("x", 1, tokens=1000, seconds=2.0, flops=2_000 * 10**12)
    peak = peak_of("NVIDIA A100-SXM4-40GB")
    assert row.tflops == 1000.0 and row.mfu(peak) == pytest.approx(1000.0 / 312.0)
    assert row.mfu(None) is None


def test_each_configuration_writes_its_own_section() -> None:
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    assert train_section_key(cpu, False, RECIPES) == "train"
    assert train_section_key(cpu, False, ["macaron"]) == "train"
    assert train_section_key(cuda, True, ["floater"]) == "train-cuda-compiled-floater"
    assert train_section_key(cpu, True, RECIPES) == "train-compiled-" + "+".join(RECIPES)
    assert train_section_key(cuda, False, ["macaron", "floater"]) == "train-cuda"


def _dynamo_only(monkeypatch: pytest.MonkeyPatch) -> list[torch.nn.Module]:
    """torch.compile as dynamo alone (no inductor C++ compilation, to keep the tests short),
    taken to compile here; returns the list of the models it compiled."""
    import butcherflow.devices as devices

    compile_, compiled = torch.compile, []

    def dynamo(model: torch.nn.Module, **options: object) -> object:
        compiled.append(model)
        return compile_(model, **{**options, "backend": "eager"})  # type: ignore[call-overload]

    monkeypatch.setattr(torch, "compile", dynamo)
    monkeypatch.setattr(devices, "compile_problem", lambda device_type: None)
    return compiled


def test_the_section_has_flops_mfu_and_memory_and_compiled_vs_eager(
    benchmarks_md: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _dynamo_only(monkeypatch)
    rows = run_train_bench(
        str(benchmarks_md),
        "butcherflow bench train (test)",
        data=f"{TINY}:de-en",
        recipes=("macaron",),
        vocab_size=200,
        max_tokens=512,
        updates=2,
        warmup=1,
        compile=True,
        compare_eager=True,
        sizes={"d_model": 32, "n_heads": 2, "d_ffn": 64, "encoder_layers": 1, "decoder_layers": 1},
    )
    names = [r.name for r in rows]
    reference = "torch.nn.Transformer (32/2/64, 1+1 layers)"  # macaron's budget, its d_ffn
    assert names == ["macaron", reference, "macaron (eager)", reference + " (eager)"]
    by_name = {r.name: r for r in rows}
    assert by_name["macaron"].eager == "macaron (eager)"
    assert by_name["macaron"].reference == reference
    assert abs(rows[0].parameters - rows[1].parameters) / rows[1].parameters < 0.01
    assert all(r.flops is not None and r.flops > 0 and r.memory is None for r in rows)
    text = benchmarks_md.read_text()
    section = text[text.index("bench:train-compiled-macaron:start") :]
    assert "| MFU |" in section and "MFU n/a on a CPU" in section and "peak resident set" in section
    assert "kept" in text  # the other section stays


def test_every_timed_shape_was_seen_by_its_model_before_the_timing(
    benchmarks_md: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shape-keyed caches (cuDNN attention plans, compiled graphs) must be warm for every model,
    not only for whichever model met a batch's shapes first in a turn: each model first takes
    one step on a batch of each distinct shape among its timed batches, and only then the timed
    steps; with buckets the warm-up is shorter than the timed pass."""
    import butcherflow.bench.train.timing as timing

    calls: list[tuple[int, tuple[int, ...]]] = []
    real = timing.forward_backward

    def spy(model: torch.nn.Module, batches: list[Batch], **kwargs: object) -> tuple[float, float]:
        calls.append((id(model), (*batches[0].src.shape, batches[0].prev_output.shape[1])))
        return real(model, batches, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(timing, "forward_backward", spy)
    updates, models = 6, 2
    run_train_bench(
        str(benchmarks_md),
        "butcherflow bench train (test)",
        data=f"{TINY}:de-en",
        recipes=("transformer-small",),
        vocab_size=200,
        max_tokens=512,
        updates=updates,
        buckets="1.25",
        sizes={"d_model": 32, "n_heads": 2, "d_ffn": 64, "encoder_layers": 1, "decoder_layers": 1},
    )
    timed = calls[-updates * models :]
    warm = calls[: -updates * models]
    assert len(warm) < len(timed)  # bucketed: fewer shapes than batches
    for model in {m for m, _ in calls}:
        shapes = [shape for m, shape in warm if m == model]
        assert sorted(shapes) == sorted(set(shapes)) == sorted({s for m, s in timed if m == model})
    shown = f"{updates} timed updates in {len(warm) // models} distinct batch shapes"
    assert shown in benchmarks_md.read_text()  # the section says how many


def test_compare_buckets_times_copies_on_unbucketed_batches(benchmarks_md: Path) -> None:
    rows = run_train_bench(
        str(benchmarks_md),
        "butcherflow bench train (test)",
        data=f"{TINY}:de-en",
        recipes=("transformer-small",),
        vocab_size=200,
        max_tokens=512,
        updates=2,
        buckets="1.25",
        compare_buckets=True,
        sizes={"d_model": 32, "n_heads": 2, "d_ffn": 64, "encoder_layers": 1, "decoder_layers": 1},
    )
    reference = "torch.nn.Transformer (32/2/64, 1+1 layers)"
    names = ["transformer-small", reference]
    assert [r.name for r in rows] == [*names, *(n + " (no buckets)" for n in names)]
    assert rows[0].unbucketed == "transformer-small (no buckets)"
    assert rows[2].reference == reference + " (no buckets)"
    assert rows[0].parameters == rows[2].parameters and rows[0].tokens != rows[2].tokens
    section = read_section(benchmarks_md.read_text(), "train-buckets") or ""
    assert "Bucketed / unbucketed target tokens/s" in section and "--buckets 1.25" in section


def test_bench_train_refuses_unknown_sizes_and_eager_without_compile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "train", "--sizes", "huge"]) == 1
    assert "--sizes" in capsys.readouterr().err
    assert main(["bench", "train", "--compare-eager"]) == 1
    assert "--compile" in capsys.readouterr().err
    assert main(["bench", "train", "--compare-buckets", "--buckets", "off"]) == 1
    assert "'--buckets'" in capsys.readouterr().err
    assert main(["bench", "train", "--buckets", "0.5"]) == 1
    assert "not a bucket ladder" in capsys.readouterr().err


def test_profile_writes_a_trace_per_model_and_names_where_the_time_goes(
    benchmarks_md: Path, tmp_path: Path
) -> None:
    """`--profile DIR`: one more step per model under torch.profiler; the trace is gzipped
    Chrome JSON with events in it, and the section lists each model's largest operators."""
    folder = tmp_path / "profile"
    rows = run_train_bench(
        str(benchmarks_md),
        "butcherflow bench train (test)",
        data=f"{TINY}:de-en",
        recipes=("transformer-small",),
        vocab_size=200,
        max_tokens=512,
        updates=1,
        warmup=1,
        sizes={"d_model": 32, "n_heads": 2, "d_ffn": 64, "encoder_layers": 1, "decoder_layers": 1},
        profile=str(folder),
    )
    assert [r.name for r in rows] == [
        "transformer-small",
        "torch.nn.Transformer (32/2/64, 1+1 layers)",
    ]
    trace = json.loads(gzip.decompress((folder / "transformer-small.json.gz").read_bytes()))
    assert any(event.get("name") == "aten::mm" for event in trace["traceEvents"])
    table = (folder / "torch.nn.Transformer_32_2_64_1_1_layers.txt").read_text()
    assert "Self CPU" in table
    assert all(0 < h.share <= 1 for r in rows for h in r.hotspots) and rows[0].hotspots
    section = benchmarks_md.read_text()
    assert f"--profile {folder}" in section
    assert f"- transformer-small: `{rows[0].hotspots[0].name}`" in section


def test_a_decoder_only_recipe_is_timed_beside_the_residual_lm(
    benchmarks_md: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench train --recipes lm-mhc --compile`: the stack compiled block by block, beside
    `lm-residual` at its sizes compiled alike, with its ratio in the "vs lm-residual" column."""
    compiled = _dynamo_only(monkeypatch)
    rows = run_train_bench(
        str(benchmarks_md),
        "butcherflow bench train (test)",
        data=f"{TINY}:de-en",
        recipes=("lm-mhc",),
        vocab_size=200,
        max_tokens=512,
        updates=2,
        compile=True,
        sizes={"d_model": 32, "n_heads": 2, "d_ffn": 64, "decoder_layers": 1},
    )
    reference = "lm-residual (32/2/64, 1 layers)"
    # one graph per block (`assemble.compile_blocks`), one block in each model
    assert len(compiled) == 2 and not any(isinstance(m, LanguageModel) for m in compiled)
    assert [(r.name, r.reference) for r in rows] == [("lm-mhc", reference), (reference, None)]
    assert all(r.flops is not None and r.flops > 0 for r in rows)
    section = read_section(benchmarks_md.read_text(), "train-compiled-lm-mhc")
    assert section is not None
    row = table_rows(section)[0]
    assert row["model"] == "lm-mhc"
    assert row["vs lm-residual"] == f"{rows[0].tokens_per_s / rows[1].tokens_per_s:.3f}"
