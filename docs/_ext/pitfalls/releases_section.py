"""The pages' behaviour across PyTorch releases, from ``docs/release_recordings`` (Sphinx side).

``nox -s releases`` (:mod:`tools.releases`) runs every example on each release of
:data:`releases.RELEASES` and writes one file per page (``<slug>.json``: release -> entry) and
the runs' provenance (``_runs.json``). This extension shows them:

- on each example page, a last section "Across releases": release → same output as the reference
  release / output differs (the lines) / stops with an error (the error) / not recorded yet, with
  the date the page was recorded;
- on the changes page, the ``pitfalls-release-matrix`` directive: pages × releases.

The labels are msgids listed in ``_templates/release-strings.html``, so ``nox -s i18n`` puts them
into ``locale/zh_CN/LC_MESSAGES/sphinx.po`` and the Chinese build shows them translated; the
outputs and errors are PyTorch's and stay as printed.
"""

from __future__ import annotations

import re

from tools import releases

from .common import gallery_footer, gallery_slug, ref
from .tables import table, untranslatable

SECTION_ID = "across-releases"
FULL_WIDTH = ("：", "，", "。", "；")


def outcome(page: dict | None) -> str:
    """``"same"``, ``"differs"``, ``"fails"`` or ``"missing"`` (not recorded yet) for one page
    on one release."""
    if page is None:
        return "missing"
    if page["status"] != "ran":
        return "fails"
    return "differs" if page.get("differs") else "same"


#: The labels, in English: each is a msgid of the "sphinx" catalog (see the module docstring).
LABELS = {
    "title": "Across releases",
    "intro": (
        "This page's example, run on the CPU under each PyTorch release in a fresh environment "
        "(nox -s releases) and compared with PyTorch {reference}, the release this site is "
        "built with. Lines tagged [measured] and line numbers inside PyTorch are not compared. "
        "PyTorch {reference} is the CPU-only wheel; the other releases are the builds the "
        "Python Package Index serves (with CUDA, +cuNNN), run without a GPU."
    ),
    "explained": "Explained in the section:",
    "release": "PyTorch",
    "recorded": "Recorded",
    "result": "Result",
    "reference": "the reference: the outputs shown on this page",
    "same": "same output as PyTorch {reference}",
    "differs": "output differs from PyTorch {reference} (- {reference}, + this release):",
    "fails": "stops with an error:",
    "missing": "not recorded yet",
    "same_short": "same",
    "differs_short": "differs",
    "fails_short": "fails",
    "page": "Page",
    "matrix": (
        "Recorded with nox -s releases on {machine}; compared with PyTorch {reference}. "
        "Recorded: {dates}."
    ),
}


def _labels_english() -> list[str]:
    return list(LABELS.values())


def _labels() -> dict[str, str]:
    from sphinx.locale import _

    return {name: _(text) for name, text in LABELS.items()}


def changes_of(doctree) -> dict[str, tuple[str, str]]:
    """The page's "Changed in PyTorch X.Y" sections: ``"X.Y"`` -> (section id, title as shown).

    The title is the one the page shows (translated on a Chinese page); the release is read from
    the section's names, which keep the English source title.
    """
    from docutils import nodes

    found = {}
    for section in doctree.findall(nodes.section):
        for name in section.get("names", []) + section.get("ids", []):
            match = CHANGED_IN.match(name)
            if match and section.get("ids"):
                found.setdefault(
                    match[1].replace("-", "."), (section["ids"][0], section[0].astext())
                )
    return found


CHANGED_IN = re.compile(r"changed[ -]in[ -]pytorch[ -](\d+[.-]\d+)", re.I)


