"""Other people's layers as `bf.extract` reads them: x-transformers, hyper-connections and
transformers, built from small configurations with random weights (nothing is downloaded).

Each function is a factory (`butcherflow extract butcherflow.gallery.audit.libraries:NAME`):
it imports its library when called (the libraries are the `audit` extra, never imported by
butcherflow at its top) and returns a `Target`. `LIBRARY_TARGETS` lists them with the package
and class they audit, for the audit page and the tests.

x-transformers and hyper-connections modules have every parameter drawn at random (a fixed
seed) unless a comment says why not: zero-initialised dynamic weights would hide whether a
coefficient depends on the token. transformers models keep their own random initialisation
(seeded), and each layer is called with the arguments its model passes it (`layer_call`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, final

import torch
from torch import Tensor, nn

from ...extract.streams import Streams
from ...extract.target import Target

D_MODEL, HEADS, DIM_HEAD = 16, 2, 8
BATCH, LENGTH = 2, 5
STREAMS = 4
FOLDED: Streams = ("batch", STREAMS)  # both libraries fold the streams into the batch, (b s)
SEED = 0


def randomise(module: nn.Module, skip: tuple[str, ...] = (), scale: float = 0.5) -> nn.Module:
    """Every floating parameter of `module` (float64) drawn from N(0, scale²), but those whose
    name contains one of `skip`; the module in eval mode."""
    generator = torch.Generator().manual_seed(SEED)
    module = module.to(torch.float64).eval()
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if any(s in name for s in skip):
                continue
            noise = torch.randn(parameter.shape, generator=generator, dtype=torch.float64)
            parameter.copy_(noise * scale)
    return module


def _state(*shape: int) -> Tensor:
    return torch.randn(
        *shape, generator=torch.Generator().manual_seed(SEED + 1), dtype=torch.float64
    )


# x-transformers -------------------------------------------------------------------------------


def _encoder(dim: int = D_MODEL, **config: Any) -> nn.Module:
    from x_transformers import Encoder

    # The stack ends in a LayerNorm (`final_norm`) unless told not to: the read-out, after the
    # integrator, not a step of it (with it the output is no linear combination of anything).
    encoder = Encoder(
        dim=dim, heads=HEADS, attn_dim_head=DIM_HEAD, pre_norm_has_final_norm=False, **config
    )
    return randomise(encoder)


def branches(types: str, inner: str = "", post: bool = False) -> dict[str, tuple[str, ...]]:
    """Field chains of an x-transformers stack: layer i is `layers.i = (norms, block, residual)`;
    a branch reads through the pre-norm `norms.0` and (sandwich) ends in the post-norm `norms.1`."""
    fields, seen = {}, dict.fromkeys(types, 0)
    for i, kind in enumerate(types):
        seen[kind] += 1
        name = {"a": "attn", "f": "ff", "c": "cross"}[kind] + str(seen[kind])
        chain = (f"layers.{i}.0.0", f"layers.{i}.1{inner if kind == 'f' else ''}")
        fields[name] = chain + ((f"layers.{i}.0.1",) if post else ())
    return fields


def x_transformers_default(depth: int = 2, dim: int = D_MODEL, length: int = LENGTH) -> Target:
    """`x_transformers.Encoder(depth=depth)`: attention, feed-forward, ..., one pair a layer."""
    return Target(
        _encoder(dim, depth=depth),
        (_state(BATCH, length, dim),),
        branches("af" * depth),
        title=(
            f"x_transformers.Encoder(dim={dim}, depth={depth}, heads={HEADS}, "
            "pre_norm_has_final_norm=False)"
        ),
    )


def x_transformers_decoder() -> Target:
    """`x_transformers.Decoder(depth=1, cross_attend=True)`: the causal stack with cross-attention
    over a context (passed as `context=`): self-attention, cross-attention, feed-forward."""
    from x_transformers import Decoder

    decoder = Decoder(
        dim=D_MODEL,
        depth=1,
        heads=HEADS,
        attn_dim_head=DIM_HEAD,
        cross_attend=True,
        pre_norm_has_final_norm=False,
    )
    context = torch.randn(BATCH, 3, D_MODEL, generator=torch.Generator().manual_seed(SEED + 2))
    return Target(
        randomise(decoder),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("acf"),
        kwargs={"context": context.to(torch.float64)},
        title=(
            "x_transformers.Decoder(dim=16, depth=1, heads=2, cross_attend=True, "
            "pre_norm_has_final_norm=False)"
        ),
    )


def x_transformers_macaron() -> Target:
    """`macaron=True`: FFN, attention, FFN; each FFN wrapped in `Scale(0.5, ...)`, the field is
    the FFN inside it (`layers.i.1.fn`), so the ½ is a coefficient of the step."""
    return Target(
        _encoder(depth=1, macaron=True),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("faf", inner=".fn"),
        title="x_transformers.Encoder(dim=16, depth=1, macaron=True)",
    )


def x_transformers_sandwich() -> Target:
    """`sandwich_norm=True`: each branch ends in its own LayerNorm (`norms.1`), inside the field."""
    return Target(
        _encoder(depth=1, sandwich_norm=True),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("af", post=True),
        title="x_transformers.Encoder(dim=16, depth=1, sandwich_norm=True)",
    )


def x_transformers_integrate_layers() -> Target:
    """`integrate_layers=True` (LIMe): the feed-forward reads a per-token softmax mixture of the
    states before each earlier layer. The mixture's weights read the state through
    `layer_integrators.1.to_weights`, frozen so that they stay those of the module's input."""
    return Target(
        _encoder(depth=1, integrate_layers=True),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("af"),
        frozen=("layer_integrators.1.to_weights",),
        title="x_transformers.Encoder(dim=16, depth=1, integrate_layers=True)",
    )


