"""Finding the page from a message, an API name or a symptom, in the built site.

Search is Sphinx's own, with the scorer and the index entries that docs/_ext/pitfalls/search.py
generates from the pages' records (src/torch_pitfalls/catalog/pages.toml) and from the messages the
pages printed. The error index is checked against the outputs of every page, read from the built
HTML (not from the code that wrote the index).
"""

from __future__ import annotations

import ast
import html
import re
from urllib.parse import quote

import pytest

from .conftest import HTML, site_pages
from .test_language_and_search import search

A = "auto_examples/"

#: What readers paste or type → the page that must come first, per language.
FIRST_RESULTS = [
    ("zero_grad", "autograd/plot_backward_step_zero_grad"),
    ("retain_graph", "autograd/plot_retain_graph"),
    ("weights_only", "devices/plot_torch_load_weights_only"),
    ("pin_memory", "performance/plot_non_blocking_copy"),
    ("set_epoch", "distributed/plot_sampler_set_epoch"),
    ("ModuleList", "modules/plot_modulelist_vs_list"),
    ("register_buffer", "modules/plot_register_buffer"),
    ("clip_grad_norm_", "optim/plot_clip_grad_placement"),  # the AMP page: unscale first
    ("log_softmax", "tensors/plot_softmax_dim"),
    ("torch.no_grad", "autograd/plot_no_grad_evaluation"),
    ("empty_cache", "performance/plot_caching_allocator"),
    ("CUDA out of memory", "performance/plot_caching_allocator"),
    ("Trying to backward through the graph a second time", "autograd/plot_retain_graph"),
    (
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn",
        "autograd/plot_requires_grad_propagation",
    ),
    ("Weights only load failed", "devices/plot_torch_load_weights_only"),
    (
        "view size is not compatible with input tensor's size and stride",
        "tensors/plot_view_noncontiguous",
    ),
    (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation",
        "autograd/plot_inplace_saved_tensor",
    ),
    (
        "a leaf Variable that requires grad is being used in an in-place operation.",
        "autograd/plot_leaf_inplace_init",
    ),
    ("Expected all tensors to be on the same device", "devices/plot_device_agnostic_code"),
    (
        "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
        "devices/plot_tensor_to_numpy",
    ),
    (
        "Detected call of `lr_scheduler.step()` before `optimizer.step()`",
        "optim/plot_scheduler_step_order",
    ),
    ("Using a target size that is different to the input size", "losses/plot_mse_broadcasting"),
]
#: Messages as a reader's own code prints them: other shapes, devices and operations than the
#: page's, and the rest of the message after its stable beginning.
PASTED_MESSAGES = [
    (
        "RuntimeError: one of the variables needed for gradient computation has been modified by"
        " an inplace operation: [torch.cuda.FloatTensor [512, 10]], which is output 0 of"
        " ReluBackward0, is at version 2; expected version 1 instead. Hint: the backtrace further"
        " above shows the operation that failed to compute its gradient.",
        "autograd/plot_inplace_saved_tensor",
    ),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB"
        " total capacity; 6.92 GiB already allocated)",
        "performance/plot_caching_allocator",
    ),
    (
        "UserWarning: Using a target size (torch.Size([32])) that is different to the input size"
        " (torch.Size([32, 1])). This will likely lead to incorrect results due to broadcasting.",
        "losses/plot_mse_broadcasting",
    ),
    (
        "RuntimeError: Trying to backward through the graph a second time (or directly access"
        " saved tensors after they have already been freed). Saved intermediate values of the"
        " graph are freed when you call .backward() or autograd.grad().",
        "autograd/plot_retain_graph",
    ),
    (
        "RuntimeError: view size is not compatible with input tensor's size and stride (at least"
        " one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
        "tensors/plot_view_noncontiguous",
    ),
]
CHINESE_FIRST_RESULTS = [
    ("梯度累积", "autograd/plot_gradient_accumulation"),
    ("混合精度", "amp/plot_amp_unscale_before_clip"),
    ("内存泄漏", "devices/plot_item_and_tolist"),
    ("显存不足", "performance/plot_caching_allocator"),
    ("叶子张量", "autograd/plot_non_leaf_grad"),
]
CASES = [("en", q, p) for q, p in FIRST_RESULTS + PASTED_MESSAGES] + [
    ("zh_CN", q, p) for q, p in FIRST_RESULTS + PASTED_MESSAGES + CHINESE_FIRST_RESULTS
]


@pytest.mark.parametrize(("language", "query", "expected"), CASES)
def test_search_ranks_the_page_first(page, site_url, language, query, expected):
    found = search(page, site_url, language, query)
    assert found and found[0] == f"{A}{expected}.html", f"{query!r} found {found[:5]}"


