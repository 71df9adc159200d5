"""The static checker: PyTorch pitfalls found in source code, without running it or importing torch.

Run it on files or folders (folders are searched for ``*.py`` and ``*.ipynb``)::

    python -m torch_pitfalls.lint [--select IDS] [--ignore IDS] [--enable IDS] [--statistics]
                                  [--output-format {text,json,sarif,github}] [--fix | --diff]
                                  [--config PATH | --isolated]
                                  [--language LANG] [--base-url URL] PATH...
    python -m torch_pitfalls.lint --explain ID

(``--select ALL`` runs every static rule, opt-in ones included, as ruff's does;
``--statistics`` prints, instead of the findings, how many each rule gave, zeros included,
and with several paths a table of counts per path: see :func:`statistics`. The exit status is
the same as without it. ``nox -s survey -- FOLDER...`` runs both over folders of real code.
``--explain ID`` prints a rule's documentation; ``--help`` lists every rule.)

(``--language`` takes ``en`` or ``zh_CN``, or any spelling
:func:`torch_pitfalls.catalog.resolve_language` accepts, ``zh``, ``zh-CN``…, as
``TORCH_PITFALLS_LANGUAGE`` does.)

or through flake8 (the plugin :class:`Flake8Checker`, error codes ``TP1xx``), or as the
pre-commit hook ``torch-pitfalls-lint``. Each finding is printed as
``path:line:col: ID message → URL``, where the URL is the page that explains the pitfall.

The rules are the static ones (``kind == "lint"``) of :data:`torch_pitfalls.rules.RULES`: each
is a module of :mod:`torch_pitfalls.rules`, whose documentation says what it reports and what
not. They read one parsed module (:class:`~torch_pitfalls.lint.context.Context`), with names
resolved through its imports, on the standard library's :mod:`ast`; the analyses they share are
in ``torch_pitfalls.lint.analyses``.

Suppress a finding with ``# noqa: TP101`` (``torch_pitfalls.lint.noqa``); notebooks are read
cell by cell (``torch_pitfalls.lint.notebooks``). Settings are read from ``[tool.torch-pitfalls]``
in ``pyproject.toml`` (:mod:`torch_pitfalls.lint.config`); the output formats are in
:mod:`torch_pitfalls.lint.formats`, the safe fixes of ``--fix`` and ``--diff`` in
:mod:`torch_pitfalls.lint.fixes`.

Exit status of the command line: 0 nothing found, 1 findings (with ``--fix``: findings left;
with ``--diff``: changes to make), 2 a usage or configuration error, or a file that could not be
read or parsed (printed as ``path:line:col: E999 SyntaxError: ...`` or ``E902``); see
:data:`~torch_pitfalls.lint.cli.EXIT_CLEAN`, :data:`~torch_pitfalls.lint.cli.EXIT_FINDINGS` and
:data:`~torch_pitfalls.lint.cli.EXIT_ERROR`.
"""

from torch_pitfalls.lint import config, fixes, formats
from torch_pitfalls.lint.check import (
    NOTEBOOK_SUFFIX,
    PARSE_ERROR,
    READ_ERROR,
    RECURSION_LIMIT,
    SKIPPED_DIRECTORIES,
    Finding,
    check_paths,
    check_source,
)
from torch_pitfalls.lint.cli import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, main, statistics
from torch_pitfalls.lint.flake8 import Flake8Checker

__all__ = [
    "EXIT_CLEAN",
    "EXIT_ERROR",
    "EXIT_FINDINGS",
    "NOTEBOOK_SUFFIX",
    "PARSE_ERROR",
    "READ_ERROR",
    "RECURSION_LIMIT",
    "SKIPPED_DIRECTORIES",
    "Finding",
    "Flake8Checker",
    "check_paths",
    "check_source",
    "config",
    "fixes",
    "formats",
    "main",
    "statistics",
]
