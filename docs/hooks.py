"""mkdocs hooks (`hooks:` in mkdocs.yml; this file is not part of the site).

- A page containing `<!-- butcherflow:cli-reference -->` gets the reference of every subcommand,
  generated at build time from the CLI's own parser, so it cannot drift.
- After the build, `docs/tools/sitecheck.py` must find no broken link, missing image or
  resource loaded from another host; otherwise the build fails.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

# The developer tools (the site checker, the headless-browser driver) live beside the docs, not in
# the wheel. Imported while mkdocs executes this file: mkdocs restores sys.path right after.
sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
from sitecheck import check_site

CLI_MARKER = "<!-- butcherflow:cli-reference -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Expand the CLI-reference marker."""
    if CLI_MARKER not in markdown:
        return markdown
    from butcherflow.cli import build_parser
    from butcherflow.gallery import cli_reference

    return markdown.replace(CLI_MARKER, cli_reference(build_parser(), level=2))


def on_post_build(config: Any) -> None:
    """Fail the build on a broken link or image, or a resource from another host."""
    from mkdocs.exceptions import Abort

    problems = check_site(config["site_dir"])
    if problems:
        shown = "\n".join(f"  {p}" for p in problems[:50])
        more = f"\n  ... {len(problems) - 50} more" if len(problems) > 50 else ""
        raise Abort(f"the built site has {len(problems)} problem(s):\n{shown}{more}")
