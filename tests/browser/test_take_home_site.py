"""What a reader takes from the gallery: cards of its own for every page, Chinese figures on the
Chinese pages, and on a phone, outputs and code whose numbers are never cut off."""

from __future__ import annotations

import hashlib
import re
import urllib.request

import pytest

from .conftest import HTML

LANGUAGES = ("en", "zh_CN")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_card_has_an_image_of_its_own(page, site_url, language):
    """No card shows sphinx-gallery's placeholder: all 61 thumbnails differ from each other."""
    page.goto(f"{site_url}/{language}/auto_examples/index.html")
    sources = page.eval_on_selector_all(
        ".sphx-glr-thumbcontainer img", "images => images.map(i => i.src)"
    )
    examples = list((HTML.parents[1].parent / "examples").glob("*/plot_*.py"))
    assert len(sources) == len(examples)
    digests = {}
    for source in sources:
        assert "no_image" not in source
        digests.setdefault(hashlib.sha256(urllib.request.urlopen(source).read()).hexdigest(), [])
        digests[hashlib.sha256(urllib.request.urlopen(source).read()).hexdigest()].append(source)
    shared = {k: v for k, v in digests.items() if len(v) > 1}
    assert not shared, f"cards sharing one image (the placeholder?): {shared}"
    loaded = page.eval_on_selector_all(
        ".sphx-glr-thumbcontainer img", "images => images.every(i => i.naturalWidth > 0)"
    )
    assert loaded


def figure_pages(language):
    return sorted(
        p.relative_to(HTML / language).as_posix()
        for p in (HTML / language / "auto_examples").glob("*/plot_*.html")
        if "sphx-glr-single-img" in p.read_text(encoding="utf-8")
    )


@pytest.mark.parametrize("path", figure_pages("zh_CN") or ["(no build)"])
def test_chinese_pages_show_chinese_figures(page, site_url, path):
    """The figure of a Chinese page is its own drawing (not the English image), alt text in
    Chinese; the figure's texts are checked at build time (pictures.render_figures)."""
    if path == "(no build)":
        pytest.skip("the site is not built")
    figures = {}
    for language in LANGUAGES:
        page.goto(f"{site_url}/{language}/{path}")
        image = page.locator("img.sphx-glr-single-img").first
        figures[language] = (
            image.get_attribute("alt"),
            hashlib.sha256(urllib.request.urlopen(image.evaluate("i => i.src")).read()).digest(),
            image.evaluate("i => i.naturalWidth"),
        )
    assert re.search(r"[\u4e00-\u9fff]", figures["zh_CN"][0]), figures["zh_CN"][0]
    assert figures["zh_CN"][1] != figures["en"][1]
    assert figures["zh_CN"][2] > 0


#: Pages with long output lines (tensors, measurements) and long code lines.
PHONE_PAGES = [
    "auto_examples/autograd/plot_data_vs_detach.html",
    "auto_examples/tensors/plot_index_select.html",
    "auto_examples/performance/plot_compile_recompiles.html",
    "auto_examples/data/plot_dataloader_worker_rng.html",
]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("path", PHONE_PAGES)
def test_on_a_phone_no_output_or_code_is_cut_off(browser, site_url, language, path):
    """At 390 px, an output block shows all of its text (wrapped); a code block wider than the
    screen scrolls sideways, with a shadow on its edge saying so."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(f"{site_url}/{language}/{path}")
    blocks = page.eval_on_selector_all(
        "pre",
        """blocks => blocks.map(b => {
            const style = getComputedStyle(b);
            const output = !!b.closest('.sphx-glr-script-out, .cell_output, .pitfalls-recording');
            return {output, scroll: b.scrollWidth, client: b.clientWidth,
                    overflow: style.overflowX, cue: style.backgroundImage,
                    text: b.textContent.slice(0, 60)};
        })""",
    )
    context.close()
    outputs = [b for b in blocks if b["output"]]
    assert outputs, f"no output block on {path}"
    problems = []
    for block in blocks:
        if block["scroll"] <= block["client"] + 1:
            continue
        if block["output"]:
            problems.append(f"an output wider than the screen: {block}")
        elif block["overflow"] not in ("auto", "scroll"):
            problems.append(f"code cut off without scrolling: {block}")
        elif "radial-gradient" not in block["cue"]:
            problems.append(f"code that scrolls without a cue: {block}")
    assert not problems, "\n".join(problems)
