"""Check that the examples' outputs are reproducible: run them again and compare.

Usage (``nox -s reproducible``, after ``nox -s docs``)::

    python -m tools.reproducible

Reads the outputs sphinx-gallery wrote into ``docs/auto_examples/**/plot_*.rst``, forces every
example to run again in a fresh English build (into a temporary folder), and compares the two,
line by line, ignoring the lines tagged ``[measured]`` (times and memory, see
:func:`torch_pitfalls.measured`). Exit status 1 when an output differs.
"""

from __future__ import annotations

import difflib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
GALLERY = DOCS / "auto_examples"
OUTPUT_BLOCK = re.compile(
    r"\.\. rst-class:: sphx-glr-script-out\n\n\s*\.\. code-block:: none\n\n((?:    .*\n|\n)+)"
)


def outputs() -> dict[str, list[str]]:
    """Every example's printed output, without the lines tagged as measurements."""
    found = {}
    for rst in sorted(GALLERY.rglob("plot_*.rst")):
        lines = []
        for block in OUTPUT_BLOCK.findall(rst.read_text(encoding="utf-8")):
            lines += [line[4:] for line in block.splitlines() if line.strip()]
        found[rst.relative_to(GALLERY).as_posix()] = [
            line for line in lines if not line.startswith("[measured]")
        ]
    return found


def main() -> int:
    first = outputs()
    if not first:
        print("no example outputs found: run `nox -s docs` first")
        return 1
    for checksum in GALLERY.rglob("*.md5"):
        checksum.unlink()  # make sphinx-gallery run every example again
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "sphinx",
                "-q",
                "-j",
                "auto",
                "-D",
                "language=en",
                "-d",
                f"{tmp}/doctrees",
                str(DOCS),
                f"{tmp}/html",
            ],
            check=True,
        )
    second = outputs()
    differ = 0
    for page in sorted(first):
        if first[page] != second.get(page):
            differ += 1
            print(f"{page}: the output changed between two builds")
            sys.stdout.writelines(
                f"  {line}\n"
                for line in difflib.unified_diff(
                    first[page], second.get(page, []), lineterm="", n=1
                )
            )
    lines = sum(len(v) for v in first.values())
    print(f"{len(first)} examples, {lines} output lines compared: {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
