"""Every decoder-only causal LM of the installed transformers, built from a tiny configuration
with random weights (nothing is downloaded): `tiny_causal_lm(model_type)`.

The architectures are transformers' own table, `MODEL_FOR_CAUSAL_LM_MAPPING_NAMES` (model type ->
class name). A configuration is built by the model class's own configuration class with the
sizes of `TINY` it has (under its names, `attribute_map`: GPT-2's `n_embd` is its
`hidden_size`), so that what it derives from them (the layer types of two layers) is
consistent, with its sub-configurations tiny too (a multimodal model's language part), the
defaults' per-layer lists cut to the depth, and the few entries `OVERRIDES` states per model
type where the defaults do not fit a tiny model. Whether an architecture builds is
what `build` answers: a tiny model of more than `MAX_PARAMETERS` (the defaults left a large
part, as a vision tower) counts as not built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ..extraction.target import Target
from .common import SEED

VOCAB, WIDTH, LAYERS = 64, 32, 2
MAX_PARAMETERS = 3_000_000
DEEPER = (LAYERS, 4, 8)  # depths tried in turn (a hybrid's attention every fourth layer)

TINY: dict[str, Any] = {
    "vocab_size": VOCAB,
    "hidden_size": WIDTH,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    # mixtures of experts
    "num_experts": 4,
    "num_local_experts": 4,
    "n_routed_experts": 4,
    "moe_num_experts": 4,
    "num_experts_per_tok": 2,
    "moe_k": 2,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "n_group": 1,
    "topk_group": 1,
    # multi-head latent attention
    "q_lora_rank": 16,
    "kv_lora_rank": 16,
    "qk_rope_head_dim": 8,
    "qk_nope_head_dim": 8,
    "v_head_dim": 8,
    # encoder-decoder models' decoders
    "encoder_layers": LAYERS,
    "decoder_layers": LAYERS,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    # state-space and recurrent layers
    "state_size": 4,
    "mamba_d_state": 4,
    "mamba_n_heads": 4,
    "mamba_d_head": 16,
    "mamba_headdim": 16,
    "n_groups": 1,
    "mamba_n_groups": 1,
    "time_step_rank": 4,
    "ssm_state_size": 4,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 2,
    "linear_key_head_dim": 8,
    "linear_value_head_dim": 8,
    # positions
    "rotary_dim": 4,
    "sliding_window": 8,
}

# Per model type, where the defaults do not fit a tiny model.
OVERRIDES: dict[str, dict[str, Any]] = {
    # hybrids whose two tiny layers would hold no attention layer (one generation runs past
    # its state-space layers alone)
    "bamba": {"attn_layer_indices": [1]},
    "bailing_hybrid": {"layer_group_size": 2},
    "granitemoehybrid": {"layer_types": ["linear_attention", "full_attention"]},
    "zamba2": {"layers_block_type": ["linear_attention", "hybrid"]},
    "gpt_neo": {"attention_types": [[["global", "local"], 1]]},
    "jamba": {"attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2},
    "plbart": {"num_attention_heads": 4, "decoder_attention_heads": 4},
    "reformer": {"is_decoder": True, "axial_pos_shape": [8, 8], "axial_pos_embds_dim": [16, 16]},
}


def architectures() -> dict[str, str]:
    """Model type -> causal LM class name, as the installed transformers lists them."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id")


def _config_class(value: Any) -> bool:
    """A configuration class of a model (not transformers' `AutoConfig` placeholder)."""
    from transformers import PretrainedConfig

    return isinstance(value, type) and issubclass(value, PretrainedConfig)


