"""The answer first: a box at the top of each pitfall page for the reader who arrives from an
error or a symptom and wants the fix before the lesson.

The box holds the symptom, linked to the page's "The symptom" section: what PyTorch prints there
(the beginning of each message, at most two), else the first two symptoms the catalog gives the
page; the fix as the cheat sheet's own snippet for the page (``docs/cheatsheet.md``: one source,
which the test suite runs as a doctest); and a link down to the section that explains it ("The
fix", else "Takeaway").

The box is added to each gallery page as it is read, after Sphinx has translated the page; its
texts are translated from the catalogs they already live in: the cheat sheet's headings
(``cheatsheet.po``), the symptoms (``symptoms.po``) and the box's labels (``sphinx.po``, listed in
``_templates/answer-strings.html`` so that ``nox -s i18n`` extracts them).
"""

from __future__ import annotations

import functools
import gettext
import re
from dataclasses import dataclass
from pathlib import Path

from torch_pitfalls import catalog

from .common import DOCS, gallery_slug, language_of
from .indexes import message_head

CHEATSHEET = DOCS / "cheatsheet.md"
LOCALES = DOCS / "locale"

#: The labels, in English: msgids of the "sphinx" catalog (see the module docstring).
LABELS = {
    "title": "The short answer",
    "symptom": "Symptom:",
    "fix": "Fix:",
    "explained": "Why, and the whole fix:",
    "detectors": "Detectors:",
    "no detector": "none, because",
    "lint": "static check",
    "guard": "runtime check",
}
#: The sections the box links to, by their ids (the English titles of the catalog's arc).
SYMPTOM_SECTION = "the-symptom"
FIX_SECTIONS = ("the-fix", "takeaway")


@dataclass(frozen=True)
class Snippet:
    """The cheat sheet's entry of one page: its heading (MyST, English) and its doctest."""

    heading: str
    code: str


SNIPPET = re.compile(
    r"^### (?P<heading>.+?)\n\n```python\n(?P<code>.*?)\n```\n\n"
    r"Full page: \{ref\}`(?P<slug>[a-z0-9-]+)`",
    re.M | re.S,
)


def snippets(path: Path = CHEATSHEET) -> dict[str, Snippet]:
    """slug → the cheat sheet's snippet for that page.

    >>> snippets()["retain-graph"].heading
    'A second backward needs `retain_graph=True`'
    """
    text = path.read_text(encoding="utf-8")
    return {m["slug"]: Snippet(m["heading"], m["code"]) for m in SNIPPET.finditer(text)}


def _labels() -> dict[str, str]:
    from sphinx.locale import _

    return {name: _(text) for name, text in LABELS.items()}


def _labels_english() -> list[str]:
    return list(LABELS.values())


@functools.cache
def _translations(domain: str, language: str) -> gettext.NullTranslations:
    """A catalog's translations (the ``.mo`` Sphinx compiled from its ``.po`` for this build)."""
    if language == "en":
        return gettext.NullTranslations()
    return gettext.translation(domain, str(LOCALES), languages=[language], fallback=True)


def _inline(text: str):
    """MyST inline text → docutils nodes: ```code``` becomes a literal, the rest text."""
    from docutils import nodes

    parts = []
    for i, piece in enumerate(re.split(r"`([^`]+)`", text)):
        if piece:
            parts.append(nodes.literal(piece, piece) if i % 2 else nodes.Text(piece))
    return parts


def _link(anchor: str, text: str, *children):
    """A link to a section of this page."""
    from docutils import nodes

    return nodes.reference("", text, *children, internal=True, refuri=f"#{anchor}")


