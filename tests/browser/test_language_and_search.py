"""The language switch, the language-aware site root, and Chinese search, in a real browser."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from .conftest import HTML, site_pages

PAGES = site_pages("en") if (HTML / "en").exists() else []


def test_both_languages_have_the_same_pages():
    assert PAGES, "the site is not built"
    assert site_pages("zh_CN") == PAGES


@pytest.mark.parametrize("path", PAGES)
def test_language_switch_round_trip(page, site_url, path):
    page.goto(f"{site_url}/en/{path}")
    assert page.locator("html").get_attribute("lang") == "en"
    page.locator(".pitfalls-language-switch").first.click()
    page.wait_for_url(f"{site_url}/zh_CN/{path}")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.locator(".pitfalls-language-switch").first.click()
    page.wait_for_url(f"{site_url}/en/{path}")


def test_site_root_follows_the_browser_language_then_the_readers_choice(browser, site_url):
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    page.goto(f"{site_url}/index.html")
    page.wait_for_url(f"{site_url}/zh_CN/index.html")
    page.locator(".pitfalls-language-switch").first.click()  # the reader picks English
    page.wait_for_url(f"{site_url}/en/index.html")
    page.goto(f"{site_url}/index.html")
    page.wait_for_url(f"{site_url}/en/index.html")  # remembered over the browser's language
    context.close()


def search(page, site_url, language, query) -> list[str]:
    page.goto(f"{site_url}/{language}/search.html?q={quote(query)}")
    page.wait_for_selector("#search-results ul.search li, #search-results p.search-summary")
    page.wait_for_function(
        "() => !document.querySelector('#search-results h2')"
        " || !/Searching|搜索中/.test(document.querySelector('#search-results h2').textContent)"
    )
    links = page.locator("#search-results ul.search li a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))"
    )
    return [link.split("?")[0].split("#")[0] for link in links]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("梯度累积", "auto_examples/autograd/plot_gradient_accumulation.html"),
        ("计算图", "auto_examples/autograd/plot_retain_graph.html"),
        ("运行统计量", "auto_examples/modules/plot_batchnorm_running_stats.html"),
        ("设备端断言", "auto_examples/tensors/plot_index_select.html"),
        # Variants readers type for the glossary's term (glossary.csv, column "variants").
        ("梯度清零", "auto_examples/autograd/plot_backward_step_zero_grad.html"),
        ("梯度累加", "auto_examples/autograd/plot_gradient_accumulation.html"),
        ("批量归一化", "auto_examples/modules/plot_batchnorm_running_stats.html"),
    ],
)
def test_unsegmented_chinese_query_finds_the_page(page, site_url, query, expected):
    found = search(page, site_url, "zh_CN", query)
    assert expected in found, f"{query!r} found {found}"


def test_english_search_still_works(page, site_url):
    found = search(page, site_url, "en", "gradient accumulation")
    assert "auto_examples/autograd/plot_gradient_accumulation.html" in found
