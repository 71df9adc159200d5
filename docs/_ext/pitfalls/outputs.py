"""Outputs: recordings in boxes of their own, the project's messages in the page's language, and
what the page templates need to know about them.

Also the per-language settings of the HTML build that follow from the site's address.
"""

from __future__ import annotations

from torch_pitfalls import catalog

from .common import language_of


def rework_outputs(app, doctree) -> None:
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

    language = language_of(app.config)
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


def recordings_in_context(app, pagename, templatename, context, doctree) -> None:
    """Tell the footer template which outputs of the page are recordings, not live."""
    context["pitfalls_recordings"] = page_recordings(doctree) if doctree is not None else []
    from sphinx.locale import _

    # Theme strings that the theme passes untranslated (html_theme_options, conf.py's copyright);
    # their msgids are listed in _templates/theme-strings.html so that the catalog holds them.
    context["theme_search_bar_text"] = _(context.get("theme_search_bar_text", ""))
    context["copyright"] = _(context.get("copyright", ""))


def base_url_per_language(app, config) -> None:
    """``html_baseurl`` from the one setting of the detectors' URLs, per language."""
    config.html_baseurl = f"{catalog.site_url()}/{config.language or 'en'}/"
