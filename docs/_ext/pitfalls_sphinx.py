"""Sphinx glue for torch-pitfalls: example order, example cache, offline inventories.

Loaded by ``docs/conf.py`` as a Sphinx extension; the string paths in ``sphinx_gallery_conf``
refer to the names defined here.
"""

from __future__ import annotations

import functools
import hashlib
import html
import os
import re
import zlib
from pathlib import Path

from torch_pitfalls import catalog

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
GALLERY_DIR = DOCS / "auto_examples"
STAMP = GALLERY_DIR / ".inputs.sha256"


class CatalogOrder:
    """sphinx-gallery ``within_subsection_order``: the catalog's reading order
    (:func:`torch_pitfalls.catalog.pages`), then by name for a file the catalog does not list."""

    def __init__(self, src_dir: str) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        order = catalog.slugs()
        slug = catalog.slug_of(filename)
        return (order.index(slug) if slug in order else len(order)), filename

    def __repr__(self) -> str:  # sphinx-gallery uses it in its cache key
        return f"CatalogOrder({catalog.slugs()!r})"


class TopicOrder:
    """sphinx-gallery ``subsection_order``: topic folders in the catalog's order."""

    def __call__(self, folder: str) -> tuple[int, str]:
        order = [topic.name for topic in catalog.topics()]
        name = Path(folder).name
        return (order.index(name) if name in order else len(order)), folder

    def __repr__(self) -> str:
        return f"TopicOrder({[topic.name for topic in catalog.topics()]!r})"


#: The instance sphinx-gallery's ``subsection_order`` names (it does not instantiate classes).
topic_order = TopicOrder()


def reset_example(gallery_conf, fname, when) -> None:
    """sphinx-gallery ``reset_modules``: name the example about to run.

    sphinx-gallery runs examples without ``__file__``; :func:`torch_pitfalls.cuda_section` reads
    the slug from ``TORCH_PITFALLS_EXAMPLE`` instead.
    """
    if fname is not None and when == "before":
        os.environ["TORCH_PITFALLS_EXAMPLE"] = catalog.slug_of(fname)


def inputs_digest() -> str:
    """Hash of what example outputs depend on besides the example file itself.

    The helper package's sources, the torch version and the device the examples run on.
    sphinx-gallery only re-runs an example whose own file changed; when this digest changes, every
    example is re-run.
    """
    import torch

    from torch_pitfalls import get_device

    digest = hashlib.sha256()
    for path in sorted((ROOT / "src" / "torch_pitfalls").rglob("*.py")):
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    digest.update(torch.__version__.encode())
    digest.update(str(get_device()).encode())
    return digest.hexdigest()


def invalidate_stale_examples() -> bool:
    """Delete sphinx-gallery's per-example checksums when :func:`inputs_digest` changed.

    Returns ``True`` when the examples will be re-run for that reason.
    """
    digest = inputs_digest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return False
    for md5 in GALLERY_DIR.rglob("*.md5"):
        md5.unlink()
    GALLERY_DIR.mkdir(parents=True, exist_ok=True)
    STAMP.write_text(digest)
    return True


#: Where PyTorch's documentation lives: the ``torch`` inventory's URIs are relative to it.
TORCH_DOCS = "https://docs.pytorch.org/docs/stable/"


