"""Finding the page: the error index, the symptom index and the "See also" boxes.

Everything they show comes from two sources:

* the pages' records in the catalog (:mod:`torch_pitfalls.catalog`, ``pages.toml``): related
  pages, the symptoms each page explains;
* the executed outputs of the pages: every line ``SomeError: message`` or ``SomeWarning: message``
  that a page printed (as :func:`torch_pitfalls.expect_raises` and
  :func:`torch_pitfalls.expect_warns` print them), collected from the doctrees at build time, so
  the error index can never drift from what the installed PyTorch prints.

The search (:mod:`.search`) ranks pages by the same printed messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from torch_pitfalls import catalog

from .common import gallery_footer, gallery_slug, language_of, ref

#: The catalog's file: a change to it re-reads every page.
CATALOG_FILE = Path(catalog.__file__).with_name("pages.toml")
ERROR_INDEX = "errors"
SYMPTOM_INDEX = "symptoms"

#: A message line of an output block: ``RuntimeError: ...``, ``torch.OutOfMemoryError: ...``.
#: A message's line: ``Class: message``, alone or after a label for an error that an output
#: puts before it (``child's error: torch.AcceleratorError: CUDA error: …``, ``last error line:``).
MESSAGE_LINE = re.compile(
    r"^(?:[\w' ]*\berror(?: line)?: +)?"
    r"((?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Warning|Exception)): (\S.*)$"
)
#: The project's own warnings (the detectors): not PyTorch's messages.
OWN_CLASSES = {"PitfallWarning"}
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


# -- Messages printed by the pages ----------------------------------------------------------------


@dataclass(frozen=True)
class Printed:
    """A PyTorch message printed on a page: its class, its first line, where it was printed."""

    kind: str
    message: str
    docname: str
    section: str  # the id of the section whose output printed it
    title: str  # that section's title, in the build's language


def message_lines(text: str) -> list[tuple[str, str]]:
    """``(class, first line)`` of each PyTorch error or warning message in an output's text.

    >>> message_lines("device: cpu\\nRuntimeError: boom (x)\\nPitfallWarning: TP001 ...")
    [('RuntimeError', 'boom (x)')]
    >>> message_lines("child's error: torch.AcceleratorError: CUDA error: device-side assert")
    [('torch.AcceleratorError', 'CUDA error: device-side assert')]
    """
    found = []
    for line in text.splitlines():
        match = MESSAGE_LINE.match(line.strip())
        if match and match[1].rsplit(".", 1)[-1] not in OWN_CLASSES:
            kind, message = match[1], match[2].rstrip()
            if not _not_pytorchs(kind, message):
                found.append((kind, message))
    return found


def _not_pytorchs(kind: str, message: str) -> bool:
    from torch_pitfalls import messages

    return messages.not_pytorchs(kind.rsplit(".", 1)[-1], message)


def declared_lines(text: str, patterns: list[str]) -> list[tuple[str, str]]:
    """``(class, line)`` of each later line of a message that one of ``patterns`` matches.

    PyTorch's longer messages go on over several lines, and readers paste the line that names
    their problem (``Unexpected key(s) in state_dict: …``), not the first one. A page declares
    the lines it explains in its record's messages; a line of its output that one of them
    matches is listed with the class of the message it belongs to (the last message line above).

    >>> output = "RuntimeError: Error(s) in loading state_dict for Net:\\n\\tUnexpected key(s) in x"
    >>> declared_lines(output, [r"Unexpected key\\(s\\)"])
    [('RuntimeError', 'Unexpected key(s) in x')]
    """
    found, kind = [], None
    for line in text.splitlines():
        match = MESSAGE_LINE.match(line.strip())
        if match:
            kind = match[1]
        elif kind and any(re.search(pattern, line) for pattern in patterns):
            found.append((kind, line.strip()))
    return found


def log_lines(text: str, declared: list[dict]) -> list[tuple[str, str]]:
    """``(source, line)`` of each line of an output that one of the page's declared log lines
    (``log_lines`` of its record: a log warning, a launcher's error) matches, from where it
    matches.

    >>> output = "W1204 x.py:1] torch._dynamo hit config.recompile_limit (8)\\nok"
    >>> log_lines(output, [{"source": "torch._dynamo", "pattern": "torch._dynamo hit config"}])
    [('torch._dynamo', 'torch._dynamo hit config.recompile_limit (8)')]
    """
    found = []
    for line in text.splitlines():
        for entry in declared:
            match = re.search(entry["pattern"], line)
            if match:
                found.append((entry["source"], line[match.start() :].strip()))
                break
    return found


def log_sources() -> set[str]:
    """The ``source`` of every declared log line: the error index's headings that are no
    class (their lines are listed as printed, without a class before them)."""
    return {line["source"] for page in catalog.pages() for line in page.log_lines}


def printed_messages(doctree, docname: str) -> list[Printed]:
    """Every PyTorch message that the executed outputs of a page print, with its section (and
    the log lines its record declares)."""
    from docutils import nodes

    slug = gallery_slug(docname)
    patterns = [m["pattern"] for m in catalog.page(slug).messages] if slug else []
    declared = list(catalog.page(slug).log_lines) if slug else []
    found = []
    for block in doctree.findall(nodes.literal_block):
        if not _is_output(block):
            continue
        section = next((a for a in _ancestors(block) if isinstance(a, nodes.section)), None)
        section_id = section["ids"][0] if section is not None and section["ids"] else ""
        title = section[0].astext() if section is not None else ""
        text = block.astext()
        lines = message_lines(text) + declared_lines(text, patterns) + log_lines(text, declared)
        for kind, message in lines:
            printed = Printed(kind, message, docname, section_id, title)
            if printed not in found:
                found.append(printed)
    return found


def _ancestors(node):
    while node.parent is not None:
        node = node.parent
        yield node


def _is_output(block) -> bool:
    """A block of executed output: sphinx-gallery's, or a myst-nb cell output."""
    if "sphx-glr-script-out" in block["classes"] or "output" in block["classes"]:
        return True
    return any("cell_output" in a.get("classes", ()) for a in _ancestors(block))


def explaining_pages(printed: list[Printed]) -> dict[tuple[str, str], list[Printed]]:
    """Where each message is explained: ``(class, message)`` → the places that explain it.

    This is the one mapping step from a message to its pages: a message is explained by the
    section whose output printed it (each page prints the errors it explains). A registry of
    message patterns (``torch_pitfalls.messages``) can be cross-checked against it here.
    """
    places: dict[tuple[str, str], list[Printed]] = {}
    for item in printed:
        places.setdefault((item.kind, item.message), []).append(item)
    return places


def message_head(message: str) -> str:
    """The stable beginning of a message, without the values that change from call to call.

    >>> message_head("modified by an inplace operation: [torch.FloatTensor [3]], which is")
    'modified by an inplace operation'
    >>> message_head("Target 10 is out of bounds.")
    'Target N is out of bounds'
    >>> message_head('Unexpected key(s) in state_dict: "module.0.weight", "module.0.bias". ')
    'Unexpected key(s) in state_dict'
    """
    head = re.split(r'\. |: \[|: "|: GLOBAL | \(|\.$|:$', message, maxsplit=1)[0]
    return re.sub(r"\b\d+\b", "N", head).strip()


# -- Collecting, per document -----------------------------------------------------------------


def collect(app, doctree) -> None:
    env = app.env
    if not hasattr(env, "pitfalls_printed"):
        env.pitfalls_printed = {}
    env.pitfalls_printed[env.docname] = printed_messages(doctree, env.docname)


def purge(app, env, docname) -> None:
    getattr(env, "pitfalls_printed", {}).pop(docname, None)


def merge(app, env, docnames, other) -> None:
    if not hasattr(env, "pitfalls_printed"):
        env.pitfalls_printed = {}
    for docname in docnames:
        if docname in getattr(other, "pitfalls_printed", {}):
            env.pitfalls_printed[docname] = other.pitfalls_printed[docname]


def indexes_last(app, env, docnames) -> None:
    """Read the two index pages after every other page: they list what the others printed. They
    are read whenever another page is (or they changed themselves); a build that reads no page
    reads neither."""
    others = [name for name in docnames if name not in (ERROR_INDEX, SYMPTOM_INDEX)]
    for name in (ERROR_INDEX, SYMPTOM_INDEX):
        outdated = name in docnames
        if outdated:
            docnames.remove(name)
        if name in env.found_docs and (outdated or others):
            docnames.append(name)


def all_printed(env) -> list[Printed]:
    """What every page printed, in reading order of the site (gallery pages first)."""
    order = {page.docname: i for i, page in enumerate(catalog.pages())}
    printed = getattr(env, "pitfalls_printed", {})
    docnames = sorted(printed, key=lambda d: (order.get(d, len(order)), d))
    return [item for docname in docnames for item in printed[docname]]


def reread_on_catalog_change(app, env, added, changed, removed):
    """A changed catalog re-reads every page; a changed page re-reads the two indexes."""
    digest = CATALOG_FILE.read_bytes()
    if getattr(env, "pitfalls_finding", None) != digest:
        env.pitfalls_finding = digest
        return sorted(env.found_docs)
    if added or changed or removed:
        return [name for name in (ERROR_INDEX, SYMPTOM_INDEX) if name in env.found_docs]
    return []


# -- "See also" at the end of every gallery page -------------------------------------------------


def see_also(app, doctree) -> None:
    from docutils import nodes
    from sphinx import addnodes

    slug = gallery_slug(app.env.docname)
    if slug is None:
        return
    related = catalog.see_also().get(slug, [])
    if not related:
        return
    box = addnodes.seealso(classes=["pitfalls-see-also"])
    items = nodes.bullet_list()
    for other in related:
        items += nodes.list_item("", nodes.paragraph("", "", ref(app.env.docname, other)))
    box += items
    # Before sphinx-gallery's download buttons (the element its download label names).
    footer = gallery_footer(doctree)
    while footer is not None and not isinstance(footer.parent, nodes.section):
        footer = footer.parent
    if footer is not None:
        footer.parent.insert(footer.parent.index(footer), box)
    else:
        list(doctree.findall(nodes.section))[-1].append(box)


# -- The two index directives ---------------------------------------------------------------------

GLOSS_CLASS = "pitfalls-gloss"


def _gloss(directive, text: str):
    """A paragraph that translators gloss in Chinese; removed from English pages when written."""
    from docutils import nodes

    paragraph = nodes.paragraph(text, text, classes=[GLOSS_CLASS])
    paragraph.source, paragraph.line = directive.state_machine.get_source_and_line(directive.lineno)
    return paragraph


def _section(directive, section_id: str, title: str, translatable: bool = True):
    from docutils import nodes

    section = nodes.section(ids=[section_id], names=[section_id])
    heading = nodes.title(title, title)
    if translatable:
        heading.source, heading.line = directive.state_machine.get_source_and_line(directive.lineno)
    else:
        heading["translatable"] = False
    section += heading
    return section


def error_index_directive():
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class ErrorIndex(SphinxDirective):
        """``pitfalls-error-index``: every PyTorch message the pages print, by class.

        Each message is shown as PyTorch prints it (never translated), with a gloss of its stable
        beginning (:func:`message_head`, translated in this page's catalog) and links to the
        sections that printed and explain it.
        """

        def run(self):
            places = explaining_pages(all_printed(self.env))
            self.env.pitfalls_error_index_size = len(places)
            by_kind: dict[str, dict[str, list]] = {}
            for (kind, message), where in places.items():
                by_kind.setdefault(kind, {}).setdefault(message_head(message), []).append(
                    (message, where)
                )
            result = []
            for kind in sorted(
                by_kind, key=lambda k: (k.rsplit(".", 1)[-1].endswith("Warning"), k)
            ):
                section = _section(self, f"error-{kind.lower().replace('.', '-')}", kind, False)
                for head, messages in by_kind[kind].items():
                    entry = nodes.container(classes=["pitfalls-error-entry"])
                    for message, where in messages:
                        links = _message_entry(entry, kind, message)
                        for i, item in enumerate(where):
                            if i:
                                links += nodes.Text(" · ")
                            links += _section_ref(self.env.docname, item)
                    if kind not in log_sources():  # a log line has no gloss: no message
                        entry.insert(0, _gloss(self, head))
                    section += entry
                result.append(section)
            older = older_wordings({(k, message_head(m)) for k, m in places})
            for path in older_recording_files():
                self.env.note_dependency(str(path))
            if older:
                result.append(self.older_section(older))
            return result

        def older_section(self, older: dict) -> nodes.section:
            """The wordings that only other recorded releases print, each with those releases
            and a link to the page's Across releases section."""
            from .releases_section import SECTION_ID, _labels

            title = _labels()["title"]
            section = _section(self, "error-other-releases", "Wordings of other PyTorch releases")
            for (kind, message), pages in older.items():
                entry = nodes.container(classes=["pitfalls-error-entry"])
                links = _message_entry(entry, kind, message)
                for i, (slug, releases) in enumerate(pages.items()):
                    if i:
                        links += nodes.Text(" · ")
                    links += nodes.Text(f"PyTorch {release_span(releases)}: ")
                    docname = catalog.docname(slug)
                    item = Printed(kind, message, docname, SECTION_ID, title)
                    links += _section_ref(self.env.docname, item)
                section += entry
            return section

    return ErrorIndex


def _message_entry(entry, kind: str, message: str):
    """Add a message, as PyTorch prints it (never translated), and an empty paragraph for its
    links to ``entry``; return that paragraph."""
    from docutils import nodes

    text = message if kind in log_sources() else f"{kind}: {message}"
    literal = nodes.literal_block(text, text, classes=["pitfalls-error-message"])
    literal["language"] = "none"
    literal["translatable"] = False
    links = nodes.paragraph(classes=["pitfalls-error-pages"])
    links["translatable"] = False
    entry += literal
    entry += links
    return links


def older_recording_files() -> list[Path]:
    from tools import releases

    return [releases.recording_path(slug) for slug in catalog.slugs()]


def older_wordings(current: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, list[str]]]:
    """``(class, message)`` → page slug → the releases whose recorded run of the page printed it
    (``docs/release_recordings``), for the messages whose beginning (:func:`message_head`) no
    page of this build prints: the wordings of older (or newer) PyTorch releases."""
    from tools import releases

    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    for slug in catalog.slugs():
        for release, entry in releases.load_page(slug).items():
            for kind, message in message_lines("\n".join(entry.get("output") or ())):
                if (kind, message_head(message)) in current:
                    continue
                found.setdefault((kind, message), {}).setdefault(slug, []).append(release)
    return dict(sorted(found.items()))


