"""Sybil: the doctests of the docs pages (MyST ``python`` blocks), of the helpers' docstrings and
of the build glue's (``docs/_ext``)."""

from __future__ import annotations

import sys
from doctest import ELLIPSIS, NORMALIZE_WHITESPACE
from pathlib import Path

from sybil import Sybil
from sybil.parsers import myst, rest
from sybil.sybil import SybilCollection

# The build glue imports its modules by name, as docs/conf.py does.
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
        # The build glue's docstrings (docs/_ext: inventory shapes, link checks, bigrams).
        Sybil(parsers=PYTHON_DOCSTRINGS, patterns=["*.py"], path="docs/_ext"),
    ]
).pytest()
