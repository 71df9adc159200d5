"""Pictures of the gallery: figures in the page's language, and a card for every page.

Figures
    The examples run once per two-language build, in the English build; sphinx-gallery saves
    their figures then. :class:`FigureScraper` also keeps each figure itself (a pickle beside its
    image). The Chinese build draws every figure again from it (:func:`render_figures`), with each
    text of the figure (title, axis labels, legend, categorical ticks) replaced by its translation
    from ``docs/locale/zh_CN/figures.po`` and set in Noto Sans CJK SC (the ``mplfonts`` package
    of the docs extra), and its pages show those images, with the translated title as alt text
    (:func:`_localize_figures`). A text of a figure without a translation fails the build.

Cards
    A page without a figure would show sphinx-gallery's placeholder on the gallery's cards. Each
    gets a card of its own instead (:func:`draw_card`): the topic's colour and sign, and the code
    names the page is about (from its title, else its first paragraph), drawn with matplotlib at
    build time. Code names are the same in both languages, so one card serves both.
"""

from __future__ import annotations

import ast
import html
import pickle
import re
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
GALLERY = DOCS / "auto_examples"
FIGURES = DOCS / "_build" / "figures"
FIGURE_CATALOG = DOCS / "locale" / "zh_CN" / "figures.po"
#: Latin text first (its glyphs and metrics stay those of the English figures), CJK after it.
CJK_FAMILY = ["DejaVu Sans", "Noto Sans CJK SC"]
#: Chinese characters need more pixels than Latin letters to stay legible once a figure is shrunk
#: to a phone's width (390 px): the Chinese figures' titles, labels and legends are 1.2 times
#: larger.
CJK_SCALE = 1.2


# -- Figures ---------------------------------------------------------------------------------------


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


def all_texts(figure) -> list[str]:
    """Every text a reader sees on the drawn figure, tick labels included."""
    figure.draw_without_rendering()
    texts = [t.get_text() for t in figure_texts(figure)]
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            texts += [label.get_text() for label in axis.get_ticklabels()]
    return list(dict.fromkeys(t for t in texts if t.strip()))


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

    import take_home
    from sphinx_gallery.gen_rst import scale_image

    stem = figure.name.removeprefix("sphx_glr_").removesuffix(".png")
    if stem.endswith("_001"):
        thumb = figure.parent / "thumb" / f"sphx_glr_{stem.removesuffix('_001')}_thumb.png"
        with tempfile.TemporaryDirectory() as scratch:
            scaled = Path(scratch) / thumb.name
            scale_image(str(figure), str(scaled), 400, 280)
            take_home.write_if_changed(thumb, scaled.read_bytes())


def _render_figures(app) -> None:
    import take_home

    language = take_home.language_of(app.config)
    if language == "en":
        return
    app.env.pitfalls_figure_alts = render_figures(language, figure_catalog())


def _localize_figures(app, doctree) -> None:
    """On a translated page, show the translated figures (image and alt text)."""
    import take_home
    from docutils import nodes
    from sphinx_gallery.directives import imgsgnode

    language = take_home.language_of(app.config)
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


# -- Cards -----------------------------------------------------------------------------------------

LITERAL = re.compile(r"``(.+?)``|:[a-z]+:`~?([^`<]+?)(?:\s*<[^>]+>)?`")


