"""`butcherflow bench order`: how long `bf.check` takes on every catalog method, beside NodePy's
exact mode on the same tableaux (built from butcherflow's coefficients, one child process each).
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sympy.core.cache import clear_cache

from ..analysis import check
from ..methods import ButcherTableau, catalog, load
from . import write_section

DEFAULT_TARGET = 2.0  # seconds, for every catalog method
TARGETS = {"dormand-prince-8": 1.0, "gauss-legendre-3": 1.0, "radau-iia-5": 1.0}
FEAGIN, FEAGIN_ORDER, FEAGIN_TARGET = "feagin-10", 10, 10.0
# The methods of the NodePy figures, compared where the catalog has them.
NODEPY_METHODS: tuple[str, ...] = ("gauss-legendre-3", "radau-iia-5", "dormand-prince-8")
NODEPY_METHODS += ("feagin-10", "tsitouras-5", "lawson-6", "tsitouras-9")
NODEPY_TIMEOUT = 45.0
NODEPY_ONE_RUN = 5.0  # a NodePy run longer than this is not repeated


@dataclass
class NodepyResult:
    """NodePy's median time and exact order; `seconds` is `None` on a timeout or an error."""

    seconds: float | None
    order: int | None = None
    note: str = ""


@dataclass
class Row:
    """One timed proof: `seconds` is the median (`None` when loading or proving failed)."""

    label: str
    family: str
    claimed: int | None
    proved: int | None
    seconds: float | None
    target: float
    note: str = ""
    nodepy: NodepyResult | None = None

    @property
    def passed(self) -> bool:
        return self.seconds is not None and self.seconds < self.target


def time_check(name: str, repeats: int, max_order: int | None = None) -> Row:
    """Median time of `bf.check` on catalog method `name`, loaded afresh for every run.

    **Arguments:**

    - `name`: a catalog name.
    - `repeats`: how many runs the median is taken over.
    - `max_order`: passed to `bf.check` (default: the claimed order + 1).

    **Returns:** a `Row` (its `note` holds the error when loading or proving failed).
    """
    label = name if max_order is None else f"{name} (to order {max_order})"
    target = FEAGIN_TARGET if max_order is not None else TARGETS.get(name, DEFAULT_TARGET)
    times: list[float] = []
    try:
        for _ in range(repeats):
            method = load(catalog.path(name))
            clear_cache()
            start = time.perf_counter()
            report = check(method, max_order=max_order)
            times.append(time.perf_counter() - start)
    except Exception as error:  # one broken declaration must not stop the benchmark
        return Row(label, "?", None, None, None, target, f"error: {error}")
    note = "" if report.claim_holds else "claim fails: " + report.mismatch_message()
    m = report.method
    return Row(label, m.family, m.order, report.order, statistics.median(times), target, note)


def nodepy_child(path: str, repeats: str, timeout: str) -> None:
    """In a child process: time NodePy's `order(mode="exact")` and print the result as JSON.

    **Arguments:**

    - `path`: the declaration file of a Runge-Kutta method.
    - `repeats`: how many runs (one only when a run exceeds `NODEPY_ONE_RUN` seconds).
    - `timeout`: seconds before a run is abandoned.

    **Returns:** nothing; prints `{"times": [...], "order": p}` or `{"timeout": true}`.
    """
    from nodepy import runge_kutta_method as rkm

    tableau = load(path)
    assert isinstance(tableau, ButcherTableau)
    # SIGALRM raises KeyboardInterrupt, which no `except Exception` in sympy or NodePy swallows.
    signal.signal(signal.SIGALRM, signal.default_int_handler)
    times: list[float] = []
    order = None
    while len(times) < int(repeats) and sum(times) <= NODEPY_ONE_RUN:
        A = np.array([list(row) for row in tableau.A], dtype=object)
        b = np.array(list(tableau.b), dtype=object)
        kind = rkm.ExplicitRungeKuttaMethod if tableau.is_explicit else rkm.RungeKuttaMethod
        method = kind(A, b, name=tableau.name)
        clear_cache()
        signal.setitimer(signal.ITIMER_REAL, float(timeout))
        start = time.perf_counter()
        try:
            order = int(method.order(mode="exact"))
        except KeyboardInterrupt:
            print(json.dumps({"timeout": True}))
            return
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        times.append(time.perf_counter() - start)
    print(json.dumps({"times": times, "order": order}))


