"""`butcherflow bench order`: `bf.check` on every catalog method, beside NodePy, in one table.

For each method, in one run and side by side: the median wall clock of our full report (order,
error terms, stage order, embedded order, R(z) and its intervals, A-/L- and algebraic
stability), then NodePy's `order()` on the same coefficients in a child process (exact mode for
exact tableaux, float mode for numeric ones; NodePy has no exact mode for R(z) with radicals).
Each row marks the issue's targets as met or not; the median and the worst ratio are reported
over every method both ran, slower rows included.
"""

from __future__ import annotations

import datetime
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sympy.core.cache import clear_cache

from ..analysis import check
from ..analysis.exact import weights as weights_module
from ..methods import ButcherTableau, LinearMultistep, Method, catalog, load
from . import DEFAULT_OUTPUT, write_section

ORDER_TARGET = 2.0  # seconds: every method of order ≤ 10, full report
HIGH_ORDER_TARGET = 60.0  # seconds: Feagin 12 and 14
HIGH_ORDER_METHODS = ("feagin-12", "feagin-14")
NODEPY_SPEEDUP = 10.0  # at least this many times NodePy's exact mode where NodePy takes > 1 s
NODEPY_SLOW = 1.0
NODEPY_TIMEOUT = 300.0  # seconds before a NodePy run is abandoned
NODEPY_ONE_RUN = 5.0  # a NodePy run longer than this is not repeated
CHECK_TIMEOUT = 1800.0  # seconds before one of our proofs is abandoned (a finding, not a hang)
ONE_RUN = 10.0  # one of our proofs longer than this is not repeated


@dataclass
class NodepyResult:
    """NodePy's median time, its mode and order; `seconds` is `None` on a timeout or an error."""

    seconds: float | None
    order: int | None = None
    mode: str = "exact"
    note: str = ""

    @property
    def timed_out(self) -> bool:
        return self.seconds is None and self.note.startswith("timeout")


@dataclass
class Row:
    """One method: our median time (`None` when loading or proving failed) and NodePy's."""

    name: str
    family: str
    numeric: bool
    claimed: int | None
    proved: int | None
    seconds: float | None
    note: str = ""
    nodepy: NodepyResult | None = None
    targets: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def ratio(self) -> float | None:
        """NodePy's time over ours; for a NodePy timeout, a lower bound (timeout / ours)."""
        theirs = self.nodepy
        if not self.seconds or theirs is None:
            return None
        if theirs.seconds is None:
            return NODEPY_TIMEOUT / self.seconds if theirs.timed_out else None
        return theirs.seconds / self.seconds

    @property
    def passed(self) -> bool:
        return self.seconds is not None and all(met for _, met in self.targets)


def _fresh_caches() -> None:
    clear_cache()  # sympy's
    weights_module.clear_cache()