def torch_uri_problem(name: str, role: str, uri: str) -> str | None:
    """What is wrong with the URI of a PyTorch object, or ``None`` when it has PyTorch's shape.

    PyTorch's docs give most objects a page of their own, ``generated/<name>.html#<name>``; a
    method documented on its class's page is ``generated/<class>.html#<class>.<method>``; objects
    documented with ``autoclass``/``autofunction`` on a topic page are ``<page>.html#<name>``; a
    module is ``<page>.html#module-<module>``. The anchor is always the documented name (which is
    ``name`` itself, or the name PyTorch documents an alias under); the one exception is an
    attribute PyTorch describes only in prose, linked to that section
    (``autograd.html#autograd-graph`` for ``Tensor.grad_fn``).

    >>> name, role = "torch.nn.Linear", "py:class"
    >>> torch_uri_problem(name, role, "generated/torch.nn.Linear.html#torch.nn.Linear")
    >>> torch_uri_problem(name, role, "generated/$.html#torch.nn.Linear")
    "placeholder '$' left in 'generated/$.html#torch.nn.Linear'"
    >>> print(torch_uri_problem(name, role, "generated/torch.nn.Conv2d.html#torch.nn.Linear"))
    anchor 'torch.nn.Linear' is not on the page of 'torch.nn.Conv2d' (generated/<name>.html#<name>)
    >>> print(torch_uri_problem("torch.nn", "py:module", "generated/torch.nn.html#torch.nn"))
    a module is '<page>.html#module-torch.nn', got 'generated/torch.nn.html#torch.nn'

    """
    if "$" in uri or "%24" in uri:
        return f"placeholder '$' left in {uri!r}"
    page, hash_, anchor = uri.partition("#")
    if not hash_ or not anchor or not page.endswith(".html") or "://" in page:
        return f"expected 'PAGE.html#ANCHOR' relative to {TORCH_DOCS}, got {uri!r}"
    if role == "py:module":
        if anchor != f"module-{name}" or page.startswith("generated/"):
            return f"a module is '<page>.html#module-{name}', got {uri!r}"
        return None
    if page.startswith("generated/"):
        documented = page.removeprefix("generated/").removesuffix(".html")
        if anchor != documented and not anchor.startswith(documented + "."):
            return (
                f"anchor {anchor!r} is not on the page of {documented!r} "
                "(generated/<name>.html#<name>)"
            )
        return None
    if "." not in anchor:  # a section: only for an attribute PyTorch describes in prose
        if role != "py:attribute":
            return f"{role} {name} needs an object anchor, got {uri!r}"
        return None
    if not anchor.startswith("torch."):
        return f"anchor {anchor!r} is not a PyTorch name"
    return None


def compile_inventory(source: Path, target: Path) -> Path:
    """Compile the plain-text inventory ``source`` into a Sphinx ``objects.inv`` at ``target``.

    ``source`` holds one object per line: ``NAME DOMAIN:ROLE URI``; blank lines and ``#`` comments
    are skipped. Every ``$`` in URI is replaced by NAME here (Sphinx itself expands a ``$`` only
    at the end of a URI, so ``generated/$.html#$`` would reach readers as it is).

    Raises:
        ValueError: a line does not have three fields, lists an object already listed, or has a
            URI that does not have the shape of PyTorch's docs (:func:`torch_uri_problem`).
    """
    lines, seen = [], set()
    for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ValueError(f"{source}:{number}: expected 'NAME DOMAIN:ROLE URI', got {line!r}")
        name, role, uri = fields
        if (name, role) in seen:
            raise ValueError(f"{source}:{number}: {name} ({role}) is listed twice")
        seen.add((name, role))
        uri = uri.replace("$", name)
        problem = torch_uri_problem(name, role, uri)
        if problem:
            raise ValueError(f"{source}:{number}: {name}: {problem}")
        lines.append(f"{name} {role} 1 {uri} -")
    header = (
        "# Sphinx inventory version 2\n"
        "# Project: PyTorch\n"
        "# Version: stable\n"
        "# The remainder of this file is compressed using zlib.\n"
    )
    body = zlib.compress(("\n".join(lines) + "\n").encode("utf-8"))
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists() or target.read_bytes() != header.encode() + body:
        target.write_bytes(header.encode() + body)
    return target


#: Pages whose executed cells report the environment: re-read when :func:`inputs_digest` changes.
ENVIRONMENT_PAGES = ["index"]


def _outdated_environment_pages(app, env, added, changed, removed):
    digest = inputs_digest()
    if getattr(env, "torch_pitfalls_digest", None) == digest:
        return []
    env.torch_pitfalls_digest = digest
    return [page for page in ENVIRONMENT_PAGES if page in env.found_docs]


# -- Chinese search -------------------------------------------------------------------------------
#
# Sphinx's search splits a query at spaces and punctuation only, and Chinese is written without
# spaces: a reader types 梯度累积, not 梯度 累积. So both sides use overlapping character bigrams of
# every run of CJK characters (plus jieba's words in the index): the query 梯度累积 becomes
# 梯度 / 度累 / 累积, and Sphinx returns the pages that contain all three, i.e. the phrase.

CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping two-character terms of every CJK run; a lone character stays as it is.

    >>> cjk_bigrams("用 PyTorch 做梯度累积")
    ['用', '做梯', '梯度', '度累', '累积']
    """
    terms = []
    for run in CJK_RUN.findall(text):
        terms.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return terms


#: ``splitQuery`` for the search page: the same bigrams as :func:`cjk_bigrams`, plus every
#: non-CJK word, as Sphinx's default splitter returns it.
CJK_SPLIT_QUERY_JS = r"""
var splitQuery = (query) => {
  const cjk = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/gu;
  const terms = [];
  for (const part of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    if (!part) continue;
    const runs = part.match(cjk) || [];
    for (const run of runs) {
      if (run.length === 1) terms.push(run);
      else for (let i = 0; i + 2 <= run.length; i++) terms.push(run.slice(i, i + 2));
    }
    for (const latin of part.split(cjk)) if (latin) terms.push(latin);
  }
  return terms;
};
"""


GLOSSARY = DOCS / "locale" / "zh_CN" / "glossary.csv"


def split_variants(cell: str) -> list[str]:
    """The variants of a glossary row's ``variants`` cell (``;``-separated)."""
    return [variant.strip() for variant in cell.split(";") if variant.strip()]


def search_variants(path: Path = GLOSSARY) -> dict[str, list[str]]:
    """Glossary term → the other ways readers write it (its ``variants`` column).

    The site writes each term one way (清空梯度); readers search with the variant they know
    (梯度清零). The Chinese search index gives a page that holds a term the variants too.
    """
    import csv

    with path.open(encoding="utf-8") as file:
        return {
            row["chinese"]: split_variants(row["variants"])
            for row in csv.DictReader(file)
            if split_variants(row.get("variants") or "")
        }


def variant_terms(text: str, variants: dict[str, list[str]]) -> list[str]:
    """The other forms of every glossary term that ``text`` holds in any of its forms, each once.

    >>> table = {"清空梯度": ["梯度清空", "梯度清零"], "优化器": ["优化算法"]}
    >>> variant_terms("用 zero_grad() 清空梯度", table)
    ['梯度清空', '梯度清零']
    >>> variant_terms("一个训练步与梯度清空", table)
    ['清空梯度', '梯度清零']
    """
    found: list[str] = []
    for term, others in variants.items():
        forms = [term, *others]
        if any(form in text for form in forms):
            found.extend(form for form in forms if form not in text and form not in found)
    return found


def _reindex_when_variants_change(app, env, added, changed, removed):
    """Re-read every page when the glossary changes: its variants are in every page's index."""
    digest = hashlib.sha256(GLOSSARY.read_bytes()).hexdigest()
    if getattr(env, "torch_pitfalls_glossary", None) == digest:
        return []
    env.torch_pitfalls_glossary = digest
    return sorted(env.found_docs)


def _search_chinese_class():
    from sphinx.search.zh import SearchChinese

    variants = search_variants()

    class SearchChineseBigrams(SearchChinese):
        """Sphinx's Chinese search (jieba words) plus CJK bigrams, in the index and the query;
        a text that holds a glossary term is indexed under the term's variants too."""

        js_splitter_code = CJK_SPLIT_QUERY_JS
        # Sphinx 9.0's Chinese search ships the English stemmer but writes
        # `window.Stemmer = ChineseStemmer`, which is undefined: search then fails in the browser.
        language_name = "English"

        def split(self, input: str) -> list[str]:
            terms = super().split(input) + cjk_bigrams(input)
            for variant in variant_terms(input, variants):
                terms += super().split(variant) + cjk_bigrams(variant)
            return terms

    return SearchChineseBigrams


# -- Gallery thumbnails in the page's language ---------------------------------------------------
#
# sphinx-gallery writes each thumbnail's tooltip (the page's first paragraph) and title as raw HTML,
# which gettext never sees. On a translated build, replace both with the translations the pages'
# own catalogs hold, reduced to plain text the way sphinx-gallery reduces the English.

THUMBNAIL = re.compile(
    r'(tooltip=")([^"]*)(")|(<div class="sphx-glr-thumbnail-title">)([^<]*)(</div>)'
)
# What sphinx-gallery's own clean-up misses when a role follows CJK text with no space.
LEFTOVER_ROLE = re.compile(r":(?:[\w-]+:)+`(~?)([^`<>]+?)(?:\s*<[^>]+>)?`")
LEFTOVER_LITERAL = re.compile(r"``([^`]+)``")


