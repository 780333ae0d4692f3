"""Stage 6, generate: beam search and greedy decoding, translation and sacreBLEU evaluation,
a language model's perplexity."""

from .evaluate import (
    Evaluation,
    Perplexity,
    Scores,
    evaluate,
    evaluate_perplexity,
    score,
    translate,
)
from .search import Hypothesis, beam_search, greedy, length_penalized, search

__all__ = [
    "Evaluation",
    "Hypothesis",
    "Perplexity",
    "Scores",
    "beam_search",
    "evaluate",
    "evaluate_perplexity",
    "greedy",
    "length_penalized",
    "score",
    "search",
    "translate",
]