def x_transformers_value_residual() -> Target:
    """`add_value_residual=True` (ResFormer): later attentions mix the first attention's values
    into their own, an argument computed inside the stack."""
    return Target(
        _encoder(depth=2, add_value_residual=True),
        (_state(BATCH, LENGTH, D_MODEL),),
        branches("afaf"),
        title="x_transformers.Encoder(dim=16, depth=2, add_value_residual=True)",
    )


@final
class XLayer(nn.Module):
    """One layer of an x-transformers `AttentionLayers`, called the way its forward calls it
    (x_transformers.py L3660, L3705-L3717): `residual.prepare`, the pre-norm, the branch, and
    the residual module; the state is the r streams folded into the batch.

    x-transformers keeps the streams inside the stack (expanded from, and summed back into, one
    state), so the streams of one layer are only visible this way.
    """

    norms: Any
    residual: Any

    def __init__(self, layer: nn.ModuleList) -> None:
        super().__init__()
        self.norms, self.block, self.residual = layer
        self.train(layer.training)

    def forward(self, x: Tensor) -> Tensor:
        x, inner, kwargs = self.residual.prepare(x)
        out = self.block(self.norms[0](x))
        out = out[0] if isinstance(out, tuple) else out
        result: Tensor = self.residual(out, inner, **kwargs)
        return result


def _x_streams(iterations: int, dim: int = D_MODEL, length: int = LENGTH) -> Target:
    encoder: Any = _encoder(
        dim, depth=1, num_residual_streams=STREAMS, hyper_conn_sinkhorn_iters=iterations
    )
    return Target(
        XLayer(encoder.layers[0]),
        (_state(BATCH * STREAMS, length, dim),),
        {"attn": ("norms.0", "block")},
        streams=FOLDED,
        title=(
            f"x_transformers.Encoder(dim={dim}, depth=1, num_residual_streams=4, "
            f"hyper_conn_sinkhorn_iters={iterations}): its first layer (HyperConnection)"
        ),
    )


def x_transformers_streams(dim: int = D_MODEL, length: int = LENGTH) -> Target:
    """`num_residual_streams=4` with its default 5 Sinkhorn iterations: one layer."""
    return _x_streams(5, dim, length)


def x_transformers_streams_no_sinkhorn() -> Target:
    """`num_residual_streams=4, hyper_conn_sinkhorn_iters=0`: one layer."""
    return _x_streams(0)


# hyper-connections -----------------------------------------------------------------------------


