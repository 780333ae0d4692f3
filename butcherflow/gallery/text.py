"""Formatting shared by the gallery's pages: exact numbers, markdown tables, measured results,
and the problems met while deriving a page."""

from __future__ import annotations

import html
import math
import re
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, final

import sympy

from ..analysis.report import show

NUMERIC_DIGITS = 15  # digits shown for entries of numeric declarations (the TOML holds them all)
BENCHMARKS_LINK = "../../benchmarks.md"  # from a page in gallery/solvers/ or gallery/models/

T = TypeVar("T")


def exact(value: Any, numeric: bool = False) -> str:
    """An exact value as readable text: `1/4 - sqrt(3)/6` -> `1/4 − √3/6`.

    **Arguments:**

    - `value`: a sympy expression (or anything `str` renders).
    - `numeric`: the value comes from decimal digits: show it as a decimal.
    """
    if numeric and isinstance(value, sympy.Basic) and value.is_number:
        text = str(sympy.N(value, NUMERIC_DIGITS))
        text = text.rstrip("0").rstrip(".") if "." in text and "e" not in text else text
        return text.replace("-", "−")
    text = sympy.sstr(value) if isinstance(value, sympy.Basic) else str(value)
    text = text.replace("**", "^").replace("*", "·")
    text = re.sub(r"sqrt\((\d+)\)", r"√\1", text).replace("sqrt(", "√(")
    return text.replace("-", "−")


def negative_interval(bound: float) -> str:
    """A real stability interval [−R, 0] to four digits; (−∞, 0] where it is unbounded."""
    return "(−∞, 0]" if bound == math.inf else f"[−{bound:.4g}, 0]"


def cell(value: Any) -> str:
    """A report value for a markdown table cell: exact values as `exact` writes them, one line,
    and nothing markdown would take as emphasis, a column break or a link (`M[0][0]` would be a
    cross-reference to mkdocs)."""
    if isinstance(value, sympy.Basic):
        text = exact(value)
    elif isinstance(value, (list, tuple)) and value:
        text = ", ".join(cell(v) for v in value)
        return text
    else:
        text = show(value)
    text = text.replace("**", "^").replace("\n", " ")
    for special in ("\\", "|", "*", "_", "`", "<", "[", "]"):
        text = text.replace(special, "\\" + special)
    return text


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A markdown pipe table; `align` has one letter per column (`l`, `r`), default left."""
    marks = [("--:" if a == "r" else "---") for a in (align or "l" * len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fence(code: str, language: str = "") -> str:
    """A fenced code block that survives backticks inside the code."""
    ticks = "```"
    while ticks in code:
        ticks += "`"
    return f"{ticks}{language}\n{code.rstrip()}\n{ticks}"


def esc(text: str) -> str:
    """Text for raw HTML."""
    return html.escape(text, quote=True)


def count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def flops(value: int | None) -> str:
    """FLOPs with an SI prefix: 25697280 -> 25.7 M."""
    if value is None:
        return "—"
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return str(value)


# -- measured results (docs/benchmarks.md) ------------------------------------------------------


@final
@dataclass(frozen=True)
class Measured:
    """One benchmark table row about an entry: its section, the table header and the row."""

    section: str
    header: tuple[str, ...]
    row: tuple[str, ...]


def _cells(line: str) -> tuple[str, ...]:
    return tuple(c.strip() for c in line.strip().strip("|").split("|"))


def read_benchmarks(path: Path | None) -> dict[str, list[Measured]]:
    """Every table row of `docs/benchmarks.md`, keyed by its first cell (the entry's name).

    A first cell such as `feagin-10 (to order 10)` or `butcherflow transformer-small` is also
    filed under the catalog name it contains (`feagin-10`, `transformer-small`).
    """
    found: dict[str, list[Measured]] = {}
    if path is None or not path.is_file():
        return found
    section = ""
    header: tuple[str, ...] | None = None
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("#"):
            section, header = line.lstrip("#").strip(), None
            continue
        if not line.startswith("|"):
            header = None
            continue
        if header is None:
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if re.match(r"^\|[\s:|-]+\|$", following.strip()):
                header = _cells(line)
            continue
        cells = _cells(line)
        if set("".join(cells)) <= set(":- "):
            continue  # the alignment row
        first = cells[0]
        keys = {first, first.split(" (")[0], first.split(" ")[-1]}
        for key in keys:
            found.setdefault(key, []).append(Measured(section, header, cells))
    return found


def measured_section(rows: Sequence[Measured], link: str) -> str:
    """The markdown of an entry's measured results, grouped by benchmark table."""
    if not rows:
        return ""
    out = [
        f"Rows about this entry in [the benchmarks]({link}) (each table names its command "
        "and machine there):",
        "",
    ]
    seen: list[tuple[str, tuple[str, ...]]] = []
    for m in rows:
        if (m.section, m.header) not in seen:
            seen.append((m.section, m.header))
    for section, header in seen:
        body = [m.row for m in rows if (m.section, m.header) == (section, header)]
        unique = list(dict.fromkeys(body))
        out += [f"**{section}**", "", table(header, unique), ""]
    return "\n".join(out)


def write_page(
    path: Path, md: Sequence[str], measured: Sequence[Measured], problems: Sequence[str]
) -> None:
    """Write a gallery page: its markdown lines, then its measured results and the problems met
    while deriving it (each section only when there is something to show).

    **Arguments:**

    - `path`: the page's `.md` file.
    - `md`: the page's lines so far.
    - `measured`: the benchmark rows about the entry (`read_benchmarks`).
    - `problems`: why parts of the page could not be derived.
    """
    lines = list(md)
    if measured:
        lines += ["## Measured", "", measured_section(measured, BENCHMARKS_LINK), ""]
    if problems:
        lines += ["## Problems", "", "Parts of this page could not be derived:", ""]
        lines += [f"- `{p}`" for p in problems]
        lines.append("")
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def save_figure(assets: Path, file: str, svg: str, alt: str) -> str:
    """Save a page's figure in its assets folder and return the markdown image showing it.

    **Arguments:**

    - `assets`: the page's assets folder (`<page name>/` beside the page, linked relatively).
    - `file`: the figure's file name in it, e.g. `stability.svg`.
    - `svg`: the figure.
    - `alt`: the image's alternative text.

    **Returns:** `![alt](<page name>/file)`.
    """
    (assets / file).write_text(svg, encoding="utf-8")
    return f"![{alt}]({assets.name}/{file})"


@final
@dataclass
class Attempt:
    """Errors met while deriving a page, shown on the page in place of what failed."""

    problems: list[str]

    def run(self, what: str, action: Callable[[], T]) -> T | None:
        try:
            return action()
        except Exception as error:  # a failing entry is shown with its reason, not fatal
            last = traceback.extract_tb(error.__traceback__)[-1]
            where = f" ({Path(last.filename).name}:{last.lineno})"
            self.problems.append(f"{what}: {type(error).__name__}: {error}{where}")
            return None
