"""The docs gallery: a page for every catalog entry and recipe, with its plots, code and links;
the block diagram; the CLI reference; the built-site check."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import torch
from catalog_sweep import sweep

import butcherflow as bf
from butcherflow.analysis.convergence import generic_member
from butcherflow.assemble import recipe_names, side_order
from butcherflow.cli import build_parser, main
from butcherflow.gallery import GalleryResult, build_gallery, cli_reference, read_block, render_svg
from butcherflow.gallery.diagram import number
from butcherflow.gallery.text import exact, read_benchmarks

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
NAMES = sorted(bf.catalog)
RECIPES = recipe_names()
pytestmark = pytest.mark.xdist_group("gallery")  # one worker builds the module's gallery
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


@pytest.fixture(scope="module")
def gallery(
    tmp_path_factory: pytest.TempPathFactory, swept_catalog: list[str]
) -> tuple[Path, GalleryResult]:
    """The catalog's gallery, built once for this module: the representatives by default (every
    entry with the slow tests, about 20 s on one core)."""
    out = tmp_path_factory.mktemp("docs") / "gallery"
    return out, build_gallery(out, names=swept_catalog, benchmarks=BENCHMARKS)


def _figure_count(svg: Path) -> int:
    return svg.read_text(encoding="utf-8").count('class="field-call"')


@pytest.mark.parametrize("name", sweep(NAMES))
def test_every_catalog_entry_has_its_page(gallery: tuple[Path, GalleryResult], name: str) -> None:
    out, result = gallery
    method = bf.catalog[name]
    page = out / "solvers" / f"{name}.md"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {name}: {method.title}")
    assert bf.catalog.path(name).read_text(encoding="utf-8").strip() in text  # the declaration
    assert "## What " in text and "## Order report" in text and "## How accurate" in text
    row = next(r for r in result.rows if r.name == name)
    assert row.problem == "", f"{name}: {row.problem}"
    assert "## Problems" not in text
    assert method.order is None or row.order == str(method.order)  # claims hold (catalog tests)

    symbolic = bool(getattr(method, "symbols", set()))
    if isinstance(method, bf.ButcherTableau):
        assert '<table class="butcher">' in text
    if isinstance(method, bf.Splitting):
        assert "## Splitting sequence" in text
    if isinstance(method, bf.LinearMultistep):
        assert "## Coefficients α, β" in text

    region = out / "solvers" / name / "stability.svg"
    has_region = method.family in ("runge-kutta", "multistep", "continuous") and not symbolic
    assert region.is_file() == has_region
    if has_region:
        assert f"({name}/stability.svg)" in text
        ET.fromstring(region.read_text(encoding="utf-8"))  # well-formed SVG
    _check_ssp_figures(out, text, name, method)
    diverges = False
    if isinstance(method, bf.LinearMultistep):  # a family is measured at its generic member
        diverges = not bf.check(generic_member(method)).zero_stable  # type: ignore[attr-defined]
    convergence = out / "solvers" / name / "convergence.svg"
    assert convergence.is_file() != diverges
    if not diverges:
        assert f"({name}/convergence.svg)" in text and "| slope |" in text

    compiles, why = method.layer.compiles, method.layer.how
    diagram = out / "solvers" / name / "block.svg"
    if compiles:
        assert "### Generated code" in text and "def forward(self, y, ctx):" in text
        assert diagram.is_file() and f"({name}/block.svg)" in text
        boxes = _figure_count(diagram)
        if isinstance(method, bf.ContinuousDynamics):
            step = bf.compile(method.solver_tableau(), field="ffn", d_model=8, n_heads=1, d_ffn=8)
            assert boxes == step.field_calls  # one drawn step of the solve
        elif isinstance(method, (bf.LinearMultistep, bf.GeneralLinear)):
            assert boxes == 6 * int(row.calls)  # the 6-layer stack, its field calls per layer
        else:
            assert boxes == int(row.calls)
        assert row.params is not None and row.params > 0
    else:
        assert f"Not compiled: {why}" in text
        assert not diagram.exists() and row.params is None


def _check_ssp_figures(out: Path, text: str, name: str, method: bf.Method) -> None:
    """A Runge-Kutta page draws its SSP picture and internal amplification, or says why not."""
    ssp = out / "solvers" / name / "ssp.svg"
    internal = out / "solvers" / name / "internal-stability.svg"
    tableau = isinstance(method, bf.ButcherTableau)
    if not tableau or method.symbols:  # type: ignore[union-attr]
        assert (ssp.exists(), internal.exists()) == (False, False)
        assert tableau is ("No SSP plot: the declaration is a family" in text)
        return
    assert f"({name}/ssp.svg)" in text and "SSP coefficient" in ssp.read_text(encoding="utf-8")
    amplification = bf.check(method).geometry.internal.amplification  # type: ignore[attr-defined]
    assert internal.is_file() == (amplification is not None)
    if amplification is not None:
        ET.fromstring(internal.read_text(encoding="utf-8"))
        assert f"= {amplification:.4g}" in internal.read_text(encoding="utf-8")
    else:
        assert "No internal stability plot: " in text


@pytest.mark.parametrize("name", RECIPES)
def test_every_recipe_has_its_page(gallery: tuple[Path, GalleryResult], name: str) -> None:
    out, result = gallery
    recipe = bf.load_recipe(name)
    text = (out / "models" / f"{name}.md").read_text(encoding="utf-8")
    row = next(r for r in result.rows if r.name == name and r.kind == "model")
    assert row.problem == "", f"{name}: {row.problem}"
    source = (ROOT / "models" / f"{name}.toml").read_text(encoding="utf-8")
    assert source.strip() in text
    assert row.params is not None and f"**{row.params:,} parameters**" in text
    for side in (recipe.encoder, recipe.decoder):
        if side is not None and side.method in bf.catalog:
            assert f"[{side.method}](../solvers/{side.method}.md)" in text
        if side is not None:  # the order of the blocks as they train, not of a catalog entry
            assert f"| proved order of the block as it trains | {side_order(side)} |" in text
    assert "def forward(self, y, ctx):" in text
    first_side = "encoder" if recipe.encoder is not None else "decoder"  # decoder-only: lm-*
    assert (out / "models" / name / f"{first_side}.svg").is_file()


def test_pages_state_the_order_of_the_block_as_it_trains(tmp_path: Path) -> None:
    """`--only` takes recipes too; the RK2-gated model's page proves the gated block it trains
    (order 1 for every g), not Heun's method (order 2)."""
    out = tmp_path / "gallery"
    only = ["rk2-gated", "ode-transformer-rk2-gated", "heun"]
    assert main(["gallery", "--out", str(out), "--only", *only]) == 0
    model = (out / "models" / "ode-transformer-rk2-gated.md").read_text(encoding="utf-8")
    trained = "1 for every g (2 at initialisation, g = 1/2)"
    assert f"| proved order of the block as it trains | {trained} |" in model
    assert f"[rk2-gated](../solvers/rk2-gated.md) (field `san+ffn`, order {trained})" in model
    solver = (out / "solvers" / "rk2-gated.md").read_text(encoding="utf-8")
    assert f"the layer, as it trains, has order {trained}" in solver
    assert "def forward(self, y, ctx):" in solver  # the family compiles, as declared
    assert main(["gallery", "--out", str(out), "--only", "no-such-entry"]) == 1


