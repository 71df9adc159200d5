"""Add the new texts of the gallery's figures to ``docs/locale/zh_CN/figures.po``.

Usage, after an English build (in the docs environment)::

    python -m tools.figures

Every text of a stored figure (``docs/auto_examples/*/images/*.fig.pickle``, kept by the docs
build's figure scraper) that the catalog lacks is added with an empty translation, and printed;
the Chinese build fails until it is translated.
"""

from __future__ import annotations

import pickle
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
GALLERY = DOCS / "auto_examples"
FIGURE_CATALOG = DOCS / "locale" / "zh_CN" / "figures.po"


def all_texts(figure) -> list[str]:
    """Every text a reader sees on the drawn figure, tick labels included."""
    figure.draw_without_rendering()
    texts = [t.get_text() for t in _texts(figure)]
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            texts += [label.get_text() for label in axis.get_ticklabels()]
    return list(dict.fromkeys(t for t in texts if t.strip()))


def _texts(figure) -> list:
    from matplotlib.text import Text

    return [t for t in figure.findobj(Text) if t.get_text().strip()]


def update_catalog(path: Path = FIGURE_CATALOG) -> list[str]:
    """Add every text of the stored figures that ``path`` lacks (empty msgstr); returns them.

    Run after an English build: ``python -m tools.figures``.
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
    for text in update_catalog():
        print(f"new figure text: {text!r}")
