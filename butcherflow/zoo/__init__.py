"""Other libraries' models and layers, built from small configurations with random weights
(nothing is downloaded): x-transformers, hyper-connections and transformers, as `bf.extract`
reads them. The README, the command line, the audit page and the tests use these factories.

Each function is a factory (`butcherflow extract butcherflow.zoo:NAME`):
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
from dataclasses import dataclass
from typing import final

from ..extraction.target import Target
from .common import (
    BATCH,
    D_MODEL,
    LENGTH,
    SEED,
    STREAMS,
    randomise,
)
from .hugging_face import (
    HF_MODELS,
    LLAMA_FIELDS,
    hf_ids,
    hf_model,
    layer_call,
    transformers_bert,
    transformers_deepseek_v4,
    transformers_gemma2,
    transformers_gptj,
    transformers_llama,
)
from .hyper_connections import (
    STATIC_ALPHA,
    STATIC_BETA,
    hyper_connections_dynamic,
    hyper_connections_fractional,
    hyper_connections_init,
    hyper_connections_mhc,
    hyper_connections_static,
)
from .x_transformers import (
    XLayer,
    branches,
    x_transformers_decoder,
    x_transformers_default,
    x_transformers_integrate_layers,
    x_transformers_macaron,
    x_transformers_sandwich,
    x_transformers_streams,
    x_transformers_streams_no_sinkhorn,
    x_transformers_value_residual,
)

__all__ = [
    "BATCH",
    "D_MODEL",
    "HF_MODELS",
    "LENGTH",
    "LIBRARY_TARGETS",
    "LLAMA_FIELDS",
    "SEED",
    "STATIC_ALPHA",
    "STATIC_BETA",
    "STREAMS",
    "LibraryTarget",
    "XLayer",
    "branches",
    "hf_ids",
    "hf_model",
    "hyper_connections_dynamic",
    "hyper_connections_fractional",
    "hyper_connections_init",
    "hyper_connections_mhc",
    "hyper_connections_static",
    "layer_call",
    "randomise",
    "transformers_bert",
    "transformers_deepseek_v4",
    "transformers_gemma2",
    "transformers_gptj",
    "transformers_llama",
    "x_transformers_decoder",
    "x_transformers_default",
    "x_transformers_integrate_layers",
    "x_transformers_macaron",
    "x_transformers_sandwich",
    "x_transformers_streams",
    "x_transformers_streams_no_sinkhorn",
    "x_transformers_value_residual",
]


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
