"""Stage 8, the gallery: a documentation page per catalog entry, generated from declarations.

`build_gallery(out)` writes `out/index.md` (one sortable table of every entry),
`out/solvers/NAME.md` for every catalog declaration and `out/models/NAME.md` for every model
recipe, with their figures (SVG: stability regions, convergence, block data flow), and
`out/reference-code.md`: what the papers' released code computes, declared and proved beside the
papers' formulas (`audit`).
"""

from .build import GalleryResult, build_gallery
from .cli_reference import cli_reference
from .diagram import Diagram, block_svg, read_block, render_svg
from .solver_page import IndexRow

__all__ = [
    "Diagram",
    "GalleryResult",
    "IndexRow",
    "block_svg",
    "build_gallery",
    "cli_reference",
    "read_block",
    "render_svg",
]