def test_the_contributors_glossary_is_not_a_search_result(page, site_url):
    # 张量 (tensor) is a glossary term: before, the glossary table made the contributor guide a
    # result for it; the pages that use the term still are.
    found = search(page, site_url, "zh_CN", "叶子张量")
    assert found and "contributing.html" not in found


# -- The language switch keeps the section and the search query ---------------------------------


@pytest.mark.parametrize(("start", "other"), [("en", "zh_CN"), ("zh_CN", "en")])
def test_language_switch_keeps_the_anchor(page, site_url, start, other):
    path = f"{A}autograd/plot_retain_graph.html#the-fix"
    page.goto(f"{site_url}/{start}/{path}")
    page.locator(".pitfalls-language-switch").first.click()
    page.wait_for_url(f"{site_url}/{other}/{path}")


@pytest.mark.parametrize(("start", "other"), [("en", "zh_CN"), ("zh_CN", "en")])
def test_language_switch_keeps_the_search_query(page, site_url, start, other):
    query = quote("retain_graph")
    page.goto(f"{site_url}/{start}/search.html?q={query}")
    page.wait_for_selector("#search-results ul.search li")
    page.locator(".pitfalls-language-switch").first.click()
    page.wait_for_url(f"{site_url}/{other}/search.html?q={query}")
    page.wait_for_selector("#search-results ul.search li")
    assert page.locator("#search-results ul.search li a").count() > 0


# -- The error index lists every message the pages print ------------------------------------------

PRE = re.compile(r'<div class="([^"]*)"[^>]*>\s*<div class="highlight"><pre>(.*?)</pre>', re.S)
#: A message line, alone or after a label for an error ("child's error: ...").
LABELLED_MESSAGE = re.compile(
    r"^(?:[\w' ]*\berror(?: line)?: )?"
    r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Warning|Exception): \S.*)$"
)


