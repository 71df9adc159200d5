"""What a reader sees of the recordings across PyTorch releases (``nox -s releases``): each
page's "Across releases" section, in both languages, and the matrix on the changes page."""

from __future__ import annotations

import re

import pytest

from tools import releases  # with src on the path (nox -s browser sets PYTHONPATH)

from .conftest import HTML, ROOT

LANGUAGES = ("en", "zh_CN")
RUNS = releases.runs()
#: Every listed release: a page not recorded on one says so in its row.
ORDER = sorted(releases.RELEASES, key=releases.release_key)
TITLES = {"en": "Across releases", "zh_CN": "跨版本对比"}
NOT_RECORDED = {"en": "not recorded yet", "zh_CN": "尚未录制"}
#: The example file's name (the page's, without .html) -> its slug.
SLUGS = {path.stem: slug for slug, path in releases.examples().items()}


def example_pages(language: str) -> list[str]:
    return sorted(
        p.relative_to(HTML / language).as_posix()
        for p in (HTML / language / "auto_examples").glob("*/plot_*.html")
    )


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_page_ends_with_its_releases_in_the_readers_language(site_url, language):
    """Every example page has the section, last, with one row per listed release (the torch
    version as recorded and the date the page was recorded, or "not recorded yet"), and every
    "explained in" link goes to a section of the same page."""
    pages = example_pages(language)
    assert len(pages) == len(list((ROOT / "examples").glob("*/plot_*.py")))
    for path in pages:
        text = (HTML / language / path).read_text(encoding="utf-8")
        start = text.find('id="across-releases"')
        assert start > 0, f"{language}/{path}: no Across releases section"
        section = text[start:]
        assert TITLES[language] in section[:400], (language, path)
        assert not re.search(r'<section id="(?!across-releases)', section), (
            f"{language}/{path}: a section after Across releases"
        )
        rows = re.findall(r"<tr class=\"row-(?:odd|even)\">(.*?)</tr>", section, re.S)
        body = rows[1:] if "<th" in rows[0] else rows
        assert len(body) == len(ORDER), (language, path)
        entries = releases.load_page(SLUGS[path.rsplit("/", 1)[-1].removesuffix(".html")])
        for label, row in zip(ORDER, body, strict=True):
            entry = entries.get(label)
            if entry is None:
                assert NOT_RECORDED[language] in row, (language, path, label)
                continue
            date = entry.get("rerun", {}).get("date") or RUNS[label]["date"]
            assert RUNS[label]["torch"] in row and date in row, (language, path, label)
        for target in re.findall(r'<a class="reference internal" href="#([^"]+)"', section):
            assert f'id="{target}"' in text, f"{language}/{path}: link to missing #{target}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_changes_page_shows_the_matrix(page, site_url, language):
    page.goto(f"{site_url}/{language}/changes.html")
    table = page.locator("table.pitfalls-release-matrix")
    header = table.locator("thead th").all_inner_texts()
    assert [h.strip() for h in header[1:]] == ORDER
    assert table.locator("tbody tr").count() == len(example_pages(language))
    links = table.locator("tbody tr td:first-child a")
    assert links.count() == table.locator("tbody tr").count()
    cells = table.locator("tbody tr td:not(:first-child) a")
    assert cells.count() > 0  # the CUDA builds differ from the CPU wheel at least somewhere
    for href in cells.evaluate_all("links => links.map(a => a.href)"):
        assert href.endswith("#across-releases"), href
        path = href.split(f"{site_url}/", 1)[1].split("#")[0]
        assert 'id="across-releases"' in (HTML / path).read_text(encoding="utf-8"), href