def release_span(labels: list[str]) -> str:
    """Releases as runs of consecutive minor versions.

    >>> release_span(["2.4", "2.5", "2.6", "2.9"])
    '2.4–2.6, 2.9'
    """
    from tools import releases

    ordered = sorted(set(labels), key=releases.release_key)
    runs: list[list[tuple[int, ...]]] = []
    for key in (releases.release_key(label) for label in ordered):
        if runs and key[:-1] == runs[-1][-1][:-1] and key[-1] == runs[-1][-1][-1] + 1:
            runs[-1].append(key)
        else:
            runs.append([key])
    text = [".".join(map(str, run[0])) for run in runs]
    return ", ".join(
        first if len(run) == 1 else f"{first}–{'.'.join(map(str, run[-1]))}"
        for first, run in zip(text, runs, strict=True)
    )


def _section_ref(fromdoc: str, item: Printed):
    """A link to the section of a page, titled ``page › section`` when written."""
    from docutils import nodes

    ref = nodes.reference("", "", internal=True, classes=["pitfalls-printed-on"])
    ref["pitfalls-docname"] = item.docname
    ref["pitfalls-section"] = item.section
    ref += nodes.Text(item.title)
    return ref


def symptom_index_directive():
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class SymptomIndex(SphinxDirective):
        """``pitfalls-symptom-index``: one section per group of symptoms (the catalog's
        ``[[symptom_groups]]``, in its order: the loss, memory, speed …), holding one section per
        symptom of the group, which links its pages. Anchors: ``symptom-group-<id>`` and
        ``symptom-<id>``."""

        def run(self):
            self.env.note_dependency(str(CATALOG_FILE))
            result = []
            for group in catalog.symptom_groups():
                group_section = _section(self, f"symptom-group-{group.id}", group.title)
                for symptom in (s for s in catalog.symptoms() if s.group == group.id):
                    section = _section(self, f"symptom-{symptom.id}", symptom.title)
                    items = nodes.bullet_list()
                    for slug in symptom.pages:
                        items += nodes.list_item(
                            "", nodes.paragraph("", "", ref(self.env.docname, slug))
                        )
                    section += items
                    group_section += section
                result.append(group_section)
            return result

    return SymptomIndex


