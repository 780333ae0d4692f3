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

from typing import Any

import pytest
import torch
from torch import nn

import butcherflow as bf

transformers = pytest.importorskip("transformers")

SMALL = {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}


def _layer_call(model: nn.Module, layer: nn.Module, **inputs: Any) -> tuple[tuple, dict]:
    """The arguments `model` passes to `layer` (a forward-pre-hook on one forward)."""
    seen: dict[str, Any] = {}

    def grab(module: nn.Module, args: tuple, kwargs: dict) -> None:
        seen.setdefault("call", (args, kwargs))

    handle = layer.register_forward_pre_hook(grab, with_kwargs=True)
    with torch.no_grad():
        model(**inputs)
    handle.remove()
    return seen["call"]


def _ids() -> torch.Tensor:
    return torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(0))


def _model(config_class: Any, model_class: Any, **sizes: Any) -> nn.Module:
    torch.manual_seed(0)
    config = config_class(**{**SMALL, **sizes})
    config._attn_implementation = "eager"
    return model_class(config).eval()


def _llama() -> nn.Module:
    return _model(
        transformers.LlamaConfig,
        transformers.LlamaForCausalLM,
        intermediate_size=64,
        num_key_value_heads=2,
    )


LLAMA_FIELDS = {
    "attn": ("input_layernorm", "self_attn"),
    "mlp": ("post_attention_layernorm", "mlp"),
}


def test_llama_layer_is_lie_trotter_with_euler_steps() -> None:
    model = _llama()
    layer = model.model.layers[1]
    args, kwargs = _layer_call(model, layer, input_ids=_ids(), use_cache=False)
    found = bf.extract(layer, *args, fields=LLAMA_FIELDS, **kwargs)
    assert isinstance(found.method, bf.Splitting)
    assert [(op, str(c)) for op, c in found.method.steps] == [("attn", "1"), ("mlp", "1")]
    assert found.report.order == 1 and not found.varies
    assert found.verify() < 1e-12


def test_gptj_block_is_euler_on_attention_plus_mlp() -> None:
    model = _model(
        transformers.GPTJConfig,
        transformers.GPTJForCausalLM,
        n_embd=32,
        n_head=4,
        n_layer=2,
        rotary_dim=4,
        n_positions=16,
        bos_token_id=0,
        eos_token_id=1,
    )
    layer = model.transformer.h[0]
    args, kwargs = _layer_call(model, layer, input_ids=_ids(), use_cache=False)
    found = bf.extract(
        layer, *args, fields={"attn": ("ln_1", "attn"), "mlp": ("ln_1", "mlp")}, **kwargs
    )
    assert isinstance(found.method, bf.ButcherTableau) and found.method.stages == 1
    assert found.method.b == (1,) and found.declared.groups == {"F": ("attn", "mlp")}
    assert found.verify() < 1e-12


def test_gemma2_sandwich_norms_sit_inside_the_fields() -> None:
    model = _model(
        transformers.Gemma2Config,
        transformers.Gemma2ForCausalLM,
        intermediate_size=64,
        num_key_value_heads=2,
        head_dim=8,
    )
    layer = model.model.layers[0]
    args, kwargs = _layer_call(model, layer, input_ids=_ids(), use_cache=False)
    fields = {
        "attn": ("input_layernorm", "self_attn", "post_attention_layernorm"),
        "mlp": ("pre_feedforward_layernorm", "mlp", "post_feedforward_layernorm"),
    }
    found = bf.extract(layer, *args, fields=fields, **kwargs)
    assert [(op, str(c)) for op, c in found.method.steps] == [("attn", "1"), ("mlp", "1")]
    assert found.verify() < 1e-12


def test_gemma2_without_its_post_norms_in_the_fields_is_refused_naming_them() -> None:
    model = _model(
        transformers.Gemma2Config,
        transformers.Gemma2ForCausalLM,
        intermediate_size=64,
        num_key_value_heads=2,
        head_dim=8,
    )
    layer = model.model.layers[0]
    args, kwargs = _layer_call(model, layer, input_ids=_ids(), use_cache=False)
    fields = {"attn": ("input_layernorm", "self_attn"), "mlp": ("pre_feedforward_layernorm", "mlp")}
    with pytest.raises(bf.ExtractionError, match=r"linearity breaks in post_attention_layernorm"):
        bf.extract(layer, *args, fields=fields, **kwargs)


