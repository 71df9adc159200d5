"""Sybil: the doctests of the docs pages (MyST ``python`` blocks), of the helpers' docstrings, of
the docs extension's (``docs/_ext/pitfalls``) and of the scripts' (``tools``)."""

from __future__ import annotations

import sys
from doctest import ELLIPSIS, NORMALIZE_WHITESPACE
from pathlib import Path

from sybil import Sybil
from sybil.parsers import myst, rest
from sybil.sybil import SybilCollection

# The docs extension, importable as ``pitfalls`` as docs/conf.py makes it (``tools`` is importable
# from the repository root, this file's folder, which pytest puts on the path).
sys.path.insert(0, str(Path(__file__).resolve().parent / "docs" / "_ext"))

OPTIONS = ELLIPSIS | NORMALIZE_WHITESPACE

PYTHON_DOCSTRINGS = [rest.DocTestParser(optionflags=OPTIONS), rest.SkipParser()]

pytest_collect_file = SybilCollection(
    [
        Sybil(
            parsers=[
                myst.PythonCodeBlockParser(doctest_optionflags=OPTIONS),
                myst.DocTestDirectiveParser(optionflags=OPTIONS),
                myst.SkipParser(),
            ],
            patterns=["*.md"],
            path="docs",
            excludes=["_build/*"],
        ),
        Sybil(parsers=PYTHON_DOCSTRINGS, patterns=["*.py"], path="src"),
        # The docs extension's docstrings (bigrams, glossary cells, message heads) and the
        # scripts' (link shapes, published address).
        Sybil(parsers=PYTHON_DOCSTRINGS, patterns=["*.py"], path="docs/_ext"),
        Sybil(parsers=PYTHON_DOCSTRINGS, patterns=["*.py"], path="tools"),
    ]
).pytest()
