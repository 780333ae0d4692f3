"""Spectra a stability polynomial is designed for, each with its sample points for the optimiser,
a polynomial basis well conditioned on it, and an exact proof that |R(z)| ≤ 1 on h·S.

A spectrum S is a set of eigenvalues λ in units of the step: a step h is stable when
|R(hλ)| ≤ 1 for every λ in S (RK-Opt's convention: S = [−1, 0] gives h = 2s² at first order).
The proof reduces each continuum to one real parameter along its boundary and decides the sign
of a rational polynomial exactly (`proof.nonnegative_on`):

- `RealInterval(lo, hi)`: z = h(lo + (hi − lo)u), u ∈ [0, 1]; |R| ≤ 1 ⇔ 1 − R ≥ 0 and 1 + R ≥ 0.
- `ImaginaryInterval(beta)`: z = ihβy, y ∈ [0, 1] (R has real coefficients, so |R(z̄)| = |R(z)|):
  1 − Re R² − Im R² ≥ 0, an even polynomial in y.
- `Disk(center, radius)`: by the maximum principle its boundary circle suffices; the rational
  parametrisation e^{iθ} = (1 + it)/(1 − it), t = tan(θ/2) ∈ [0, ∞), makes
  |R(z(t))|² = |N(t)|²/(1 + t²)^s, so the claim is (1 + t²)^s − |N(t)|² ≥ 0 on [0, ∞) (the
  point θ = π is the limit t → ∞, decided by the leading coefficient).
- `Eigenvalues(values)`: a finite set, each |R(hλ)|² ≤ 1 in exact complex rationals.

A star-shaped S (one that holds 0 and every tλ for λ in S, t in [0, 1]) gives the stronger claim
that every smaller step is stable too (`star_shaped`).
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, final

import flint
import numpy as np

from ..analysis.budget import Deadline
from ..errors import DesignError
from .proof import fmpq, nonnegative_on

Coefficients = Sequence[Fraction]  # R(z) = Σ a_k z^k, ascending


def rational(value: Any, key: str) -> Fraction:
    """A finite real number as an exact rational (a float by its decimal digits, as typed)."""
    try:
        out = Fraction(value) if isinstance(value, (int, Fraction)) else Fraction(str(value))
    except (ValueError, ZeroDivisionError, TypeError):
        raise DesignError(
            "not a finite real number", key=key, value=value, valid="e.g. -1, 0.5 or '1/3'"
        ) from None
    return out


def _finite(value: Any, key: str) -> Any:
    if isinstance(value, (int, float)) and not math.isfinite(value):
        raise DesignError(
            "the spectrum is unbounded: no polynomial is bounded on an unbounded set",
            key=key,
            value=value,
            valid="finite ends (the step scales the set; [-1, 0] is the usual real interval)",
        )
    return value


# --- bases: ψ_j(w), w = z/h, j = 0..s; their values at the samples do not depend on h -----------


@dataclass(frozen=True)
class Basis(abc.ABC):
    """Polynomials ψ_0..ψ_s of degree j, bounded by about 1 on the (unit-step) spectrum."""

    @abc.abstractmethod
    def exact(self, s: int) -> list[list[Fraction]]:
        """`m[j][k]`, the coefficient of w^k in ψ_j (exact), j, k = 0..s."""

    @abc.abstractmethod
    def values(self, lam: np.ndarray, s: int) -> np.ndarray:
        """ψ_j(λ) at the sample points, `(n, s + 1)` complex."""


def _times_linear(p: list[Fraction], a: Fraction, b: Fraction) -> list[Fraction]:
    """p(w)·(a·w + b), ascending coefficients."""
    out = [Fraction(0)] * (len(p) + 1)
    for k, c in enumerate(p):
        out[k] += b * c
        out[k + 1] += a * c
    return out


def _three_term(s: int, first: list[Fraction], a: Fraction, b: Fraction, sign: int) -> list:
    """ψ_0 = 1, ψ_1 = `first`, ψ_{j+1} = 2(a·w + b)ψ_j + sign·ψ_{j−1}, padded to length s + 1."""
    rows = [[Fraction(1)], first][: s + 1]
    while len(rows) < s + 1:
        nxt = _times_linear(rows[-1], 2 * a, 2 * b)
        for k, c in enumerate(rows[-2]):
            nxt[k] += sign * c
        rows.append(nxt)
    return [row + [Fraction(0)] * (s + 1 - len(row)) for row in rows]


@final
@dataclass(frozen=True)
class Chebyshev(Basis):
    """T_j(1 + 2w/L): Chebyshev polynomials on [−L, 0] (RK-Opt's 'chebyshev')."""

    L: Fraction

    def exact(self, s: int) -> list[list[Fraction]]:
        return _three_term(s, [Fraction(1), 2 / self.L], 2 / self.L, Fraction(1), -1)

    def values(self, lam: np.ndarray, s: int) -> np.ndarray:
        x = 1 + 2 * lam / float(self.L)
        return _float_three_term(s, x, x, -1)


@final
@dataclass(frozen=True)
class RotatedChebyshev(Basis):
    """i^j T_j(−iw/β): real coefficients, bounded by 1 on [−iβ, iβ] (RK-Opt's 'rotated
    chebyshev'); ψ_{j+1} = (2w/β)ψ_j + ψ_{j−1}."""

    beta: Fraction

    def exact(self, s: int) -> list[list[Fraction]]:
        return _three_term(s, [Fraction(0), 1 / self.beta], 1 / self.beta, Fraction(0), 1)

    def values(self, lam: np.ndarray, s: int) -> np.ndarray:
        x = lam / float(self.beta)
        return _float_three_term(s, x, x, 1)


@final
@dataclass(frozen=True)
class Centred(Basis):
    """((w − c)/ρ)^j: powers about a disk's centre (RK-Opt's 'binomial' for |z + 1| ≤ 1)."""

    center: Fraction
    radius: Fraction

    def exact(self, s: int) -> list[list[Fraction]]:
        rows = [[Fraction(1)]]
        for _ in range(s):
            rows.append(_times_linear(rows[-1], 1 / self.radius, -self.center / self.radius))
        return [row + [Fraction(0)] * (s + 1 - len(row)) for row in rows]

    def values(self, lam: np.ndarray, s: int) -> np.ndarray:
        w = (lam - float(self.center)) / float(self.radius)
        return np.stack([w**j for j in range(s + 1)], axis=1)


def _float_three_term(s: int, first: np.ndarray, x: np.ndarray, sign: int) -> np.ndarray:
    rows = [np.ones_like(x), first]
    while len(rows) < s + 1:
        rows.append(2 * x * rows[-1] + sign * rows[-2])
    return np.stack(rows[: s + 1], axis=1)


# --- spectra -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spectrum(abc.ABC):
    """A set of eigenvalues in units of the step (module docstring)."""

    @property
    @abc.abstractmethod
    def star_shaped(self) -> bool:
        """True when stability at h implies stability at every smaller step."""

    @property
    @abc.abstractmethod
    def scale(self) -> Fraction:
        """The set's extent (max |λ|, about): the bisection starts below 2.01·s²/scale."""

    def near_zero(self, s: int) -> Fraction:
        """|λ| below which the order conditions, not the optimiser, decide |R(hλ)| (the margin
        weights of `polynomial.py` fall off there): the scale of the first extremum of an
        optimal R, about L/s² where the set extends along the real axis."""
        return self.scale / s**2

    def tangency(self, q: int) -> list[tuple[int, Fraction]]:
        """Where the set is tangent to the imaginary axis at 0, |R|² − 1 starts with a term
        that samples cannot see: (j, c_j) such that Σ_j c_j (a_j − 1/j!) ≤ 0 is necessary for
        stability next to 0 when a_k = 1/k! for k ≤ q (linear in the free a_j). None here."""
        return []

    @abc.abstractmethod
    def samples(self, n: int) -> np.ndarray:
        """About n points of the set (its boundary where that suffices), complex."""

    @abc.abstractmethod
    def basis(self) -> Basis:
        """The basis the optimiser works in."""

    @abc.abstractmethod
    def stable(self, a: Coefficients, h: Fraction, deadline: Deadline | None = None) -> bool:
        """Exactly: |R(hλ)| ≤ 1 for every λ of the set, R(z) = Σ a_k z^k."""

    @abc.abstractmethod
    def text(self) -> str:
        """The set as the command line spells it (`real:-1,0`)."""


def _poly(a: Coefficients, scale: Fraction) -> flint.fmpq_poly:
    """R(scale·u) as a polynomial in u."""
    return flint.fmpq_poly([fmpq(c * scale**k) for k, c in enumerate(a)])


@final
@dataclass(frozen=True)
class RealInterval(Spectrum):
    """[lo, hi] on the real axis, lo < hi ≤ 0."""

    lo: Any = -1
    hi: Any = 0

    def __post_init__(self) -> None:
        lo = rational(_finite(self.lo, "lo"), "lo")
        hi = rational(_finite(self.hi, "hi"), "hi")
        if lo >= hi:
            raise DesignError(
                "the spectrum is empty or a point: the interval needs lo < hi",
                key="real",
                value=(str(lo), str(hi)),
                valid="e.g. real:-1,0",
            )
        _left_half(hi, "real")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    @property
    def star_shaped(self) -> bool:
        return bool(self.hi == 0)

    @property
    def scale(self) -> Fraction:
        return -Fraction(self.lo)

    def samples(self, n: int) -> np.ndarray:
        u = (1 - np.cos(np.linspace(0, np.pi, n))) / 2
        return (float(self.lo) + (float(self.hi) - float(self.lo)) * u).astype(complex)

    def basis(self) -> Basis:
        return Chebyshev(self.scale)

    def stable(self, a: Coefficients, h: Fraction, deadline: Deadline | None = None) -> bool:
        q = _poly(a, Fraction(1))(
            flint.fmpq_poly([fmpq(h * self.lo), fmpq(h * (self.hi - self.lo))])
        )
        one = flint.fmpq_poly([1])
        return nonnegative_on(one - q, Fraction(1), deadline) and nonnegative_on(
            one + q, Fraction(1), deadline
        )

    def text(self) -> str:
        return f"real:{self.lo},{self.hi}"


@final
@dataclass(frozen=True)
class ImaginaryInterval(Spectrum):
    """[−iβ, iβ] on the imaginary axis, β > 0."""

    beta: Any = 1

    def __post_init__(self) -> None:
        beta = rational(_finite(self.beta, "beta"), "beta")
        if beta <= 0:
            raise DesignError(
                "the spectrum is empty or a point: the imaginary interval [-iβ, iβ] needs β > 0",
                key="imag",
                value=str(beta),
                valid="e.g. imag:1",
            )
        object.__setattr__(self, "beta", beta)

    star_shaped = True

    @property
    def scale(self) -> Fraction:
        return Fraction(self.beta)

    def near_zero(self, s: int) -> Fraction:
        return self.scale / s  # the optimal steps grow like s, not s², along the axis

    def tangency(self, q: int) -> list[tuple[int, Fraction]]:
        # |R(iy)|² = Σ_n e_n y^n, e_n = Σ_{j+k=n} a_j a_k i^(j−k); e_n = 0 for n ≤ q, and the
        # first even n0 > q has e_n0 = Σ_{j>q} 2(−1)^(j − n0/2) (a_j − 1/j!)/(n0 − j)! (each
        # product has one free factor at most, and e^{iy} contributes 0)
        n0 = q + 1 if q % 2 else q + 2
        return [
            (j, Fraction(2 * (-1) ** (j - n0 // 2), math.factorial(n0 - j)))
            for j in range(q + 1, n0 + 1)
        ]

    def samples(self, n: int) -> np.ndarray:
        y = (1 - np.cos(np.linspace(0, np.pi, n))) / 2
        return 1j * float(self.beta) * y

    def basis(self) -> Basis:
        return RotatedChebyshev(self.scale)

    def stable(self, a: Coefficients, h: Fraction, deadline: Deadline | None = None) -> bool:
        hb = h * self.beta  # R(i·hβ·y) = E(y) + i·O(y)
        even = [c * hb**k * (-1) ** (k // 2) if k % 2 == 0 else 0 for k, c in enumerate(a)]
        odd = [c * hb**k * (-1) ** (k // 2) if k % 2 else 0 for k, c in enumerate(a)]
        re = flint.fmpq_poly([fmpq(Fraction(x)) for x in even])
        im = flint.fmpq_poly([fmpq(Fraction(x)) for x in odd])
        return nonnegative_on(flint.fmpq_poly([1]) - re * re - im * im, Fraction(1), deadline)

    def text(self) -> str:
        return f"imag:{self.beta}"


@final
@dataclass(frozen=True)
class Disk(Spectrum):
    """{z : |z − center| ≤ radius} in the closed left half-plane (center + radius ≤ 0)."""

    center: Any = -1
    radius: Any = 1

    def __post_init__(self) -> None:
        center = rational(_finite(self.center, "center"), "center")
        radius = rational(_finite(self.radius, "radius"), "radius")
        if radius <= 0:
            raise DesignError(
                "the spectrum is empty or a point: a disk needs a radius > 0",
                key="disk",
                value=str(radius),
                valid="e.g. disk:-1,1 (centre -1, radius 1)",
            )
        _left_half(center + radius, "disk")
        object.__setattr__(self, "center", center)
        object.__setattr__(self, "radius", radius)

    @property
    def star_shaped(self) -> bool:
        return bool(self.center + self.radius == 0)

    @property
    def scale(self) -> Fraction:
        return Fraction(self.radius - self.center)

    def samples(self, n: int) -> np.ndarray:
        theta = np.linspace(0, np.pi, n)
        return float(self.center) + float(self.radius) * np.exp(1j * theta)

    def basis(self) -> Basis:
        return Centred(Fraction(self.center), Fraction(self.radius))

    def stable(self, a: Coefficients, h: Fraction, deadline: Deadline | None = None) -> bool:
        s = len(a) - 1
        c, r = Fraction(self.center), Fraction(self.radius)
        # w(t) = c(1 − it) + r(1 + it) = (c + r) + i(r − c)t, and (1 − it)
        w = (_q([c + r]), _q([0, r - c]))
        d = (_q([1]), _q([0, -1]))
        re, im = _q([0]), _q([0])
        for k, coefficient in enumerate(a):
            term = (_q([coefficient * h**k]), _q([0]))
            for _ in range(k):
                term = _cmul(term, w)
            for _ in range(s - k):
                term = _cmul(term, d)
            re, im = re + term[0], im + term[1]
        bound = _q([1, 0, 1]) ** s
        return nonnegative_on(bound - re * re - im * im, None, deadline)

    def text(self) -> str:
        return f"disk:{self.center},{self.radius}"


def _q(coefficients: Sequence[Any]) -> flint.fmpq_poly:
    return flint.fmpq_poly([fmpq(Fraction(x)) for x in coefficients])


def _cmul(x: tuple[Any, Any], y: tuple[Any, Any]) -> tuple[Any, Any]:
    return x[0] * y[0] - x[1] * y[1], x[0] * y[1] + x[1] * y[0]


@final
@dataclass(frozen=True)
class Eigenvalues(Spectrum):
    """A finite set of eigenvalues (complex numbers with Re λ ≤ 0, not all 0)."""

    values: Any = ()

    def __post_init__(self) -> None:
        raw = list(self.values)
        if not raw:
            raise DesignError(
                "the spectrum is empty: no eigenvalues given",
                key="eigenvalues",
                value=raw,
                valid="one complex number or more, e.g. eigenvalues:-1,-2+3j",
            )
        exact = []
        for k, value in enumerate(raw):
            z = complex(value)
            if not (math.isfinite(z.real) and math.isfinite(z.imag)):
                _finite(math.inf, f"eigenvalues[{k}]")
            x, y = (rational(repr(part), f"eigenvalues[{k}]") for part in (z.real, z.imag))
            _left_half(x, f"eigenvalues[{k}]")
            exact.append((x, y))
        if all(x == 0 and y == 0 for x, y in exact):
            raise DesignError(
                "the spectrum is the point 0: every step is stable there",
                key="eigenvalues",
                value=raw,
                valid="at least one nonzero eigenvalue",
            )
        object.__setattr__(self, "values", tuple(exact))

    star_shaped = False

    @property
    def scale(self) -> Fraction:
        return max(abs(x) + abs(y) for x, y in self.values)

    def samples(self, n: int) -> np.ndarray:
        return np.array([complex(float(x), float(y)) for x, y in self.values])

    def basis(self) -> Basis:
        real = max(-x for x, _ in self.values)
        imag = max(abs(y) for _, y in self.values)
        return Chebyshev(real) if real >= imag else RotatedChebyshev(imag)

    def stable(self, a: Coefficients, h: Fraction, deadline: Deadline | None = None) -> bool:
        for x, y in self.values:
            zr, zi = h * x, h * y
            re, im = Fraction(0), Fraction(0)
            for c in reversed(a):  # Horner in exact complex rationals
                re, im = re * zr - im * zi + c, re * zi + im * zr
            if re * re + im * im > 1:
                return False
        return True

    def text(self) -> str:
        return "eigenvalues:" + ",".join(f"{complex(float(x), float(y))}" for x, y in self.values)


def _left_half(real_part: Fraction, key: str) -> None:
    if real_part > 0:
        raise DesignError(
            "the spectrum reaches into the right half-plane, where the exact solution grows "
            "(|e^z| > 1) and no step can be stable in the sense |R(z)| ≤ 1",
            key=key,
            value=str(real_part),
            valid="a set in Re z ≤ 0",
        )


def parse_spectrum(text: str) -> Spectrum:
    """`real:LO,HI`, `imag:BETA`, `disk:CENTER,RADIUS`, `eigenvalues:Z1,Z2,...` or
    `eigenvalues:@FILE` (one complex number a line, Python's syntax: `-1+2j`)."""
    kind, _, rest = text.partition(":")
    parts = [p.strip() for p in rest.split(",") if p.strip()]
    shapes = {"real": 2, "imag": 1, "disk": 2}
    valid = "real:LO,HI, imag:BETA, disk:CENTER,RADIUS or eigenvalues:Z1,Z2,... (or @FILE)"
    if kind in shapes and len(parts) != shapes[kind]:
        raise DesignError(
            f"{kind} takes {shapes[kind]} number(s)", key="spectrum", value=text, valid=valid
        )
    if kind == "real":
        return RealInterval(parts[0], parts[1])
    if kind == "imag":
        return ImaginaryInterval(parts[0])
    if kind == "disk":
        return Disk(parts[0], parts[1])
    if kind == "eigenvalues":
        if rest.startswith("@"):
            path = Path(rest[1:])
            if not path.is_file():
                why = "not a regular file" if path.exists() else "no such file"
                raise DesignError(why, key="spectrum", value=rest[1:], valid=valid)
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except UnicodeDecodeError:
                raise DesignError(
                    "not a text file", key="spectrum", value=rest[1:], valid=valid
                ) from None
            parts = [line.strip() for line in lines if line.strip()]
        try:
            return Eigenvalues(tuple(complex(p.replace(" ", "")) for p in parts))
        except ValueError:
            raise DesignError(
                "not a list of complex numbers", key="spectrum", value=text, valid=valid
            ) from None
    raise DesignError("unknown spectrum", key="spectrum", value=text, valid=valid)
