"""The answer first: every pitfall page opens with the box that gives the symptom, the fix (the
cheat sheet's snippet) and a link down to the section that explains it, in both languages."""

from __future__ import annotations

import re

import pytest

from .conftest import site_pages

LANGUAGES = ["en", "zh_CN"]
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_pitfall_page_opens_with_the_answer(page, site_url, language):
    pages = [p for p in site_pages(language) if re.match(r"auto_examples/\w+/plot_", p)]
    assert len(pages) >= 61
    for path in pages:
        page.goto(f"{site_url}/{language}/{path}")
        box = page.locator("article section > div.pitfalls-answer")
        assert box.count() == 1, path
        # first in the page, right under its title
        assert page.locator("article section h1 + div.pitfalls-answer").count() == 1, path
        assert box.locator(".pitfalls-answer-symptom").count() == 1, path
        assert box.locator(".pitfalls-answer-fix").count() == 1, path
        assert box.locator("div.highlight pre").inner_text().startswith(">>> "), path
        detectors = box.locator(".pitfalls-answer-detectors")
        assert detectors.count() == 1, path
        rule_links = detectors.locator("a").evaluate_all(
            "links => links.map(a => a.getAttribute('href'))"
        )
        for href in rule_links:  # each rule: its row of the Detectors page's rule table
            assert re.fullmatch(r"(\.\./)+detectors\.html#rule-tp\d{3}", href), (path, href)
        if not rule_links:
            assert detectors.locator("em").count() == 1, path  # "none, because …"
        hrefs = box.locator("p:not(.pitfalls-answer-detectors) a").evaluate_all(
            "links => links.map(a => a.getAttribute('href'))"
        )
        for href in hrefs:
            anchor = href.removeprefix("#")
            assert href.startswith("#") and page.locator(f"[id='{anchor}']").count() == 1, path
        if language == "zh_CN":
            labels = box.locator("p.rubric, strong").all_inner_texts()
            assert all(CJK.search(label) for label in labels), (path, labels)
