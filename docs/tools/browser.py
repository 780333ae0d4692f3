"""Open the built docs in headless Chromium and check what a reader's browser would see.

`python docs/tools/browser.py SITE_DIR --screenshots DIR` serves the site on
127.0.0.1, loads the front page, the gallery index and a few gallery pages, and fails when a
page logs a console error, throws, fails to load a resource, or requests anything from another
host. It also clicks a heading of the gallery's table and checks that the rows get sorted, and
on every page that no code block, table or figure reaches past the text column at the
viewport's width (1280 px: a laptop), which would cut it off (Material hides the page's
horizontal overflow).
Full-page screenshots (PNG) of each page go to DIR for review.

Chromium (Debian's `chromium` package) is driven through the DevTools protocol over a pipe
(`--remote-debugging-pipe`): no driver binary and no Python dependency beyond the standard
library.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, final
from urllib.parse import urlsplit

from butcherflow.errors import ButcherflowError

PAGES = (
    "index.html",
    "gallery/index.html",
    "gallery/solvers/rk4/index.html",
    "gallery/solvers/strang/index.html",
    "gallery/solvers/floater/index.html",
    "gallery/models/floater/index.html",
    "concepts/index.html",
)
MAX_HEIGHT = 12_000  # px: full-page screenshots, cut there
LOCAL_SCHEMES = ("data", "blob", "about", "chrome-extension")


def find_chromium() -> str:
    """The Chromium binary, or a clear error saying how to install it."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise ButcherflowError(
        "no Chromium found: install Debian's package (apt-get install -y chromium) to run the "
        "docs check"
    )


@final
@dataclass
class PageResult:
    """What loading one page produced."""

    path: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    screenshot: Path | None = None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


