"""`--tensorboard` pictures of the learned coefficients: per-token gate histograms and per-token V
histograms recomputed from the checkpoint sentence by sentence, and the stream-mixing images,
read back by TensorBoard's own reader."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny_run import RUN, TINY

from butcherflow.compiler.coefficients import StageGate
from butcherflow.compiler.general_linear import StreamMixing
from butcherflow.data import Vocabulary, load_corpus
from butcherflow.savedir import load_model
from butcherflow.train import TrainConfig, train
from butcherflow.train.pictures import mixing_figure

pytestmark = pytest.mark.usefixtures("vocab_cache")
pytest.importorskip("tensorboard")

# a gated RK2 encoder (per-token gates read the source) and a decoder of dynamic
# hyper-connections (per-token V on the target side)
RECIPE = """\
name = "gated-streams"
title = "gated RK2 encoder, dynamic hyper-connection decoder"

[sizes]
d_model = 32
n_heads = 2
d_ffn = 64

[encoder]
layers = 1
method = "rk2-gated"
field = "san+ffn"

[decoder]
layers = 1
method = "hyper-connections-4"
field = "san+ca+ffn"
coefficients = "dynamic"

[embedding]
position = "sinusoidal"
"""
GATE, V, IMAGE = (
    "gates/encoder.0.program.gate/g",
    "streams/decoder.0_layer_0/V",
    "streams/decoder.0",
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """Four updates with a validation every two, and what TensorBoard reads back."""
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    folder = tmp_path_factory.mktemp("pictures")
    (folder / "recipe.toml").write_text(RECIPE, encoding="utf-8")
    settings = {**RUN, "max_update": 4, "validate_interval_updates": 2}
    config = TrainConfig(
        str(folder / "recipe.toml"),
        f"{TINY}:de-en",
        str(folder / "run"),
        tensorboard=str(folder / "tb"),
        **settings,
    )
    train(config)
    events = accumulator.EventAccumulator(
        str(folder / "tb"), size_guidance={"histograms": 0, "images": 0}
    )
    events.Reload()
    return folder / "run", events


def _validations(save_dir: Path) -> list[int]:
    lines = (save_dir / "log.jsonl").read_text(encoding="utf-8").splitlines()
    return [e["update"] for e in map(json.loads, lines) if e["kind"] == "valid"]


def _recomputed(save_dir: Path) -> dict[str, np.ndarray]:
    """The gate values and per-token V entries of the last checkpoint, one valid sentence at a
    time (no padding anywhere), by hooks of this test's own."""
    model, vocab, _ = load_model(save_dir, "last")
    found: dict[str, list[torch.Tensor]] = {GATE: [], V: []}
    for module in model.modules():
        if isinstance(module, StageGate):
            module.register_forward_hook(lambda m, a, out: found[GATE].append(out[0].flatten()))
        if isinstance(module, StreamMixing):
            module.register_forward_hook(lambda m, a, out: found[V].append(out[2].flatten()))
    model.eval()
    with torch.no_grad():
        for source, target in load_corpus(f"{TINY}:de-en").valid:
            src = torch.tensor([vocab.encode(source)])
            prev = torch.tensor([[Vocabulary.bos, *vocab.encode(target)]])
            model(src, prev)
    return {tag: torch.cat(parts).double().numpy() for tag, parts in found.items()}


def test_gate_and_stream_histograms_are_the_checkpoints_per_token_values(
    run: tuple[Path, Any],
) -> None:
    save_dir, events = run
    validations = _validations(save_dir)
    assert validations == [2, 4]
    expected = _recomputed(save_dir)  # checkpoint_last: the weights validated at update 4
    for tag in (GATE, V):
        histograms = events.Histograms(tag)
        assert [h.step for h in histograms] == validations, tag
        last = histograms[-1].histogram_value
        values = expected[tag]
        assert last.num == values.size, tag  # every non-pad token, no pad
        assert last.sum == pytest.approx(values.sum(), rel=1e-5), tag
        assert (last.min, last.max) == pytest.approx((values.min(), values.max()), abs=1e-6), tag
    first = events.Histograms(GATE)[0].histogram_value
    assert 0.45 < first.min <= first.max < 0.55  # the gate starts at g = 1/2 (Heun)


def test_the_stream_mixing_is_an_image_at_every_validation(run: tuple[Path, Any]) -> None:
    from PIL import Image

    save_dir, events = run
    images = events.Images(IMAGE)
    assert [i.step for i in images] == _validations(save_dir)
    picture = Image.open(io.BytesIO(images[-1].encoded_image_string))
    assert picture.size == (images[-1].width, images[-1].height) and picture.size[0] > 300
    assert len(np.unique(np.asarray(picture.convert("L")))) > 10  # drawn, not one flat colour


def test_the_mixing_figure_shows_each_layers_matrices() -> None:
    generator = np.random.default_rng(0)
    layers = [tuple(generator.normal(size=shape) for shape in ((1, 4), (4, 1), (4, 4)))]
    layers.append(tuple(generator.normal(size=shape) for shape in ((2, 3), (3, 2), (3, 3))))
    figure = mixing_figure("encoder.0", layers)  # type: ignore[arg-type]
    for ax, (m, label) in zip(
        figure.axes, [(m, k) for m in range(2) for k in range(3)], strict=True
    ):
        (image,) = ax.images
        np.testing.assert_array_equal(image.get_array(), layers[m][label])
        assert ax.get_title() == f"layer {m}: {'UBV'[label]}"
        texts = [t.get_text() for t in ax.texts]
        assert texts == [f"{x:.2f}" for x in layers[m][label].ravel()]
