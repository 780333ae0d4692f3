"""Additive methods y' = Σ_X f_X(y): order over trees coloured by field."""

from .order import search_coloured_order
from .report import AdditiveReport, analyse_additive

__all__ = ["AdditiveReport", "analyse_additive", "search_coloured_order"]