def _plain(text: str) -> str:
    from sphinx_gallery.gen_rst import _sanitize_rst

    text = LEFTOVER_ROLE.sub(lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], text)
    text = _sanitize_rst(text.replace("\\ ", ""))
    return " ".join(LEFTOVER_LITERAL.sub(r"\1", text).split())


def thumbnail_translations(messages: Path) -> dict[str, str]:
    """Plain English text → plain translated text, from the example pages' catalogs.

    Read once per build and per state of the catalogs (a gallery index page asks for it each time).
    """
    paths = sorted(messages.glob("auto_examples/*/plot_*.po"))
    return _thumbnail_table(tuple((str(path), path.stat().st_mtime_ns) for path in paths))


@functools.lru_cache(maxsize=2)
def _thumbnail_table(catalogs: tuple[tuple[str, int], ...]) -> dict[str, str]:
    import polib

    table = {}
    for path, _ in catalogs:
        for entry in polib.pofile(path).translated_entries():
            table[_plain(entry.msgid)] = _plain(entry.msgstr)
    return table


def translate_thumbnails(raw_html: str, table: dict[str, str]) -> str:
    """Replace the tooltips and titles of sphinx-gallery thumbnails found in ``table``."""

    def swap(match: re.Match) -> str:
        start, text, end = match.group(1, 2, 3) if match.group(1) else match.group(4, 5, 6)
        english = " ".join(html.unescape(text).split())
        return start + html.escape(table.get(english, english)) + end

    return THUMBNAIL.sub(swap, raw_html)


def _translate_gallery_thumbnails(app, doctree) -> None:
    from docutils import nodes

    docname = app.env.docname
    if not (app.config.language or "en").startswith("zh") or not docname.startswith("auto_"):
        return
    thumbnails = [raw for raw in doctree.findall(nodes.raw) if "sphx-glr-thumb" in raw.astext()]
    if not thumbnails:
        return
    table = thumbnail_translations(DOCS / "locale" / app.config.language / "LC_MESSAGES")
    for raw in thumbnails:
        raw.replace(raw[0], nodes.Text(translate_thumbnails(raw.astext(), table)))


# -- The terminology glossary, shown on the contributor guide ------------------------------------


GLOSSARY_COLUMNS = {
    "english": "English",
    "chinese": "中文",
    "note": "Note · 说明",
    "variants": "Also searched as · 常见写法",
    "avoid": "Avoid · 避免的写法",
}
"""The columns of glossary.csv, with the heading the contributor guide shows for each. ``variants``
are the forms readers search with (the search index adds them); ``avoid`` are forms no translation
may use (tests/test_translations.py fails on them). Both hold ``;``-separated forms, may be empty,
and ``avoid`` may be left out of a row altogether."""


def glossary_cells(row: dict[str, str | None]) -> list[str]:
    """The cells the contributor guide shows for a row of glossary.csv (read by ``csv.DictReader``).

    >>> glossary_cells({"english": "backbone", "chinese": "骨干网络", "note": "",
    ...                 "variants": "主干网络", "avoid": "主干网络"})
    ['backbone', '骨干网络', '', '主干网络', '主干网络']
    >>> glossary_cells({"english": "tensor", "chinese": "张量", "note": "", "variants": "",
    ...                 "avoid": None})
    ['tensor', '张量', '', '', '']
    """
    return [
        "、".join(split_variants(row.get(column) or ""))
        if column in ("variants", "avoid")
        else row.get(column) or ""
        for column in GLOSSARY_COLUMNS
    ]