def _text(raw: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


def printed_on(language: str, path: str, later_lines: bool = False) -> set[str]:
    """The message lines (``Class: message``) of the executed outputs of one built page; with
    ``later_lines``, each later line of a message too, under its class (``RuntimeError:
    Unexpected key(s) in …`` for the line below ``RuntimeError: Error(s) in loading …``)."""
    source = (HTML / language / path).read_text(encoding="utf-8")
    lines = set()
    for classes, pre in PRE.findall(source):
        if "sphx-glr-script-out" in classes or "output" in classes.split():
            kind = None
            for line in _text(pre).splitlines():
                # a message, alone or after an output's label ("child's error: ...")
                match = LABELLED_MESSAGE.match(line.strip())
                if match and not match[1].startswith("PitfallWarning:"):
                    lines.add(match[1])
                    kind = match[1].split(": ", 1)[0]
                elif kind and later_lines and line.strip():
                    lines.add(f"{kind}: {line.strip()}")
    return lines


def output_lines(language: str, path: str) -> set[str]:
    """Every line of the executed outputs of one built page, stripped."""
    source = (HTML / language / path).read_text(encoding="utf-8")
    return {
        line.strip()
        for classes, pre in PRE.findall(source)
        if "sphx-glr-script-out" in classes or "output" in classes.split()
        for line in _text(pre).splitlines()
    }


LANGUAGES = ["en", "zh_CN"]
MESSAGES_MODULE = HTML.parents[2] / "src" / "torch_pitfalls" / "messages.py"


def not_pytorchs() -> list[tuple[str, str]]:
    """``(class, pattern)`` of the messages the index leaves out (``messages.NOT_PYTORCH``: a
    page's own helper), read from the source (this session has no torch to import it with)."""
    tree = ast.parse(MESSAGES_MODULE.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "NOT_PYTORCH":
            return [(name, pattern) for name, pattern, _ in ast.literal_eval(node.value)]
    raise AssertionError(f"no NOT_PYTORCH in {MESSAGES_MODULE}")


def is_pytorchs(line: str) -> bool:
    kind, _, message = line.partition(": ")
    return not any(
        kind.rsplit(".", 1)[-1] == name and re.search(pattern, message)
        for name, pattern in not_pytorchs()
    )


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_printed_message_is_in_the_error_index(site_url, language):
    index = (HTML / language / "errors.html").read_text(encoding="utf-8")
    listed = set()
    for classes, pre in PRE.findall(index):
        if "pitfalls-error-message" in classes:
            listed.add(_text(pre).strip())
    printed = {
        line: path
        for path in site_pages(language)
        if path != "errors.html"
        for line in printed_on(language, path)
        if is_pytorchs(line)
    }
    assert len(printed) > 50
    missing = {line: path for line, path in printed.items() if line not in listed}
    assert not missing, f"printed but not in the error index: {missing}"


ENTRY = re.compile(
    r'<div class="[^"]*pitfalls-error-message[^"]*"[^>]*>\s*<div class="highlight"><pre>'
    r'(.*?)</pre>.*?<p class="pitfalls-error-pages">(.*?)</p>',
    re.S,
)


def error_index_entries(language: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``(message, links' HTML)`` of each entry of the built error index, in order: those of the
    messages this build prints, and those of the wordings of other releases."""
    index = (HTML / language / "errors.html").read_text(encoding="utf-8")
    printed, older = index.split('id="error-other-releases"')
    return (
        [(_text(pre).strip(), links) for pre, links in ENTRY.findall(printed)],
        [(_text(pre).strip(), links) for pre, links in ENTRY.findall(older)],
    )


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_error_index_entry_links_a_section_that_prints_it(site_url, language):
    printed, older = error_index_entries(language)
    assert printed
    for message, links in printed:
        hrefs = re.findall(r'href="([^"#]+)#([^"]+)"', links)
        assert hrefs, message
        for href, anchor in hrefs:
            printed_there = printed_on(language, href, later_lines=True)
            # a log line (no class before it) is listed as the page printed it
            assert message in printed_there or any(
                line.endswith(message) for line in output_lines(language, href)
            ), f"{href} does not print {message}"
            assert f'id="{anchor}"' in (HTML / language / href).read_text(encoding="utf-8")
    # The wordings of other releases: in the linked page's Across releases section, with the
    # releases that print them.
    assert older
    for message, links in older:
        assert re.match(r"PyTorch \d+\.\d+", _text(links)), links
        for href, anchor in re.findall(r'href="([^"#]+)#([^"]+)"', links):
            page = (HTML / language / href).read_text(encoding="utf-8")
            section = page.split(f'id="{anchor}"', 1)[1]
            assert message in _text(section), f"{href}#{anchor} does not show {message}"


@pytest.mark.parametrize("language", LANGUAGES)
def test_chinese_error_index_glosses_each_message(site_url, language):
    index = (HTML / language / "errors.html").read_text(encoding="utf-8")
    glosses = re.findall(r'<p class="pitfalls-gloss">(.*?)</p>', index, re.S)
    if language == "en":
        assert not glosses  # the English message needs no gloss
    else:
        messages = index.count("pitfalls-error-message")
        assert glosses and all(re.search(r"[\u4e00-\u9fff]", _text(g)) for g in glosses)
        assert len(glosses) <= messages


def test_indexes_are_linked_from_the_home_page_and_the_navigation(page, site_url):
    for language in LANGUAGES:
        page.goto(f"{site_url}/{language}/index.html")
        for target in ("errors.html", "symptoms.html"):
            assert page.locator(f"article a[href='{target}']").count() > 0
            assert page.locator(f"nav a[href='{target}']").count() > 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_symptom_index_links_pages(page, site_url, language):
    page.goto(f"{site_url}/{language}/symptoms.html")
    sections = page.locator("section[id^='symptom-']:not([id^='symptom-group-'])")
    assert sections.count() >= 8
    for i in range(sections.count()):
        links = sections.nth(i).locator(f"a[href^='{A}']")
        assert links.count() > 0


@pytest.mark.parametrize("language", LANGUAGES)
def test_symptom_index_is_grouped_as_readers_think(page, site_url, language):
    """Every symptom sits under one of the catalog's groups (the loss, memory, speed …), whose
    headings are in the page's language."""
    page.goto(f"{site_url}/{language}/symptoms.html")
    groups = page.locator("section[id^='symptom-group-']")
    assert groups.count() >= 6
    nested = page.locator("section[id^='symptom-group-'] section[id^='symptom-']").count()
    symptoms = "section[id^='symptom-']:not([id^='symptom-group-']):not(#symptom-index)"
    assert nested == page.locator(symptoms).count()
    headings = groups.locator(":scope > h2").all_inner_texts()
    assert len(headings) == groups.count()
    if language == "zh_CN":
        assert all(re.search(r"[\u4e00-\u9fff]", heading) for heading in headings), headings


@pytest.mark.parametrize("language", LANGUAGES)
def test_see_also_links_back(page, site_url, language):
    page.goto(f"{site_url}/{language}/{A}autograd/plot_retain_graph.html")
    box = page.locator(".pitfalls-see-also")
    assert box.count() == 1
    assert box.locator("a[href^='plot_optimizer_step_between_backwards.html']").count() == 1
    page.goto(f"{site_url}/{language}/{A}devices/plot_item_and_tolist.html")
    # item-and-tolist does not declare retain-graph: the link back is generated
    assert page.locator(".pitfalls-see-also a[href^='../autograd/plot_retain_graph.html']").count()
