"""The catalog of pages (src/torch_pitfalls/catalog/pages.toml) against the site it describes: the
``examples/`` tree, the cheat sheet, the pages' labels; and its reader's validation."""

from __future__ import annotations

import pytest

from torch_pitfalls import catalog

from .conftest import EXAMPLES, ROOT


def test_the_catalog_lists_exactly_the_pages_of_the_examples_tree():
    assert catalog.problems_with_tree(EXAMPLES) == []
    folders = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    assert sorted(t.name for t in catalog.topics()) == folders


def test_every_page_is_in_the_cheat_sheet_and_carries_its_label():
    cheatsheet = (ROOT / "docs" / "cheatsheet.md").read_text(encoding="utf-8")
    for page in catalog.pages():
        assert f"{{ref}}`{page.slug}`" in cheatsheet, f"add {page.slug} to docs/cheatsheet.md"
        source = page.example(EXAMPLES).read_text(encoding="utf-8")
        assert f".. _{page.slug}:" in source, f"the page of {page.slug} needs the label {page.slug}"


def test_every_page_declares_what_readers_search_for():
    missing = [page.slug for page in catalog.pages() if not page.search]
    assert not missing, f"add search phrases to the records of {missing}"


def test_every_symptom_links_existing_pages():
    assert len(catalog.symptoms()) >= 8
    for symptom in catalog.symptoms():
        assert symptom.pages, f"no page names the symptom {symptom.id}"


def test_see_also_goes_both_ways():
    both = catalog.see_also()
    for page in catalog.pages():
        assert list(page.related) == both[page.slug][: len(page.related)]  # own order first
        for other in page.related:
            assert page.slug in both[other], f"{other} does not link back to {page.slug}"
    for slug, others in both.items():
        assert len(others) == len(set(others)) and slug not in others


def test_a_record_naming_no_page_is_refused():
    text = (
        '[[topics]]\nname = "t"\ncolour = "#000"\nsign = "x"\n'
        '[[symptom_groups]]\nid = "g"\ntitle = "G"\n'
        '[[symptoms]]\nid = "a"\ntitle = "A"\n'
        '[pages.one]\ntopic = "t"\nrelated = ["no-such-page", "one"]\nsymptoms = ["b"]\n'
        '[pages.Two]\ntopic = "u"\nserach = ["x"]\n'
        '[[pages.one.messages]]\nkind = "error"\ncategory = "E"\npattern = "("\n'
    )
    with pytest.raises(ValueError) as raised:
        catalog.parse(text, "test.toml")
    message = str(raised.value)
    for expected in (
        "related page 'no-such-page' is not a page",
        "[pages.one] is related to itself",
        "symptom 'b' is not a [[symptoms]]",
        "symptom 'a' has no group",
        "[pages.Two]: a slug is lower-case words",
        "[pages.Two]: topic 'u' is not a [[topics]]",
        "unknown field(s) ['serach']",
        "pattern '('",
    ):
        assert expected in message


def test_a_log_line_needs_a_source_and_a_valid_pattern():
    text = (
        '[[topics]]\nname = "t"\ncolour = "#000"\nsign = "x"\n'
        '[pages.one]\ntopic = "t"\n'
        '[[pages.one.log_lines]]\npattern = "hit config"\n'
        '[[pages.one.log_lines]]\nsource = "argparse"\npattern = "error: ("\n'
    )
    with pytest.raises(ValueError) as raised:
        catalog.parse(text, "test.toml")
    assert "[pages.one]: a log line needs a source and a pattern" in str(raised.value)
    assert "pattern 'error: ('" in str(raised.value)
    good = text.replace('pattern = "hit config"', 'source = "torch._dynamo"\npattern = "hit"')
    good = good.replace('"error: ("', '"error: unrecognized"')
    (page,) = catalog.parse(good).pages
    assert [line["source"] for line in page.log_lines] == ["torch._dynamo", "argparse"]


def test_a_page_not_in_the_catalog_gets_a_clear_error():
    with pytest.raises(KeyError, match=r"no page 'retain-graf' in the catalog.*retain-graph"):
        catalog.page("retain-graf")


def test_the_tree_check_names_what_differs(tmp_path):
    (tmp_path / "autograd").mkdir()
    (tmp_path / "autograd" / "plot_not_in_catalog.py").write_text("")
    problems = catalog.problems_with_tree(tmp_path)
    assert any("no [pages.not-in-catalog]" in p for p in problems)
    assert any("[pages.retain-graph]: no autograd/plot_retain_graph.py" in p for p in problems)
    assert any("topic 'devices': no folder" in p for p in problems)


def test_every_page_names_its_detectors_or_says_why_none_can_be_precise():
    # the box at the top of each page shows the page's rules, else the catalog's reason
    from torch_pitfalls import rules

    with_rules = {rule.slug for rule in rules.RULES}
    missing = [p.slug for p in catalog.pages() if p.slug not in with_rules and not p.no_detector]
    both = [p.slug for p in catalog.pages() if p.slug in with_rules and p.no_detector]
    assert not missing, f"no rule and no no_detector reason: {missing}"
    assert not both, f"rules, and a no_detector reason that says there are none: {both}"


def test_a_reason_in_one_language_only_is_refused():
    text = '[[topics]]\nname = "t"\ncolour = "#000"\nsign = "x"\n[pages.a-page]\ntopic = "t"\n'
    with pytest.raises(ValueError, match="no_detector needs both languages"):
        catalog.parse(text + 'no_detector = "the data decides"\n')
    assert catalog.parse(text + 'no_detector = "x"\nno_detector_zh = "由数据决定"\n').pages
