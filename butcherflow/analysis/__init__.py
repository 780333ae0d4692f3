"""Stage 2, analyse: exact proofs of order and stability (sympy)."""

from .check import ANALYSES, check, trained_order
from .exact.trees import Tree, TreeFamily
from .report import Report
from .runge_kutta.report import RungeKuttaReport, analyse_tableau
from .runge_kutta.stability import StabilityFunction, stability_function

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
