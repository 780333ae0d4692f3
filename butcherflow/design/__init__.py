"""Stage 3, design: optimisation-based construction of declarations, each returned with its proof."""

from .polynomial import StabilityPolynomial, stability_polynomial
from .spectra import Disk, Eigenvalues, ImaginaryInterval, RealInterval, Spectrum, parse_spectrum

__all__ = [
    "Disk",
    "Eigenvalues",
    "ImaginaryInterval",
    "RealInterval",
    "Spectrum",
    "StabilityPolynomial",
    "parse_spectrum",
    "stability_polynomial",
]
