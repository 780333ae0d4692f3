"""Checks on the built site that mkdocs' strict mode does not make: every local link, image,
script and stylesheet in the HTML resolves (anchors included), and nothing is loaded from
another host (outbound `<a href>` links are allowed: following one is the reader's choice).

`python docs/tools/sitecheck.py SITE_DIR` prints each problem and exits 1 if any.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# (tag, attribute) pairs whose URL the browser fetches by itself, and those it only links to
FETCHED = {
    ("img", "src"),
    ("script", "src"),
    ("link", "href"),
    ("source", "src"),
    ("iframe", "src"),
    ("embed", "src"),
    ("object", "data"),
    ("image", "href"),
}
LINKED = {("a", "href")}
INERT = ("mailto:", "data:", "javascript:", "tel:", "blob:")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, url)
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            if (tag, name) in FETCHED or (tag, name) in LINKED:
                if tag == "link" and name == "href":
                    rel = dict(attrs).get("rel") or ""
                    if "canonical" in rel or "alternate" in rel:
                        continue  # not fetched
                self.urls.append((tag, name, value))


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def check_site(site: str | Path) -> list[str]:
    """Problems of a built site, one line each (empty: all good).

    **Arguments:**

    - `site`: the folder `mkdocs build` wrote.

    **Returns:** lines `page: what is wrong`.
    """
    root = Path(site).resolve()
    if not (root / "index.html").is_file():
        return [f"{root}: no index.html (is this a built site?)"]
    problems: list[str] = []
    parsed: dict[Path, _Page] = {}

    def page_of(path: Path) -> _Page:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    for html in sorted(root.rglob("*.html")):
        where = html.relative_to(root)
        for tag, attribute, url in page_of(html).urls:
            parts = urlsplit(url)
            fetched = (tag, attribute) in FETCHED
            if url.startswith(INERT) or (not url and not fetched):
                continue
            if parts.scheme or url.startswith("//"):
                if fetched and parts.scheme in ("http", "https", ""):
                    problems.append(f"{where}: <{tag} {attribute}> loads from another host: {url}")
                continue
            if not parts.path:  # "#anchor" on the same page
                target = html
            else:
                base = root if parts.path.startswith("/") else html.parent
                target = (base / unquote(parts.path.lstrip("/"))).resolve()
                if target.is_dir() or parts.path.endswith("/"):
                    target = target / "index.html"
            if root not in target.parents and target != root:
                problems.append(f"{where}: <{tag} {attribute}> leaves the site: {url}")
                continue
            if not target.is_file():
                kind = "image" if tag in ("img", "image") else "link"
                problems.append(f"{where}: broken {kind} <{tag} {attribute}={url!r}>")
                continue
            if fetched and target.stat().st_size == 0:
                problems.append(f"{where}: empty file behind <{tag} {attribute}={url!r}>")
            fragment = unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in page_of(target).ids:
                problems.append(f"{where}: missing anchor #{fragment} in {url!r}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python docs/tools/sitecheck.py SITE_DIR", file=sys.stderr)
        return 2
    problems = check_site(args[0])
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    pages = sum(1 for _ in Path(args[0]).rglob("*.html"))
    print(f"{args[0]}: {pages} pages, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