def test_recipe_parameter_count_matches_the_model(gallery: tuple[Path, GalleryResult]) -> None:
    """The page's count is the model `Seq2Seq.from_recipe` builds (param_budget applied)."""
    _, result = gallery
    counts = {r.name: r.params for r in result.rows if r.kind == "model"}
    for name in ("macaron", "transformer-small"):
        with torch.device("meta"):
            model = bf.Seq2Seq.from_recipe(name, 32_000)
        assert counts[name] == model.num_parameters


def test_index_lists_every_entry(
    gallery: tuple[Path, GalleryResult], swept_catalog: list[str]
) -> None:
    out, result = gallery
    index = (out / "index.md").read_text(encoding="utf-8")
    assert '<div class="sortable" markdown>' in index
    for name in swept_catalog:
        assert f"[{name}](solvers/{name}.md " in index
    for name in RECIPES:
        assert f"[{name}](models/{name}.md " in index
    assert len(result.rows) == len(swept_catalog) + len(RECIPES)
    rk4 = next(line for line in index.splitlines() if line.startswith("| [rk4]"))
    # stages, field calls, order, effective order, interval, parameters
    assert "| 4 | 4 | 4 | 4 | 2.785 | 3,152,384 |" in rk4


def test_links_and_images_resolve(gallery: tuple[Path, GalleryResult]) -> None:
    """Every relative link of every page points at a file: inside the gallery, or (for links
    that leave it) in the docs folder the gallery is generated into."""
    out, result = gallery
    checked = 0
    for page in out.rglob("*.md"):
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if out.resolve() not in path.parents:
                path = ROOT / "docs" / path.relative_to(out.parent.resolve())
            assert path.is_file(), f"{page.relative_to(out)}: broken link {target}"
            checked += 1
    assert checked > 3 * len(result.rows)  # a page links to at least its images and the index


