"""The downloads of every page, in both languages (docs/_ext/pitfalls/downloads.py), and the page
cards.

The downloads are run in a fresh environment from a served build by
``tests/browser/test_downloads.py``; here their text is checked without a build.
"""

from __future__ import annotations

import json
import re
import urllib.parse

import pytest
from pitfalls import cards, figures, repository_links
from pitfalls import downloads as take_home

from .conftest import ROOT

RAW_ROLE = re.compile(r":[a-z]+:`")
CJK = re.compile(r"[\u4e00-\u9fff]")


def notebook_text(book: dict, kind: str) -> str:
    return "\n".join("".join(c["source"]) for c in book["cells"] if c["cell_type"] == kind)


def prose(text: str) -> str:
    """The prose of a download's text: code shown in it (fenced or indented) left out."""
    text = re.sub(r"```python\n.*?```", "", text, flags=re.S)
    return "\n".join(line for line in text.splitlines() if not line.startswith(("#    ", "    ")))


@pytest.mark.parametrize("language", take_home.LANGUAGES)
def test_every_download_starts_with_the_install_line_and_has_no_raw_role(language):
    for path in take_home.examples():
        script = take_home.python_script(path, language)
        book = take_home.notebook(path, language)
        line = take_home.install_line(path.read_text(encoding="utf-8"))
        assert line.startswith(f"pip install {take_home.wheel_url()}")
        assert f"#     {line}\n" in script.split('"""', 1)[0], path.name
        first = book["cells"][0]
        assert first["cell_type"] == "code" and "".join(first["source"]).endswith(f"%{line}")
        comments = "\n".join(re.findall(r"^# %%\n((?:#.*\n)*)", script, flags=re.M))
        docstring = script.split('"""')[1]
        for text in (prose(comments), prose(docstring), prose(notebook_text(book, "markdown"))):
            assert not RAW_ROLE.search(text), (path.name, RAW_ROLE.search(text))
            assert "pip install -e" not in text
        compile(script, path.name, "exec")  # still a valid script


def test_the_chinese_downloads_carry_the_catalogs_prose():
    path = ROOT / "examples" / "autograd" / "plot_data_vs_detach.py"
    script = take_home.python_script(path, "zh_CN")
    prose = notebook_text(take_home.notebook(path, "zh_CN"), "markdown")
    assert "# `tensor.data` 与 `tensor.detach()`" in prose  # the title, from the catalog
    assert "## 症状" in prose and "# 症状\n# ----" in script
    # A reference to a page becomes a link to the Chinese page, under its Chinese title.
    assert (
        "[requires_grad 会随运算传播](https://torch-pitfalls.readthedocs.io/zh_CN/auto_examples/"
        "autograd/plot_requires_grad_propagation.html)"
    ) in prose
    # A PyTorch name links to PyTorch's docs.
    assert "[`tensor.detach()`](https://docs.pytorch.org/docs/stable/generated/" in prose
    # Code is never translated.
    assert 'print("c.zero_():", c.zero_())' in script
    english = notebook_text(take_home.notebook(path, "en"), "markdown")
    assert not CJK.search(english)


def test_every_chinese_download_is_mostly_chinese_prose():
    for path in take_home.examples():
        book = take_home.notebook(path, "zh_CN")
        cells = [c for c in book["cells"] if c["cell_type"] == "markdown"]
        chinese = [c for c in cells if CJK.search("".join(c["source"]))]
        assert len(chinese) == len(cells), (path.name, len(cells) - len(chinese))


def test_the_notebooks_are_json_a_reader_can_open(tmp_path):
    written = take_home.write_downloads("zh_CN", tmp_path)
    notebooks = [p for p in written if p.suffix == ".ipynb"]
    assert len(notebooks) == len(take_home.examples())
    book = json.loads(notebooks[0].read_text(encoding="utf-8"))
    assert book["nbformat"] == 4 and book["cells"]


def test_a_heading_paragraph_list_and_admonition_are_rendered():
    ctx = take_home.Context("en", {})
    text = (
        "Title\n=====\n\nSee :func:`torch.no_grad` and ``x``.\n\n"
        ".. admonition:: What you will learn\n\n   * one;\n   * two.\n"
    )
    assert take_home.rendered(text, ctx, True, {}) == (
        "# Title\n\nSee [`torch.no_grad()`](https://docs.pytorch.org/docs/stable/generated/"
        "torch.no_grad.html#torch.no_grad) and `x`.\n\n"
        "> **What you will learn**\n>\n> - one;\n> - two."
    )