def card_words(path: Path) -> list[str]:
    """The code names a page is about: the literals of its title, else of its first paragraph."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=True) or ""
    lines = [line for line in docstring.splitlines() if not line.startswith(".. _")]
    text = "\n".join(lines).strip()
    title, _, rest = text.partition("\n")
    intro = rest.split("\n\n", 2)[1] if rest.count("\n\n") >= 1 else rest
    for source in (title, intro):
        found = [a or b for a, b in LITERAL.findall(source)]
        if found:
            return list(dict.fromkeys(found))[:3]
    return [path.stem.removeprefix("plot_")]


def draw_card(path: Path, target: Path, size=(400, 280)) -> None:
    """A card for ``path`` (an example): topic colour and sign, and the page's code names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from torch_pitfalls import catalog

    topic = {t.name: t for t in catalog.topics()}[path.parent.name]
    colour, sign = topic.colour, topic.sign
    words = card_words(path)
    figure = plt.figure(figsize=(size[0] / 100, size[1] / 100), dpi=100)
    figure.patch.set_facecolor("white")
    figure.add_artist(plt.Rectangle((0, 0), 0.3, 1, color=colour, transform=figure.transFigure))
    figure.text(0.15, 0.5, sign, color="white", fontsize=64, ha="center", va="center")
    y = 0.5 + 0.13 * (len(words) - 1)
    for word in words:
        size_pt = 22 if len(word) <= 14 else max(11, int(22 * 14 / len(word)))
        figure.text(0.64, y, word, family="DejaVu Sans Mono", fontsize=size_pt, ha="center",
                    va="center", color="#222222")  # fmt: skip
        y -= 0.26
    save(figure, target)
    plt.close(figure)


def save(figure, target: Path) -> None:
    """Save a figure as PNG; a glyph missing from the fonts is an error; the file is rewritten
    only when its bytes change (``nox -s serve`` watches the source folder)."""
    import io

    import take_home

    data = io.BytesIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Glyph .* missing")
        figure.savefig(data, format="png", metadata={"Software": None})
    take_home.write_if_changed(target, data.getvalue())


def _draw_cards(app) -> None:
    """Give each page without a figure a card instead of sphinx-gallery's placeholder."""
    for path in sorted((ROOT / "examples").glob("*/plot_*.py")):
        images = GALLERY / path.parent.name / "images"
        if (images / f"sphx_glr_{path.stem}_001.png").exists():
            continue  # the page's first figure is its thumbnail
        draw_card(path, images / "thumb" / f"sphx_glr_{path.stem}_thumb.png")


def _rerun_unkept(app) -> None:
    """Before the English build runs the examples: an example whose figure has no pickle (built
    before the figures were kept) runs again, so the Chinese build can translate its figure."""
    import take_home

    if take_home.language_of(app.config) != "en":
        return
    for image in GALLERY.glob("*/images/sphx_glr_*.png"):
        if image.with_suffix(".fig.pickle").exists():
            continue
        example = re.sub(r"_\d{3}$", "", image.stem.removeprefix("sphx_glr_")) + ".py.md5"
        (image.parent.parent / example).unlink(missing_ok=True)


def setup(app):
    app.connect("builder-inited", _rerun_unkept, priority=100)  # before sphinx-gallery's run
    app.connect("builder-inited", _draw_cards)
    app.connect("builder-inited", _render_figures)
    app.connect("doctree-read", _localize_figures, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def update_catalog(path: Path = FIGURE_CATALOG) -> list[str]:
    """Add every text of the stored figures that ``path`` lacks (empty msgstr); returns them.

    Run after an English build: ``python docs/_ext/pictures.py --update-catalog``.
    """
    import polib

    catalog = polib.pofile(str(path)) if path.exists() else polib.POFile()
    catalog.metadata = catalog.metadata or {
        "Content-Type": "text/plain; charset=utf-8",
        "Language": "zh_CN",
    }
    known = {entry.msgid for entry in catalog}
    added = []
    for stored in sorted(GALLERY.glob("*/images/*.fig.pickle")):
        for english in all_texts(pickle.loads(stored.read_bytes())):
            if re.search(r"[A-Za-z]", english) and english not in known:
                occurrence = (f"{stored.parent.parent.name}/{stored.name}", "")
                catalog.append(polib.POEntry(msgid=english, msgstr="", occurrences=[occurrence]))
                known.add(english)
                added.append(english)
    path.parent.mkdir(parents=True, exist_ok=True)
    catalog.save(str(path))
    return added


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--update-catalog"]:
        for text in update_catalog():
            print(f"new figure text: {text!r}")
