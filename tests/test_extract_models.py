"""`bf.extract` and `bf.rewire` on whole models: transformers causal LMs built tiny with random
weights (nothing downloaded) and hand-written stacks whose depth connections are known
(embedding skips, U-net skips, DenseFormer averages, a multistep recurrence), every reading
compared with the model it came from: the round trip, the tokens generated with the KV cache,
a save and a reload in a fresh process."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

import butcherflow as bf
from butcherflow.extraction.layer.rewire import Rewired
from butcherflow.extraction.result import ROUND_TRIP

pytest.importorskip("transformers")

from butcherflow.zoo.causal_lm import tiny_causal_lm, tiny_ids
from butcherflow.zoo.sweep import one_thread, sweep_one


@pytest.fixture(autouse=True)
def _one_thread() -> object:
    with one_thread():
        yield


@pytest.fixture(scope="module")
def llama() -> nn.Module:
    return tiny_causal_lm("llama")


@pytest.fixture(scope="module")
def gpt2() -> nn.Module:
    return tiny_causal_lm("gpt2")


def _generate(model: nn.Module, sample: bool, **options: object) -> torch.Tensor:
    torch.manual_seed(5)
    return model.generate(
        tiny_ids()[:, :3], max_new_tokens=6, do_sample=sample, pad_token_id=0, **options
    )


def test_a_llama_is_read_with_no_configuration(llama: nn.Module) -> None:
    found = bf.extract(llama, input_ids=tiny_ids())
    assert isinstance(found, bf.ExtractedModel) and found.stack == "model.layers"
    assert [layer.fields for layer in found.layers] == [
        {"self_attn": ("input_layernorm", "self_attn"), "mlp": ("post_attention_layernorm", "mlp")}
    ] * 2
    assert all(str(layer.report.order) == "1" for layer in found.layers)
    assert isinstance(found.depth.method, bf.LinearMultistep)  # Euler across the layers
    assert found.depth.report.zero_stable and found.depth.report.order == 1
    assert found.verify() < ROUND_TRIP


def test_a_model_reading_says_which_catalog_entries_it_is_in_a_few_lines(
    llama: nn.Module,
) -> None:
    found = bf.extract(llama, input_ids=tiny_ids())
    text = str(found)
    assert "= catalog 'lie-trotter'" in text and "= catalog 'adams-bashforth-1'" in text
    assert len(text.splitlines()) <= 6 and len(repr(found)) < 400


def test_a_layers_repr_is_a_few_lines_without_arrays(llama: nn.Module) -> None:
    layer = bf.extract(llama, input_ids=tiny_ids()).layers[0]
    assert len(repr(layer)) < 400 and "array" not in repr(layer)


@pytest.mark.parametrize("sample", [False, True])
def test_gpt2_rewired_to_its_own_method_generates_its_tokens_with_the_cache(
    gpt2: nn.Module, sample: bool
) -> None:
    new = bf.extract(gpt2, input_ids=tiny_ids()).rewire()  # each block its own reading
    assert torch.equal(_generate(new, sample), _generate(gpt2, sample))


def test_rewire_leaves_the_original_unchanged_and_shares_nothing(llama: nn.Module) -> None:
    ids = tiny_ids()
    with torch.no_grad():
        before = llama(input_ids=ids).logits.clone()
    new = bf.rewire(llama, "strang", fields={"A": "mlp", "B": "self_attn"})
    assert set(new.state_dict()) == set(llama.state_dict())
    with torch.no_grad():
        next(new.parameters()).add_(1.0)
        assert torch.equal(llama(input_ids=ids).logits, before)
    assert not any(p is q for p in new.parameters() for q in llama.parameters())


def test_strang_with_the_attention_once_trains_and_generates_with_its_cache(
    llama: nn.Module,
) -> None:
    new = bf.rewire(llama, "strang", fields={"A": "mlp", "B": "self_attn"})
    new.train()
    optimiser = torch.optim.AdamW(new.parameters(), lr=1e-2)
    ids = tiny_ids()
    losses = []
    for _ in range(4):
        loss = new(input_ids=ids, labels=ids, use_cache=False).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0]
    new.eval()
    assert torch.equal(_generate(new, False), _generate(new, False, use_cache=False))


def test_a_method_that_calls_the_attention_twice_turns_the_cache_off_and_refuses_it(
    llama: nn.Module,
) -> None:
    new = bf.rewire(llama, "heun")  # the whole block as the field: two calls per step
    assert new.config.use_cache is False and new.generation_config.use_cache is False
    assert _generate(new, False).shape == (2, 9)
    with pytest.raises(bf.ExtractionError, match=r"calls the cached field .* use_cache=False"):
        new(input_ids=tiny_ids(), use_cache=True)


def test_a_rewired_model_keeps_the_originals_mode(llama: nn.Module) -> None:
    training = copy.deepcopy(llama).train()
    new = bf.rewire(training, "strang")
    assert new.training and all(m.training for m in new.modules())
    assert not bf.rewire(llama, "strang").training


def test_a_model_in_training_mode_is_refused_by_extraction(llama: nn.Module) -> None:
    with pytest.raises(bf.ExtractionError, match=r"LlamaForCausalLM is in training mode"):
        bf.extract(copy.deepcopy(llama).train(), input_ids=tiny_ids())


def test_a_round_trip_of_a_round_trip(llama: nn.Module) -> None:
    new = bf.rewire(llama, "strang", fields={"A": "mlp", "B": "self_attn"})
    again = bf.extract(new, input_ids=tiny_ids())
    assert isinstance(again, bf.ExtractedModel)
    assert [str(c) for _, c in again.layers[0].method.steps] == ["1/2", "1", "1/2"]
    assert again.verify() < ROUND_TRIP
    back = again.rewire()  # the rewired model, rewired to what it computes
    with torch.no_grad():
        assert torch.equal(back(input_ids=tiny_ids()).logits, new(input_ids=tiny_ids()).logits)


def test_layers_picks_the_blocks_to_rewire(llama: nn.Module) -> None:
    new = bf.rewire(llama, "strang", layers=[1])
    assert type(new.model.layers[0]) is type(llama.model.layers[0])
    assert isinstance(new.model.layers[1], Rewired)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"method": "strang-3"},
            r"'strang-3' has 3 operator\(s\) \(A, B, C\) and LlamaDecoderLayer 2",
        ),
        ({"method": "rk4", "field": "self_attn"}, r"field='self_attn' leaves 'mlp' of Llama"),
        (
            {"method": "strang", "layers": [5]},
            r"LlamaForCausalLM: layers=\[5\]; valid: indices of its 2 blocks",
        ),
        ({"method": "adams-bashforth-2"}, r"a linear multistep method spans layers"),
    ],
)
def test_a_rewiring_that_does_not_fit_is_one_line(
    llama: nn.Module, kwargs: dict, message: str
) -> None:
    with pytest.raises(bf.ExtractionError, match=message) as caught:
        bf.rewire(llama, **kwargs)
    assert "\n" not in str(caught.value)


FRESH = """
import sys, torch, butcherflow as bf
model = bf.load_pretrained(sys.argv[1])
ids = torch.load(sys.argv[2])
with torch.no_grad():
    torch.save(model(input_ids=ids).logits, sys.argv[3])
