"""Figures of the gallery in the page's language.

The examples run once per two-language build, in the English build; sphinx-gallery saves their
figures then. :class:`FigureScraper` also keeps each figure itself (a pickle beside its image).
The Chinese build draws every figure again from it (:func:`render_figures`), with each text of the
figure (title, axis labels, legend, categorical ticks) replaced by its translation from
``docs/locale/zh_CN/figures.po`` and set in Noto Sans CJK SC (the ``mplfonts`` package of the docs
extra), and its pages show those images, with the translated title as alt text
(:func:`localize_figures`). A text of a figure without a translation fails the build;
``python -m tools.figures`` adds the new texts to the catalog.
"""

from __future__ import annotations

import html
import pickle
import re
import warnings
from pathlib import Path

from .common import DOCS, GALLERY_DIR, digest_of, language_of, stamp, up_to_date, write_if_changed

GALLERY = GALLERY_DIR
FIGURES = DOCS / "_build" / "figures"
FIGURE_CATALOG = DOCS / "locale" / "zh_CN" / "figures.po"
#: Latin text first (its glyphs and metrics stay those of the English figures), CJK after it.
CJK_FAMILY = ["DejaVu Sans", "Noto Sans CJK SC"]
#: Chinese characters need more pixels than Latin letters to stay legible once a figure is shrunk
#: to a phone's width (390 px): the Chinese figures' titles, labels and legends are 1.2 times
#: larger.
CJK_SCALE = 1.2


class FigureScraper:
    """sphinx-gallery's matplotlib scraper that also pickles every figure beside its image."""

    def __call__(self, block, block_vars, gallery_conf):
        import matplotlib.pyplot as plt
        from sphinx_gallery.scrapers import matplotlib_scraper

        kept = [pickle.dumps(plt.figure(number)) for number in plt.get_fignums()]
        rst = matplotlib_scraper(block, block_vars, gallery_conf)
        paths = block_vars["image_path_iterator"].paths[-len(kept) :] if kept else []
        for path, data in zip(paths, kept, strict=True):
            Path(path).with_suffix(".fig.pickle").write_bytes(data)
        return rst

    def __repr__(self) -> str:  # sphinx-gallery's cache key
        return "FigureScraper()"


def figure_texts(figure) -> list:
    """Every non-empty text object of a figure (titles, labels, legend entries, tick labels)."""
    from matplotlib.text import Text

    return [t for t in figure.findobj(Text) if t.get_text().strip()]


def translate_tick_labels(figure, translate) -> None:
    """Tick labels that are words (categories, fixed labels) are written at drawing time by the
    axis' formatter: wrap those formatters so that they write the translation."""
    from matplotlib.category import StrCategoryFormatter
    from matplotlib.ticker import FixedFormatter, FuncFormatter

    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            old = axis.get_major_formatter()
            if isinstance(old, StrCategoryFormatter | FixedFormatter):
                axis.set_major_formatter(FuncFormatter(lambda v, pos, f=old: translate(f(v, pos))))
        ax.tick_params(labelfontfamily=CJK_FAMILY)


def figure_catalog(path: Path = FIGURE_CATALOG) -> dict[str, str]:
    import polib

    return {e.msgid: e.msgstr for e in polib.pofile(str(path)).translated_entries()}


def cjk_font() -> Path:
    """Noto Sans CJK SC, as the ``mplfonts`` package ships it."""
    import importlib.util

    spec = importlib.util.find_spec("mplfonts")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the docs extra's mplfonts package (a CJK font) is not installed")
    return Path(spec.submodule_search_locations[0]) / "fonts" / "NotoSansCJKsc-Regular.otf"