def test_every_page_gets_a_card_of_its_own(tmp_path):
    words = {}
    for path in take_home.examples():
        words[path.stem] = tuple(cards.card_words(path))
        assert all(not RAW_ROLE.search(w) and "`" not in w for w in words[path.stem])
    assert words["plot_data_vs_detach"] == ("tensor.data", "tensor.detach()")
    card = tmp_path / "card.png"
    cards.draw_card(ROOT / "examples" / "autograd" / "plot_data_vs_detach.py", card)
    assert card.read_bytes().startswith(b"\x89PNG")


def test_no_repository_links_unless_a_repository_is_configured(monkeypatch):
    monkeypatch.delenv(repository_links.REPOSITORY_ENV, raising=False)
    page = "https://torch-pitfalls.readthedocs.io/en/index.html"
    assert repository_links.repository_links("index", "docs/index.md", "en", "Home", page) == []


def test_repository_links_have_the_shapes_github_and_colab_expect(monkeypatch):
    monkeypatch.setenv(repository_links.REPOSITORY_ENV, "https://github.com/someone/torch-pitfalls")
    page = (
        "https://torch-pitfalls.readthedocs.io/zh_CN/auto_examples/autograd/plot_retain_graph.html"
    )
    links = dict(
        repository_links.repository_links(
            "auto_examples/autograd/plot_retain_graph",
            "docs/auto_examples/autograd/plot_retain_graph.rst",
            "zh_CN",
            "对同一计算图反向传播两次",
            page,
        )
    )
    assert links["在 Colab 中打开"] == (
        "https://colab.research.google.com/github/someone/torch-pitfalls/blob/notebooks/"
        "zh_CN/auto_examples/autograd/plot_retain_graph.ipynb"
    )
    assert links["在 GitHub 上编辑"] == (
        "https://github.com/someone/torch-pitfalls/edit/main/examples/autograd/plot_retain_graph.py"
    )
    assert links["在 GitHub 上编辑译文"] == (
        "https://github.com/someone/torch-pitfalls/edit/main/docs/locale/zh_CN/LC_MESSAGES/"
        "auto_examples/autograd/plot_retain_graph.po"
    )
    report = links["报告问题"]
    assert report.startswith("https://github.com/someone/torch-pitfalls/issues/new?title=")
    assert "plot_retain_graph.html" in urllib.parse.unquote(report)
    # The Colab path is where the workflow publishes the downloads (docs/_build/downloads).
    workflow = (ROOT / ".github" / "workflows" / "docs.yml").read_text(encoding="utf-8")
    assert f"publish_branch: {repository_links.NOTEBOOKS_BRANCH}" in workflow
    assert "publish_dir: docs/_build/downloads" in workflow
    with pytest.raises(ValueError, match="OWNER/NAME"):
        repository_links.repository("https://gitlab.com/someone/torch-pitfalls")


def test_the_figure_catalog_is_complete_simplified_and_well_typeset():
    """docs/locale/zh_CN/figures.po: the checks of the pages' catalogs (tests/test_translations)."""
    import autocorrect_py
    import opencc
    import polib

    from .test_translations import prose as visible

    catalog = polib.pofile(str(figures.FIGURE_CATALOG))
    assert catalog.percent_translated() == 100 and not catalog.fuzzy_entries()
    to_simplified = opencc.OpenCC("t2s")
    problems = []
    for entry in catalog:
        for line in entry.msgstr.splitlines():
            if to_simplified.convert(line) != line:
                problems.append(f"Traditional characters in {line!r}")
            if autocorrect_py.format(visible(line)) != visible(line):
                problems.append(f"{line!r} should read {autocorrect_py.format(visible(line))!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("configured", [True, False])
def test_the_footer_shows_the_repository_links_only_when_configured(monkeypatch, configured):
    import jinja2

    if configured:
        monkeypatch.setenv(
            repository_links.REPOSITORY_ENV, "https://github.com/someone/torch-pitfalls"
        )
    else:
        monkeypatch.delenv(repository_links.REPOSITORY_ENV, raising=False)
    links = repository_links.repository_links(
        "auto_examples/autograd/plot_retain_graph",
        "docs/auto_examples/autograd/plot_retain_graph.rst",
        "en",
        "Backward twice through one graph",
        "https://torch-pitfalls.readthedocs.io/en/auto_examples/autograd/plot_retain_graph.html",
    )
    template = (ROOT / "docs" / "_templates" / "repository-links.html").read_text()
    html = jinja2.Environment(autoescape=True).from_string(template)
    rendered = html.render(pitfalls_repository_links=links)
    if configured:
        assert rendered.count("<a ") == 3  # Colab, edit, report
        assert 'href="https://colab.research.google.com/github/someone/torch-pitfalls/' in rendered
        assert ">Report a problem</a>" in rendered
    else:
        assert "<a " not in rendered and not rendered.strip()