def _detectors(docname: str, slug: str, language: str, labels: dict, space: str):
    """The box's line on the detectors: the page's rules, each linked to its row of the Detectors
    page's rule table, else the catalog's reason why no rule can be precise (``no_detector``)."""
    from docutils import nodes

    from torch_pitfalls import rules

    from .common import ref
    from .tables import rule_label

    line = nodes.paragraph(classes=["pitfalls-answer-detectors"])
    line += nodes.strong("", labels["detectors"])
    line += nodes.Text(space)
    mine = [rule for rule in rules.RULES if rule.slug == slug]
    if mine:
        for i, rule in enumerate(mine):
            if i:
                line += nodes.Text("，" if language != "en" else ", ")
            link = ref(docname, rule_label(rule.id), rule.id)
            link.children = [nodes.literal(rule.id, rule.id)]
            line += link
            kind = labels["lint" if rule.kind == "lint" else "guard"]
            line += nodes.Text(f"（{kind}）" if language != "en" else f" ({kind})")
    else:
        record = catalog.page(slug)
        reason = record.no_detector_zh if language != "en" else record.no_detector
        line += nodes.emphasis("", labels["no detector"])
        # "暂无，因为" then a reason that starts with Latin letters or code: a space between them
        line += nodes.Text(" " if space or reason[:1].isascii() else "")
        line += _inline(reason)
    return line


def add_box(app, doctree) -> None:
    """doctree-read: put the box after the title of a gallery page."""
    from docutils import nodes

    slug = gallery_slug(app.env.docname)
    if not slug:
        return
    app.env.note_dependency(str(CHEATSHEET))
    language = language_of(app.config)
    snippet = snippets().get(slug)
    section = next(iter(doctree.findall(nodes.section)), None)
    if snippet is None or section is None:
        return
    ids = {i for node in doctree.findall(nodes.section) for i in node["ids"]}
    labels = _labels()
    # no-search: the box repeats the page's symptoms and the cheat sheet's snippet, which would
    # make every page match the generic words of its symptoms' titles
    box = nodes.container(classes=["pitfalls-answer", "no-search"])
    box += nodes.rubric("", labels["title"])
    chinese = language != "en"
    space, separator = ("", "；") if chinese else (" ", "; ")
    line = nodes.paragraph(classes=["pitfalls-answer-symptom"])
    line += nodes.strong("", labels["symptom"])
    line += nodes.Text(space)
    printed = [
        item
        for item in getattr(app.env, "pitfalls_printed", {}).get(app.env.docname, [])
        if item.section == SYMPTOM_SECTION
    ]
    if printed:  # what PyTorch says when it happens: the messages of "The symptom"
        for i, item in enumerate(printed[:2]):
            if i:
                line += nodes.Text(separator)
            text = f"{item.kind}: {message_head(item.message)}"
            line += _link(SYMPTOM_SECTION, "", nodes.literal(text, text))
    else:  # what the reader sees: the catalog's symptoms of the page
        titles = _translations("symptoms", language)
        mine = [s for s in catalog.symptoms() if slug in s.pages][:2]  # one line
        for i, symptom in enumerate(mine):
            if i:
                line += nodes.Text(separator)
            text = titles.gettext(symptom.title)
            line += _link(SYMPTOM_SECTION, text) if SYMPTOM_SECTION in ids else nodes.Text(text)
    if len(line) > 2:
        box += line
    fix = nodes.paragraph(classes=["pitfalls-answer-fix"])
    fix += nodes.strong("", labels["fix"])
    fix += nodes.Text(space)
    fix += _inline(_translations("cheatsheet", language).gettext(snippet.heading))
    box += fix
    code = nodes.literal_block(snippet.code, snippet.code, classes=["pitfalls-answer-code"])
    code["language"] = "pycon"
    box += code
    box += _detectors(app.env.docname, slug, language, labels, space)
    target = next((s for s in FIX_SECTIONS if s in ids), None)
    if target:
        down = nodes.paragraph(classes=["pitfalls-answer-more"])
        down += nodes.Text(labels["explained"] + space)
        title = next(
            node[0].astext() for node in doctree.findall(nodes.section) if target in node["ids"]
        )
        down += _link(target, f"{title} ↓")
        box += down
    for node in box.findall(nodes.Element):
        node["translatable"] = False
    position = 1 if section.children and isinstance(section[0], nodes.title) else 0
    section.insert(position, box)
