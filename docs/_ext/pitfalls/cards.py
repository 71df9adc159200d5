"""Cards of the gallery: a page without a figure would show sphinx-gallery's placeholder on the
gallery's cards. Each gets a card of its own instead (:func:`draw_card`): the topic's colour and
sign, and the code names the page is about (from its title, else its first paragraph), drawn with
matplotlib at build time. Code names are the same in both languages, so one card serves both.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from torch_pitfalls import catalog

from .common import GALLERY_DIR, ROOT, digest_of, stamp, up_to_date
from .figures import save

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
    return [catalog.slug_of(path)]


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


def draw_cards(app) -> None:
    """Give each page without a figure a card instead of sphinx-gallery's placeholder; again only
    when what the cards are drawn from changed (pages, topics, this code)."""
    from torch_pitfalls import catalog

    cards = {}
    for path in sorted((ROOT / "examples").glob("*/plot_*.py")):
        images = GALLERY_DIR / path.parent.name / "images"
        if (images / f"sphx_glr_{path.stem}_001.png").exists():
            continue  # the page's first figure is its thumbnail
        cards[path] = images / "thumb" / f"sphx_glr_{path.stem}_thumb.png"
    here = Path(__file__).parent
    pages = Path(catalog.__file__).with_name("pages.toml")
    digest = digest_of([*cards, pages, here / "cards.py", here / "figures.py"])
    if up_to_date("cards", digest, cards.values()):
        return
    for path, target in cards.items():
        draw_card(path, target)
    stamp("cards", digest)