def test_measured_results_appear(gallery: tuple[Path, GalleryResult]) -> None:
    out, _ = gallery
    measured = read_benchmarks(BENCHMARKS)
    assert "rk4" in measured
    text = (out / "solvers" / "rk4.md").read_text(encoding="utf-8")
    assert "## Measured" in text and "(../../benchmarks.md)" in text


def test_a_broken_declaration_gets_a_page_with_the_reason(
    isolated_catalog: bf.methods.Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import butcherflow.gallery.solver_page as solver_page
    from butcherflow.gallery import build as build_module

    monkeypatch.setattr(solver_page, "catalog", isolated_catalog)
    monkeypatch.setattr(build_module, "catalog", isolated_catalog)
    folder = isolated_catalog.directory
    (folder / "broken.toml").write_text(
        'name = "broken"\nfamily = "runge-kutta"\nA = [[0, 0], [1]]\nb = [1, 0]\n',
        encoding="utf-8",
    )
    (folder / "implicit-ab.toml").write_text(
        'name = "implicit-ab"\nfamily = "multistep"\nalpha = [-1, 1]\nbeta = ["1/2", "1/2"]\n',
        encoding="utf-8",
    )
    result = build_gallery(tmp_path / "gallery", recipes=[])
    broken = (tmp_path / "gallery" / "solvers" / "broken.md").read_text(encoding="utf-8")
    assert "## Problems" in broken and "A must be square" in broken
    assert 'name = "broken"' in broken  # the source is shown all the same
    assert [name for name, _ in result.problems] == ["broken"]
    index = (tmp_path / "gallery" / "index.md").read_text(encoding="utf-8")
    assert "[broken](solvers/broken.md" in index and "⚠" in index
    implicit = (tmp_path / "gallery" / "solvers" / "implicit-ab.md").read_text(encoding="utf-8")
    assert "Not compiled: not compiled: implicit" in implicit
    assert "## Problems" not in implicit


def test_the_gallery_replaces_only_its_own_folder(tmp_path: Path) -> None:
    stranger = tmp_path / "notes"
    stranger.mkdir()
    (stranger / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(bf.ButcherflowError, match="no gallery build wrote"):
        build_gallery(stranger, names=["euler"], recipes=[])
    assert (stranger / "mine.txt").read_text(encoding="utf-8") == "keep me"
    a_file = tmp_path / "file.md"
    a_file.write_text("x", encoding="utf-8")
    assert main(["gallery", "--out", str(a_file), "--only", "euler"]) == 1
    assert a_file.read_text(encoding="utf-8") == "x"
    # a gallery folder is replaced whole: a page of a removed entry does not survive
    out = tmp_path / "gallery"
    build_gallery(out, names=["euler", "heun"], recipes=[])
    assert main(["gallery", "--out", str(out), "--only", "euler"]) == 0
    assert (out / "solvers" / "euler.md").is_file()
    assert not (out / "solvers" / "heun.md").exists()


# -- the block diagram -------------------------------------------------------------------------


def _blocks() -> dict[str, bf.CompiledBlock]:
    sizes = {"d_model": 16, "n_heads": 2, "d_ffn": 32}
    return {
        "rk4": bf.compile("rk4", field="ffn", **sizes),
        "heun gated": bf.compile("heun", field="san+ffn", coefficients="gated", **sizes),
        "rk4 learned": bf.compile("rk4", field="ffn", coefficients="learned", **sizes),
        "backward-euler": bf.compile("backward-euler", field="ffn", iterations=3, **sizes),
        "strang": bf.compile("strang", fields={"A": "ffn", "B": "san"}, **sizes),
        "yoshida-4-rk4": bf.compile("yoshida-4-rk4", fields={"A": "ffn", "B": "san"}, **sizes),
        "leapfrog": bf.compile_stack("leapfrog", ["ffn"] * 4, **sizes),
        "lm-resnet": bf.compile_stack(
            "lm-resnet", ["ffn"] * 3, coefficients="learned", init={"k": 1}, **sizes
        ),
        "dlcl": bf.compile_stack("dlcl", ["ffn"] * 3, **sizes),
    }


@pytest.mark.parametrize("name", list(_blocks()))
def test_diagram_has_one_box_per_field_call(name: str) -> None:
    block = _blocks()[name]
    diagram = read_block(block.program)
    assert diagram.field_boxes == block.field_calls
    svg = render_svg(diagram, name)
    root = ET.fromstring(svg)  # well-formed, standalone
    rects = [e for e in root.iter("{http://www.w3.org/2000/svg}rect")]
    assert sum(1 for r in rects if r.get("class") == "field-call") == block.field_calls
    assert "http" not in svg.replace("http://www.w3.org/2000/svg", "")  # nothing external
    kinds = [box.kind for box in diagram.boxes]
    assert kinds[0] == "input" and kinds[-1] == "output"
    for source, target in diagram.edges:
        assert source < target  # program order: data flows down the column


def test_diagram_shows_the_exact_weights() -> None:
    diagram = read_block(_blocks()["rk4"].program)
    sums = [" ".join(box.lines) for box in diagram.boxes if box.kind == "sum"]
    assert sums[:3] == ["y2 = y + 1/2·k1", "y3 = y + 1/2·k2", "y4 = y + k3"]
    assert sums[-1] == "y_next = y + 1/6·k1 + 1/3·k2 + 1/3·k3 + 1/6·k4"  # not y_next_3
    assert diagram.legend == (
        ("field", "ffn field: 1,104 parameters, one module shared by all 4 calls"),
    )
    gated = read_block(_blocks()["heun gated"].program)
    assert any("gate(k1, k2)" in box.lines[0] for box in gated.boxes if box.kind == "module")
    assert any("g·k1 + (1 − g)·k2" in " ".join(box.lines) for box in gated.boxes)
    lm = read_block(_blocks()["lm-resnet"].program)
    assert any("(1 − k1)·y" in " ".join(box.lines) for box in lm.boxes)


def test_numbers_are_shown_exactly() -> None:
    assert [number(x) for x in (0.5, 1 / 6, -2.0, 1 / 3, 0.1)] == [
        "1/2",
        "1/6",
        "−2",
        "1/3",
        "1/10",
    ]
    assert number(2**0.5) == "1.41421"
    import sympy

    assert exact(sympy.sympify("1/4 - sqrt(3)/6")) == "1/4 − √3/6"
    assert exact(sympy.Rational(1234567, 10**7), numeric=True) == "0.1234567"


# -- the CLI reference and the site check ------------------------------------------------------


def test_cli_reference_lists_every_subcommand_and_flag() -> None:
    parser = build_parser()
    text = cli_reference(parser)
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert subparsers.choices  # type: ignore[attr-defined]
    for name, sub in subparsers.choices.items():  # type: ignore[attr-defined]
        assert f"## `butcherflow {name}`" in text
        for action in sub._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}`" in text, f"{name}: {flag} missing"
    assert "one of `text`, `markdown`, `json`; default `text`" in text


@pytest.mark.parametrize("name", ["sdirk-2", "gauss-legendre-2"])
def test_the_index_states_the_pages_stages_and_the_field_calls_apart(
    gallery: tuple[Path, GalleryResult], name: str
) -> None:
    """An implicit method's index row: its stages as its page says them, and apart from them
    the field calls its block makes (the fixed-point sweeps make more)."""
    out, result = gallery
    method = bf.catalog[name]
    row = next(r for r in result.rows if r.name == name)
    page = (out / "solvers" / f"{name}.md").read_text(encoding="utf-8")
    assert row.stages == str(method.stages) and f"{method.stages}-stage" in page
    assert int(row.calls) > method.stages
    index = (out / "index.md").read_text(encoding="utf-8")
    line = next(line for line in index.splitlines() if line.startswith(f"| [{name}]"))
    assert f"| {row.stages} | {row.calls} | {row.order} |" in line
    assert "| entry | family | stages | field calls | order |" in index


@pytest.mark.parametrize("name", ["rk4", "heun", "adams-bashforth-2"])
def test_the_stability_legend_stays_off_the_region_and_the_intervals(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The legend is drawn below the axes: its box overlaps neither the plotting area (where the
    region and the intervals near the origin are) nor the axis labels."""
    from butcherflow.gallery import plots

    drawn: list[Any] = []
    render = plots._svg
    monkeypatch.setattr(plots, "_svg", lambda fig, **kw: drawn.append(fig) or render(fig, **kw))
    method = bf.catalog[name]
    if isinstance(method, bf.LinearMultistep):
        report = bf.check(method)
        alpha, beta = (list(map(float, v)) for v in (method.alpha, method.beta))
        plots.multistep_stability_svg(alpha, beta, report.boundary_locus(), name)
    else:
        plots.stability_svg(bf.check(method).stability, name)
    (fig,) = drawn
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the figure was closed once written
    canvas.draw()
    renderer = canvas.get_renderer()
    (ax,) = fig.axes
    (legend,) = fig.legends
    box = legend.get_window_extent(renderer)
    assert not box.overlaps(ax.get_window_extent(renderer))
    assert not box.overlaps(ax.xaxis.label.get_window_extent(renderer))
    assert box.y0 >= 0 and box.x0 >= 0 and box.x1 <= fig.bbox.x1
