"""Sybil: the doctests of the docs pages (MyST ``python`` blocks) and of the helpers' docstrings."""

from __future__ import annotations

from doctest import ELLIPSIS, NORMALIZE_WHITESPACE

from sybil import Sybil
from sybil.parsers import myst, rest

OPTIONS = ELLIPSIS | NORMALIZE_WHITESPACE

pytest_collect_file = (
    Sybil(
        parsers=[
            myst.PythonCodeBlockParser(doctest_optionflags=OPTIONS),
            myst.DocTestDirectiveParser(optionflags=OPTIONS),
            myst.SkipParser(),
        ],
        patterns=["*.md"],
        path="docs",
        excludes=["_build/*"],
    )
    + Sybil(
        parsers=[rest.DocTestParser(optionflags=OPTIONS), rest.SkipParser()],
        patterns=["*.py"],
        path="src",
    )
).pytest()
