"""The Sphinx extension of torch-pitfalls: ``extensions = [..., "pitfalls"]`` in docs/conf.py,
after sphinx-gallery (whose ``builder-inited`` handler runs the examples before this one's).

One module per concern:

- :mod:`.common`: folders, the build's language, shared helpers;
- :mod:`.gallery`: example order, the example about to run, when examples run again,
  thumbnails in the page's language;
- :mod:`.outputs`: recordings in boxes of their own, messages in the page's language;
- :mod:`.figures` and :mod:`.cards`: translated figures, cards for pages without a figure;
- :mod:`.downloads`: the pages as scripts and notebooks in both languages, and the wheel;
- :mod:`.repository_links`: "Open in Colab", "Edit on GitHub", "Report a problem";
- :mod:`.indexes`: the error index, the symptom index, "See also";
- :mod:`.answer_first`: the box at the top of each page: symptom, fix, link down;
- :mod:`.search`: all of the search (index entries, scorer, languages);
- :mod:`.releases_section`: "Across releases" on each page and the release matrix;
- :mod:`.tables`: the one table builder; the glossary and rule tables;
- :mod:`.inventory`: the offline inventory of PyTorch's objects.

:func:`setup` registers every part, in the order below: handlers of one event at one priority run
in the order they are connected.
"""

from __future__ import annotations

from . import (
    answer_first,
    cards,
    downloads,
    figures,
    gallery,
    indexes,
    outputs,
    releases_section,
    repository_links,
    search,
    tables,
)


def setup(app):
    # -- Settings that follow from the build's language ---------------------------------------
    app.connect("config-inited", gallery.junit_per_language)
    app.connect("config-inited", outputs.base_url_per_language)
    app.connect("config-inited", search.configure_scorer)

    # -- What is read again ---------------------------------------------------------------------
    # The first build of a `nox -s docs` run (English) finds the examples' stamp stale when the
    # helpers, torch or the device changed, and re-runs the examples; the second (Chinese) finds it
    # current and reuses their outputs.
    gallery.invalidate_stale_examples()
    app.connect("env-get-outdated", gallery.outdated_environment_pages)
    app.connect("env-get-outdated", search.reindex_when_variants_change)
    app.connect("env-get-outdated", indexes.reread_on_catalog_change)
    app.connect("env-get-outdated", releases_section.recordings_changed)
    app.connect("env-before-read-docs", indexes.indexes_last)
    app.connect("env-before-read-docs", read_serially, priority=900)
    app.connect("env-purge-doc", indexes.purge)
    app.connect("env-merge-info", indexes.merge)

    # -- Before and after sphinx-gallery runs the examples (builder-inited) ---------------------
    app.connect("builder-inited", figures.rerun_unkept, priority=100)  # before sphinx-gallery
    app.connect("builder-inited", downloads.write_downloads_of_build)
    app.connect("builder-inited", cards.draw_cards)  # after: a page's first figure is its card
    app.connect("builder-inited", figures.render_figures_of_build)
    app.connect("builder-inited", gallery.freeze_heap, priority=900)  # after everything above

    # -- Each page as it is read (doctree-read) --------------------------------------------------
    # Priority 400, before Sphinx's own collectors (500): Sphinx copies the downloads the links
    # point to, and puts the "Across releases" section into the page's table of contents.
    app.connect("doctree-read", downloads.point_downloads, priority=400)
    app.connect("doctree-read", figures.localize_figures, priority=400)
    app.connect("doctree-read", releases_section.page_tables, priority=400)
    app.connect("doctree-read", gallery.translate_gallery_thumbnails)
    app.connect("doctree-read", outputs.rework_outputs)
    app.connect("doctree-read", indexes.collect)  # after rework_outputs: the final blocks
    app.connect("doctree-read", search.index_entries)
    app.connect("doctree-read", indexes.see_also)  # after page_tables: before the downloads
    app.connect("doctree-read", answer_first.add_box)

    # -- Directives --------------------------------------------------------------------------------
    app.add_directive("pitfalls-glossary", tables.glossary_directive())
    app.add_directive("pitfalls-rules", tables.rules_directive())
    app.add_directive("pitfalls-rule-modules", tables.rule_modules_directive())
    app.add_directive("pitfalls-error-index", indexes.error_index_directive())
    app.add_directive("pitfalls-symptom-index", indexes.symptom_index_directive())
    app.add_directive("pitfalls-release-matrix", releases_section.matrix_directive())

    # -- Once every page is read, and when writing ------------------------------------------------
    app.connect("env-updated", write_in_parallel, priority=100)
    app.connect("env-updated", search.write_scorer)
    app.connect("env-updated", gallery.freeze_heap, priority=900)
    app.connect("env-updated", search.keep_index_entries_in_search)
    app.connect("env-check-consistency", indexes.check)
    app.connect("doctree-resolved", indexes.resolve_index_links)
    app.connect("html-page-context", outputs.recordings_in_context)
    app.connect("html-page-context", repository_links.links_in_context)
    app.connect("build-finished", downloads.publish_wheel)

    # -- Search languages: English and Chinese, one registration -----------------------------------
    search.search_languages(app)

    # The error index lists what every page printed: the pages are read in one process; with
    # -j N they are written in parallel (read_serially).
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def read_serially(app, env, docnames) -> None:
    """Read the pages in one process even under ``sphinx-build -j N``, and write them with N.

    The error and symptom indexes are read last and list what every other page printed
    (:func:`indexes.indexes_last`); read in parallel, each would see only its own chunk. Sphinx
    decides to read in parallel right after this event, from ``app.parallel``; it is set to 1 for
    the reading and put back once the pages are read (:func:`write_in_parallel`), when Sphinx
    decides on the writing. ``parallel_read_safe`` is declared (a declared ``False`` is a
    warning, and an error under ``-W``) because this makes the read serial.
    """
    app._pitfalls_parallel = app.parallel
    app.parallel = 1


def write_in_parallel(app, env) -> None:
    """``env-updated``: give back the ``-j`` the build was started with, for the writing."""
    app.parallel = getattr(app, "_pitfalls_parallel", app.parallel)