print(type(model.model.layers[0]).__name__, model.model.layers[0].method.name)
"""


@pytest.mark.slow  # a fresh interpreter imports torch and transformers: ~10-35 s here
def test_a_rewired_model_saved_reloads_rewired_in_a_fresh_process(
    llama: nn.Module, tmp_path: Path
) -> None:
    new = bf.rewire(llama, "strang", fields={"A": "mlp", "B": "self_attn"})
    new.save_pretrained(tmp_path / "model")
    torch.save(tiny_ids(), tmp_path / "ids.pt")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            FRESH,
            str(tmp_path / "model"),
            str(tmp_path / "ids.pt"),
            str(tmp_path / "logits.pt"),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr
    assert "Rewired strang" in done.stdout
    with torch.no_grad():
        expected = new(input_ids=tiny_ids()).logits
    assert torch.equal(torch.load(tmp_path / "logits.pt"), expected)


def test_transformers_alone_loads_the_original_blocks_and_keeps_the_record(
    llama: nn.Module, tmp_path: Path
) -> None:
    import transformers

    new = bf.rewire(llama, "strang")
    new.save_pretrained(tmp_path)
    plain = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    assert type(plain.model.layers[0]).__name__ == "LlamaDecoderLayer"
    assert plain.config.butcherflow["layers"][0]["declaration"]["name"] == "strang"


def test_a_folder_without_a_record_is_one_line(llama: nn.Module, tmp_path: Path) -> None:
    llama.save_pretrained(tmp_path)
    with pytest.raises(bf.ExtractionError, match=r"config.json: key 'butcherflow' missing"):
        bf.load_pretrained(tmp_path)


# The representative handful of the sweep (the whole of it: test_sweep.py): a Llama-style
# pre-norm block, GPT-2's positional cache, GPT-J's parallel branches, Gemma 2's sandwich
# norms, Mixtral's mixture of experts, Mamba's one-field mixer, Bloom's residual inside the
# attention (refused, with the reason).
HANDFUL = ("llama", "gpt2", "gptj", "gemma2", "mixtral", "mamba", "bloom")


@pytest.mark.parametrize("model_type", HANDFUL)
def test_the_sweep_reads_rewires_and_reloads_with_no_traceback_and_no_mismatch(
    model_type: str,
) -> None:
    row = sweep_one(model_type)
    assert row.built == "ok"
    assert row.count("traceback") == 0 and row.count("mismatch") == 0, row
    if model_type == "bloom":
        assert "self_attention (BloomAttention) takes the residual stream" in row.read
    else:
        assert row.read == "ok" and row.steps["own"] == "ok", row
