"""Hugging Face transformers layers as `bf.extract` reads them (`libraries` lists them)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch import Tensor, nn

from ..extraction.target import Target
from .common import BATCH, SEED, STREAMS

HF_SIZES = {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}

# name -> (config class, model class, sizes beyond HF_SIZES) of the small transformers models
HF_MODELS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama": (
        "LlamaConfig",
        "LlamaForCausalLM",
        {"intermediate_size": 64, "num_key_value_heads": 2},
    ),
    "gptj": (
        "GPTJConfig",
        "GPTJForCausalLM",
        {
            "n_embd": 32,
            "n_head": 4,
            "n_layer": 2,
            "rotary_dim": 4,
            "n_positions": 16,
            "bos_token_id": 0,
            "eos_token_id": 1,
        },
    ),
    "gemma2": (
        "Gemma2Config",
        "Gemma2ForCausalLM",
        {"intermediate_size": 64, "num_key_value_heads": 2, "head_dim": 8},
    ),
    "bert": ("BertConfig", "BertModel", {"intermediate_size": 64}),
    "deepseek-v4": (
        "DeepseekV4Config",
        "DeepseekV4ForCausalLM",
        {
            "moe_intermediate_size": 32,
            "num_key_value_heads": 1,
            "head_dim": 16,
            "q_lora_rank": 16,
            "num_experts_per_tok": 2,
            "n_routed_experts": 4,
            "o_groups": 2,
            "o_lora_rank": 16,
            "index_n_heads": 2,
            "index_head_dim": 16,
            "index_topk": 4,
            "sliding_window": 8,
            "hc_mult": STREAMS,
            "hc_sinkhorn_iters": 20,
            "num_nextn_predict_layers": 0,
            "max_position_embeddings": 64,
        },
    ),
}


def layer_call(model: nn.Module, layer: nn.Module, **inputs: Any) -> tuple[tuple, dict]:
    """The arguments `model(**inputs)` passes to `layer` (read by a forward-pre-hook): a layer
    is extracted as its own model calls it (masks, position embeddings)."""
    seen: dict[str, Any] = {}

    def grab(module: nn.Module, args: tuple, kwargs: dict) -> None:
        seen.setdefault("call", (args, kwargs))

    handle = layer.register_forward_pre_hook(grab, with_kwargs=True)
    try:
        with torch.no_grad():
            model(**inputs)
    finally:
        handle.remove()
    return seen["call"]


def hf_model(name: str, **sizes: Any) -> Any:
    """The small transformers model `HF_MODELS[name]` (eager kernels, in eval mode), its
    weights the library's own random initialisation from `SEED`.

    **Arguments:**

    - `name`: a key of `HF_MODELS`.
    - `sizes`: configuration entries that replace the table's (e.g. `hc_sinkhorn_iters=1`).

    **Returns:** the model (float32; extraction runs on a float64 copy).
    """
    import transformers

    config_class, model_class, table = HF_MODELS[name]
    torch.manual_seed(SEED)  # transformers initialises from the global generator
    config = getattr(transformers, config_class)(**{**HF_SIZES, **table, **sizes})
    config._attn_implementation = "eager"
    config._experts_implementation = "eager"  # grouped_mm has no float64 kernel
    return getattr(transformers, model_class)(config).eval()


def hf_ids() -> Tensor:
    """The token ids every transformers target is called with: (BATCH, 7), seeded."""
    return torch.randint(0, 64, (BATCH, 7), generator=torch.Generator().manual_seed(SEED))


def _hf_target(model: Any, layer: nn.Module, fields: dict, title: str, **extra: Any) -> Target:
    args, kwargs = layer_call(model, layer, input_ids=hf_ids(), **extra)
    return Target(layer, args, fields, kwargs=kwargs, title=title)


LLAMA_FIELDS = {
    "attn": ("input_layernorm", "self_attn"),
    "mlp": ("post_attention_layernorm", "mlp"),
}


def transformers_llama() -> Target:
    """A `LlamaDecoderLayer` (pre-norm), called as `LlamaForCausalLM` calls it."""
    model = hf_model("llama")
    title = "transformers.LlamaForCausalLM(hidden_size=32, 2 layers): model.layers[1]"
    return _hf_target(model, model.model.layers[1], LLAMA_FIELDS, title, use_cache=False)


def transformers_gptj() -> Target:
    """A `GPTJBlock`: attention and MLP in parallel on one LayerNorm."""
    model = hf_model("gptj")
    fields = {"attn": ("ln_1", "attn"), "mlp": ("ln_1", "mlp")}
    title = "transformers.GPTJForCausalLM(n_embd=32, 2 layers): transformer.h[0]"
    return _hf_target(model, model.transformer.h[0], fields, title, use_cache=False)


def transformers_gemma2() -> Target:
    """A `Gemma2DecoderLayer`: a norm before and after each branch (sandwich)."""
    model = hf_model("gemma2")
    fields = {
        "attn": ("input_layernorm", "self_attn", "post_attention_layernorm"),
        "mlp": ("pre_feedforward_layernorm", "mlp", "post_feedforward_layernorm"),
    }
    title = "transformers.Gemma2ForCausalLM(hidden_size=32, 2 layers): model.layers[0]"
    return _hf_target(model, model.model.layers[0], fields, title, use_cache=False)


def transformers_bert() -> Target:
    """A `BertLayer` (post-norm: a LayerNorm on each residual sum)."""
    model = hf_model("bert")
    fields = {
        "attn": ("attention.self", "attention.output.dense"),
        "mlp": ("intermediate", "output.dense"),
    }
    title = "transformers.BertModel(hidden_size=32, 2 layers): encoder.layer[0]"
    return _hf_target(model, model.encoder.layer[0], fields, title)


def transformers_deepseek_v4(iterations: int = 20) -> Target:
    """A `DeepseekV4DecoderLayer` with mHC (4 streams on axis 2, `iterations` Sinkhorn
    iterations); the connections' input norms are frozen (the coefficients read the state
    through them)."""
    model = hf_model("deepseek-v4", hc_sinkhorn_iters=iterations)
    made = _hf_target(
        model,
        model.model.layers[1],
        dict(LLAMA_FIELDS),
        f"transformers.DeepseekV4ForCausalLM(hidden_size=32, hc_mult=4, "
        f"hc_sinkhorn_iters={iterations}): model.layers[1]",
        use_cache=False,
    )
    frozen = ("attn_hc.input_norm", "ffn_hc.input_norm")
    return replace(made, streams=2, frozen=frozen)  # streams: (batch, time, streams, d)