def _glossary_directive():
    import csv

    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class Glossary(SphinxDirective):
        """``pitfalls-glossary``: the table of docs/locale/zh_CN/glossary.csv.

        Its cells are terms in both languages already, so they are marked untranslatable and stay
        out of the catalogs.
        """

        def run(self):
            path = DOCS / "locale" / "zh_CN" / "glossary.csv"
            self.env.note_dependency(str(path))
            with path.open(encoding="utf-8") as file:
                rows = list(csv.DictReader(file))
            # Out of the search index: readers searching a term want the pages that use it.
            table = nodes.table(classes=["pitfalls-glossary", "no-search"])
            group = nodes.tgroup(cols=len(GLOSSARY_COLUMNS))
            table += group
            group.extend(nodes.colspec(colwidth=width) for width in (3, 2, 6, 3, 3))

            def row(cells):
                line = nodes.row()
                for cell in cells:
                    paragraph = nodes.paragraph(text=cell)
                    paragraph["translatable"] = False
                    entry = nodes.entry()
                    entry += paragraph
                    line += entry
                return line

            group += nodes.thead("", row(GLOSSARY_COLUMNS.values()))
            group += nodes.tbody("", *(row(glossary_cells(cells)) for cells in rows))
            return [table]

    return Glossary


# -- The detectors' rule table, from the registry (src/torch_pitfalls/rules.py) -----------------

RULE_TABLE_HEADERS = {
    "en": ["Rule", "Kind", "Default", "What it catches", "Page"],
    "zh_CN": ["规则", "类型", "默认", "检测的问题", "页面"],
}
RULE_KINDS = {
    "en": {"guard": "runtime warning", "note": "note on an error", "lint": "static check"},
    "zh_CN": {"guard": "运行时警告", "note": "错误说明", "lint": "静态检查"},
}
RULE_DEFAULTS = {"en": ("on", "opt-in"), "zh_CN": ("开启", "需显式启用")}


def rule_label(rule_id: str) -> str:
    """The reference label of a rule's row in the rule table: ``rule-tp001``."""
    return f"rule-{rule_id.lower()}"


def _rules_directive():
    from docutils import nodes
    from sphinx import addnodes
    from sphinx.util.docutils import SphinxDirective

    class Rules(SphinxDirective):
        """``pitfalls-rules``: every rule of the registry, one row each, in the build's language.

        The titles come from the registry in both languages, so the cells stay out of the
        catalogs; each row is a reference target (``{ref}`TP001 <rule-tp001>```), and its page
        column links to the pitfall's page.
        """

        def run(self):
            from torch_pitfalls import rules

            self.env.note_dependency(rules.__file__)
            language = "zh_CN" if (self.config.language or "en").startswith("zh") else "en"
            std = self.env.get_domain("std")
            table = nodes.table(classes=["pitfalls-rules"])
            group = nodes.tgroup(cols=5)
            table += group
            group.extend(nodes.colspec(colwidth=width) for width in (2, 3, 2, 8, 5))

            def entry(*children):
                paragraph = nodes.paragraph("", "", *children)
                paragraph["translatable"] = False  # the registry has both languages
                cell = nodes.entry()
                cell += paragraph
                return cell

            head = nodes.row()
            head.extend(entry(nodes.Text(text)) for text in RULE_TABLE_HEADERS[language])
            body = nodes.tbody()
            for rule in rules.RULES:
                label = rule_label(rule.id)
                std.note_hyperlink_target(label, self.env.docname, label, rule.id)
                row = nodes.row(ids=[label])
                row += entry(nodes.literal(text=rule.id))
                row += entry(nodes.Text(RULE_KINDS[language][rule.kind]))
                row += entry(nodes.Text(RULE_DEFAULTS[language][0 if rule.default else 1]))
                row += entry(nodes.Text(rule.title[language]))
                page = addnodes.pending_xref(
                    "", refdomain="std", reftype="ref", reftarget=rule.slug,
                    refexplicit=False, refwarn=True, refdoc=self.env.docname,
                )  # fmt: skip
                page += nodes.inline(text=rule.slug)
                row += entry(page)
                body += row
            group += nodes.thead("", head)
            group += body
            return [table]

    return Rules


# -- Outputs: recordings in boxes of their own; the project's messages in the page's language -----


def page_language(config) -> str:
    """The site language of a build: ``"en"`` or ``"zh_CN"``."""
    return catalog.resolve_language(config.language or "en")


