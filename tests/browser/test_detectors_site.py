"""The detectors' links land on built pages: every rule's page URL, in both languages, served by the
local copy of the site; the rule table is on the Detectors page of each language."""

from __future__ import annotations

import urllib.request

import pytest

# The registry is standard library only, and the package imports lazily: no torch needed here.
from torch_pitfalls import rules  # with src on the path (nox -s browser sets PYTHONPATH)

from .conftest import HTML


@pytest.mark.parametrize("language", rules.LANGUAGES)
@pytest.mark.parametrize("rule", rules.RULES, ids=lambda r: r.id)
def test_every_rule_links_to_a_built_page(site_url, rule, language):
    url = rules.page_url(rule.slug, language=language, base_url=site_url)
    assert (HTML / url.removeprefix(site_url).lstrip("/")).is_file()
    with urllib.request.urlopen(url) as response:
        html = response.read().decode("utf-8")
    assert response.status == 200
    assert f'id="{rule.slug}"' in html  # the page's own label


@pytest.mark.parametrize("language", rules.LANGUAGES)
@pytest.mark.parametrize("rule", rules.RULES, ids=lambda r: r.id)
def test_every_rule_url_is_a_page_where_the_site_is_published(rule, language, monkeypatch):
    """The URL a user gets, with the default address: the host serves docs/_build/html there."""
    monkeypatch.delenv(rules.BASE_URL_ENV, raising=False)
    url = rules.page_url(rule.slug, language=language)
    assert url.startswith(rules.BASE_URL + "/")
    assert (HTML / url.removeprefix(rules.BASE_URL + "/")).is_file(), url


@pytest.mark.parametrize("language", rules.LANGUAGES)
def test_the_rule_table_lists_every_rule_in_its_language(page, site_url, language):
    page.goto(f"{site_url}/{language}/detectors.html")
    rows = page.locator("table.pitfalls-rules tbody tr")
    assert rows.count() == len(rules.RULES)
    for index, rule in enumerate(rules.RULES):
        row = rows.nth(index)
        assert row.get_attribute("id") == f"rule-{rule.id.lower()}"
        shown = row.inner_text().replace("\u2019", "'")  # Sphinx's smart quotes
        assert rule.title[language] in shown
        assert row.locator("a").count() == 1  # the page column links to the pitfall's page