def time_nodepy(name: str, repeats: int) -> NodepyResult:
    """Time NodePy's exact order of catalog method `name` in a fresh Python process.

    **Arguments:**

    - `name`: a catalog name of a Runge-Kutta method.
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
        return timeout
    return NodepyResult(statistics.median(result["times"]), result["order"])


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
    found = {p: importlib.util.find_spec(p) for p in ("sympy", "gmpy2", "nodepy")}
    versions = [
        f"{p} {importlib.metadata.version(p) if f else 'not installed'}" for p, f in found.items()
    ]
    return (
        f"{platform.platform()}; {cpu}, {os.cpu_count()} cores; "
        f"Python {platform.python_version()}, " + ", ".join(versions)
    )


def _show(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _ratio(ours: float | None, theirs: NodepyResult) -> str:
    if not ours:
        return "—"
    if theirs.seconds is None:
        return f"> {NODEPY_TIMEOUT / ours:.0f}×" if theirs.note.startswith("timeout") else "—"
    ratio = theirs.seconds / ours
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.2g}×"


def tables(rows: Sequence[Row]) -> list[str]:
    """The markdown tables: every timed proof with its verdict, then the NodePy comparison."""
    out = [
        "| method | family | claimed | proved | butcherflow (s) | target (s) | verdict |",
        "|---|---|--:|--:|--:|--:|---|",
    ]
    for r in rows:
        verdict = ("PASS" if r.passed else "**FAIL**") + (f" ({r.note})" if r.note else "")
        out.append(
            f"| {r.label} | {r.family} | {_show(r.claimed)} | {_show(r.proved)} "
            f"| {_show(r.seconds)} | < {r.target:g} | {verdict} |"
        )
    compared = [(r, r.nodepy) for r in rows if r.nodepy is not None]
    if not compared:
        return ["\n".join(out)]
    side = [
        "| method | butcherflow order | NodePy order | butcherflow (s) | NodePy exact (s) "
        "| NodePy / butcherflow |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for r, theirs in compared:
        side.append(
            f"| {r.label} | {_show(r.proved)} | {_show(theirs.order)} | {_show(r.seconds)} "
            f"| {theirs.note or _show(theirs.seconds)} | {_ratio(r.seconds, theirs)} |"
        )
    return ["\n".join(out), "\n".join(side)]


def run_order(
    output: str | Path = "docs/benchmarks.md",
    repeats: int = 3,
    nodepy: bool = True,
    names: Sequence[str] | None = None,
    nodepy_names: Sequence[str] = NODEPY_METHODS,
    nodepy_timer: Callable[[str, int], NodepyResult] = time_nodepy,
    command: str = "butcherflow bench order",
) -> list[Row]:
    """Time the catalog's proofs (and NodePy's), print the tables, rewrite the markdown section.

    **Arguments:**

    - `output`: the markdown file whose `order` section is rewritten.
    - `repeats`: runs per timing (the median is reported).
    - `nodepy`: compare with NodePy (installed on demand).
    - `names`: the catalog methods to time (default: the whole catalog).
    - `nodepy_names`: the methods compared with NodePy, where `names` has them.
    - `nodepy_timer`: how a NodePy timing is taken (`time_nodepy`; tests substitute their own).
    - `command`: the command line the markdown shows.

    **Returns:** the rows, one per timed proof (`.nodepy` set on the compared ones).
    """
    rows: list[Row] = []
    for name in list(catalog) if names is None else names:
        for max_order in (None, FEAGIN_ORDER) if name == FEAGIN else (None,):
            rows.append(time_check(name, repeats, max_order))
            print(f"{rows[-1].label:<32} {_show(rows[-1].seconds):>8} s", flush=True)
    compared = [r for r in rows if r.label in nodepy_names and r.family in ("runge-kutta", "?")]
    if nodepy and compared and ensure_nodepy():
        for r in compared:
            r.nodepy = nodepy_timer(r.label, repeats)
            print(f"NodePy {r.label:<25} {r.nodepy.note or _show(r.nodepy.seconds)}", flush=True)
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    main, *side = tables(rows)
    targets = ", ".join(f"{n} under {t:g} s" for n, t in TARGETS.items())
    body = [
        "## Order proofs",
        f"Command: `{command}`, run {date}.",
        f"Machine: {machine()}.",
        "Timing: wall clock of `bf.check(method)`, the whole report (for a Runge-Kutta method: "
        "order, failing trees and principal error norm, stage order, embedded order, stability "
        f"function and intervals, algebraic stability); median of {repeats} run(s), each on a "
        "freshly loaded declaration "
        f"with sympy's cache cleared. Targets: every method under {DEFAULT_TARGET:g} s; {targets}; "
        f"{FEAGIN} to order {FEAGIN_ORDER} under {FEAGIN_TARGET:g} s.",
        main,
    ]
    if side:
        body += [
            "### Beside NodePy",
            "NodePy's `RungeKuttaMethod(A, b).order(mode='exact')` on the same tableaux (built "
            "from butcherflow's coefficients as sympy numbers), one process per method, abandoned "
            f"after {NODEPY_TIMEOUT:g} s; median of {repeats} runs (fewer when they exceed "
            f"{NODEPY_ONE_RUN:g} s together). Both tools check the order conditions up to the "
            "first failing order p + 1; NodePy computes only the order, butcherflow the whole "
            "report.",
            *side,
        ]
    text = "\n\n".join(body)
    print("\n" + text + "\n")
    for r in rows:
        if not r.passed:
            note = f"; {r.note}" if r.note else ""
            print(f"FAIL: {r.label}: {_show(r.seconds)} s, target < {r.target:g} s{note}")
    write_section(output, "order", text)
    print(f"wrote the order section of {output}")
    return rows
