"""Shared fixtures: a few reference tableaux, TOML files in a temporary folder, error checks, a
vocabulary cache per module and a benchmarks file."""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import butcherflow as bf


@contextlib.contextmanager
def _raises_declaration(*fragments: str) -> Iterator[pytest.ExceptionInfo[bf.DeclarationError]]:
    """Expect a `DeclarationError` (a `ValueError`) whose message contains every fragment."""
    with pytest.raises(bf.DeclarationError) as info:
        yield info
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} missing from the message {message!r}"


@pytest.fixture
def declaration_error() -> Callable[..., contextlib.AbstractContextManager]:
    """`with declaration_error("'A[1]'", "[1]"): ...` checks the type and the message."""
    return _raises_declaration


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[..., Path]:
    """Write a (dedented) declaration file under `tmp_path` and return its path."""

    def write(text: str | bytes, name: str = "method.toml") -> Path:
        path = tmp_path / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    return write


@pytest.fixture
def isolated_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bf.methods.Catalog:
    """A catalog over an empty temporary folder, used wherever a name is looked up."""
    folder = tmp_path / "solvers"
    folder.mkdir()
    fresh = bf.methods.Catalog(folder)
    monkeypatch.setattr("butcherflow.methods.files.catalog", fresh)
    return fresh


@pytest.fixture
def euler() -> bf.ButcherTableau:
    return bf.ButcherTableau([[0]], [1], name="euler", order=1)


@pytest.fixture
def heun() -> bf.ButcherTableau:
    return bf.ButcherTableau([[0, 0], [1, 0]], ["1/2", "1/2"], name="heun", order=2)


@pytest.fixture
def rk4() -> bf.ButcherTableau:
    return bf.ButcherTableau(
        A=[[0, 0, 0, 0], ["1/2", 0, 0, 0], [0, "1/2", 0, 0], [0, 0, 1, 0]],
        b=["1/6", "1/3", "1/3", "1/6"],
        name="rk4",
        order=4,
    )


@pytest.fixture
def backward_euler() -> bf.ButcherTableau:
    return bf.ButcherTableau([[1]], [1], name="backward-euler", order=1)


@pytest.fixture
def sdirk2() -> bf.ButcherTableau:
    """Alexander's two-stage, second-order, L-stable SDIRK (γ = 1 - √2/2)."""
    gamma = "1 - sqrt(2)/2"
    return bf.ButcherTableau(
        [[gamma, 0], [f"1 - ({gamma})", gamma]],
        [f"1 - ({gamma})", gamma],
        name="sdirk-2",
        order=2,
    )


@pytest.fixture
def gauss2() -> bf.ButcherTableau:
    return bf.ButcherTableau(
        [["1/4", "1/4 - sqrt(3)/6"], ["1/4 + sqrt(3)/6", "1/4"]],
        ["1/2", "1/2"],
        c=["1/2 - sqrt(3)/6", "1/2 + sqrt(3)/6"],
        name="gauss-legendre-2",
        order=4,
    )


@pytest.fixture(scope="module")
def vocab_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One vocabulary cache (`BUTCHERFLOW_CACHE`) for a test module, so that sentencepiece trains
    once per module; a module opts in with `pytestmark = pytest.mark.usefixtures("vocab_cache")`.
    """
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BUTCHERFLOW_CACHE", str(folder))
        yield folder


@pytest.fixture
def benchmarks_md(tmp_path: Path) -> Path:
    """A `benchmarks.md` holding another benchmark's section (its text: `kept`), which a bench
    run writing its own section must leave in place."""
    path = tmp_path / "benchmarks.md"
    path.write_text("# Benchmarks\n\n<!-- bench:block:start -->\nkept\n<!-- bench:block:end -->\n")
    return path


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> Iterator[None]:
    """Tiny tensors run 10-100x slower with several threads on a shared 2-core machine."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