def _rework_outputs(app, doctree) -> None:
    """Rework every printed output of a page (sphinx-gallery's and myst-nb's literal blocks).

    A recorded CUDA section (:func:`torch_pitfalls.recording.split_recordings`) leaves the block
    it was printed in and becomes a box of its own (``pitfalls-recording``) with a label in the
    page's language, so that a recording never shares a block with live output; a section that
    did not run becomes a labelled box too. On a Chinese page the detectors' messages and the tags
    of measured lines are rewritten in Chinese (:func:`torch_pitfalls.rules.localize`,
    :func:`torch_pitfalls.measure.localize`).
    """
    from docutils import nodes
    from sphinx.util import logging

    from torch_pitfalls import measure, recording, rules

    language = page_language(app.config)
    for block in list(doctree.findall(nodes.literal_block)):
        original = block.astext()
        text = measure.localize(rules.localize(original, language), language)
        try:
            parts = recording.split_recordings(text)
        except ValueError as err:
            logging.getLogger(__name__).warning(f"{err}", location=block)
            continue
        if text == original and [kind for kind, _, _ in parts] in ([], ["live"]):
            continue
        replacement = []
        for kind, part, header in parts:
            if kind == "live":
                replacement.append(_same_block(block, part))
                continue
            box = nodes.container(classes=["pitfalls-recording", f"pitfalls-{kind}"])
            if kind == "recorded":
                label = recording.recording_label(header, language)
                for key, value in header.items():
                    box[f"recorded-{key}"] = value
            else:
                label = recording.NOT_RUN_LABELS[language]
            box += nodes.paragraph(label, label, classes=["pitfalls-recording-label"])
            if kind == "recorded":
                box += _same_block(block, part)
            replacement.append(box)
        classes = replacement[0]["classes"][:] if replacement else []
        block.replace_self(replacement)
        if replacement:  # replace_self gives the first new node the old block's classes
            replacement[0]["classes"] = classes


def _same_block(block, text: str):
    """A copy of the literal block ``block`` holding ``text``."""
    from docutils import nodes

    copy = block.copy()
    copy += nodes.Text(text)
    copy.rawsource = text
    return copy


def page_recordings(doctree) -> list[dict[str, str]]:
    """The distinct recordings shown on a page, as their headers (``gpu``, ``torch``, ``date``…)."""
    from docutils import nodes

    found = []
    for box in doctree.findall(nodes.container):
        if "pitfalls-recorded" in box["classes"]:
            header = {
                key.removeprefix("recorded-"): value
                for key, value in box.attributes.items()
                if key.startswith("recorded-")
            }
            if header not in found:
                found.append(header)
    return found


def _recordings_in_context(app, pagename, templatename, context, doctree) -> None:
    """Tell the footer template which outputs of the page are recordings, not live."""
    context["pitfalls_recordings"] = page_recordings(doctree) if doctree is not None else []
    from sphinx.locale import _

    # Theme strings that the theme passes untranslated (html_theme_options, conf.py's copyright);
    # their msgids are listed in _templates/theme-strings.html so that the catalog holds them.
    context["theme_search_bar_text"] = _(context.get("theme_search_bar_text", ""))
    context["copyright"] = _(context.get("copyright", ""))


def _base_url_per_language(app, config) -> None:
    """``html_baseurl`` from the one setting of the detectors' URLs, per language."""
    config.html_baseurl = f"{catalog.site_url()}/{config.language or 'en'}/"


def _junit_per_language(app, config) -> None:
    """One sphinx-gallery junit report per language: docs/_build/junit/sphinx-gallery-<lang>.xml."""
    language = config.language or "en"
    config.sphinx_gallery_conf["junit"] = f"../../junit/sphinx-gallery-{language}.xml"


def setup(app):
    # The first build of a `nox -s docs` run (English) finds the stamp stale and re-runs the
    # examples; the second (Chinese) finds it current and reuses their outputs.
    invalidate_stale_examples()
    app.connect("env-get-outdated", _outdated_environment_pages)
    app.connect("env-get-outdated", _reindex_when_variants_change)
    app.connect("config-inited", _junit_per_language)
    app.add_search_language(_search_chinese_class())
    app.connect("doctree-read", _translate_gallery_thumbnails)
    app.add_directive("pitfalls-glossary", _glossary_directive())
    app.add_directive("pitfalls-rules", _rules_directive())
    app.connect("config-inited", _base_url_per_language)
    app.connect("doctree-read", _rework_outputs)
    app.connect("html-page-context", _recordings_in_context)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
