"""Translation progress of the Chinese catalogs, one line per page.

Run by ``nox -s translations`` (and at the end of ``nox -s tests``)::

    python -m tools.catalogs

``nox -s i18n`` runs ``python -m tools.catalogs --carry-over`` after ``sphinx-intl update``.

Prints, for every catalog under ``docs/locale/zh_CN/LC_MESSAGES``, how many messages are
translated, fuzzy (the English changed since) and untranslated. Exit status 1 when any page is
incomplete. The detailed checks (markup kept, glossary, Simplified characters, typography) are
the tests in ``tests/test_translations.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polib

MESSAGES = Path(__file__).resolve().parents[1] / "docs" / "locale" / "zh_CN" / "LC_MESSAGES"


def progress(messages: Path = MESSAGES) -> list[tuple[str, int, int, int]]:
    """``(page, translated, fuzzy, untranslated)`` for every catalog, sorted by page."""
    rows = []
    for path in sorted(messages.rglob("*.po")):
        catalog = polib.pofile(str(path))
        fuzzy = len(catalog.fuzzy_entries())
        untranslated = len(catalog.untranslated_entries())
        translated = len(catalog.translated_entries())
        rows.append(
            (path.relative_to(messages).with_suffix("").as_posix(), translated, fuzzy, untranslated)
        )
    return rows


def carry_over(catalog: polib.POFile, cutoff: float = 0.5) -> int:
    """Give each new, empty entry the translation of the closest message that just disappeared.

    ``sphinx-intl update`` marks a changed message *fuzzy* when it finds the old one similar enough,
    and otherwise adds an empty entry and keeps the old one as obsolete (``#~``). Here the empty
    entry takes the obsolete entry's translation, flagged fuzzy, so a changed paragraph never loses
    its translation: a translator revises it instead of starting over.

    Args:
        catalog: a catalog just updated (modified in place).
        cutoff: the lowest similarity (``float`` in [0, 1], :class:`difflib.SequenceMatcher`
            ratio) at which an obsolete translation is reused.

    Returns:
        The number of entries that received a translation (``int``).
    """
    import difflib

    obsolete = [e for e in catalog.obsolete_entries() if e.msgstr]
    carried = 0
    for entry in catalog.untranslated_entries():
        if not obsolete:
            break
        ratios = [difflib.SequenceMatcher(None, entry.msgid, old.msgid).ratio() for old in obsolete]
        best = max(range(len(obsolete)), key=ratios.__getitem__)
        if ratios[best] < cutoff:
            continue
        old = obsolete.pop(best)
        entry.msgstr = old.msgstr
        entry.previous_msgid = old.msgid
        entry.flags.append("fuzzy")
        catalog.remove(old)
        carried += 1
    return carried


def carry_over_all(messages: Path = MESSAGES) -> int:
    """:func:`carry_over` on every catalog; prints and returns how many entries were carried.

    Every catalog is also written in one form, polib's (lines wrapped at 78 columns), whatever
    wrote it last (``sphinx-intl``, an editor, a script), without the extraction time in its
    header and without obsolete (``#~``) entries once the carry-over has used what it could, so
    that a change of one message is a change of a few lines.
    """
    total = 0
    for path in sorted(messages.rglob("*.po")):
        catalog = polib.pofile(str(path))
        # The extraction time changes at every run and conflicts between parallel branches.
        catalog.metadata.pop("POT-Creation-Date", None)
        carried = carry_over(catalog)
        if carried:
            print(f"{path.relative_to(messages)}: {carried} changed message(s) kept as fuzzy")
        # What no carry-over took is a message the pages no longer have: git keeps its history.
        for old in catalog.obsolete_entries():
            catalog.remove(old)
        if carried or str(catalog) + "\n" != path.read_text(encoding="utf-8"):
            catalog.save()
        total += carried
    return total


def main() -> int:
    rows = progress()
    width = max(len(page) for page, *_ in rows)
    print(f"{'page':<{width}}  translated  fuzzy  untranslated  done")
    incomplete = 0
    for page, translated, fuzzy, untranslated in rows:
        total = translated + fuzzy + untranslated
        share = 100 * translated / total if total else 100.0
        incomplete += bool(fuzzy or untranslated)
        print(f"{page:<{width}}  {translated:>10}  {fuzzy:>5}  {untranslated:>12}  {share:5.1f}%")
    done = sum(r[1] for r in rows)
    total = sum(r[1] + r[2] + r[3] for r in rows)
    print(
        f"{'all pages':<{width}}  {done:>10}  {'':>5}  {total - done:>12}  "
        f"{100 * done / total:5.1f}%"
    )
    if incomplete:
        print(
            f"{incomplete} page(s) need translating: fill the empty msgstr, revise the fuzzy ones "
            "and remove their '#, fuzzy' flag."
        )
    return 1 if incomplete else 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--carry-over"]:
        carry_over_all()
        sys.exit(0)
    sys.exit(main())
