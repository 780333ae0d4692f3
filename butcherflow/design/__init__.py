"""Stage 3, design: integrators found by optimisation, each returned as a declaration with its
proof (DESIGN.md: the design stage returns declarations that analysis proves, never an
optimiser's floats alone).

- `stability_polynomial(s, p, spectrum)`: the optimal stability polynomial (Ketcheson & Ahmadia
  2012), exact, its step proved on the whole spectrum.
- `ssp_tableau(s, p)`, `low_error_tableau(s, p)`, `realise(polynomial, q)`: Runge-Kutta
  tableaux (RK-Opt's formulations), made exact and proved by `bf.check`.
- `depth_method(r, p)`: a general linear method over r streams with a doubly stochastic V,
  zero-stable for every V of that set, compiled with `coefficients="birkhoff"`.
"""

from .depth import DepthMethod, depth_method, family_theorem
from .polynomial import StabilityPolynomial, stability_polynomial
from .result import DesignedMethod
from .runge_kutta import low_error_tableau, realise, ssp_tableau
from .spectra import Disk, Eigenvalues, ImaginaryInterval, RealInterval, Spectrum, parse_spectrum

__all__ = [
    "DepthMethod",
    "DesignedMethod",
    "Disk",
    "Eigenvalues",
    "ImaginaryInterval",
    "RealInterval",
    "Spectrum",
    "StabilityPolynomial",
    "depth_method",
    "family_theorem",
    "low_error_tableau",
    "parse_spectrum",
    "realise",
    "ssp_tableau",
    "stability_polynomial",
]