def time_check(name: str, repeats: int) -> Row:
    """Median time of `bf.check` on catalog method `name`, loaded afresh for every run.

    **Arguments:**

    - `name`: a catalog name.
    - `repeats`: how many runs the median is taken over (one only when they exceed
      `ONE_RUN` seconds together).

    **Returns:** a `Row` without NodePy's result (its `note` holds the error when loading or
    proving failed, or the time limit `CHECK_TIMEOUT` when a proof ran past it).
    """
    times: list[float] = []
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    try:
        while len(times) < repeats and sum(times) <= ONE_RUN:
            method = load(catalog.path(name))
            _fresh_caches()
            signal.setitimer(signal.ITIMER_REAL, CHECK_TIMEOUT)
            start = time.perf_counter()
            report = check(method)
            times.append(time.perf_counter() - start)
            signal.setitimer(signal.ITIMER_REAL, 0)
    except KeyboardInterrupt:  # SIGALRM: sympy swallows no KeyboardInterrupt
        return Row(name, "?", False, None, None, None, f"timeout (>{CHECK_TIMEOUT:g} s)")
    except Exception as error:  # one broken declaration must not stop the benchmark
        return Row(name, "?", False, None, None, None, f"error: {error}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    note = "" if report.claim_holds else "claim fails: " + report.mismatch_message()
    m = report.method
    return Row(
        name, m.family, not report.exact, m.order, report.order, statistics.median(times), note
    )


Run = tuple[Callable[[], int], str]


def _nodepy_multistep(method: LinearMultistep, numeric: bool) -> Run:
    from nodepy import linear_multistep_method as lmm

    dtype = float if numeric else object
    alpha = np.array(list(method.alpha), dtype=dtype)
    beta = np.array(list(method.beta), dtype=dtype)
    lm = lmm.LinearMultistepMethod(alpha, beta, description=method.name)  # no order at init
    return (lambda: int(lm.order())), "float" if numeric else "exact"


def _nodepy_tableau(method: ButcherTableau, numeric: bool) -> Run:
    from nodepy import runge_kutta_method as rkm

    dtype = float if numeric else object
    A = np.array([list(row) for row in method.A], dtype=dtype)
    b = np.array(list(method.b), dtype=dtype)
    kind = rkm.ExplicitRungeKuttaMethod if method.is_explicit else rkm.RungeKuttaMethod
    rk = kind(A, b, name=method.name)
    high = (method.order or 0) > 10  # NodePy's float conditions stop at 10 without this flag
    if numeric:
        return (lambda: int(rk.order(mode="float", extremely_high_order=high))), "float"
    return (lambda: int(rk.order(mode="exact"))), "exact"


# The families whose order NodePy computes, and how (`comparable`): NodePy's order computation
# of a declaration, given whether its entries are numeric, and its mode (`exact` or `float`).
NODEPY: dict[type[Method], Callable[[Any, bool], Run]] = {
    ButcherTableau: _nodepy_tableau,
    LinearMultistep: _nodepy_multistep,
}


def nodepy_child(path: str, repeats: str, timeout: str) -> None:
    """In a child process: time NodePy's order of one declaration and print it as JSON.

    **Arguments:**

    - `path`: the declaration file (a Runge-Kutta or linear multistep method).
    - `repeats`: how many runs (one only when they exceed `NODEPY_ONE_RUN` seconds together).
    - `timeout`: seconds before a run is abandoned.

    **Returns:** nothing; prints `{"times": [...], "order": p, "mode": m}` or `{"timeout": true}`.
    """
    method: Any = load(path)  # a family of `NODEPY` (`comparable`)
    # SIGALRM raises KeyboardInterrupt, which no `except Exception` in sympy or NodePy swallows.
    signal.signal(signal.SIGALRM, signal.default_int_handler)
    times: list[float] = []
    order, mode = None, "exact"
    while len(times) < int(repeats) and sum(times) <= NODEPY_ONE_RUN:
        run, mode = NODEPY[type(method)](method, method.numeric)
        clear_cache()
        signal.setitimer(signal.ITIMER_REAL, float(timeout))
        start = time.perf_counter()
        try:
            order = run()
        except KeyboardInterrupt:
            print(json.dumps({"timeout": True, "mode": mode}))
            return
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        times.append(time.perf_counter() - start)
    print(json.dumps({"times": times, "order": order, "mode": mode}))


def time_nodepy(name: str, repeats: int) -> NodepyResult:
    """Time NodePy's order of catalog method `name` in a fresh Python process.

    **Arguments:**

    - `name`: a catalog name of a Runge-Kutta or linear multistep method.
    - `repeats`: runs to take the median of.

    **Returns:** a `NodepyResult`.
    """
    code = "import sys; from butcherflow.bench.order import nodepy_child as f; f(*sys.argv[1:])"
    cmd = [sys.executable, "-c", code, str(catalog.path(name)), str(repeats), str(NODEPY_TIMEOUT)]
    timeout = NodepyResult(None, note=f"timeout (>{NODEPY_TIMEOUT:g} s)")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=NODEPY_TIMEOUT + 120)
    except subprocess.TimeoutExpired:
        return timeout
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return NodepyResult(None, note="error: " + (done.stderr.strip().splitlines() or ["?"])[-1])
    result = json.loads(lines[-1])
    if result.get("timeout"):
        timeout.mode = result["mode"]
        return timeout
    return NodepyResult(statistics.median(result["times"]), result["order"], result["mode"])


def comparable(method: Method) -> bool:
    """Whether NodePy can compute the order of `method` (a Runge-Kutta or linear multistep
    method without free parameters)."""
    return type(method) in NODEPY and not method.symbols