def _branch() -> nn.Module:
    return nn.Sequential(
        nn.LayerNorm(D_MODEL),
        nn.Linear(D_MODEL, 2 * D_MODEL),
        nn.GELU(),
        nn.Linear(2 * D_MODEL, D_MODEL),
    )


def _hyper(module: nn.Module, title: str) -> Target:
    return Target(
        module,
        (_state(BATCH * STREAMS, LENGTH, D_MODEL),),
        {"branch": "branch"},
        streams=FOLDED,
        title=title,
    )


# Static HC with exact weights: stream 0 and 1 read half each, streams 2 and 3 average each
# other; the branch writes 1, ½, ¼ and 2 of its output into the four streams.
STATIC_ALPHA = (
    ("1/2", 1, 0, 0, 0),
    ("1/2", 0, 1, 0, 0),
    (0, 0, 0, "1/2", "1/2"),
    (0, 0, 0, "1/2", "1/2"),
)
STATIC_BETA = (1, "1/2", "1/4", 2)


def _exact(rows: Any) -> Tensor:
    return torch.tensor(
        [[float(Fraction(str(x))) for x in row] for row in rows], dtype=torch.float64
    )


def hyper_connections_static() -> Target:
    """`HyperConnections(4)`, static: the dynamic weights zero (their initial value), the static
    `alpha` and `beta` set to exact values (`STATIC_ALPHA`, `STATIC_BETA`)."""
    from hyper_connections import HyperConnections

    module: Any = HyperConnections(STREAMS, dim=D_MODEL, branch=_branch(), layer_index=0)
    module = randomise(module, skip=("static_", "dynamic_alpha_fn", "dynamic_beta_fn"))
    with torch.no_grad():
        module.static_alpha.copy_(_exact(STATIC_ALPHA))
        module.static_beta.copy_(_exact([STATIC_BETA])[0])
    return _hyper(
        module, "hyper_connections.HyperConnections(4, dim=16), static (dynamic weights 0)"
    )


def hyper_connections_init() -> Target:
    """`HyperConnections(4, layer_index=1)` as initialised: its own static weights."""
    from hyper_connections import HyperConnections

    module = HyperConnections(STREAMS, dim=D_MODEL, branch=_branch(), layer_index=1)
    module = randomise(module, skip=("static_", "dynamic_"))
    return _hyper(
        module, "hyper_connections.HyperConnections(4, dim=16, layer_index=1), initialised"
    )


def hyper_connections_dynamic() -> Target:
    """`HyperConnections(4)`, dynamic: the static weights as initialised (stream 0 read, the
    identity mixing, every stream written with 1), the dynamic weights and scales random."""
    from hyper_connections import HyperConnections

    module = HyperConnections(STREAMS, dim=D_MODEL, branch=_branch(), layer_index=0)
    module = randomise(module, skip=("static_",))
    return _hyper(module, "hyper_connections.HyperConnections(4, dim=16), dynamic (random weights)")


def hyper_connections_mhc() -> Target:
    """`hyper_connections.mHC(4)` (ManifoldConstrainedHyperConnections): every weight random."""
    from hyper_connections import mHC

    module = randomise(mHC(STREAMS, dim=D_MODEL, branch=_branch(), layer_index=0))
    return _hyper(module, "hyper_connections.mHC(4, dim=16, sinkhorn_iters=20), random weights")


def hyper_connections_fractional() -> Target:
    """`HyperConnections(1, num_fracs=2)`: frac-connections (one stream, two fractions of the
    feature axis) as initialised."""
    from hyper_connections import HyperConnections

    module = HyperConnections(1, dim=D_MODEL, branch=_branch(), layer_index=0, num_fracs=2)
    module = randomise(module, skip=("static_", "dynamic_"))
    return Target(
        module,
        (_state(BATCH, LENGTH, D_MODEL),),
        {"branch": "branch"},
        title="hyper_connections.HyperConnections(1, dim=16, num_fracs=2), initialised",
    )


# transformers ----------------------------------------------------------------------------------

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


@final
@dataclass(frozen=True)
class LibraryTarget:
    """A factory of this module and what it audits: the package, the class, the paper."""

    key: str
    package: str
    audited: str
    paper: str
    factory: Callable[[], Target]


