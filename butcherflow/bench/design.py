"""`butcherflow bench design`: every kind of design at s ≤ 10, timed (target: under a minute
each), with what it proved beside the best value known (ratio proved/best).

The best known values are closed forms or published optima, typed here with their sources:
h = 2s² (first order, negative real axis), s − 1 (first order, imaginary axis; Kinnmark & Gray
1984, RK-Opt's polyopt tests), s and s − 1 (orders 1 and 2, the disk |z + 1| ≤ 1; RK-Opt's
tests), C = s − 1 (explicit SSP order 2), C = n² − n (SSP(n², 3); Ketcheson 2008), C = 6 (SSP(10,4);
Ketcheson 2008), C ≈ 1.508180049 (SSP(5,4); Spiteri & Ruuth 2002), C = 2s (DIRK SSP order 2)
and s − 1 + √(s² − 1) (SDIRK SSP order 3; Ketcheson, Macdonald & Gottlieb 2009), error norm
1/6 (RK(2,2); RK-Opt's test). The times are of one run each (a design is seconds long: the
median of repeats would say little more), on the machine named in the section.
"""

from __future__ import annotations

import datetime
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..design import depth_method, low_error_tableau, realise, ssp_tableau, stability_polynomial
from . import write_section
from .order import machine

TARGET = 60.0  # seconds per design with s ≤ 10


@dataclass(frozen=True)
class Case:
    what: str
    command: str
    run: Callable[[], Any]
    proved: Callable[[Any], float]
    best: float | None
    larger: bool = True  # a larger value is better (steps, SSP coefficients)


def _cases() -> list[Case]:
    def step(x: Any) -> float:
        return float(x.step)

    def value(x: Any) -> float:
        return float(x.proved_value)

    def polynomial(s: int, p: int, spectrum: str, best: float | None) -> Case:
        return Case(
            f"stability polynomial s={s}, p={p}, {spectrum}",
            f"butcherflow design polynomial --stages {s} --order {p} --spectrum {spectrum}",
            lambda: stability_polynomial(s, p, spectrum),
            step,
            best,
        )

    def ssp(s: int, p: int, best: float, implicit: bool = False) -> Case:
        flag = " --implicit" if implicit else ""
        return Case(
            f"{'DIRK' if implicit else 'explicit'} SSP({s},{p})",
            f"butcherflow design ssp --stages {s} --order {p}{flag}",
            lambda: ssp_tableau(s, p, implicit=implicit),
            value,
            best,
        )

    realised = Case(
        "realise s=8 p=2 real:-1,0 at nonlinear order 2",
        "butcherflow design polynomial --stages 8 --order 2 --spectrum real:-1,0 --realise 2",
        lambda: realise(stability_polynomial(8, 2, "real:-1,0"), 2),
        lambda x: float(x.report.order),
        2.0,
    )
    return [
        polynomial(10, 1, "real:-1,0", 200.0),
        polynomial(10, 4, "real:-1,0", None),
        polynomial(10, 1, "imag:1", 9.0),
        polynomial(9, 2, "imag:1", 8.0),
        polynomial(10, 1, "disk:-1,1", 10.0),
        polynomial(10, 2, "disk:-1,1", 9.0),
        polynomial(10, 2, "eigenvalues:-1,-2+1j,-0.5+3j,-4+0.5j", None),
        ssp(10, 2, 9.0),
        ssp(9, 3, 6.0),
        ssp(5, 4, 1.508180049),
        ssp(10, 4, 6.0),
        ssp(2, 2, 4.0, implicit=True),
        ssp(3, 3, 2 + math.sqrt(8), implicit=True),
        Case(
            "least error RK(2,2)",
            "butcherflow design low-error --stages 2 --order 2",
            lambda: low_error_tableau(2, 2),
            value,
            1 / 6,
            larger=False,
        ),
        Case(
            "least error RK(4,4)",
            "butcherflow design low-error --stages 4 --order 4",
            lambda: low_error_tableau(4, 4),
            value,
            None,
            larger=False,
        ),
        realised,
        Case(
            "depth method, 4 streams, order 2",
            "butcherflow design depth --streams 4 --order 2",
            lambda: depth_method(4, 2),
            lambda x: float(x.report.order),
            2.0,
        ),
    ]


def _row(case: Case) -> tuple[str, float, float, str]:
    started = time.perf_counter()
    found = case.run()
    seconds = time.perf_counter() - started
    proved = case.proved(found)
    if case.best is None:
        ratio = "—"
    else:
        r = proved / case.best if case.larger else case.best / proved
        ratio = f"{r:.10f}".rstrip("0").rstrip(".")
    exact = getattr(found, "exact", True)  # polynomials and depth methods are always exact
    return f"{case.what}{'' if exact else ' (numeric)'}", seconds, proved, ratio


def run_design(output: str, command: str) -> None:
    """Run every case and write the `design` section of `output`."""
    cases = _cases()
    load_before = os.getloadavg()[0]
    rows = []
    for case in cases:
        what, seconds, proved, ratio = _row(case)
        rows.append((what, case.command, seconds, proved, case.best, ratio))
        print(f"{what}: {seconds:.1f} s, proved {proved:.10g}, ratio {ratio}", flush=True)
    worst = max(rows, key=lambda r: r[2])
    lines = [
        "## Design (`butcherflow bench design`)",
        "",
        f"Command: `{command}` ({datetime.date.today().isoformat()}); machine: {machine()}.",
        "",
        f"Target: each design with s ≤ 10 under {TARGET:.0f} s. Worst case: {worst[0]}, "
        f"{worst[2]:.1f} s ({'met' if worst[2] < TARGET else 'missed'}). `proved` is what the "
        "declaration proves (the step, the SSP coefficient, the error norm, or the order "
        "proved by bf.check); the ratio is proved/best known (best/proved for an error norm). "
        f"Load average (1 min) {load_before:.1f} before and {os.getloadavg()[0]:.1f} after, "
        f"on {os.cpu_count()} cores: on a shared machine the times are upper bounds.",
        "",
        "| design | command | seconds | proved | best known | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for what, cmd, seconds, proved, best, ratio in rows:
        shown = "—" if best is None else f"{best:.10g}"
        lines.append(f"| {what} | `{cmd}` | {seconds:.1f} | {proved:.10g} | {shown} | {ratio} |")
    write_section(output, "design", "\n".join(lines))