def explaining(label: str, changes: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """The sections of ``changes`` about a change between release ``label`` and the reference."""
    here, reference = releases.release_key(label), releases.release_key(releases.REFERENCE)
    low, high = min(here, reference), max(here, reference)
    return [
        changes[version]
        for version in sorted(changes, key=releases.release_key)
        if low < releases.release_key(version) <= high
    ]


def recorded_on(label: str, entry: dict | None, runs: dict[str, dict]) -> tuple[str, str]:
    """(the torch version, the date) of one page's recording on release ``label``: the run's
    version (the requirement's when the release has no run yet) and the page's own date (of its
    re-run, when it was re-run alone; none when it is not recorded)."""
    run = runs.get(label)
    version = run["torch"] if run else releases.RELEASES[label][0].split("==")[-1]
    if entry is None:
        return version, ""
    return version, entry.get("rerun", {}).get("date") or (run or {}).get("date", "")


def page_section(entries: dict[str, dict], runs: dict[str, dict], changes=None):
    """The "Across releases" section of one page (a docutils section): a row per listed release.

    ``entries``: the page's recordings, release -> entry (``releases.load_page``); ``runs``: the
    runs' provenance (``releases.runs``). ``changes`` (from :func:`changes_of`): where a release
    differs or fails, the cell links the page's "Changed in PyTorch X.Y" sections that fall
    between that release and the reference.
    """
    from docutils import nodes

    labels = _labels()
    reference = releases.REFERENCE
    section = nodes.section(ids=[SECTION_ID], names=[SECTION_ID], classes=["pitfalls-releases"])
    section += nodes.title(labels["title"], labels["title"])
    intro = labels["intro"].format(reference=reference)
    section += nodes.paragraph(intro, intro)
    rows = []
    for label in sorted(releases.RELEASES, key=releases.release_key):
        page = entries.get(label)
        kind = outcome(page)
        release, date = recorded_on(label, page, runs)
        if label == reference and kind == "same":
            cell = [nodes.paragraph("", labels["reference"])]
        else:
            text = labels[kind].format(reference=reference)
            cell = [nodes.paragraph(text, text, classes=[f"pitfalls-release-{kind}"])]
            detail = (page or {}).get("error") if kind == "fails" else None
            if kind == "differs":
                detail = "\n".join(page["differs"])
            if detail:
                cell.append(nodes.literal_block(detail, detail, language="none"))
            if kind in ("differs", "fails"):
                for refid, title in explaining(label, changes or {}):
                    link = nodes.reference("", title, internal=True, refid=refid)
                    # no space after a full-width colon (the Chinese label ends with one)
                    label_text = labels["explained"]
                    space = "" if label_text.endswith(FULL_WIDTH) else " "
                    paragraph = nodes.paragraph("", label_text + space)
                    paragraph += link
                    cell.append(paragraph)
        rows.append([release, date, cell])
    header = [labels["release"], labels["recorded"], labels["result"]]
    section += table((2, 2, 10), header, rows, ["pitfalls-releases-table"])
    return untranslatable(section)


def page_tables(app, doctree) -> None:
    """doctree-read: add the "Across releases" section at the end of each example page."""
    from docutils import nodes

    slug = gallery_slug(app.env.docname)
    if slug is None:
        return
    # Only files that exist are noted: Sphinx re-reads a page with a missing dependency, or one
    # that is a folder, on every build. A recording file that appears or goes is
    # recordings_changed's business.
    for path in (releases.recording_path(slug), releases.RUNS):
        if path.exists():
            app.env.note_dependency(str(path))
    app.env.note_dependency(releases.__file__)
    app.env.note_dependency(__file__)
    top = next(iter(doctree.findall(nodes.section)), None)
    if top is None:
        return
    section = page_section(releases.load_page(slug), releases.runs(), changes_of(doctree))
    # sphinx-gallery ends the page (inside its last section) with a target, the download links
    # (an "only" node whose id starts with sphx-glr-download) and its signature: the new section
    # goes before them, and they move after it.
    footer = gallery_footer(top)
    tail = []
    if footer is not None:
        parent = footer.parent
        start = parent.index(footer)
        if start > 0 and isinstance(parent[start - 1], nodes.target):
            start -= 1
        tail = parent.children[start:]
        del parent.children[start:]
    top += section
    for node in tail:
        top += node


def recording_files() -> list[str]:
    """The names of the files in docs/release_recordings."""
    return sorted(path.name for path in releases.RECORDINGS.glob("*.json"))


def recordings_changed(app, env, added, changed, removed):
    """env-get-outdated: when a recording file appeared or went since the last build, the pages
    whose file it is and the pages that show the release matrix (each existing file is a
    dependency of its page and of the matrix; a file that does not exist cannot be one)."""
    files = recording_files()
    before = getattr(env, "pitfalls_recording_files", None)
    env.pitfalls_recording_files = files
    if before is None or before == files:
        return []
    moved = set(files) ^ set(before)
    pages = [
        docname
        for docname in env.found_docs
        if (slug := gallery_slug(docname))
        and (releases.recording_path(slug).name in moved or releases.RUNS.name in moved)
    ]
    return sorted({*pages, *(getattr(env, "pitfalls_matrix_docs", set()) & env.found_docs)})


def matrix_directive():
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class Matrix(SphinxDirective):
        """``pitfalls-release-matrix``: every page × every release (same / differs / fails).

        A "differs" or "fails" cell links to the page's "Across releases" section.
        """

        def run(self):
            if not hasattr(self.env, "pitfalls_matrix_docs"):
                self.env.pitfalls_matrix_docs = set()
            self.env.pitfalls_matrix_docs.add(self.env.docname)  # see recordings_changed
            for path in releases.RECORDINGS.glob("*.json"):
                self.env.note_dependency(str(path))
            self.env.note_dependency(releases.__file__)
            self.env.note_dependency(__file__)
            labels = _labels()
            pages = releases.page_recordings()
            runs = releases.runs()
            order = sorted(releases.RELEASES, key=releases.release_key)
            slugs = sorted(releases.examples())
            docnames = {
                slug: f"auto_examples/{path.parent.name}/{path.stem}"
                for slug, path in releases.examples().items()
            }
            rows = []
            for slug in slugs:
                cells = [[nodes.paragraph("", "", ref(self.env.docname, slug))]]
                target = docnames.get(slug)
                for label in order:
                    kind = outcome(pages.get(slug, {}).get(label))
                    text = labels[f"{kind}_short" if kind != "missing" else "missing"]
                    paragraph = nodes.paragraph("", "", classes=[f"pitfalls-release-{kind}"])
                    if kind in ("differs", "fails") and target is not None:
                        # to the page's own table, which shows the lines or the error
                        uri = self.env.app.builder.get_relative_uri(self.env.docname, target)
                        paragraph += nodes.reference(
                            text, text, internal=True, refuri=f"{uri}#{SECTION_ID}"
                        )
                    else:
                        paragraph += nodes.Text(text)
                    cells.append([paragraph])
                rows.append(cells)
            header = [labels["page"], *order]
            matrix = table((6, *([2] * len(order))), header, rows, ["pitfalls-release-matrix"])
            dates = ", ".join(
                f"{runs[label]['torch']} {runs[label]['date']}" for label in order if label in runs
            )
            machines = sorted(
                {run["machine"] for run in runs.values()}
                | {
                    entry["rerun"]["machine"]
                    for entries in pages.values()
                    for entry in entries.values()
                    if "rerun" in entry
                }
            )
            text = labels["matrix"].format(
                reference=releases.REFERENCE, dates=dates, machine="; ".join(machines)
            )
            return [untranslatable(nodes.paragraph(text, text)), untranslatable(matrix)]

    return Matrix