def render_figures(language: str, table: dict[str, str]) -> dict[str, str]:
    """Draw every pickled figure with its texts translated; returns image name → alt text.

    Raises:
        KeyError: a text of a figure has no translation in ``table``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import font_manager

    font_manager.fontManager.addfont(str(cjk_font()))
    unkept = [
        image.relative_to(GALLERY).as_posix()
        for image in sorted(GALLERY.glob("*/images/sphx_glr_*_[0-9][0-9][0-9].png"))
        if not image.with_suffix(".fig.pickle").exists()
    ]
    if unkept:  # made before the figures were kept: run those examples again
        raise RuntimeError(
            f"figures without their pickle, so without a translated version: {unkept}; delete "
            "docs/auto_examples/<topic>/<example>.py.md5 of those pages and build English again"
        )
    alts = {}
    missing = []
    with matplotlib.rc_context({"font.family": CJK_FAMILY}):
        for stored in sorted(GALLERY.glob("*/images/*.fig.pickle")):
            figure = pickle.loads(stored.read_bytes())

            def translate(english: str, where: str = stored.name) -> str:
                if not re.search(r"[A-Za-z]", english):
                    return english  # numbers and symbols read the same in every language
                if english not in table:
                    missing.append(f"{where}: {english!r}")
                    return english
                return table[english]

            for text in figure_texts(figure):
                text.set_text(translate(text.get_text()))
                text.set_fontfamily(CJK_FAMILY)
                text.set_fontsize(text.get_fontsize() * CJK_SCALE)
            translate_tick_labels(figure, translate)
            titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
            name = stored.name.removesuffix(".fig.pickle") + ".png"
            target = FIGURES / language / stored.parent.parent.name / name
            save(figure, target)
            plt.close(figure)
            suptitle = figure._suptitle.get_text() if figure._suptitle else ""
            alts[name] = suptitle or " · ".join(titles)
            _thumbnail(target)
    if missing:
        raise KeyError(f"figure texts without a translation in {FIGURE_CATALOG}: {missing}")
    return alts


def _thumbnail(figure: Path) -> None:
    """The card of a page whose first figure is ``figure`` (a translated one), as sphinx-gallery
    makes it from the English figure."""
    import tempfile

    from sphinx_gallery.gen_rst import scale_image

    stem = figure.name.removeprefix("sphx_glr_").removesuffix(".png")
    if stem.endswith("_001"):
        thumb = figure.parent / "thumb" / f"sphx_glr_{stem.removesuffix('_001')}_thumb.png"
        with tempfile.TemporaryDirectory() as scratch:
            scaled = Path(scratch) / thumb.name
            scale_image(str(figure), str(scaled), 400, 280)
            write_if_changed(thumb, scaled.read_bytes())


def render_figures_of_build(app) -> None:
    """builder-inited: on a translated build, draw the translated figures; again only when what
    they are drawn from changed (the figures the examples made, their catalog, this code)."""
    import json

    language = language_of(app.config)
    if language == "en":
        return
    stored = sorted(GALLERY.glob("*/images/*.fig.pickle"))
    targets = [
        FIGURES / language / p.parent.parent.name / (p.name.removesuffix(".fig.pickle") + ".png")
        for p in stored
    ]
    alts = FIGURES / language / "alts.json"
    digest = digest_of([*stored, FIGURE_CATALOG, Path(__file__), cjk_font()], language)
    if up_to_date(f"figures-{language}", digest, [alts, *targets]):
        app.env.pitfalls_figure_alts = json.loads(alts.read_text(encoding="utf-8"))
        return
    app.env.pitfalls_figure_alts = render_figures(language, figure_catalog())
    alts.write_text(json.dumps(app.env.pitfalls_figure_alts, ensure_ascii=False, indent=1))
    stamp(f"figures-{language}", digest)


def localize_figures(app, doctree) -> None:
    """On a translated page, show the translated figures (image and alt text)."""
    from docutils import nodes
    from sphinx_gallery.directives import imgsgnode

    language = language_of(app.config)
    if language == "en":
        return
    alts = getattr(app.env, "pitfalls_figure_alts", None) or {}
    for node in doctree.findall(nodes.image):  # the gallery's cards
        uri = node.get("uri", "")
        localized = FIGURES / language / Path(uri).parents[2].name / "thumb" / Path(uri).name
        if "/images/thumb/" in uri and localized.exists():
            node["uri"] = "/" + localized.relative_to(DOCS).as_posix()
    for node in doctree.findall(imgsgnode):
        name = Path(node["uri"]).name
        localized = FIGURES / language / Path(node["uri"]).parent.parent.name / name
        if not localized.exists():
            continue
        uri = "/" + localized.relative_to(DOCS).as_posix()
        node["uri"] = uri
        node["srcset"] = uri
        node["alt"] = html.escape(alts.get(name) or node["alt"], quote=True)


def rerun_unkept(app) -> None:
    """Before the English build runs the examples: an example whose figure has no pickle (built
    before the figures were kept) runs again, so the Chinese build can translate its figure."""
    if language_of(app.config) != "en":
        return
    for image in GALLERY.glob("*/images/sphx_glr_*.png"):
        if image.with_suffix(".fig.pickle").exists():
            continue
        example = re.sub(r"_\d{3}$", "", image.stem.removeprefix("sphx_glr_")) + ".py.md5"
        (image.parent.parent / example).unlink(missing_ok=True)


def save(figure, target: Path) -> None:
    """Save a figure as PNG; a glyph missing from the fonts is an error; the file is rewritten
    only when its bytes change (``nox -s serve`` watches the source folder)."""
    import io

    data = io.BytesIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Glyph .* missing")
        figure.savefig(data, format="png", metadata={"Software": None})
    write_if_changed(target, data.getvalue())
