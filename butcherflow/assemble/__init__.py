"""Stage 4, assemble: models built from compiled blocks, declared by recipes."""

from .compiled import compile_blocks
from .floater import FloaterInjection
from .models import (
    LanguageModel,
    Seq2Seq,
    apply_param_budget,
    count_parameters,
    cross_attends,
    language_model_side,
    model_class,
    side_order,
)
from .recipe import Recipe, load_recipe, recipe_from_dict, recipe_names, recipe_to_toml
from .warm_start import warm_start

__all__ = [
    "FloaterInjection",
    "LanguageModel",
    "Recipe",
    "Seq2Seq",
    "apply_param_budget",
    "compile_blocks",
    "count_parameters",
    "cross_attends",
    "language_model_side",
    "load_recipe",
    "model_class",
    "recipe_from_dict",
    "recipe_names",
    "recipe_to_toml",
    "side_order",
    "warm_start",
]
