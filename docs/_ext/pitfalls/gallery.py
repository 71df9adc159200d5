"""The gallery: its order, the example about to run, when examples run again, and its
thumbnails in the page's language.

The string paths in ``sphinx_gallery_conf`` (docs/conf.py) name the objects defined here.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import html
import os
import re
import sys
from pathlib import Path

from torch_pitfalls import catalog

from .common import DOCS, GALLERY_DIR, ROOT, language_of

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
    """sphinx-gallery ``reset_modules``: name the example about to run, and take what the build
    holds out of the garbage collector's sight.

    sphinx-gallery runs examples without ``__file__``; :func:`torch_pitfalls.cuda_section` reads
    the slug from ``TORCH_PITFALLS_EXAMPLE`` instead.

    sphinx-gallery calls :func:`gc.collect` before each example. A full collection walks every
    object the build process holds (Sphinx, torch, TorchDynamo once a page imported it: several
    hundred thousand); done 82 times, that was a large share of the English build
    (``python -m cProfile`` on ``sphinx-build``). Here the previous example's garbage is collected
    once, and every object still alive is moved to the permanent generation (:func:`gc.freeze`),
    which later collections skip; the next example's objects are collected as before.

    Before that, the DataLoader workers the previous example left running are stopped
    (:func:`stop_persistent_workers`).
    """
    if fname is not None and when == "before":
        os.environ["TORCH_PITFALLS_EXAMPLE"] = catalog.slug_of(fname)
        stop_persistent_workers()
        gc.collect()
        gc.freeze()


def stop_persistent_workers() -> int:
    """Stop the workers of every multi-process DataLoader iterator not yet collected nor stopped;
    return how many iterators were stopped.

    An example's globals form a reference cycle (its functions refer to them), so what it leaves
    is freed by the garbage collector, not when the example ends. A ``persistent_workers=True``
    iterator keeps its workers until it is deleted; when the collector deletes it, CPython first
    runs the weak-reference finalizers of the objects it frees, among them the one that stops each
    index queue's feeder thread (``multiprocessing.queues.Queue._finalize_close``), and only then
    the iterator's ``__del__``, whose "stop" message (``None``) then never leaves its queue: every
    worker waits out ``join(timeout=MP_STATUS_CHECK_INTERVAL)``, 5 s, before it is terminated.
    Measured: a page with three such loaders (dataset-state-in-workers) took 30 s in
    :func:`gc.collect`, 0.3 s with this. The iterators are stopped here while their queues still
    work, as ``del loader`` would stop them. Only objects not frozen by :func:`gc.freeze` are
    searched, that is what the last example made; nothing is imported when torch is not.
    """
    dataloader = sys.modules.get("torch.utils.data.dataloader")
    if dataloader is None:
        return 0
    kind = dataloader._MultiProcessingDataLoaderIter
    # type(), not isinstance(): isinstance reads __class__, which some of torch's deprecated
    # module-level proxies answer with a FutureWarning
    iterators = [
        obj
        for obj in gc.get_objects()
        if issubclass(type(obj), kind) and not getattr(obj, "_shutdown", True)
    ]
    for iterator in iterators:
        iterator._shutdown_workers()  # the iterator's own clean-up, idempotent
    return len(iterators)


def freeze_heap(app, *args) -> None:
    """Take what the build holds out of the garbage collector's sight, once the examples have run
    (``builder-inited``) and once every page is read (``env-updated``).

    Collects, then moves every object still alive (torch, Sphinx, the environment: they live
    until the build ends) to the permanent generation (:func:`gc.freeze`), which collections
    skip; and collects less often (:func:`gc.set_threshold`: 50 000 allocations for the youngest
    generation instead of 700): reading and writing the pages creates millions of short-lived
    nodes. Measured with :data:`gc.callbacks` on a clean Chinese build of 100 pages: 12 771
    collections took 17.5 s of 39.4 s of CPU time; with both, 1 471 took 3.7 s of 30.5 s, for a
    peak memory of 0.8 GB. The examples run before, with the interpreter's defaults.
    """
    stop_persistent_workers()
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


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


#: Pages whose executed cells report the environment: re-read when :func:`inputs_digest` changes.
ENVIRONMENT_PAGES = ["index"]


def outdated_environment_pages(app, env, added, changed, removed):
    """env-get-outdated: the pages that report the environment, when :func:`inputs_digest`
    changed."""
    digest = inputs_digest()
    if getattr(env, "torch_pitfalls_digest", None) == digest:
        return []
    env.torch_pitfalls_digest = digest
    return [page for page in ENVIRONMENT_PAGES if page in env.found_docs]


def junit_per_language(app, config) -> None:
    """One sphinx-gallery junit report per language: docs/_build/junit/sphinx-gallery-<lang>.xml."""
    language = config.language or "en"
    config.sphinx_gallery_conf["junit"] = f"../../junit/sphinx-gallery-{language}.xml"


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


def translate_gallery_thumbnails(app, doctree) -> None:
    from docutils import nodes

    docname = app.env.docname
    if language_of(app.config) == "en" or not docname.startswith("auto_"):
        return
    thumbnails = [raw for raw in doctree.findall(nodes.raw) if "sphx-glr-thumb" in raw.astext()]
    if not thumbnails:
        return
    table = thumbnail_translations(DOCS / "locale" / app.config.language / "LC_MESSAGES")
    for raw in thumbnails:
        raw.replace(raw[0], nodes.Text(translate_thumbnails(raw.astext(), table)))
