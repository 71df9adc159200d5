"""Every page as a reader gets it: no console error, nothing fetched from outside, figures,
working copy buttons, and no sideways scrolling on a phone."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from .conftest import HTML, site_pages

PAGES = [
    f"{language}/{path}"
    for language in ("en", "zh_CN")
    if (HTML / language).exists()
    for path in site_pages(language)
]


def load(browser, site_url, path, **context_args):
    """Open a page; return it with the console errors and the failed or external requests."""
    context = browser.new_context(**context_args)
    page = context.new_page()
    problems = []
    page.on(
        "console",
        lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url}"))
    page.on(
        "response",
        lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None,
    )

    def request(r):
        host = urlparse(r.url).hostname
        if r.url.startswith(("http://", "https://")) and host != "127.0.0.1":
            problems.append(f"external request: {r.url}")

    page.on("request", request)
    page.goto(f"{site_url}/{path}", wait_until="networkidle")
    return context, page, problems


#: The headings of the page's article whose text reaches past the right edge of the viewport. The
#: page as a whole can still fit (the theme's containers clip what overflows), so a title cut at
#: ``torch.cuda.empty_`` passed the page-level check: each heading's text is measured itself, its
#: hidden "#" link left out.
CUT_OFF_HEADINGS = """() => {
  const width = document.documentElement.clientWidth, cut = [];
  for (const link of document.querySelectorAll('a.headerlink')) link.style.display = 'none';
  for (const heading of document.querySelectorAll(
      'article h1, article h2, article h3, article h4')) {
    const range = document.createRange();
    range.selectNodeContents(heading);
    const box = range.getBoundingClientRect();
    if (box.width > 0 && box.right > width + 1) cut.push(heading.textContent.trim().slice(0, 60));
  }
  return cut;
}"""


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_cleanly_locally_and_fits_a_phone(browser, site_url, path):
    context, page, problems = load(browser, site_url, path)
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(50)
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    cut = page.evaluate(CUT_OFF_HEADINGS)
    context.close()
    assert not problems, "\n".join(problems)
    assert overflow <= 0, f"{path} scrolls sideways by {overflow} px at 390 px wide"
    assert not cut, f"{path}: headings cut off at 390 px wide: {cut[:5]}"


FIGURE_PAGES = (
    sorted(
        p.relative_to(HTML).as_posix()
        for p in (HTML / "en" / "auto_examples").rglob("plot_*.html")
        if "sphx-glr-single-img" in p.read_text(encoding="utf-8")
        or "sphx-glr-multi-img" in p.read_text(encoding="utf-8")
    )
    if (HTML / "en").exists()
    else []
)


@pytest.mark.parametrize("path", FIGURE_PAGES)
def test_gallery_figures_are_shown(browser, site_url, path):
    context, page, _ = load(browser, site_url, path)
    widths = page.locator("img.sphx-glr-single-img, img.sphx-glr-multi-img").evaluate_all(
        "imgs => imgs.map(img => img.complete ? img.naturalWidth : 0)"
    )
    context.close()
    assert widths and all(w > 0 for w in widths), f"{path}: images {widths}"


def test_copy_button_copies_code_without_prompts_or_outputs(browser, site_url):
    context, page, _ = load(browser, site_url, "en/cheatsheet.html")
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    block = page.locator("div.highlight-python").filter(has_text="requires_grad_(False)").first
    block.hover()
    block.locator("button.copybtn").click()
    copied = page.evaluate("() => navigator.clipboard.readText()")
    context.close()
    assert "layer = nn.Linear(3, 2)" in copied
    assert ">>>" not in copied and "..." not in copied.replace("...", "", 0)
    assert "(False, True)" not in copied  # the doctest's output is not copied
