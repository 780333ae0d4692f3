"""Stage 2, analyse: exact proofs of order and stability (sympy)."""

from .check import ANALYSES, check, trained_order
from .report import Report
from .runge_kutta import RungeKuttaReport, analyse_tableau
from .stability import StabilityFunction, stability_function
from .trees import Tree, TreeFamily

__all__ = [
    "ANALYSES",
    "Report",
    "RungeKuttaReport",
    "StabilityFunction",
    "Tree",
    "TreeFamily",
    "analyse_tableau",
    "check",
    "stability_function",
    "trained_order",
]