def test_bert_post_norm_is_refused_with_the_reason() -> None:
    model = _model(transformers.BertConfig, transformers.BertModel, intermediate_size=64)
    layer = model.encoder.layer[0]
    args, kwargs = _layer_call(model, layer, input_ids=_ids())
    fields = {
        "attn": ("attention.self", "attention.output.dense"),
        "mlp": ("intermediate", "output.dense"),
    }
    with pytest.raises(
        bf.ExtractionError,
        match=r"input of call 2 \(field 'mlp'\).*linearity breaks in "
        r"attention\.output\.LayerNorm \(LayerNorm\).*post-norm",
    ):
        bf.extract(layer, *args, fields=fields, **kwargs)


def _deepseek(iterations: int) -> tuple[nn.Module, tuple, dict]:
    torch.manual_seed(0)
    config = transformers.DeepseekV4Config(
        vocab_size=64,
        hidden_size=32,
        moe_intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=16,
        q_lora_rank=16,
        num_experts_per_tok=2,
        n_routed_experts=4,
        o_groups=2,
        o_lora_rank=16,
        index_n_heads=2,
        index_head_dim=16,
        index_topk=4,
        sliding_window=8,
        hc_mult=4,
        hc_sinkhorn_iters=iterations,
        num_nextn_predict_layers=0,
        max_position_embeddings=64,
    )
    config._experts_implementation = "eager"  # grouped_mm has no float64 kernel
    model = transformers.DeepseekV4ForCausalLM(config).eval()
    layer = model.model.layers[1]
    args, kwargs = _layer_call(model, layer, input_ids=_ids(), use_cache=False)
    return layer, args, kwargs


DEEPSEEK_FIELDS = {
    "attn": ("input_layernorm", "self_attn"),
    "mlp": ("post_attention_layernorm", "mlp"),
}
DEEPSEEK_FROZEN = ("attn_hc.input_norm", "ffn_hc.input_norm")


@pytest.fixture(scope="module")
def deepseek() -> bf.Extracted:
    layer, args, kwargs = _deepseek(iterations=20)
    return bf.extract(
        layer, *args, fields=DEEPSEEK_FIELDS, streams=2, frozen=DEEPSEEK_FROZEN, **kwargs
    )


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
    layer, args, kwargs = _deepseek(iterations=1)
    found = bf.extract(
        layer, *args, fields=DEEPSEEK_FIELDS, streams=2, frozen=DEEPSEEK_FROZEN, **kwargs
    )
    assert found.varies.holds["V power-bounded"]
    assert found.varies.worst["V doubly stochastic"] > 1e-3
    assert found.verify() < 1e-12


def test_deepseek_v4_without_frozen_readers_is_refused_with_the_hint() -> None:
    layer, args, kwargs = _deepseek(iterations=20)
    with pytest.raises(bf.ExtractionError, match=r"frozen=\[\.\.\.\]"):
        bf.extract(layer, *args, fields=DEEPSEEK_FIELDS, streams=2, **kwargs)


def _llama_layers_extracted() -> tuple[nn.Module, list[bf.Extracted], torch.Tensor]:
    model = _llama()
    ids = _ids()
    calls: dict[nn.Module, tuple] = {}

    def grab(module: nn.Module, args: tuple, kwargs: dict) -> None:
        calls.setdefault(module, (args, kwargs))

    handles = [
        layer.register_forward_pre_hook(grab, with_kwargs=True) for layer in model.model.layers
    ]
    with torch.no_grad():
        model(input_ids=ids, use_cache=False)
    for handle in handles:
        handle.remove()
    found = [
        bf.extract(layer, *calls[layer][0], fields=LLAMA_FIELDS, **calls[layer][1])
        for layer in model.model.layers
    ]
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
