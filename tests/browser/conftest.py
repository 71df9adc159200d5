"""A real headless browser on the built site: Debian's Chromium driven by Playwright.

Nothing downloads a browser: Playwright launches ``/usr/bin/chromium`` (Debian package
``chromium``; ``.ci/run`` installs it). The site is served from ``docs/_build/html`` on a local
port, so build it first (``nox -s docs``). ``nox -s browser`` runs these tests.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "docs" / "_build" / "html"
CHROMIUM = os.environ.get("TORCH_PITFALLS_CHROMIUM", "/usr/bin/chromium")
#: Set by CI: a missing browser or site is then an error, not a skip.
REQUIRED = os.environ.get("TORCH_PITFALLS_REQUIRE_BROWSER") == "1"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _unavailable() -> str | None:
    if not (HTML / "en" / "index.html").exists() or not (HTML / "zh_CN" / "index.html").exists():
        return f"the site is not built in {HTML}: run `nox -s docs` first"
    if not shutil.which(CHROMIUM):
        return f"no Chromium at {CHROMIUM}: apt-get install chromium"
    return None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site_url():
    """Base URL of the built site, served from docs/_build/html on 127.0.0.1."""
    reason = _unavailable()
    if reason:
        if REQUIRED:
            pytest.fail(reason)
        pytest.skip(reason)
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser(site_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(locale="en-US")
    page = context.new_page()
    yield page
    context.close()


def site_pages(language: str = "en") -> list[str]:
    """Every content page of one language, as paths relative to its root (``a/b.html``)."""
    base = HTML / language
    skip = {"search.html", "genindex.html", "py-modindex.html"}
    return sorted(
        p.relative_to(base).as_posix()
        for p in base.rglob("*.html")
        if p.name not in skip and not p.relative_to(base).as_posix().startswith(("_", "."))
    )
