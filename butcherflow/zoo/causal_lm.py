"""Every decoder-only causal LM of the installed transformers, built from a tiny configuration
with random weights (nothing is downloaded): `tiny_causal_lm(model_type)`.

The architectures are transformers' own table, `MODEL_FOR_CAUSAL_LM_MAPPING_NAMES` (model type ->
class name). A configuration is the architecture's defaults with the sizes of `TINY` set on
every attribute it has (through `attribute_map`: GPT-2's `n_embd` is its `hidden_size`), on its
text sub-configuration too (a multimodal model's language part), with the per-layer lists
(`layer_types`, ...) cut to the number of layers, and the few entries `OVERRIDES` states per
model type where the defaults do not fit a tiny model (a rotary dimension larger than a tiny
head, an attention layer period longer than the stack). Whether an architecture builds is
what `build` answers: a tiny model of more than `MAX_PARAMETERS` (the defaults left a large
part, as a vision tower) counts as not built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from .common import SEED

VOCAB, WIDTH, LAYERS = 64, 32, 2
MAX_PARAMETERS = 3_000_000

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
    "qk_rope_head_dim": 4,
    "qk_nope_head_dim": 4,
    "v_head_dim": 8,
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
    "gpt_neo": {"attention_types": [[["global", "local"], 1]]},
    "jamba": {"attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2},
    "plbart": {"num_attention_heads": 4, "decoder_attention_heads": 4},
    "reformer": {"is_decoder": True, "axial_pos_shape": [8, 8], "axial_pos_embds_dim": [16, 16]},
}


def architectures() -> dict[str, str]:
    """Model type -> causal LM class name, as the installed transformers lists them."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return dict(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _set(config: Any, sizes: Mapping[str, Any]) -> None:
    names = set(config.to_dict()) | set(getattr(config, "attribute_map", {}))
    default_layers = getattr(config, "num_hidden_layers", None)
    for key, value in sizes.items():
        if key in names or key in ("pad_token_id", "bos_token_id", "eos_token_id"):
            try:
                setattr(config, key, value)
            except (AttributeError, TypeError, ValueError):
                continue
    layers = getattr(config, "num_hidden_layers", LAYERS)
    for key, value in list(vars(config).items()):
        per_layer = isinstance(value, list) and len(value) == default_layers
        if per_layer or (key.endswith("layer_types") and isinstance(value, list)):
            setattr(config, key, value[:layers])  # one entry per layer
        elif isinstance(value, dict) and value and all(isinstance(k, int) for k in value):
            setattr(config, key, {k: v for k, v in value.items() if k < layers})


def tiny_config(model_type: str) -> Any:
    """The tiny configuration of `model_type` (eager attention: a kernel with a float64 path)."""
    from transformers import AutoConfig, PretrainedConfig

    config = AutoConfig.for_model(model_type)
    sizes = {**TINY, **OVERRIDES.get(model_type, {})}
    _set(config, sizes)
    for value in list(vars(config).values()):
        if isinstance(value, PretrainedConfig):
            _set(value, sizes)
    config._attn_implementation = "eager"
    if hasattr(config, "_experts_implementation"):
        config._experts_implementation = "eager"  # grouped_mm has no float64 kernel
    return config


def tiny_causal_lm(model_type: str) -> nn.Module:
    """The causal LM of `model_type` built from `tiny_config` with transformers' own random
    initialisation (seeded), in eval mode; raises whatever transformers raises for a
    configuration it cannot build, and `ValueError` past `MAX_PARAMETERS`."""
    import transformers

    name = architectures()[model_type]
    cls = getattr(transformers, name)
    config = tiny_config(model_type)
    type(config).from_dict(config.to_dict())  # it must save and load, as the sweep's reload
    with torch.device("meta"):
        size = sum(p.numel() for p in cls(config).parameters())
    if size > MAX_PARAMETERS:
        raise ValueError(f"{size} parameters from a tiny configuration (over {MAX_PARAMETERS})")
    torch.manual_seed(SEED)
    return cls(config).eval()


def tiny_ids(length: int = 6, batch: int = 2) -> torch.Tensor:
    """Token ids for a tiny model (seeded; no padding, no special tokens)."""
    generator = torch.Generator().manual_seed(SEED)
    return torch.randint(3, VOCAB, (batch, length), generator=generator)