LIBRARY_TARGETS = (
    LibraryTarget(
        "hf-llama",
        "transformers",
        "transformers.models.llama.modeling_llama.LlamaDecoderLayer",
        "Touvron et al. (2023), pre-norm",
        transformers_llama,
    ),
    LibraryTarget(
        "hf-gptj",
        "transformers",
        "transformers.models.gptj.modeling_gptj.GPTJBlock",
        "GPT-J (Wang and Komatsuzaki, 2021), parallel attention and MLP",
        transformers_gptj,
    ),
    LibraryTarget(
        "hf-gemma2",
        "transformers",
        "transformers.models.gemma2.modeling_gemma2.Gemma2DecoderLayer",
        "Gemma 2 (2024), sandwich norms",
        transformers_gemma2,
    ),
    LibraryTarget(
        "hf-bert",
        "transformers",
        "transformers.models.bert.modeling_bert.BertLayer",
        "Devlin et al. (2019), post-norm",
        transformers_bert,
    ),
    LibraryTarget(
        "hf-deepseek-v4",
        "transformers",
        "transformers.models.deepseek_v4.modeling_deepseek_v4.DeepseekV4DecoderLayer",
        "mHC, arXiv:2512.24880",
        transformers_deepseek_v4,
    ),
    LibraryTarget(
        "x-default",
        "x-transformers",
        "x_transformers.Encoder",
        "Vaswani et al. (2017), pre-norm",
        x_transformers_default,
    ),
    LibraryTarget(
        "x-decoder",
        "x-transformers",
        "x_transformers.Decoder(cross_attend=True)",
        "Vaswani et al. (2017), pre-norm",
        x_transformers_decoder,
    ),
    LibraryTarget(
        "x-macaron",
        "x-transformers",
        "x_transformers.Encoder(macaron=True)",
        "Lu et al. (2019), Macaron-Net",
        x_transformers_macaron,
    ),
    LibraryTarget(
        "x-sandwich",
        "x-transformers",
        "x_transformers.Encoder(sandwich_norm=True)",
        "Ding et al. (2021), CogView",
        x_transformers_sandwich,
    ),
    LibraryTarget(
        "x-streams",
        "x-transformers",
        "x_transformers.x_transformers.HyperConnection",
        "Zhu et al. (2025) hyper-connections; Xie et al. (2025) mHC",
        x_transformers_streams,
    ),
    LibraryTarget(
        "x-streams-no-sinkhorn",
        "x-transformers",
        "x_transformers.x_transformers.HyperConnection",
        "Zhu et al. (2025) hyper-connections",
        x_transformers_streams_no_sinkhorn,
    ),
    LibraryTarget(
        "x-value-residual",
        "x-transformers",
        "x_transformers.Encoder(add_value_residual=True)",
        "ResFormer, arXiv:2410.17897",
        x_transformers_value_residual,
    ),
    LibraryTarget(
        "x-integrate-layers",
        "x-transformers",
        "x_transformers.x_transformers.DynamicLIMe",
        "LIMe, arXiv:2502.09245",
        x_transformers_integrate_layers,
    ),
    LibraryTarget(
        "hc-static",
        "hyper-connections",
        "hyper_connections.HyperConnections",
        "Zhu et al. (2025), static hyper-connections",
        hyper_connections_static,
    ),
    LibraryTarget(
        "hc-init",
        "hyper-connections",
        "hyper_connections.HyperConnections",
        "Zhu et al. (2025), Appendix J initialisation",
        hyper_connections_init,
    ),
    LibraryTarget(
        "hc-dynamic",
        "hyper-connections",
        "hyper_connections.HyperConnections",
        "Zhu et al. (2025), dynamic hyper-connections",
        hyper_connections_dynamic,
    ),
    LibraryTarget(
        "hc-mhc",
        "hyper-connections",
        "hyper_connections.mHC",
        "Xie et al. (2025), mHC",
        hyper_connections_mhc,
    ),
    LibraryTarget(
        "hc-fractional",
        "hyper-connections",
        "hyper_connections.HyperConnections(num_fracs=2)",
        "frac-connections, arXiv:2503.14125",
        hyper_connections_fractional,
    ),
)