class _Pipe:
    """The DevTools protocol over Chromium's --remote-debugging-pipe (NUL-separated JSON)."""

    def __init__(self, to_browser: IO[bytes], from_browser: IO[bytes]) -> None:
        self.to_browser = to_browser
        self.from_browser = from_browser
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.replies: dict[int, dict[str, Any]] = {}
        self.lock = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self.from_browser.fileno(), 1 << 16)
            if not chunk:
                with self.lock:
                    self.lock.notify_all()
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                with self.lock:
                    if "id" in message:
                        self.replies[message["id"]] = message
                    else:
                        self.events.append(message)
                    self.lock.notify_all()

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        with self.lock:
            self.next_id += 1
            number = self.next_id
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self.to_browser.write(json.dumps(message).encode() + b"\0")
        self.to_browser.flush()
        deadline = time.monotonic() + timeout
        with self.lock:
            while number not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or not self.reader.is_alive():
                    raise ButcherflowError(f"Chromium did not answer {method} in {timeout:.0f} s")
                self.lock.wait(left)
            reply = self.replies.pop(number)
        if "error" in reply:
            raise ButcherflowError(f"Chromium refused {method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def wait_for(self, method: str, session: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                for event in self.events:
                    if event.get("method") == method and event.get("sessionId") == session:
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ButcherflowError(f"no {method} within {timeout:.0f} s")
                self.lock.wait(left)

    def drain(self, session: str) -> list[dict[str, Any]]:
        with self.lock:
            mine = [e for e in self.events if e.get("sessionId") == session]
            self.events = [e for e in self.events if e.get("sessionId") != session]
        return mine


def _problems(events: Sequence[dict[str, Any]], host: str, result: PageResult) -> None:
    failed: dict[str, str] = {}
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params["request"]["url"]
            failed[params["requestId"]] = url
            result.requests.append(url)
            parts = urlsplit(url)
            if parts.scheme not in LOCAL_SCHEMES and parts.netloc != host:
                result.errors.append(f"request to another host: {url}")
        elif method == "Network.responseReceived":
            status = params["response"]["status"]
            if status >= 400:
                result.errors.append(f"HTTP {status} for {params['response']['url']}")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            url = failed.get(params["requestId"], "?")
            result.errors.append(f"failed to load {url}: {params.get('errorText')}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            result.errors.append(f"uncaught exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
            result.errors.append(f"console.{params['type']}: {text}")
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            result.errors.append(f"browser log: {params['entry'].get('text')}")


SORT_CHECK = """
(() => {
  const table = document.querySelector('.sortable table');
  if (!table) return 'no sortable table';
  const headings = Array.from(table.tHead.rows[0].cells);
  const column = headings.findIndex(th => th.textContent.trim().startsWith('order'));
  if (column < 0) return 'no order column';
  headings[column].click();
  const values = Array.from(table.tBodies[0].rows).map(r => r.cells[column].textContent.trim())
    .filter(v => v !== '—').map(v => parseFloat(v));
  for (let i = 1; i < values.length; i++) {
    if (values[i] < values[i - 1]) return 'not sorted: ' + values.slice(0, 20).join(' ');
  }
  return values.length > 1 ? 'ok' : 'no rows';
})()
"""

# The boxes that would be cut off: a code block, a table's scroll box, a figure wider than the
# text column (a box that scrolls inside itself is as wide as the column, not as its content).
OVERFLOW_CHECK = """
(function () {
  var column = document.querySelector(".md-content");
  if (!column) return "no .md-content";
  var right = column.getBoundingClientRect().right + 1;
  var wide = [];
  var boxes = column.querySelectorAll("pre, .md-typeset__scrollwrap, .sortable, table, img, svg");
  Array.prototype.forEach.call(boxes, function (box) {
    if (box.tagName === "TABLE" && box.closest(".md-typeset__scrollwrap, .sortable")) return;
    var edge = box.getBoundingClientRect();
    if (edge.width > 0 && edge.right > right) {
      var name = box.tagName.toLowerCase() + (box.id ? "#" + box.id : "");
      wide.push(name + " ends at " + Math.round(edge.right) + " px, the column at " +
                Math.round(right - 1) + " px");
    }
  });
  return wide.length ? wide.length + " box(es): " + wide.slice(0, 3).join("; ") : "ok";
})()
"""


def check_pages(
    site: str | Path,
    screenshots: str | Path,
    pages: Sequence[str] = PAGES,
    *,
    width: int = 1280,
    height: int = 900,
) -> list[PageResult]:
    """Load each page of a built site in headless Chromium; collect errors and screenshots.

    **Arguments:**

    - `site`: the built site (`docs/_build/site`).
    - `screenshots`: folder for the PNGs (created).
    - `pages`: paths inside the site; those that do not exist are reported as errors.
    - `width`, `height`: the viewport.

    **Returns:** one `PageResult` per page.
    """
    root = Path(site).resolve()
    if not (root / "index.html").is_file():
        raise ButcherflowError(f"{root}: no built site here; run `make docs` first")
    shots = Path(screenshots)
    shots.mkdir(parents=True, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="butcherflow-chromium-")
    to_read, to_browser = os.pipe()  # the browser reads commands from fd 3
    from_browser, to_write = os.pipe()  # and writes replies to fd 4

    def pipes() -> None:  # in the child: copies first, so 3 and 4 cannot clobber each other
        reading, writing = os.dup(to_read), os.dup(to_write)
        os.dup2(reading, 3)
        os.dup2(writing, 4)

    command = [
        find_chromium(),
        "--headless=new",
        "--remote-debugging-pipe",
        "--no-sandbox",  # root in a container has no user namespaces
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
        "about:blank",
    ]
    # started before the server's thread: preexec_fn and threads do not mix
    process = subprocess.Popen(
        command,
        close_fds=False,  # keep the dup2'ed 3 and 4 (the pipes' own fds are close-on-exec)
        preexec_fn=pipes,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(to_read)
    os.close(to_write)
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{server.server_address[1]}"
    results: list[PageResult] = []
    try:
        pipe = _Pipe(os.fdopen(to_browser, "wb"), os.fdopen(from_browser, "rb"))
        for path in pages:
            result = PageResult(path)
            results.append(result)
            if not (root / path).is_file():
                result.errors.append("page missing from the built site")
                continue
            target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
                "sessionId"
            ]
            for domain in ("Page", "Runtime", "Log", "Network"):
                pipe.call(f"{domain}.enable", session=session)
            pipe.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            pipe.call("Page.navigate", {"url": f"http://{host}/{path}"}, session=session)
            pipe.wait_for("Page.loadEventFired", session)
            time.sleep(1.5)  # late requests: the search index, fonts, lazy images
            if path == "gallery/index.html":
                answer = pipe.call(
                    "Runtime.evaluate",
                    {"expression": SORT_CHECK, "returnByValue": True},
                    session=session,
                )["result"].get("value")
                if answer != "ok":
                    result.errors.append(f"sorting the gallery's table: {answer}")
                pipe.call("Runtime.evaluate", {"expression": "window.scrollTo(0, 0)"}, session)
            answer = pipe.call(
                "Runtime.evaluate",
                {"expression": OVERFLOW_CHECK, "returnByValue": True},
                session=session,
            )["result"].get("value")
            if answer != "ok":
                result.errors.append(f"wider than the text column at {width} px: {answer}")
            metrics = pipe.call("Page.getLayoutMetrics", session=session)
            content = metrics.get("cssContentSize") or metrics["contentSize"]
            full = min(int(content["height"]), MAX_HEIGHT)
            shot = pipe.call(
                "Page.captureScreenshot",
                {
                    "format": "png",
                    "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": width, "height": full, "scale": 1},
                },
                session=session,
            )
            name = path.removesuffix("/index.html").removesuffix(".html").replace("/", "-")
            result.screenshot = shots / f"{name or 'index'}.png"
            result.screenshot.write_bytes(base64.b64decode(shot["data"]))
            _problems(pipe.drain(session), host, result)
            pipe.call("Target.closeTarget", {"targetId": target})
        with contextlib.suppress(ButcherflowError):  # closing anyway below
            pipe.call("Browser.close", timeout=5)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python docs/tools/browser.py",
        description="Load the built docs in headless Chromium: no console errors, no request "
        "to another host; screenshots for review.",
    )
    parser.add_argument("site", help="the built site, e.g. docs/_build/site")
    parser.add_argument("--screenshots", default="docs/_build/screenshots")
    parser.add_argument("--page", action="append", help="pages to load (default: a fixed set)")
    args = parser.parse_args(argv)
    try:
        results = check_pages(args.site, args.screenshots, args.page or PAGES)
    except ButcherflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    failed = 0
    for result in results:
        status = "ok" if not result.errors else f"{len(result.errors)} problem(s)"
        print(f"{result.path}: {len(result.requests)} requests, {status} -> {result.screenshot}")
        for problem in result.errors:
            print(f"  error: {problem}", file=sys.stderr)
        failed += bool(result.errors)
    print(f"{len(results)} pages checked, {failed} with problems")
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