def targets(row: Row) -> list[tuple[str, bool]]:
    """The issue's speed targets that apply to `row`, each with whether it is met."""
    out: list[tuple[str, bool]] = []
    ours = row.seconds
    if row.name in HIGH_ORDER_METHODS:
        out.append((f"< {HIGH_ORDER_TARGET:g} s", ours is not None and ours < HIGH_ORDER_TARGET))
    elif row.proved is None or row.proved <= 10:
        out.append((f"< {ORDER_TARGET:g} s", ours is not None and ours < ORDER_TARGET))
    theirs = row.nodepy
    if (
        theirs is not None
        and theirs.mode == "exact"
        and (theirs.timed_out or (theirs.seconds or 0.0) > NODEPY_SLOW)
    ):
        ratio = row.ratio
        out.append((f"≥ {NODEPY_SPEEDUP:g}× NodePy", ratio is not None and ratio >= NODEPY_SPEEDUP))
    return out


def ensure_nodepy() -> bool:
    """Make NodePy importable, running `pip install nodepy six` when it is missing.

    **Returns:** whether NodePy can be imported now.
    """
    if importlib.util.find_spec("nodepy") is None:
        command = [sys.executable, "-m", "pip", "install", "nodepy", "six"]
        print("NodePy is not installed; running: " + " ".join(command), flush=True)
        subprocess.run(command, check=False)
        importlib.invalidate_caches()
    if importlib.util.find_spec("nodepy") is None:
        print("NodePy could not be installed; the comparison is skipped.")
        return False
    return True


def machine() -> str:
    """The machine and the versions of the software that does the work, in one line."""
    cpu = platform.processor() or "unknown CPU"
    if Path("/proc/cpuinfo").is_file():
        models = [x for x in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in x]
        cpu = models[0].split(":", 1)[1].strip() if models else cpu
    found = {p: importlib.util.find_spec(p) for p in ("sympy", "gmpy2", "flint", "nodepy")}
    names = {"flint": "python-flint"}
    versions = [
        f"{names.get(p, p)} "
        + (importlib.metadata.version(names.get(p, p)) if f else "not installed")
        for p, f in found.items()
    ]
    return (
        f"{platform.platform()}; {cpu}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}, " + ", ".join(versions)
    )


def _show(value: float | int | None) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _times(ratio: float) -> str:
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.2g}×"


def _ratio_text(row: Row) -> str:
    ratio = row.ratio
    if ratio is None:
        return "—"
    return ("> " if row.nodepy and row.nodepy.timed_out else "") + _times(ratio)


def table(rows: Sequence[Row]) -> str:
    """The markdown table: one row per method, ours beside NodePy, targets met or not."""
    out = [
        "| method | family | entries | claimed | proved | butcherflow (s) | NodePy mode "
        "| NodePy order | NodePy (s) | NodePy / butcherflow | targets |",
        "|---|---|---|--:|--:|--:|---|--:|--:|--:|---|",
    ]
    for r in rows:
        theirs = r.nodepy
        shown = [f"{label}: {'met' if met else '**not met**'}" for label, met in r.targets]
        if r.note:
            shown.append(r.note)
        out.append(
            f"| {r.name} | {r.family} | {'numeric' if r.numeric else 'exact'} "
            f"| {_show(r.claimed)} | {_show(r.proved)} | {_show(r.seconds)} "
            f"| {theirs.mode if theirs else '—'} | {_show(theirs.order) if theirs else '—'} "
            f"| {(theirs.note or _show(theirs.seconds)) if theirs else '—'} | {_ratio_text(r)} "
            f"| {'; '.join(shown)} |"
        )
    return "\n".join(out)


