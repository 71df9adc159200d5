"""Start a new pitfall page: ``nox -s new -- SLUG TOPIC`` (``python -m tools.new_page``).

Writes what a page needs before its content, each in its one home:

* ``examples/<topic>/plot_<slug>.py``, a sphinx-gallery script in the catalog's arc (label, title,
  what goes wrong, "What you will learn", "Prerequisites", then The symptom → Why → The fix →
  Takeaway), which runs as it is and says what to write where;
* the page's record in ``src/torch_pitfalls/catalog/pages.toml``, after the last page of its topic
  (search phrases, related pages, symptoms and messages to fill in);
* its line in the cheat sheet (``docs/cheatsheet.md``), to replace with the page's one-line rule.

Then write the page, run ``nox -s i18n`` (it creates the page's Chinese catalog) and translate it,
and ``nox -s docs``. Nothing else lists pages: every order, index and URL comes from the record.

Raises ``SystemExit`` with a message naming what was expected when the slug is malformed or taken,
or the topic is not one of the catalog's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torch_pitfalls import catalog  # standard library only: `nox -s new` puts src/ on the path

ROOT = Path(__file__).resolve().parents[1]

CATALOG_FILE = ROOT / "src" / "torch_pitfalls" / "catalog" / "pages.toml"
CHEATSHEET = ROOT / "docs" / "cheatsheet.md"

SKELETON = '''"""
.. _{slug}:

{title}
{underline}

One paragraph: what the reader sees go wrong, in the words of the report that shows it.

.. admonition:: What you will learn

   * the cause, in one line;
   * the fix, in one line.

.. admonition:: Prerequisites

   :ref:`{prerequisite}`.

Helpers used: :func:`~torch_pitfalls.get_device`, :func:`~torch_pitfalls.seed_everything`.
"""

# %%
# The symptom
# -----------
#
# Reproduce the failure: print every value the prose explains and assert it; show an expected
# error or warning with :func:`~torch_pitfalls.expect_raises` or
# :func:`~torch_pitfalls.expect_warns`.
import torch

from torch_pitfalls import get_device, seed_everything

seed_everything(0)
device = get_device()
print(f"device: {{device}}")

# %%
# Why
# ---
#
# What PyTorch does, with a link to its documentation (:func:`torch.nn.functional.cross_entropy`).

# %%
# The fix
# -------
#
# The corrected code, asserted.

# %%
# Takeaway
# --------
#
# **The one sentence to remember.**
'''

CHEAT = """
### {title}

```python
>>> # the page's rule in a few lines that a reviewer recognises, with their outputs
```

Full page: {{ref}}`{slug}`."""

RECORD = """
[pages.{slug}]
topic = "{topic}"
search = []
search_zh = []
related = []
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="nox -s new --", description=__doc__.split("\n")[0])
    parser.add_argument("slug", help="the page's id: lower-case words joined by '-'")
    parser.add_argument("topic", help="the folder of examples/ the page belongs to")
    args = parser.parse_args(argv)
    slug, topic = args.slug, args.topic
    topics = [t.name for t in catalog.topics()]
    if not catalog.SLUG.fullmatch(slug):
        parser.error(
            f"a slug is lower-case words joined by '-' (like 'retain-graph'), got {slug!r}"
        )
    if slug in catalog.slugs():
        parser.error(f"{slug!r} is a page already: {catalog.page(slug).example(ROOT / 'examples')}")
    if topic not in topics:
        parser.error(f"the topic must be one of {', '.join(topics)}; got {topic!r}")

    example = ROOT / "examples" / topic / f"{catalog.stem(slug)}.py"
    title = slug.replace("-", " ").capitalize()
    previous = [p.slug for p in catalog.pages() if p.topic == topic]
    example.write_text(
        SKELETON.format(
            slug=slug,
            title=title,
            underline="=" * len(title),
            prerequisite=previous[0] if previous else catalog.slugs()[0],
        ),
        encoding="utf-8",
    )

    text = CATALOG_FILE.read_text(encoding="utf-8")
    record = RECORD.format(slug=slug, topic=topic)
    if previous:  # after the last page of the topic (and its messages)
        start = text.index(f"[pages.{previous[-1]}]")
        following = [
            text.find(f"\n[pages.{p.slug}]", start) for p in catalog.pages() if p.topic != topic
        ]
        following = [i for i in following if i > start]
        at = min(following) if following else len(text)
        text = text[:at].rstrip("\n") + "\n" + record + text[at:]
    else:
        text = text.rstrip("\n") + "\n" + record
    CATALOG_FILE.write_text(text, encoding="utf-8")

    cheatsheet = CHEATSHEET.read_text(encoding="utf-8")
    entry = CHEAT.format(title=title, slug=slug)
    last = f"Full page: {{ref}}`{previous[-1]}`." if previous else None
    if last and last in cheatsheet:  # after the topic's last snippet
        at = cheatsheet.index(last) + len(last)
        cheatsheet = cheatsheet[:at] + "\n" + entry + cheatsheet[at:]
    else:
        cheatsheet = cheatsheet.rstrip("\n") + "\n" + entry
    CHEATSHEET.write_text(cheatsheet, encoding="utf-8")
    for path in (example, CATALOG_FILE, CHEATSHEET):
        print(f"wrote {path.relative_to(ROOT)}")
    print("next: write the page, fill its record, `nox -s i18n` and translate, `nox -s docs`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
