"""`bf.extract` on Hugging Face transformers layers (the pinned `audit` extra), built from small
configs with random weights (nothing downloaded), each called as its own model calls it, with the
round trip `.verify()`.

What the layers compute, as read here (transformers 5.24.0):

- Llama decoder layer (pre-norm): Lie-Trotter over attn and mlp with Euler sub-steps, order 1.
- GPT-J block (parallel attention and MLP on one LayerNorm): Euler on the summed field.
- Gemma 2 (sandwich norms: a norm before and after each branch): Lie-Trotter, the post-norms
  inside the fields.
- BERT (post-norm): refused; linearity breaks in the LayerNorm on the residual sum.
- DeepSeek-V4 (mHC, 4 streams): a general linear method whose coefficients vary per token and
  with the state. The "pre" weights σ(·) + ε make U 1 = Σ pre ≠ 1 (a stage reads a rescaled
  state), so the layer is not preconsistent with the copies start: order 0 at every token. The
  "post" weights 2σ(·) ∈ (0, 2) give B. V = combᵀ after a finite Sinkhorn ends with a column
  normalisation of comb, i.e. a row normalisation of V (with +ε): V ≥ 0 and ‖V‖∞ ≤ 1 at every
  token, so V (and every product of them, layer after layer) is power-bounded whatever the
  number of iterations, while V 1 = 1 and double stochasticity hold only to ~ε and the Sinkhorn
  residual.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from torch import nn

import butcherflow as bf

pytest.importorskip("transformers")

from butcherflow import zoo as libraries


def test_llama_layer_is_lie_trotter_with_euler_steps() -> None:
    found = libraries.transformers_llama().extract()
    assert isinstance(found.method, bf.Splitting)
    assert [(op, str(c)) for op, c in found.method.steps] == [("attn", "1"), ("mlp", "1")]
    assert found.report.order == 1 and not found.varies
    assert found.verify() < 1e-12


def test_gptj_block_is_euler_on_attention_plus_mlp() -> None:
    found = libraries.transformers_gptj().extract()
    assert isinstance(found.method, bf.ButcherTableau) and found.method.stages == 1
    assert found.method.b == (1,) and found.declared.groups == {"F": ("attn", "mlp")}
    assert found.verify() < 1e-12


def test_gemma2_sandwich_norms_sit_inside_the_fields() -> None:
    found = libraries.transformers_gemma2().extract()
    assert [(op, str(c)) for op, c in found.method.steps] == [("attn", "1"), ("mlp", "1")]
    assert found.verify() < 1e-12


def test_gemma2_without_its_post_norms_in_the_fields_is_refused_naming_them() -> None:
    fields = {"attn": ("input_layernorm", "self_attn"), "mlp": ("pre_feedforward_layernorm", "mlp")}
    target = replace(libraries.transformers_gemma2(), fields=fields)
    with pytest.raises(bf.ExtractionError, match=r"linearity breaks in post_attention_layernorm"):
        target.extract()


def test_bert_post_norm_is_refused_with_the_reason() -> None:
    with pytest.raises(
        bf.ExtractionError,
        match=r"input of call 2 \(field 'mlp'\).*linearity breaks in "
        r"attention\.output\.LayerNorm \(LayerNorm\).*post-norm",
    ):
        libraries.transformers_bert().extract()


@pytest.fixture(scope="module")
def deepseek() -> bf.Extracted:
    return libraries.transformers_deepseek_v4(iterations=20).extract()


def test_deepseek_v4_mhc_is_a_per_token_general_linear_method(deepseek: bf.Extracted) -> None:
    assert isinstance(deepseek.method, bf.GeneralLinear)
    assert deepseek.method.values == 4 and deepseek.method.stages == 2
    assert deepseek.varies.token and deepseek.varies.state
    assert deepseek.verify() < 1e-12


def test_deepseek_v4_pre_weights_break_preconsistency_at_every_token(
    deepseek: bf.Extracted,
) -> None:
    assert not deepseek.varies.at_token["U 1 = 1"].any()
    assert deepseek.report.order == 0


def test_deepseek_v4_v_is_power_bounded_but_not_exactly_doubly_stochastic(
    deepseek: bf.Extracted,
) -> None:
    holds = deepseek.varies.holds
    assert holds["V power-bounded"] and not holds["V doubly stochastic"]
    assert deepseek.varies.worst["V 1 = 1"] < 1e-4  # off by ε and the Sinkhorn residual only


def test_deepseek_v4_one_sinkhorn_iteration_still_bounds_v() -> None:
    found = libraries.transformers_deepseek_v4(iterations=1).extract()
    assert found.varies.holds["V power-bounded"]
    assert found.varies.worst["V doubly stochastic"] > 1e-3
    assert found.verify() < 1e-12


def test_deepseek_v4_without_frozen_readers_is_refused_with_the_hint() -> None:
    target = replace(libraries.transformers_deepseek_v4(iterations=20), frozen=())
    with pytest.raises(bf.ExtractionError, match=r"frozen=\[\.\.\.\]"):
        target.extract()


def test_a_layer_called_with_a_kv_cache_is_refused_naming_use_cache() -> None:
    """The probe runs call the layer several times: a cache it is given would grow each time
    (the second run attends to twice the keys), so it is refused before any run."""
    model = libraries.hf_model("llama")
    layer = model.model.layers[1]
    args, kwargs = libraries.layer_call(model, layer, input_ids=libraries.hf_ids(), use_cache=True)
    with pytest.raises(
        bf.ExtractionError, match=r"gets a cache \(\w+=DynamicCache\).*use_cache=False"
    ):
        bf.extract(layer, *args, fields=libraries.LLAMA_FIELDS, **kwargs)


def _llama_layers_extracted() -> tuple[nn.Module, list[bf.Extracted], torch.Tensor]:
    model, ids = libraries.hf_model("llama"), libraries.hf_ids()
    found = []
    for layer in model.model.layers:
        args, kwargs = libraries.layer_call(model, layer, input_ids=ids, use_cache=False)
        found.append(bf.extract(layer, *args, fields=libraries.LLAMA_FIELDS, **kwargs))
    return model, found, ids


STRANG = bf.Splitting([("mlp", "1/2"), ("attn", 1), ("mlp", "1/2")], name="llama-strang")


def test_rewiring_every_llama_layer_to_its_own_method_keeps_the_logits() -> None:
    model, found, ids = _llama_layers_extracted()
    with torch.no_grad():
        before = model(input_ids=ids, use_cache=False).logits
        keys = set(model.state_dict())
        for i, f in enumerate(found):
            model.model.layers[i] = f.rewire(f.method)
        after = model(input_ids=ids, use_cache=False).logits
    assert torch.equal(before, after)
    assert set(model.state_dict()) == keys


def test_a_llama_lm_rewired_to_strang_trains_and_generates_with_its_cache() -> None:
    model, found, ids = _llama_layers_extracted()
    with torch.no_grad():
        before = model(input_ids=ids, use_cache=False).logits
    for i, f in enumerate(found):
        model.model.layers[i] = f.rewire(STRANG)
    with torch.no_grad():
        assert not torch.allclose(model(input_ids=ids, use_cache=False).logits, before)
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(6):
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    model.eval()
    cached = model.generate(ids[:, :3], max_new_tokens=4, do_sample=False)
    fresh = model.generate(ids[:, :3], max_new_tokens=4, do_sample=False, use_cache=False)
    assert torch.equal(cached, fresh)


def test_a_llama_layer_as_rk2_on_the_whole_layer_refuses_a_kv_cache() -> None:
    model, found, ids = _llama_layers_extracted()
    for i, f in enumerate(found):
        model.model.layers[i] = f.rewire(bf.catalog["heun"], field="layer")
    with torch.no_grad():
        assert model(input_ids=ids, use_cache=False).logits.shape == (2, 7, 64)
        with pytest.raises(bf.ExtractionError, match=r"calls field 'attn' 2 times.*use_cache"):
            model.generate(ids[:, :3], max_new_tokens=2, do_sample=False)


def test_deepseek_v4_each_token_is_proved_on_its_own(deepseek: bf.Extracted) -> None:
    report = bf.check(deepseek.at_token(3))
    assert report.order == 0 and report.zero_stable is True


@pytest.mark.parametrize("parallel", [False, True])
def test_gpt_neox_follows_its_parallel_residual_flag(parallel: bool) -> None:
    """GPT-NeoX, named by no factory: `use_parallel_residual` switches between Lie-Trotter with
    Euler steps and Euler on attention + MLP, each round-tripping on the layer's own modules."""
    import transformers

    from butcherflow.zoo.hugging_face import layer_call

    config = transformers.GPTNeoXConfig(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        use_parallel_residual=parallel,
    )
    torch.manual_seed(0)
    model = transformers.GPTNeoXForCausalLM(config).eval().double()
    layer = model.gpt_neox.layers[1]
    ids = torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(0))
    args, kwargs = layer_call(model, layer, input_ids=ids, use_cache=False)
    kwargs.pop("use_cache", None)
    fields = {
        "attn": ("input_layernorm", "attention"),
        "mlp": ("post_attention_layernorm", "mlp"),
    }
    found = bf.extract(layer, *args, fields=fields, **kwargs)
    expected = bf.ButcherTableau if parallel else bf.Splitting
    assert isinstance(found.method, expected) and found.report.order == 1
    assert found.verify() < 1e-13
