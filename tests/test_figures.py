"""Pictures of a user's own declarations: `butcherflow check FILE --plot DIR` and `gallery --only
FILE` draw its stability region, order star and convergence plot with the gallery's own code,
and say in one line each what a family has none of; bad input is one line."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import butcherflow as bf
from butcherflow.cli import main

ALL = ("stability.svg", "order-star.svg", "convergence.svg")
RALSTON = """\
name = "my-ralston"
title = "Ralston's method, typed from Ralston (1962)"
family = "runge-kutta"
order = 2
A = [[0, 0], ["2/3", 0]]
b = ["1/4", "3/4"]
"""


def _own(folder: Path, entry: str) -> Path:
    """A catalog declaration as a user's own file, renamed `my-ENTRY`."""
    text = bf.catalog.path(entry).read_text(encoding="utf-8")
    text = text.replace(f'name = "{entry}"', f'name = "my-{entry}"', 1)
    path = folder / f"my-{entry}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_check_plot_draws_the_gallery_pages_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = tmp_path / "ralston.toml"
    own.write_text(RALSTON, encoding="utf-8")
    assert main(["gallery", "--only", str(own), "--out", str(tmp_path / "g")]) == 0
    assert str(tmp_path / "g" / "solvers" / "my-ralston.md") in capsys.readouterr().out
    page = tmp_path / "g" / "solvers" / "my-ralston"
    text = (tmp_path / "g" / "solvers" / "my-ralston.md").read_text(encoding="utf-8")
    assert text.startswith("# my-ralston: Ralston's method") and f"`{own}`" in text
    assert main(["check", str(own)]) == 0
    report = capsys.readouterr().out
    assert main(["check", str(own), "--plot", str(tmp_path / "figures")]) == 0
    out = capsys.readouterr().out
    untimed = [line for line in report.splitlines() if not line.startswith("proved in")]
    assert [line for line in out.splitlines()[: len(untimed) + 1] if line in untimed] == untimed
    for file in ALL:
        drawn = tmp_path / "figures" / file
        assert f"wrote {drawn}" in out
        assert drawn.read_bytes() == (page / file).read_bytes(), file
        ET.fromstring(drawn.read_text(encoding="utf-8"))  # well-formed SVG
    star = (tmp_path / "figures" / "order-star.svg").read_text(encoding="utf-8")
    assert "my-ralston: order star" in star and "order 2: 3 sectors at 0" in star
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == sorted(ALL)


@pytest.mark.parametrize(
    ("entry", "drawn", "missing"),
    [
        ("adams-bashforth-2", ("stability.svg", "convergence.svg"), ("order star",)),
        ("strang", ("convergence.svg",), ("stability region", "order star")),
        ("neural-ode-rk4", ("stability.svg", "convergence.svg"), ("order star",)),
        ("hyper-connections-4", ("convergence.svg",), ("stability region", "order star")),
        ("ars-222", ("convergence.svg",), ("stability region", "order star")),
    ],
)
def test_each_family_draws_what_it_has_and_says_why_not_the_rest(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    entry: str,
    drawn: tuple[str, ...],
    missing: tuple[str, ...],
) -> None:
    own = _own(tmp_path, entry)
    assert main(["check", str(own), "--plot", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(drawn)
    notes = captured.err.strip().splitlines()
    said = [line for line in notes if line.startswith(f"note: my-{entry}: no ")]
    assert [line.split(": ")[2].removeprefix("no ").removesuffix(" drawn") for line in said] == [
        *missing
    ]
    assert all(len(line.split(" drawn: ", 1)[1]) > 20 for line in said)  # each says why


def test_a_family_with_symbols_says_so_and_measures_a_member(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = _own(tmp_path, "lm-resnet")  # k free: a family of two-step methods
    assert main(["check", str(own), "--plot", str(tmp_path / "out"), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert captured.out.lstrip().startswith("{")  # stdout stays one JSON document
    assert f"wrote {tmp_path / 'out' / 'convergence.svg'}" in captured.err
    assert "no stability region drawn: the declaration is a family with free symbols (k)" in (
        captured.err
    )
    assert "measured at every symbol = 1/3" in captured.err


def test_bad_input_to_plot_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = tmp_path / "ralston.toml"
    own.write_text(RALSTON, encoding="utf-8")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep", encoding="utf-8")
    broken = tmp_path / "broken.toml"
    broken.write_text('name = "broken"\nfamily = "runge-kutta"\nA = [[0, 0], [1]]\nb = [1, 0]\n')
    heun = tmp_path / "heun.toml"  # a file of its own that takes the catalog entry's name
    heun.write_text(bf.catalog.path("heun").read_text(encoding="utf-8"), encoding="utf-8")
    cases = [
        (["check", str(own), "--plot", str(a_file)], "--plot"),
        (["check", str(broken), "--plot", str(tmp_path / "x")], "broken.toml"),
        (["check", str(tmp_path / "none.toml"), "--plot", str(tmp_path / "x")], "no such file"),
        (["check", "--all", "--plot", str(tmp_path / "x")], "not --all"),
        (["gallery", "--only", str(broken), "--out", str(tmp_path / "g")], "broken.toml"),
        (["gallery", "--only", "no-such-entry", "--out", str(tmp_path / "g")], "no-such-entry"),
        (["gallery", "--only", str(heun), "heun", "--out", str(tmp_path / "g")], "both declare"),
    ]
    for argv, fragment in cases:
        assert main(argv) == 1, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err and fragment in err, (argv, err)
    assert a_file.read_text(encoding="utf-8") == "keep"
    assert not (tmp_path / "x").exists() and not (tmp_path / "g").exists()