def summary(rows: Sequence[Row]) -> str:
    """Median and worst NodePy/butcherflow ratio, where we are slower, and targets met."""
    ratios = [(x, r) for r in rows if (x := r.ratio) is not None]
    lines = []
    if ratios:
        median = statistics.median(x for x, _ in ratios)
        worst, who = min(ratios, key=lambda pair: pair[0])
        mode = who.nodepy.mode if who.nodepy else "?"
        lines.append(
            f"NodePy / butcherflow over the {len(ratios)} methods both ran: median "
            f"{_times(median)}, worst {_times(worst)} ({who.name}, NodePy {mode} mode)."
        )
        slower = [r.name for x, r in ratios if x < 1]
        lines.append(
            f"butcherflow is slower than NodePy on {len(slower)} of them"
            + (f": {', '.join(slower)}." if slower else ".")
        )
    checked = [met for r in rows for _, met in r.targets]
    missed = [f"{r.name} ({label})" for r in rows for label, met in r.targets if not met]
    lines.append(
        f"Targets met: {sum(checked)} of {len(checked)}"
        + (f"; not met: {', '.join(missed)}." if missed else ".")
    )
    return "\n\n".join(lines)


def run_order(
    output: str | Path = DEFAULT_OUTPUT,
    repeats: int = 3,
    nodepy: bool = True,
    names: Sequence[str] | None = None,
    nodepy_timer: Callable[[str, int], NodepyResult] = time_nodepy,
    command: str = "butcherflow bench order",
) -> list[Row]:
    """Time the catalog's proofs beside NodePy, print the table, rewrite the markdown section.

    **Arguments:**

    - `output`: the markdown file whose `order` section is rewritten.
    - `repeats`: runs per timing (the median is reported).
    - `nodepy`: compare with NodePy (installed on demand).
    - `names`: the catalog methods to time (default: the whole catalog).
    - `nodepy_timer`: how a NodePy timing is taken (`time_nodepy`; tests substitute their own).
    - `command`: the command line the markdown shows.

    **Returns:** the rows, one per method (`.nodepy` set where NodePy ran).
    """
    use_nodepy = nodepy and (nodepy_timer is not time_nodepy or ensure_nodepy())
    load_at_start = os.getloadavg()[
        0
    ]  # what else the machine ran meanwhile: the times depend on it
    rows: list[Row] = []
    for name in list(catalog) if names is None else names:
        row = time_check(name, repeats)
        if use_nodepy and row.seconds is not None and comparable(load(catalog.path(name))):
            row.nodepy = nodepy_timer(name, repeats)
        row.targets = targets(row)
        rows.append(row)
        theirs = row.nodepy
        print(
            f"{name:<28} {_show(row.seconds):>8} s   NodePy "
            f"{(theirs.note or _show(theirs.seconds)) if theirs else '—':>10}   {_ratio_text(row)}",
            flush=True,
        )
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    body = [
        "## Order proofs beside NodePy",
        f"Command: `{command}`, run {date}.",
        f"Machine: {machine()}; load average {load_at_start:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at the end (absolute times grow with the load; "
        "each NodePy ratio is taken side by side).",
        "butcherflow: wall clock of `bf.check(method)`, the whole report (for a Runge-Kutta "
        "method: order, failing trees and principal error norm, stage order, embedded order, "
        "R(z) with its real and imaginary intervals, A-, L- and algebraic stability); median of "
        f"{repeats} run(s) (one when it takes over {ONE_RUN:g} s), each on a freshly loaded "
        "declaration with sympy's cache cleared, abandoned after "
        f"{CHECK_TIMEOUT:g} s. "
        "NodePy: `order()` of the same coefficients (its only exact computation: its exact R(z) "
        "refuses radicals), `mode='exact'` for exact tableaux and `mode='float'` for numeric "
        "ones (linear multistep methods: `LinearMultistepMethod.order()` on the same numbers), "
        f"in a fresh process per method, abandoned after {NODEPY_TIMEOUT:g} s, median of "
        f"{repeats} runs (fewer when they exceed {NODEPY_ONE_RUN:g} s together), timed right "
        "after ours. NodePy computes only the order; butcherflow the whole report.",
        f"Targets: every method of order ≤ 10 under {ORDER_TARGET:g} s; "
        f"{' and '.join(HIGH_ORDER_METHODS)} under {HIGH_ORDER_TARGET:g} s; at least "
        f"{NODEPY_SPEEDUP:g}× NodePy's exact mode wherever that takes over {NODEPY_SLOW:g} s "
        "(a NodePy timeout counts with its time limit).",
        table(rows),
        summary(rows),
    ]
    text = "\n\n".join(body)
    print("\n" + text + "\n")
    write_section(output, "order", text)
    print(f"wrote the order section of {output}")
    return rows
