"""Stage 6, generate: beam search and greedy decoding, translation and sacreBLEU evaluation."""

from .evaluate import Evaluation, Scores, evaluate, score, translate
from .search import Hypothesis, beam_search, greedy, length_penalized, search

__all__ = [
    "Evaluation",
    "Hypothesis",
    "Scores",
    "beam_search",
    "evaluate",
    "greedy",
    "length_penalized",
    "score",
    "search",
    "translate",
]