def resolve_index_links(app, doctree, docname) -> None:
    """Title the links of the error index (``page › section``); drop English glosses."""
    from docutils import nodes

    english = language_of(app.config) == "en" and app.builder.name != "gettext"
    for paragraph in list(doctree.findall(nodes.paragraph)):
        if GLOSS_CLASS in paragraph["classes"] and english:
            paragraph.parent.remove(paragraph)
    for link in doctree.findall(nodes.reference):
        target = link.get("pitfalls-docname")
        if not target:
            continue
        uri = app.builder.get_relative_uri(docname, target)
        link["refuri"] = uri + (f"#{link['pitfalls-section']}" if link["pitfalls-section"] else "")
        page = app.env.titles[target].astext() if target in app.env.titles else target
        section = link.astext()
        link.children = []
        link += nodes.Text(f"{page} › {section}" if section and section != page else page)


def registry_problems(places: dict[tuple[str, str], list[Printed]]) -> list[str]:
    """How the printed messages disagree with the guards' registry, :mod:`torch_pitfalls.messages`.

    The error index and the guards' notes must send a reader to the same page: each message a
    page prints (but those of :data:`torch_pitfalls.messages.NOT_PYTORCH` and
    :data:`torch_pitfalls.messages.GENERIC`) needs an entry of the
    registry, and the page of each entry must be among the pages that print a message it matches.

    >>> here = Printed("RuntimeError", "boom", "auto_examples/autograd/plot_retain_graph", "", "")
    >>> registry_problems({("RuntimeError", "boom"): [here]})
    ['RuntimeError: boom (printed on retain-graph) has no entry in torch_pitfalls.messages']
    """
    from torch_pitfalls import messages

    problems = []
    pages_of: dict[messages.Message, set[str]] = {}
    for (kind, message), where in places.items():
        slugs = {page_slug(item.docname) for item in where}
        kind_name = kind.rsplit(".", 1)[-1]
        if messages.not_pytorchs(kind_name, message) or messages.generic(kind_name, message):
            continue
        if kind in log_sources():  # declared by the page's record, not the guards' registry
            continue
        entry = messages.find(kind_name, message)
        if entry is None:
            problems.append(
                f"{kind}: {message} (printed on {', '.join(sorted(slugs))}) has no entry in "
                "torch_pitfalls.messages"
            )
        else:
            pages_of.setdefault(entry, set()).update(slugs)
    for entry, slugs in pages_of.items():
        if entry.slug not in slugs:
            problems.append(
                f"torch_pitfalls.messages sends {entry.category}: {entry.pattern} to {entry.slug}, "
                f"which prints no such message (printed on {', '.join(sorted(slugs))})"
            )
    return problems


def page_slug(docname: str) -> str:
    """The slug of a gallery page, from its docname; another document's name as it is.

    >>> page_slug("auto_examples/autograd/plot_retain_graph"), page_slug("detectors")
    ('retain-graph', 'detectors')
    """
    return catalog.slug_of(docname) or docname


def check(app, env) -> None:
    """Warn when the error index misses a message a page printed (e.g. a parallel read), or
    disagrees with the guards' registry of messages."""
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    places = explaining_pages(all_printed(env))
    listed = getattr(env, "pitfalls_error_index_size", None)
    if listed is not None and listed != len(places):
        logger.warning(
            f"the error index lists {listed} messages of {len(places)} printed",
            location=ERROR_INDEX,
        )
    for problem in registry_problems(places):
        logger.warning(problem, location=ERROR_INDEX)