def _tiny_kwargs(config_class: Any, sizes: Mapping[str, Any]) -> dict[str, Any]:
    """The constructor arguments of a tiny `config_class`: each size of `sizes` under the
    name the class gives it (its `attribute_map`), where the class has it; the defaults'
    per-layer lists (one entry per layer of the default depth) cut to the tiny depth; each
    sub-configuration (a multimodal model's text part) tiny too."""
    default = config_class()
    fields = set(default.to_dict())
    mapping = dict(getattr(config_class, "attribute_map", {}) or {})
    kwargs: dict[str, Any] = {}
    if "kv_lora_rank" in fields:  # latent attention: its keys have every head already
        sizes = {**sizes, "num_key_value_heads": sizes["num_attention_heads"]}
    for key, value in sizes.items():
        name = mapping.get(key, key)
        if name in fields or key in TOKEN_IDS:
            kwargs[name] = value
    depth = getattr(default, "num_hidden_layers", None)
    layers = int(sizes.get("num_hidden_layers", LAYERS))
    for name in fields - set(kwargs):
        value = getattr(default, name, None)
        if isinstance(value, list) and depth and len(value) == depth:
            kwargs[name] = value[:layers]
    for name, sub in (getattr(config_class, "sub_configs", None) or {}).items():
        if _config_class(sub) and name not in kwargs:
            kwargs[name] = _tiny_kwargs(sub, sizes)
    return kwargs


def tiny_config(model_type: str, depth: Mapping[str, int] | None = None) -> Any:
    """The tiny configuration of `model_type`'s causal LM class (of the class its model is
    built from: a multimodal type's text configuration), eager attention (a kernel with a
    float64 path)."""
    import transformers

    cls = getattr(transformers, architectures()[model_type])
    config_class = cls.config_class
    if not _config_class(config_class):
        config_class = type(transformers.AutoConfig.for_model(model_type))
    sizes = {**TINY, **OVERRIDES.get(model_type, {}), **(depth or {})}
    config = config_class(**_tiny_kwargs(config_class, sizes))
    config._attn_implementation = "eager"
    if hasattr(config, "_experts_implementation"):
        config._experts_implementation = "eager"  # grouped_mm has no float64 kernel
    return config


def tiny_causal_lm(model_type: str) -> nn.Module:
    """The causal LM of `model_type` built from `tiny_config` with transformers' own random
    initialisation (seeded), in eval mode, its forward run once on `tiny_ids()`: with two
    layers, or `DEEPER` where two layers are all of one kind a hybrid cannot run alone (its
    attention every fourth layer). Raises whatever transformers raises for a configuration it
    cannot build or run, and `ValueError` past `MAX_PARAMETERS`."""
    import transformers

    cls = getattr(transformers, architectures()[model_type])
    first: Exception | None = None
    for layers in DEEPER:
        config = tiny_config(model_type, {"num_hidden_layers": layers, "decoder_layers": layers})
        type(config).from_dict(config.to_dict())  # it must save and load, as the sweep's reload
        with torch.device("meta"):
            size = sum(p.numel() for p in cls(config).parameters())
        if size > MAX_PARAMETERS:
            raise ValueError(f"{size} parameters from a tiny configuration (over {MAX_PARAMETERS})")
        torch.manual_seed(SEED)
        model = cls(config).eval()
        try:
            with torch.no_grad():
                model(input_ids=tiny_ids())
        except Exception as error:
            first = first or error
            continue
        return model
    assert first is not None
    raise first


def tiny_ids(length: int = 6, batch: int = 2) -> torch.Tensor:
    """Token ids for a tiny model (seeded; no padding, no special tokens)."""
    generator = torch.Generator().manual_seed(SEED)
    return torch.randint(3, VOCAB, (batch, length), generator=generator)


def causal_lm_target(model_type: str) -> Target:
    """A tiny causal LM with its inputs, as `butcherflow extract` takes a model."""
    model = tiny_causal_lm(model_type)
    title = (
        f"transformers.{architectures()[model_type]} ({model_type}: hidden size {WIDTH}, "
        f"{getattr(model.config, 'num_hidden_layers', LAYERS)} layers, random weights)"
    )
    return Target(model, (), kwargs={"input_ids": tiny_ids()}, title=title)


def llama_model() -> Target:
    """`LlamaForCausalLM`, tiny (`butcherflow extract butcherflow.zoo:llama_model`)."""
    return causal_lm_target("llama")


def gpt2_model() -> Target:
    """`GPT2LMHeadModel`, tiny: its blocks get their KV cache positionally."""
    return causal_lm_target("gpt2")


def gptj_model() -> Target:
    """`GPTJForCausalLM`, tiny: attention and MLP in parallel on one norm."""
    return causal_lm_target("gptj")


def deepseek_v4_model() -> Target:
    """`DeepseekV4ForCausalLM`, tiny: mHC's four streams across the stack."""
    return causal_lm_target("deepseek_v4")
