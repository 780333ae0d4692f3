"""Catalog declarations mutated at random, as a fuzzer would write them: every one loads and gets
its report within the time budget, or fails with one `ButcherflowError` line.

A mutation replaces one entry by another number or expression, drops a key, or gives a key a
value of another type (int, list, str, bool, table). The cases are seeded, balanced over the
families; the default run takes a few dozen from the smaller declarations with a short budget,
`-m slow` a few hundred from the whole catalog with the default budget. Three declarations that
once hung or raised a traceback are pinned below.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import sympy

import butcherflow as bf
from butcherflow.analysis.budget import DEFAULT_TIME_BUDGET
from butcherflow.errors import ButcherflowError
from butcherflow.methods.files import BY_FAMILY as CLASSES
from butcherflow.methods.files import COMMON_KEYS, catalog_dir, from_dict, read_toml

SOLVERS = catalog_dir("solvers")
FILES = sorted(SOLVERS.glob("*.toml"))
PARSED = {file: read_toml(file) for file in FILES}  # mutations copy what they change
BY_FAMILY: dict[str, list[Path]] = {}
for _file, _data in PARSED.items():
    BY_FAMILY.setdefault(_data["family"], []).append(_file)
SMALL = 1500  # characters: the declarations the default run draws from (a second or less each)
# What a fuzzer puts in place of an entry: numbers of every kind, expressions that enlarge the
# field or the coefficients, and text that is no number.
ENTRIES: list[Any] = [
    0, 1, -1, 3, 10**40, 10**30, 0.5, 1e-300, 1e300, -2.5e-7, "1/3", "-1/40", "sqrt(2)",
    "cos(pi/7)", "sqrt(30)/72 + 1/4", "2**100", "1e400", "nan", "x", "sqrt(-1)", "1/0", "",
    "exp(1)", "0.1", True, [], {"a": 1},
]  # fmt: skip
RETYPED: list[Any] = [7, 10**30, -1, [1, 2], [], ["a"], "text", "", True, False, {"a": 1}, {}]


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The positions of the scalars inside nested lists and tables."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, (*path, i))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    else:
        yield path


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = list(value) if isinstance(value, list) else dict(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


def mutate(data: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], str]:
    """One random mutation of a parsed declaration, and what it did (for the failure message)."""
    data = dict(data)
    key = rng.choice(sorted(data))
    kind = rng.choice(["entry", "entry", "entry", "drop", "retype"])
    leaves = [p for p in _leaves(data[key]) if p]
    if kind == "entry" and leaves:
        where, new = rng.choice(leaves), rng.choice(ENTRIES)
        data[key] = _replace(data[key], where, new)
        return data, f"{key}{list(where)} = {new!r}"
    if kind == "drop":
        del data[key]
        return data, f"dropped {key}"
    new = rng.choice(RETYPED)
    data[key] = new
    return data, f"{key} = {new!r}"


class Hang(Exception):
    """The signal alarm fired: a load or check ran past its guard."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang


@contextmanager
def alarm(seconds: float) -> Iterator[None]:
    """Raise `Hang` in the block if it runs past `seconds` (a signal alarm, restored after)."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(int(seconds))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def answered(data: dict[str, Any], source: str, budget: float, guard: float) -> str:
    """Load and check a declaration under a signal alarm of `guard` seconds.

    **Returns:** `"report"` or `"error"`; fails the test on a hang, a traceback (any exception
    that is not a `ButcherflowError`) or an error message of more than one line.
    """
    with alarm(guard):
        try:
            report = bf.check(from_dict(data, source=source), time_budget=budget)
            assert str(report) and report.to_json()
            return "report"
        except ButcherflowError as error:
            message = str(error)
            assert message and "\n" not in message, message
            return "error"


def _cases(count: int, seed: int, small: bool) -> list[tuple[Path, dict[str, Any], str]]:
    rng = random.Random(seed)
    families = sorted(BY_FAMILY)
    out = []
    for i in range(count):
        files = BY_FAMILY[families[i % len(families)]]
        if small:
            files = [f for f in files if f.stat().st_size < SMALL] or files
        file = rng.choice(files)
        data, what = mutate(PARSED[file], rng)
        out.append((file, data, what))
    return out


@pytest.mark.parametrize(("file", "data", "what"), _cases(30, 29, small=True))
def test_mutated_declaration_is_answered(file: Path, data: dict[str, Any], what: str) -> None:
    """A short budget (5 s) bounds the whole report; the guard (30 s) catches a hang."""
    answered(data, f"{file.name} ({what})", budget=5.0, guard=30)


@pytest.mark.slow
@pytest.mark.parametrize(("file", "data", "what"), _cases(300, 2029, small=False))
def test_mutated_declaration_is_answered_in_the_default_budget(
    file: Path, data: dict[str, Any], what: str
) -> None:
    answered(data, f"{file.name} ({what})", DEFAULT_TIME_BUDGET, guard=DEFAULT_TIME_BUDGET + 60)


@pytest.mark.parametrize("family", sorted(CLASSES))
def test_every_key_rejects_a_value_of_the_wrong_type_in_one_line(family: str) -> None:
    """Each key of the family's files, given an int, a list, a string, a bool or a table: the
    declaration loads (where that type is valid) or fails in one line naming a key."""
    data = PARSED[BY_FAMILY[family][0]]
    for key in COMMON_KEYS + CLASSES[family].keys:
        for value in (7, [1, 2], "text", True, {"a": 1}):
            try:
                from_dict({**data, key: value}, source="f.toml")
            except ButcherflowError as error:
                message = str(error)
                # the key itself, or the one it contradicts (t0 = 7 names t1 > t0)
                assert "\n" not in message and "key '" in message, (key, value, message)


def _edited(name: str, old: str, new: str, tmp_path: Path) -> Path:
    text = (SOLVERS / f"{name}.toml").read_text()
    assert old in text
    path = tmp_path / f"{name}.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_gauss_legendre_4_with_cos_pi_7_gets_its_full_report(tmp_path: Path) -> None:
    """b[2] = cos(pi/7) puts the stability function in a field of degree 48: its intervals
    took over two minutes (sympy's norms and root isolation); now every row is decided."""
    path = _edited(
        "gauss-legendre-4",
        'b = ["1/4 - sqrt(30)/72", "sqrt(30)/72 + 1/4", "sqrt(30)/72 + 1/4"',
        'b = ["1/4 - sqrt(30)/72", "sqrt(30)/72 + 1/4", "cos(pi/7)"',
        tmp_path,
    )
    with alarm(120):
        report = bf.check(bf.load(path))
    stability = report.stability
    assert stability.out_of_time is False
    assert stability.real_interval is not None and stability.imaginary_interval is not None
    assert stability.a_stable is False


def test_feagin_10_with_a_weight_of_1e40_gets_its_full_report(tmp_path: Path) -> None:
    """b[15] = 10**40 (an integer) makes |R(x)|² − 1 a degree-34 polynomial whose roots come in
    pairs 1e-40 apart: isolating it whole took over five minutes. R(x) = 1 + 1e40·x + ...,
    so the real interval ends near −2e-40 (|1 + 1e40·x| ≤ 1)."""
    path = _edited(
        "feagin-10", '"-1/30", "-1/40", "1/30"]', f'"-1/30", {10**40}, "1/30"]', tmp_path
    )
    with alarm(60):
        report = bf.check(bf.load(path))
    stability = report.stability
    assert stability.out_of_time is False
    assert stability.real_interval == pytest.approx(2e-40, rel=0.01)


def test_hyper_connections_start_of_the_wrong_type_is_one_line(tmp_path: Path) -> None:
    """`start = 10**30` raised TypeError ('int' object is not iterable) with a traceback."""
    path = _edited(
        "hyper-connections-4",
        'start = ["y(x)", "y(x)", "y(x)", "y(x)"]',
        f"start = {10**30}",
        tmp_path,
    )
    with pytest.raises(bf.DeclarationError, match=r"key 'start'.*list of 4") as caught:
        bf.load(path)
    assert "\n" not in str(caught.value)


def test_unknown_substep_names_the_closest_and_the_list_command() -> None:
    """`substep = "rk4/"` listed every Runge-Kutta method of the catalog (600+ characters)."""
    data = read_toml(SOLVERS / "strang.toml")
    data["substep"] = "rk4/"
    with pytest.raises(bf.DeclarationError) as caught:
        from_dict(data)
    message = str(caught.value)
    assert "'rk4'" in message and "butcherflow list" in message
    assert len(message) < 300, message


def test_time_budget_bounds_the_stability_rows() -> None:
    """A budget spent before the stability rows start: they say so, and the report returns."""
    report = bf.check("gauss-legendre-3", time_budget=0.0)
    rows = dict(report.rows())
    assert rows["real stability interval"] == "not decided within the time budget"
    assert rows["A-stable"] == "not decided within the time budget"
    assert any("time budget" in note for note in report.notes)


def test_a_float_beside_a_family_entry_is_one_line(tmp_path: Path) -> None:
    """`alpha = ["k - 1", "-k", 2.5]` (lm-resnet) raised TypeError ('Cannot convert expression
    to float') from the multistep order search: ball arithmetic judges numbers, not symbols."""
    path = _edited(
        "lm-resnet", 'alpha = ["k - 1", "-k", 1]', 'alpha = ["k - 1", "-k", 2.5]', tmp_path
    )
    with pytest.raises(bf.DeclarationError, match=r"key 'alpha\[2\]'.*numeric family") as caught:
        bf.check(bf.load(path))
    assert (caught.value.value, "\n" in str(caught.value)) == (2.5, False)
    assert str(path) in str(caught.value)


def test_a_starting_value_that_is_no_expression_is_one_line(tmp_path: Path) -> None:
    """`start = [..., "None"]` (dlcl-4) raised AttributeError ('NoneType' object has no
    attribute 'expand'): sympify read it as Python's None. Starting values are parsed as
    entries are (no builtins: `exit()` is no call either)."""
    for bad in ("None", "exit()"):
        path = _edited("dlcl-4", '"h*f(x - 3*h)"]', f'"{bad}"]', tmp_path)
        with pytest.raises(bf.DeclarationError, match=r"key 'start\[3\]'") as caught:
            bf.load(path)
        assert caught.value.value == bad and "\n" not in str(caught.value)


def test_a_required_array_given_as_none_is_one_line() -> None:
    """`b = None` (verner-7-efficient, from a TOML-like dict) built a tableau without weights
    that failed inside bf.check with AttributeError; b is required and named."""
    data = read_toml(SOLVERS / "verner-7-efficient.toml") | {"b": None}
    with pytest.raises(bf.DeclarationError, match=r"key 'b'.*got None") as caught:
        from_dict(data, source="verner-7-efficient.toml")
    assert "\n" not in str(caught.value)


def test_an_additive_stability_function_with_a_400_digit_entry_is_reported() -> None:
    """A[0][0] = 10**400 beside √2 (ars-222): sympy cannot factor over QQ<√2> with such a
    coefficient (CoercionFailed); R is then given expanded, the same function."""
    data = read_toml(SOLVERS / "ars-222.toml")
    data["tableaux"]["f"]["A"][0][0] = 10**400
    report = bf.check(from_dict(data), time_budget=5.0)
    R = report.stability_function
    z = sorted(R.free_symbols, key=str)
    assert sympy.simplify(R.subs({x: 0 for x in z})) == 1 and report.order is not None
