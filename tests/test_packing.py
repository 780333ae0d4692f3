"""A language model's data as context windows (fairseq's `--tokens-per-sample` and
`--sample-break-mode`), and the task object that chooses it: defaults, refusals."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tiny_run import TINY

from butcherflow.assemble import load_recipe, recipe_to_toml
from butcherflow.data import (
    TokenBlocks,
    Vocabulary,
    batch_shapes,
    collate,
    load_corpus,
    make_batches,
    pack_lines,
    padding_fraction,
)
from butcherflow.data.buckets import DEFAULT_RATIO
from butcherflow.errors import DeclarationError
from butcherflow.tasks import LANGUAGE_MODEL, TOKENS_PER_SAMPLE, TRANSLATION, task_of_recipe
from butcherflow.train import TrainConfig
from butcherflow.train.config import resolve_buckets, resolve_recipe

BOS, EOS = Vocabulary.bos, Vocabulary.eos


class Letters:
    """A stand-in vocabulary: one id per character (`a` -> 4, `b` -> 5, ...)."""

    def encode(self, text: str) -> list[int]:
        return [4 + ord(c) - ord("a") for c in text]


LINES = ["abc", "de", "fghij", "k"]


def _flat(rows: list[list[int]]) -> list[int]:
    return [token for row in rows for token in row]


def _pack(lines: list[str], n: int | None, mode: str) -> TokenBlocks:
    return pack_lines(lines, Letters(), n, mode)  # type: ignore[arg-type]


def test_windows_across_lines_cut_the_two_streams() -> None:
    blocks = _pack(LINES, 4, "none")
    ids = [Letters().encode(line) for line in LINES]
    reads = [t for line in ids for t in (BOS, *line)]
    says = [t for line in ids for t in (*line, EOS)]
    assert [len(t) for t in blocks.targets] == [4, 4, 4, 3]  # 15 targets, the last window short
    assert _flat(blocks.inputs) == reads and _flat(blocks.targets) == says
    assert blocks.inputs[1] == [BOS, 7, 8, BOS]  # a window reads across the end of a line
    assert blocks.text_bytes == sum(len(line) + 1 for line in LINES) and blocks.lines == 4


def test_break_mode_eos_keeps_every_line_a_sample_of_its_own() -> None:
    whole = _pack(LINES, None, "eos")
    assert whole.inputs[2] == [BOS, 9, 10, 11, 12, 13] and whole.targets[2] == [
        9,
        10,
        11,
        12,
        13,
        EOS,
    ]
    assert len(whole) == len(LINES)
    cut = _pack(LINES, 3, "eos")  # a line longer than a window is cut, never joined to the next
    assert cut.targets == [[4, 5, 6], [EOS], [7, 8, EOS], [9, 10, 11], [12, 13, EOS], [14, EOS]]


@given(
    st.lists(st.text(alphabet="abcdefgh", max_size=12), min_size=1, max_size=12),
    st.integers(1, 9),
    st.sampled_from(["none", "eos"]),
)
def test_every_target_token_is_predicted_once_from_its_input(
    lines: list[str], n: int, mode: str
) -> None:
    blocks = _pack(lines, n, mode)
    expected = [t for line in lines for t in (*Letters().encode(line), EOS)]
    assert _flat(blocks.targets) == expected
    assert all(len(i) == len(t) <= n for i, t in zip(blocks.inputs, blocks.targets, strict=True))
    # each target's input is the token before it in its line, bos at a line's start
    reads = [t for line in lines for t in (BOS, *Letters().encode(line))]
    assert _flat(blocks.inputs) == reads


def test_packing_leaves_under_one_percent_padding_on_real_text() -> None:
    corpus = load_corpus(f"{TINY}:de-en")
    lines = [target for _, target in corpus.train]
    packed = _pack_letters(lines, 64, "none")
    batches = make_batches(packed, 64 * 8, shuffle=True, seed=1, epoch=1)
    assert 0 < padding_fraction(packed, batches) < 0.01  # the last window's end


def _pack_letters(lines: list[str], n: int | None, mode: str) -> TokenBlocks:
    """Real text with one id per byte (no vocabulary to train)."""

    class Bytes:
        def encode(self, text: str) -> list[int]:
            return [4 + b for b in text.encode("utf-8")]

    return pack_lines(lines, Bytes(), n, mode)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("n", "mode", "key"),
    [(0, "none", "--tokens-per-sample"), (None, "none", "--tokens-per-sample"), (8, "x", "mode")],
)
def test_bad_windows_are_named(n: Any, mode: str, key: str) -> None:
    with pytest.raises(DeclarationError, match=key):
        _pack(LINES, n, mode)


# --- the task: chosen once, with its defaults -------------------------------------------------


def test_a_recipe_implies_its_task_and_the_task_its_defaults() -> None:
    lm = TrainConfig("lm-residual", "x", "y")
    assert lm.run_task is task_of_recipe(load_recipe("lm-residual")) is LANGUAGE_MODEL
    assert (lm.label_smoothing, lm.tokens_per_sample, lm.sample_break_mode) == (
        0.0,
        TOKENS_PER_SAMPLE,
        "none",
    )
    translation = TrainConfig("transformer-small", "x", "y")
    assert translation.run_task is TRANSLATION and translation.label_smoothing == 0.1
    assert (translation.tokens_per_sample, translation.sample_break_mode) == (None, None)
    # a translation recipe trains a language model from its encoder when asked
    encoder_lm = TrainConfig("transformer-small", "x", "y", task="language_model")
    assert encoder_lm.label_smoothing == 0.0
    assert TrainConfig("lm-residual", "x", "y", sample_break_mode="eos").tokens_per_sample is None


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        ({"tokens_per_sample": 64}, ["--tokens-per-sample", "sentence pairs"]),
        ({"sample_break_mode": "eos"}, ["--sample-break-mode", "sentence pairs"]),
        ({"recipe": "lm-residual", "task": "translation"}, ["--task", "decoder-only"]),
        ({"task": "lm"}, ["--task", "'lm'", "translation, language_model"]),
        ({"recipe": "lm-residual", "buckets": "1.25"}, ["--buckets", "'1.25'", "context windows"]),
    ],
)
def test_options_of_the_other_task_are_one_line_errors(
    changes: dict[str, Any], fragments: list[str]
) -> None:
    settings = {"recipe": "transformer-small", "data": "x", "save_dir": "y", **changes}
    with pytest.raises(DeclarationError) as info:
        resolve_recipe(TrainConfig(**settings), 200)
    message = str(info.value)
    assert "\n" not in message and all(f in message for f in fragments), message


def test_a_language_model_cuts_its_windows_without_buckets() -> None:
    """`--buckets auto` is off for a language model on any device (`Task.buckets`), as it is
    for pairs on a CPU; on a GPU pairs take the default ladder."""
    lm = TrainConfig("lm-residual", "x", "y", buckets="off")
    assert resolve_buckets(lm, torch.device("cuda")) == "off"
    assert resolve_buckets(dataclasses.replace(lm, buckets="auto"), torch.device("cuda")) == "off"
    pairs = TrainConfig("transformer-small", "x", "y")
    assert resolve_buckets(pairs, torch.device("cuda")) == DEFAULT_RATIO
    assert resolve_buckets(pairs, torch.device("cpu")) == "off"


def test_windows_collate_to_the_widths_batch_shapes_counts() -> None:
    blocks = _pack(LINES, None, "eos")  # lines of 4, 3, 6 and 2 positions
    assert blocks.padded_widths([0, 1]) == (1, 4)
    batch = collate(blocks, [0, 1])
    assert batch.prev_output.shape == batch.target.shape == (2, 4) and batch.src.shape == (2, 1)
    assert batch_shapes(blocks, [[0, 1], [2], [3]]) == {(2, 1, 4), (1, 1, 6), (1, 1, 2)}
    assert blocks.collate([3], width=8).target.shape == (1, 8)


def test_a_window_longer_than_learned_positions_is_refused(tmp_path: Path) -> None:
    recipe = dataclasses.replace(load_recipe("lm-residual"), position="learned", max_len=64)
    path = tmp_path / "learned.toml"
    path.write_text(recipe_to_toml(recipe), encoding="utf-8")
    assert resolve_recipe(TrainConfig(str(path), "x", "y", tokens_per_sample=64), 200)
    with pytest.raises(DeclarationError) as info:
        resolve_recipe(TrainConfig(str(path), "x", "y", tokens_per_sample=65), 200)
    assert "--tokens-per-sample" in str(info.value) and "max_len 64" in str(info.value)
