"""Chinese typography of the built pages, as a reader sees them: the text of the templates (header,
footer, search box), link text and cross-references included, which the catalog checks
(tests/test_translations.py) cannot see because a reference's text is filled in at build time.

Rules: a space between Chinese and Latin letters or digits; no space between two Chinese
characters (a stray space around a cross-reference's text, "见 检测工具"); no space next to
full-width punctuation. Code, outputs and English-only elements (``lang="en"``) are left out.
No browser is needed: the HTML files are read directly.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from .conftest import HTML, site_pages

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
FULL_WIDTH = "，。；：！？、（）《》「」『』“”‘’【】"
RULES = {
    "no space between Chinese and Latin letters or digits": re.compile(
        rf"[{CJK}][A-Za-z0-9]|[A-Za-z0-9][{CJK}]"
    ),
    "a space between two Chinese characters": re.compile(rf"[{CJK}] +[{CJK}]"),
    "a space next to full-width punctuation": re.compile(
        rf"[{FULL_WIDTH}] +[^\s—]|[^\s—] +[{FULL_WIDTH}]"
    ),
}
#: Elements whose text is not prose: code, outputs, scripts, maths.
SKIPPED_TAGS = {"pre", "script", "style", "svg", "math", "textarea", "template"}
SKIPPED_CLASSES = {"highlight", "sphx-glr-script-out", "math", "pitfalls-recording"}
#: Inline code reads as one Latin word.
CODE_TAGS = {"code", "kbd", "samp", "var", "tt"}
INLINE_TAGS = {"a", "span", "em", "strong", "b", "i", "abbr", "cite", "sub", "sup", "small"}
VOID_TAGS = {"br", "img", "input", "meta", "link", "hr", "wbr", "source", "col", "area", "base"}


class VisibleText(HTMLParser):
    """The prose of a page, one block (paragraph, list item, cell, heading …) per line."""

    skipped_classes = SKIPPED_CLASSES

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[tuple[str, bool]] = []  # (tag, text hidden inside)

    def _hidden(self) -> bool:
        return any(hidden for _, hidden in self.stack)

    def handle_starttag(self, tag, attrs):
        if tag in VOID_TAGS:
            if tag in ("br", "hr"):
                self.parts.append("\n")
            if tag == "input" and not self._hidden():
                placeholder = dict(attrs).get("placeholder")
                if placeholder:
                    self.parts.append(f"\n{placeholder}\n")
            return
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        language = (attributes.get("lang") or "zh").lower()
        hidden = (
            tag in SKIPPED_TAGS
            or bool(classes & self.skipped_classes)
            or not language.startswith("zh")
            or tag in CODE_TAGS
        )
        if tag in CODE_TAGS and not self._hidden():
            self.parts.append("X")
        if tag not in INLINE_TAGS and tag not in CODE_TAGS:
            self.parts.append("\n")
        self.stack.append((tag, hidden))

    def handle_endtag(self, tag):
        if tag in VOID_TAGS:
            return
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
        if tag not in INLINE_TAGS and tag not in CODE_TAGS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self._hidden():
            self.parts.append(data)

    def lines(self) -> list[str]:
        text = "".join(self.parts)
        return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def typography_problems(html: str) -> list[str]:
    """Each place in a page's prose that breaks a rule, with a little context.

    >>> html = '<p>见 <a href="x.html">检测工具</a>。由 Sphinx 9.0.4创建。</p>'
    >>> for problem in typography_problems(html):
    ...     print(problem)
    no space between Chinese and Latin letters or digits: …工具。由 Sphinx 9.0.4创建。
    a space between two Chinese characters: 见 检测工具。由 Sphinx 9.…
    """
    parser = VisibleText()
    parser.feed(html)
    problems = []
    for line in parser.lines():
        for name, pattern in RULES.items():
            for match in pattern.finditer(line):
                start, end = max(0, match.start() - 12), match.end() + 12
                context = (
                    ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")
                )
                problems.append(f"{name}: {context}")
    return problems


def test_the_rules_catch_what_they_name():
    (problem,) = typography_problems("<p>由 Sphinx 9.0.4创建。</p>")
    assert problem.startswith("no space between Chinese and Latin") and "9.0.4创建" in problem
    assert typography_problems('<p>（见 <a href="d.html"><span>检测工具</span></a>）</p>')
    assert typography_problems("<p>一个坑 ，两个坑</p>")
    assert not typography_problems("<p>（见<a>检测工具</a>）：调用 <code>x.grad</code> 之前</p>")
    assert not typography_problems("<pre>由 Sphinx 9.0.4创建</pre><p>标题 — torch-pitfalls</p>")
    assert not typography_problems('<a lang="en">English</a><p>梯度</p>')


class InterfaceText(VisibleText):
    """The text of the theme's templates only: header, footers, and the search box's placeholder.

    The previous/next links are left out: they show page titles, which the catalogs translate.
    """

    skipped_classes = SKIPPED_CLASSES | {"prev-next-footer"}

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # open template elements (header, footer)

    def handle_starttag(self, tag, attrs):
        if tag in ("header", "footer"):
            self.depth += 1
        if self.depth or tag == "input":
            super().handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if self.depth:
            super().handle_endtag(tag)
        if tag in ("header", "footer"):
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            super().handle_data(data)


#: Names that stay in Latin letters on a Chinese page.
NAMES = {"torch-pitfalls", "PyTorch", "Python", "Sphinx", "English", "Ctrl", "API", "NVIDIA"}
NAMES |= {"cpu", "cuda"}


def untranslated_interface(html: str) -> list[str]:
    """English words in a Chinese page's template text (names in :data:`NAMES` aside).

    >>> untranslated_interface('<header><a>More</a><input placeholder="搜索文档……"></header>')
    ['More']
    """
    parser = InterfaceText()
    parser.feed(html)
    text = re.sub(r"\S*\d\S*", " ", " ".join(parser.lines()))  # versions, GPU models, dates
    words = re.findall(r"[A-Za-z][A-Za-z_-]+", text)
    return [word for word in words if word not in NAMES]


ZH_PAGES = site_pages("zh_CN") if (HTML / "zh_CN").exists() else []


@pytest.mark.parametrize("path", ZH_PAGES)
def test_chinese_page_interface_is_translated(path):
    assert not untranslated_interface((HTML / "zh_CN" / path).read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", ZH_PAGES)
def test_chinese_page_typography(path):
    problems = typography_problems((HTML / "zh_CN" / path).read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


# -- reST and MyST markup that reached the reader as text, both languages ------------------------

#: Markup that Sphinx should have rendered: a literal, a role, a named link, bold, a MyST role.
#: It reaches readers raw when it is nested (a literal inside bold), misspelt, or broken by a
#: translation (a role glued to Chinese text with no space or escape).
RAW_MARKUP = re.compile(
    r"``[^`\n]+``"
    r"|(?<![\w`]):[a-z]+(?::[a-z-]+)?:`[^`\n]+`"
    r"|`[^`\n]+`__?(?!\w)"
    r"|\*\*[^*\s][^*\n]*\*\*"
    r"|\{(?:ref|doc|term|func|class|meth)\}`"
)


class AnyLanguageText(VisibleText):
    """The prose of a page in whichever language it is written (code and outputs left out)."""

    def handle_starttag(self, tag, attrs):
        attrs = [(name, value) for name, value in attrs if name != "lang"]
        super().handle_starttag(tag, attrs)


def raw_markup(html: str) -> list[str]:
    """Each piece of reST/MyST markup left in a page's rendered prose.

    >>> raw_markup("<p><strong>scaled (``/ k`` for equal parts)</strong></p>")
    ['``/ k``']
    >>> raw_markup("<p>见:ref:`retain-graph`</p><pre>``x``</pre><p><code>``y``</code></p>")
    [':ref:`retain-graph`']
    >>> raw_markup("<p>a **bold** word and a `link <https://x.org>`_</p>")
    ['**bold**', '`link <https://x.org>`_']
    """
    parser = AnyLanguageText()
    parser.feed(html)
    return [match.group(0) for line in parser.lines() for match in RAW_MARKUP.finditer(line)]


ALL_PAGES = [
    (language, path)
    for language in ("en", "zh_CN")
    if (HTML / language).exists()
    for path in site_pages(language)
]


@pytest.mark.parametrize(("language", "path"), ALL_PAGES)
def test_no_markup_left_raw(language, path):
    found = raw_markup((HTML / language / path).read_text(encoding="utf-8"))
    assert not found, f"{language}/{path}: markup shown as text: {found}"
