"""The README and the docs site as a reader sees them (what can be checked without a browser;
`make docs-check` loads the built site in Chromium and measures the boxes at 1280 px).

- Every bullet of the README starts its own line (a bullet glued to the previous sentence
  renders as running text).
- At 1280 px (Material: 20 px root font, both sidebars of 12.1 rem shown, text column margins of
  1.2 rem, code at 0.85 × 0.8 rem in a monospace font of 0.6 em per character, 1.18 em padding
  each side), a code block holds 87 characters a line: the docs' own code blocks fit it.
- The experiments are in the site's navigation.
- The gallery's index gives its wide table the whole page and lets its headings wrap.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from butcherflow.gallery.build import index_page

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
ROOT_PX, VIEWPORT = 20, 1280
SIDEBAR, MARGIN = 12.1 * ROOT_PX, 1.2 * ROOT_PX
CODE_PX = 0.85 * 0.8 * ROOT_PX
# 87 characters
CODE_COLUMNS = int((VIEWPORT - 2 * SIDEBAR - 2 * MARGIN - 2 * 1.1765 * CODE_PX) / (0.602 * CODE_PX))


def test_every_readme_bullet_starts_its_own_line() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    glued = [line for line in text.splitlines() if re.search(r"\S- \*\*", line)]
    assert glued == []


@pytest.mark.parametrize("page", ["index.md", "concepts.md", "guide.md"])
def test_code_blocks_fit_a_1280_px_page(page: str) -> None:
    fenced, long = False, []
    for number, line in enumerate((DOCS / page).read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced and len(line) > CODE_COLUMNS:
            long.append(f"{page}:{number} ({len(line)} characters)")
    assert long == []


def test_the_experiments_are_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config[config.index("\nnav:") :]
    pages = sorted(p.name for p in (DOCS / "experiments").glob("*.md"))
    assert pages and [p for p in pages if f"experiments/{p}" not in nav] == []


def test_the_gallery_index_gives_its_table_the_page_and_wraps_its_headings() -> None:
    front = index_page([]).split("---")[1]
    assert "- navigation" in front and "- toc" in front
    css = (DOCS / "stylesheets" / "butcherflow.css").read_text(encoding="utf-8")
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)))
    rules = {k.strip(): v for k, v in rules.items()}
    assert "white-space: normal" in rules[".md-typeset .sortable th"]
    assert "overflow-x: auto" in rules[".md-typeset .sortable"]


def _api_targets() -> list[str]:
    pages = sorted((DOCS / "reference").glob("*.md"))
    lines = (line for page in pages for line in page.read_text(encoding="utf-8").splitlines())
    return [line.split()[1] for line in lines if line.startswith("::: ")]


@pytest.mark.parametrize("target", _api_targets())
def test_every_api_reference_target_imports(target: str) -> None:
    # mkdocstrings fails `make docs` on a name that moved (extraction.rewire.rewire did)
    import importlib

    module, _, name = target.rpartition(".")
    while module:
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError:
            module, _, outer = module.rpartition(".")
            name = f"{outer}.{name}"
            continue
        for part in name.split("."):
            found = getattr(found, part)
        return
    pytest.fail(f"{target}: no module of it imports")
