"""The developer tools beside the docs (`docs/tools/`, not in the wheel): the site checker that
`make docs` runs after mkdocs."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "tools"))

from sitecheck import check_site


def test_site_check_finds_broken_links_and_foreign_resources(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "page").mkdir(parents=True)
    (site / "a.svg").write_text("<svg/>", encoding="utf-8")
    (site / "page" / "index.html").write_text('<h1 id="top">x</h1>', encoding="utf-8")
    good = '<img src="a.svg"><a href="page/#top">p</a><a href="https://example.org/">out</a>'
    (site / "index.html").write_text(good, encoding="utf-8")
    assert check_site(site) == []
    bad = (
        '<img src="missing.svg"><a href="page/#nowhere">p</a><a href="gone/">g</a>'
        '<script src="https://cdn.example.org/x.js"></script>'
    )
    (site / "index.html").write_text(bad, encoding="utf-8")
    problems = "\n".join(check_site(site))
    assert "broken image <img src='missing.svg'>" in problems
    assert "missing anchor #nowhere" in problems
    assert "broken link <a href='gone/'>" in problems
    assert "loads from another host: https://cdn.example.org/x.js" in problems


def test_the_mkdocs_hook_finds_the_site_checker_after_mkdocs_restores_sys_path() -> None:
    import importlib.util

    # mkdocs (config_options.Hooks._load_hook) executes the hook file with its folder on
    # sys.path and restores sys.path right after; on_post_build runs later
    path = Path(__file__).resolve().parents[1] / "docs" / "hooks.py"
    spec = importlib.util.spec_from_file_location("butcherflow_docs_hooks", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = sys.path.copy()
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    assert module.check_site is check_site
