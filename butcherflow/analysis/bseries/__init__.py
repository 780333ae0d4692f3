"""B-series of methods, the Butcher group, backward error analysis and geometric properties."""

from .families import bseries
from .group import adjoint, compose, inverse, substitute
from .modified import (
    elementary_differentials,
    evaluate,
    evaluate_numpy,
    modified_equation,
    modifying_integrator,
)
from .properties import (
    energy_order,
    energy_preservation,
    symmetry_order,
    symplecticity_order,
)
from .series import BSeries, additive_series, exact_flow, tableau_series, tree
from .splitting import series_order, splitting_series
from .verdicts import symplectic

__all__ = [
    "BSeries",
    "additive_series",
    "adjoint",
    "bseries",
    "compose",
    "elementary_differentials",
    "energy_order",
    "energy_preservation",
    "evaluate",
    "evaluate_numpy",
    "exact_flow",
    "inverse",
    "modified_equation",
    "modifying_integrator",
    "series_order",
    "splitting_series",
    "substitute",
    "symmetry_order",
    "symplectic",
    "symplecticity_order",
    "tableau_series",
    "tree",
]
