"""PyTorch building blocks of compiled blocks: attention, feed-forward, fields, positions.

A leaf of the pipeline: it imports nothing from the declarations, the analysis or the compiler.
"""

from .attention import MultiheadAttention, check_heads
from .context import AttentionBiasHook, Context, DecodeCache, ProjectionBias
from .feedforward import ACTIVATIONS, FeedForward, ReLU
from .fields import (
    FIELD_NAMES,
    STAGES,
    CrossAttentionSublayer,
    FeedForwardSublayer,
    Field,
    ModuleField,
    PreNormField,
    SelfAttentionSublayer,
    Sublayer,
    check_stage,
    make_field,
)
from .floater import FloaterDynamics, FloaterPositions
from .positions import LearnedPositions, Positions, SinusoidalPositions, token_positions

__all__ = [
    "ACTIVATIONS",
    "FIELD_NAMES",
    "STAGES",
    "AttentionBiasHook",
    "Context",
    "CrossAttentionSublayer",
    "DecodeCache",
    "FeedForward",
    "FeedForwardSublayer",
    "Field",
    "FloaterDynamics",
    "FloaterPositions",
    "LearnedPositions",
    "ModuleField",
    "MultiheadAttention",
    "Positions",
    "PreNormField",
    "ProjectionBias",
    "ReLU",
    "SelfAttentionSublayer",
    "SinusoidalPositions",
    "Sublayer",
    "check_heads",
    "check_stage",
    "make_field",
    "token_positions",
]
