"""A declaration's figures in a folder of their own: what `butcherflow check FILE --plot DIR`
draws for a user's declaration, with the code that draws them on the gallery's pages.

The stability region and the order star are the family's (`families.FamilyPage.stability`,
`.order_star`, which say why when a family has none to draw); the convergence plot is the
gallery's measurement (`measured_convergence`) drawn by `plots.convergence_svg`. Each SVG is
written to a temporary name and renamed into place, so a figure is whole or absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import final

from ..analysis import Report, check
from ..analysis.convergence import Convergence, convergence, generic_member, has_symbols
from ..errors import ButcherflowError
from ..methods import Method
from ..savedir.atomic import write_text
from .families import page_for
from .plots import convergence_svg

# file -> what it shows
FIGURES = {
    "stability.svg": "stability region",
    "order-star.svg": "order star",
    "convergence.svg": "convergence plot",
}


def measured_convergence(method: Method, report: Report) -> list[Convergence]:
    """The convergence curves a page plots: the declaration's, or a family's at every symbol
    = 1/3 (`generic_member`), with two coarser step counts for the plot.

    **Arguments:** `method`: the declaration; `report`: `check(method)`.

    **Returns:** the curves (none for a multistep method that is not zero-stable).
    """
    member = generic_member(method)
    member_report = report if member is method else check(member)
    return convergence(member, member_report, coarser=2)


def why_no_convergence(method: Method, report: Report) -> str:
    """Why `measured_convergence` found no curve, in a phrase."""
    member = generic_member(method)
    if (report if member is method else check(member)).zero_stable is False:
        return "the method is not zero-stable: it diverges however small the step"
    return f"no convergence measurement for {method.family} declarations"


@final
@dataclass(frozen=True)
class Drawn:
    """What `draw_figures` wrote.

    **Arguments:**

    - `written`: the SVG files, in the order drawn.
    - `notes`: one line per figure not drawn (why), and how a family's curve was measured.
    """

    written: tuple[Path, ...]
    notes: tuple[str, ...]


def check_folder(folder: str | Path) -> Path:
    """The figures' folder, refused in one line when it is a file (nothing is created)."""
    path = Path(folder)
    found = next((p for p in (path, *path.parents) if p.exists()), path)
    if found.exists() and not found.is_dir():
        where = "exists" if found == path else f"is inside {found}, which exists"
        raise ButcherflowError(
            f"--plot {path}: {where} and is not a folder; give a folder for the figures "
            "(created if it does not exist)"
        )
    return path


def draw_figures(method: Method, report: Report, folder: str | Path) -> Drawn:
    """Draw a declaration's stability region, order star and convergence plot into `folder`
    (`stability.svg`, `order-star.svg`, `convergence.svg`), as its gallery page shows them.

    **Arguments:**

    - `method`: the declaration (any family).
    - `report`: `check(method)` (the region and the star are drawn from its R(z)).
    - `folder`: created if needed; figures of the same names in it are replaced.

    **Returns:** a `Drawn`; raises `ButcherflowError` when `folder` is a file, or when the
    family has none of the three figures.
    """
    target = check_folder(folder)
    page = page_for(method)
    written: list[Path] = []
    notes: list[str] = []

    def save(file: str, draw: Callable[[], str | None], why_not: Callable[[], str]) -> None:
        svg = draw()
        if svg is None:
            notes.append(f"no {FIGURES[file]} drawn: {why_not()}")
            return
        target.mkdir(parents=True, exist_ok=True)
        write_text(target / file, svg)
        written.append(target / file)

    save(
        "stability.svg",
        lambda: page.stability(method, report),
        lambda: page.why_no_region(method),
    )
    save(
        "order-star.svg",
        lambda: page.order_star(method, report),
        lambda: page.why_no_order_star(method),
    )
    curves = measured_convergence(method, report)
    save(
        "convergence.svg",
        lambda: convergence_svg(curves, f"{method.name}: global error") if curves else None,
        lambda: why_no_convergence(method, report),
    )
    if curves and has_symbols(method):
        notes.append(
            "the declaration is a family: its convergence is measured at every symbol = 1/3"
        )
    if not written:
        raise ButcherflowError(
            f"{method.name}: nothing to draw for this {method.family} declaration ("
            + "; ".join(notes)
            + ")"
        )
    return Drawn(tuple(written), tuple(notes))
