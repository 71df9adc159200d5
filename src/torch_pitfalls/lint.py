"""The static checker: PyTorch pitfalls found in source code, without running it or importing torch.

Run it on files or folders (folders are searched for ``*.py`` and ``*.ipynb``)::

    python -m torch_pitfalls.lint [--select IDS] [--ignore IDS] [--enable IDS] [--statistics]
                                  [--language LANG] [--base-url URL] PATH...

(``--select ALL`` runs every static rule, opt-in ones included, as ruff's does;
``--statistics`` prints, instead of the findings, how many each rule gave, zeros included,
and with several paths a table of counts per path: see :func:`statistics`. The exit status is
the same as without it. ``nox -s survey -- FOLDER...`` runs both over folders of real code.)

(``--language`` takes ``en`` or ``zh_CN``, or any spelling
:func:`torch_pitfalls.rules.resolve_language` accepts, ``zh``, ``zh-CN``…, as
``TORCH_PITFALLS_LANGUAGE`` does.)

or through flake8 (the plugin :class:`Flake8Checker`, error codes ``TP1xx``), or as the
pre-commit hook ``torch-pitfalls-lint``. Each finding is printed as
``path:line:col: ID message → URL``, where the URL is the page that explains the pitfall. The
rules, their messages (English and Simplified Chinese) and their pages come from the registry,
:mod:`torch_pitfalls.rules`; the checks are on the standard library's :mod:`ast`.

Rules (``kind == "lint"`` in :data:`torch_pitfalls.rules.RULES`): each is a module of
:mod:`torch_pitfalls.checks`, whose documentation says exactly what it reports and what not:
``TP101`` softmax output into cross-entropy, ``TP102`` functional dropout without
``training=``, ``TP103`` loop that never clears gradients, ``TP104`` edit through ``.data``
before the backward (opt-in), ``TP105`` layers in a plain list or dict, ``TP106`` scheduler
stepped before the optimizer, ``TP107`` clipping without ``unscale_``, ``TP108``
``DistributedSampler`` without ``set_epoch``, ``TP109`` a ``parameters()`` generator read twice.

Names are resolved through the module's imports, wherever they are: ``import torch as T``,
``import torch.nn.functional as F``, ``from torch.nn import functional as Fn``,
``from torch import nn``, ``from torch.nn.functional import cross_entropy as ce`` and
``from torch.nn.functional import *``. Softmax outputs, and loss and softmax modules and
functions, are also followed through assignments: a name in the same function (or, when the
function never assigns it, in an enclosing function or the module, if every assignment there
agrees), and ``self.attr`` assigned in any method of the same class
(``self.criterion = nn.CrossEntropyLoss()`` in ``__init__``). Not resolved: relative imports,
attributes of other objects (``trainer.criterion``, ``model.predict(x)``), functions and
classes of other modules, ``functools.partial``, containers other than ``nn.Sequential``
(``nn.ModuleList``, ``nn.Sequential(*layers)``), and rebinding an imported name. What the
module's functions return is learnt by reading the module: when a reading learns that some
function returns a softmax (or a loss function or module), the module is read again with that
knowledge, up to three more times (a function returning what another returns takes one more
reading). For TP101 the analysis reads each function top to bottom, and follows ``if``
statements: each branch starts from what held before the ``if``, a branch that ends in
``return``, ``raise``, ``continue`` or ``break`` (or in an ``if`` none of whose branches flow
on) does not flow on, and after the ``if`` the branches that do are merged: a name holds a
softmax output if it does on any of them (a softmax on some path is reported), and a loss or
softmax function or module only if all of them agree. Other statements (loops, ``try``,
``with``, ``match``) are read straight through, once, and calls are not followed.

Suppress a finding with ``# noqa: TP101`` (several ids: ``# noqa: TP101,TP102``; a prefix such as
``# noqa: TP1`` covers every id that starts with it) or a bare ``# noqa`` on the reported line,
with flake8's rules: the word ``noqa`` in any case but the ids in capitals, and a comment at the
end of a multi-line string or backslash-continued line covers all its lines. ``# flake8: noqa``
(a whole file) is not read by the command line.

Jupyter notebooks (``*.ipynb``) are checked too: their code cells, read as one module, with cell
magics (``%%bash``) skipped and line magics and shell commands (``%time``, ``!pip``) read as
``pass``; a finding is printed as ``path:cell N:line:col: ...``, as ruff prints it (see
:func:`check_paths`).

Exit status of the command line: 0 nothing found, 1 findings, 2 a usage error or a file that
could not be read or parsed (printed as ``path:line:col: E999 SyntaxError: ...`` or ``E902``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import functools
import importlib.metadata
import io
import json
import os
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from torch_pitfalls import checks, rules

__all__ = ["Finding", "Flake8Checker", "check_paths", "check_source", "main", "statistics"]

SKIPPED_DIRECTORIES = frozenset({"__pycache__", "build"})
"""Folders :func:`check_paths` does not enter, besides hidden ones (``.git``, ``.nox``, ``.venv``)
(a folder given explicitly is searched whatever its name)."""

PARSE_ERROR = "E999"
"""The id of a finding for a file that is not valid Python (flake8's code)."""

READ_ERROR = "E902"
"""The id of a finding for a path that cannot be read, or a notebook that is not valid notebook
JSON (flake8's code)."""

RECURSION_LIMIT = 20_000
"""The recursion limit the analysis runs under (raised for its duration only, never lowered):
enough for the deepest code Python's own parser accepts (an ``elif`` chain of about 2 900
branches)."""

NOTEBOOK_SUFFIX = ".ipynb"

try:
    _VERSION = importlib.metadata.version("torch-pitfalls")
except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
    _VERSION = "unknown"

_STATIC_IDS = tuple(r.id for r in rules.RULES if r.kind == "lint")
_CHECK_IDS = frozenset(m.RULE.id for m in checks.modules())

# flake8's own pattern (flake8.defaults.NOQA_INLINE_REGEXP), so both read a comment the same way.
_NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)


@functools.total_ordering
@dataclass(frozen=True)
class Finding:
    """One pitfall found in a file.

    Findings sort by path, cell, line, column and id, the order the command line prints them in;
    ``str(finding)`` is the printed line, ``path:line:col: ID message → URL``, or for a notebook
    ``path:cell N:line:col: ID message → URL`` (as ruff prints it).

    Attributes:
        path: the file, as given to :func:`check_source` or found by :func:`check_paths`.
        line: line number, from 1.
        col: column, from 1 (as flake8 prints it; :mod:`ast` counts from 0).
        rule: the rule id (``TP101``…, see :data:`torch_pitfalls.rules.RULES`), or
            ``E999`` / ``E902`` (flake8's codes) for a file that could not be checked.
        message: for a rule, its message and the URL of its page, ``"message → URL"``, in the
            language asked for (:func:`torch_pitfalls.rules.describe` without the leading id);
            for an error, what went wrong.
        cell: in a notebook, the cell's number, from 1, counting every cell (markdown ones
            too), as ruff and Jupyter number them; ``line`` is then the line in that cell.
            0 for a Python file.
    """

    path: str
    line: int
    col: int
    rule: str
    message: str
    cell: int = 0

    def _key(self) -> tuple:
        return (self.path, self.cell, self.line, self.col, self.rule, self.message)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Finding):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        where = f"cell {self.cell}:" if self.cell else ""
        return f"{self.path}:{where}{self.line}:{self.col}: {self.rule} {self.message}"


def check_source(
    source: str,
    path: str = "<string>",
    *,
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
    enable: Iterable[str] | str = (),
    language: str | None = None,
    base_url: str | None = None,
) -> list[Finding]:
    """Check the Python source code ``source``; return its findings, sorted.

    The rules are the static ones (``kind == "lint"``) of :data:`torch_pitfalls.rules.RULES`,
    described in this module's documentation. Findings on a line with a matching ``# noqa``
    comment are left out. ``select``, ``ignore`` and ``enable`` take a single id, or several
    in a list.

    Args:
        source: the text of a Python module.
        path: the name the findings carry (nothing is read from it).
        select: if given, only these rule ids run, opt-in ones included (``"TP104"``).
        ignore: rule ids that do not run, even when selected or enabled.
        enable: opt-in rule ids to run besides the default ones (ignored when ``select`` is
            given: selecting an opt-in rule enables it).
        language: language of the messages and URLs, ``"en"`` or ``"zh_CN"``; by default
            :func:`torch_pitfalls.rules.resolve_language` (the environment variable
            ``TORCH_PITFALLS_LANGUAGE``, then the locale).
        base_url: where the site is published; by default the environment variable
            ``TORCH_PITFALLS_BASE_URL``, else :data:`torch_pitfalls.rules.BASE_URL`.

    Returns:
        The findings, sorted by line, column and id.

    Raises:
        SyntaxError: ``source`` is not valid Python (:func:`check_paths` reports it instead).
        RecursionError, MemoryError: ``source`` nests too deeply for Python's own parser (an
            expression of thousands of terms, an ``elif`` chain of thousands of branches);
            :func:`check_paths` reports it instead. Whatever the parser accepts, the checker
            handles (see :data:`RECURSION_LIMIT`).
        TypeError: ``source`` is not a string.
        KeyError: an id is not a rule's.
        ValueError: an id is a runtime rule's, not a static check's; or ``language`` is not a
            site language.

    >>> code = "import torch.nn.functional as F; h = F.dropout(x, 0.5)"
    >>> for finding in check_source(code, "net.py", language="en", base_url="https://x.org"):
    ...     print(finding)  # doctest: +ELLIPSIS
    net.py:1:38: TP102 F.dropout and its family default to training=True, ... → https://x.org/en/auto_examples/modules/plot_functional_dropout.html
    """
    active = _active_rules(select, ignore, enable)
    describe = _describer(language, base_url)
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    return _findings(ast.parse(source, filename=path), source, path, active, describe)


def check_paths(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    select: Iterable[str] | str | None = None,
    ignore: Iterable[str] | str | None = None,
    enable: Iterable[str] | str = (),
    language: str | None = None,
    base_url: str | None = None,
) -> list[Finding]:
    """Check files, and the ``*.py`` and ``*.ipynb`` files in folders; return every finding, sorted.

    A folder is searched recursively, skipping hidden folders (``.git``, ``.nox``, ``.venv``,
    ``.ipynb_checkpoints``), ``__pycache__`` and ``build``. A file named explicitly is checked
    whatever its extension; a file reached twice is checked once. Files are read with the
    encoding their coding cookie declares (UTF-8 by default).

    A file whose name ends in ``.ipynb`` is read as a Jupyter notebook (JSON, nbformat 4): its
    code cells, joined in order into one module (a name imported in one cell is known in the
    next), as ruff reads them. A cell whose source starts with a cell magic (``%%time``,
    ``%%bash``) is skipped; a line that starts with ``%`` or ``!`` (a line magic, a shell
    command), after its indentation, is read as ``pass``. Findings carry the cell's number
    (:class:`Finding`'s ``cell``) and the line in that cell.

    As flake8 does, a file that cannot be checked is a finding, not an exception: ``E999`` for
    invalid Python, at the error's position (at 1:1 for code nested too deeply for Python's own
    parser, which Python cannot run either), and ``E902`` at 1:1 for a path that cannot be read
    or a notebook that is not valid notebook JSON. They are reported whatever ``select`` and
    ``ignore`` say.

    Args:
        paths: files and folders (one path alone is accepted too).
        select, ignore, enable, language, base_url: as for :func:`check_source`.

    Returns:
        The findings of every file, sorted by path, line, column and id.

    Raises:
        TypeError: ``paths`` holds something that is not a path.
        KeyError, ValueError: as for :func:`check_source`, for bad ids or language.
    """
    active = _active_rules(select, ignore, enable)
    describe = _describer(language, base_url)
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    findings = []
    for path in _python_files(paths):
        cells = None
        try:
            if path.endswith(NOTEBOOK_SUFFIX):
                source, cells = _read_notebook(path)
            else:
                with tokenize.open(path) as file:
                    source = file.read()
        except _NotebookError as error:
            findings.append(Finding(path, 1, 1, READ_ERROR, f"NotebookError: {error}"))
            continue
        except (OSError, UnicodeDecodeError, SyntaxError) as error:  # SyntaxError: bad cookie
            findings.append(Finding(path, 1, 1, READ_ERROR, f"{type(error).__name__}: {error}"))
            continue
        found = _check_file(source, path, active, describe)
        if cells is not None:
            found = [_in_cell(finding, cells) for finding in found]
        findings += found
    return sorted(findings)


def _check_file(source: str, path: str, active, describe) -> list[Finding]:
    """The findings of one file's source, or the one E999 finding that says why it cannot be."""
    try:
        tree = ast.parse(source, path)
    except (SyntaxError, ValueError) as error:  # ValueError: a null byte (Python 3.11)
        line = getattr(error, "lineno", None) or 1
        col = getattr(error, "offset", None) or 1
        message = getattr(error, "msg", None) or str(error)
        return [Finding(path, line, col, PARSE_ERROR, f"SyntaxError: {message}")]
    except (RecursionError, MemoryError) as error:  # thousands of terms or elif branches
        detail = f" ({error})" if str(error) else ""
        message = (
            f"{type(error).__name__}: code nested too deeply for Python's parser{detail}; "
            "Python cannot compile this file either"
        )
        return [Finding(path, 1, 1, PARSE_ERROR, message)]
    try:
        return _findings(tree, source, path, active, describe)
    except RecursionError:  # not seen on what the parser accepts, but never a crash
        return [Finding(path, 1, 1, READ_ERROR, "RecursionError: code nested too deeply to check")]


def main(argv: list[str] | None = None) -> int:
    """The command line, ``python -m torch_pitfalls.lint``; returns the exit status.

    Prints one line per finding, ``path:line:col: ID message → URL`` (``path:cell N:line:col:
    ...`` in a notebook), sorted by path, cell, line and column (:func:`check_paths`); with
    ``--statistics``, the counts per rule and per path instead (:func:`statistics`).

    Args:
        argv: the arguments, without the program name; by default ``sys.argv[1:]``.

    Returns:
        0 when nothing was found, 1 when something was, 2 when a file could not be read or parsed
        (its ``E902`` / ``E999`` line is printed with the others).

    Raises:
        SystemExit: with status 2, on a usage error (an unknown or runtime-only id, an unknown
            language, no path), after printing the reason; with status 0 for ``--help``.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        language = rules.resolve_language(args.language)
    except ValueError as error:  # the environment variable names another language
        parser.error(str(error))
    options = {
        "select": args.select,
        "ignore": args.ignore or (),
        "enable": args.enable or (),
        "language": language,
        "base_url": args.base_url,
    }
    if args.statistics:
        by_path = {path: check_paths(path, **options) for path in dict.fromkeys(args.paths)}
        findings = [finding for found in by_path.values() for finding in found]
    else:
        findings = check_paths(args.paths, **options)
    if hasattr(sys.stdout, "reconfigure"):  # "→" and Chinese on a console that cannot show them
        sys.stdout.reconfigure(errors="backslashreplace")
    if args.statistics:
        active = _active_rules(args.select, args.ignore or (), args.enable or ())
        print(statistics(by_path, active, language=language))
    else:
        for finding in findings:
            print(finding)
    if any(f.rule in (PARSE_ERROR, READ_ERROR) for f in findings):
        return 2
    return 1 if findings else 0


def statistics(
    by_path: dict[str, list[Finding]], active: Iterable[str], *, language: str | None = None
) -> str:
    """The text ``--statistics`` prints: findings counted per rule, and per path.

    One line per active rule, in id order, zeros included (``count  ID  title``), then a line
    for each error id found (``E999``, ``E902``: files not checked) and the total; with more
    than one path, a table of counts per path follows (one column per id above).

    Args:
        by_path: each path given, with the findings of :func:`check_paths` for it (a file
            reached through two of the paths counts under each).
        active: the rule ids that ran (their counts are printed even when 0).
        language: language of the titles (as for :func:`check_source`).

    Returns:
        The text, lines joined with ``"\\n"``, no final newline.

    Raises:
        KeyError: an id of ``active`` is not a rule's.
        ValueError: ``language`` is not a site language.

    >>> found = {"src": [Finding("src/a.py", 3, 5, "TP103", "...")]}
    >>> print(statistics(found, ["TP101", "TP103"], language="en"))
        0  TP101  softmax output passed to cross-entropy or NLL
        1  TP103  training loop that never clears gradients
        1         total
    """
    language = rules.resolve_language(language)
    counts: dict[str, dict[str, int]] = {}
    for path, found in by_path.items():
        for finding in found:
            counts.setdefault(finding.rule, {}).setdefault(path, 0)
            counts[finding.rule][path] += 1
    errors = sorted(i for i in counts if i in (PARSE_ERROR, READ_ERROR))
    ids = [*sorted(set(active)), *errors]
    titles = {PARSE_ERROR: _ERROR_TITLES[PARSE_ERROR], READ_ERROR: _ERROR_TITLES[READ_ERROR]}
    total = 0
    lines = []
    for rule_id in ids:
        count = sum(counts.get(rule_id, {}).values())
        total += count
        title = titles.get(rule_id) or rules.rule(rule_id).title[language]
        lines.append(f"{count:>5}  {rule_id:<5}  {title}")
    lines.append(f"{total:>5}         total")
    if len(by_path) > 1:
        width = max(len(path) for path in by_path)
        lines += ["", f"{'path':<{width}}  " + "  ".join(f"{i:>5}" for i in ids)]
        for path in by_path:
            cells = "  ".join(f"{counts.get(i, {}).get(path, 0):>5}" for i in ids)
            lines.append(f"{path:<{width}}  {cells}")
    return "\n".join(lines)


_ERROR_TITLES = {
    PARSE_ERROR: "files that could not be parsed (not checked)",
    READ_ERROR: "files that could not be read (not checked)",
}


class Flake8Checker:
    """The flake8 plugin: the same checks, reported by flake8 under the codes ``TP1xx``.

    Registered in ``pyproject.toml`` under ``[project.entry-points."flake8.extension"]`` as
    ``TP``, so ``flake8 --select=TP`` runs it. flake8 applies ``# noqa``, ``--select``,
    ``--ignore`` and ``--extend-select`` itself, but it can only show what the plugin reports:
    the plugin reports the default rules, plus the opt-in ones named by its option
    ``--torch-pitfalls-enable TP104`` (or ``torch-pitfalls-enable = TP104`` in the ``[flake8]``
    section of a configuration file). Messages and URLs follow ``TORCH_PITFALLS_LANGUAGE`` and
    ``TORCH_PITFALLS_BASE_URL`` (see :func:`check_source`).

    Args:
        tree: the module's syntax tree, parsed by flake8.
        filename: the file's name (unused: findings carry no path for flake8).
    """

    name = "torch-pitfalls"
    version = _VERSION
    enabled: frozenset[str] = frozenset()
    """Opt-in rule ids turned on by ``--torch-pitfalls-enable`` (set by :meth:`parse_options`)."""

    def __init__(self, tree: ast.AST, filename: str = "<unknown>") -> None:
        self.tree = tree
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager) -> None:
        """Add ``--torch-pitfalls-enable IDS`` to flake8's options (also read from its config)."""
        option_manager.add_option(
            "--torch-pitfalls-enable",
            default="",
            parse_from_config=True,
            comma_separated_list=True,
            help="opt-in torch-pitfalls rules to report too, e.g. TP104 (default: none)",
        )

    @classmethod
    def parse_options(cls, options) -> None:
        """Read ``--torch-pitfalls-enable``.

        Raises:
            ValueError: an id is not a static rule's (the message lists them).
        """
        value = options.torch_pitfalls_enable
        parts = value.split(",") if isinstance(value, str) else value
        ids = [part.strip().upper() for part in parts if part.strip()]
        try:
            cls.enabled = _static_ids(ids, "--torch-pitfalls-enable")
        except KeyError as error:
            raise ValueError(error.args[0]) from None

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        """Yield ``(line, column from 0, "ID message → URL", type(self))`` per finding."""
        active = _active_rules(None, (), self.enabled)
        describe = _describer(None, None)
        with _deep_recursion():
            found = _analyse(self.tree, active)
        for line, col, rule_id in sorted(found):
            yield line, col, f"{rule_id} {describe(rule_id)}", type(self)


# The command line ----------------------------------------------------------------------------


def _id_list(value: str) -> frozenset[str]:
    """An argparse type: comma-separated static rule ids (``ALL``: every static rule)."""
    ids = [part.strip().upper() for part in value.split(",") if part.strip()]
    if "ALL" in ids:  # as ruff's --select ALL
        ids = [i for i in ids if i != "ALL"] + list(_STATIC_IDS)
    try:
        return _static_ids(ids, "rule id")
    except (KeyError, ValueError) as error:
        raise argparse.ArgumentTypeError(error.args[0]) from None


def _language(value: str) -> str:
    """An argparse type: a language as :func:`torch_pitfalls.rules.resolve_language` reads it."""
    try:
        if not value.strip():  # resolve_language would take the environment's instead
            raise ValueError(f"language must be one of {rules.LANGUAGES}, got {value!r}")
        return rules.resolve_language(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _parser() -> argparse.ArgumentParser:
    listing = ", ".join(
        f"{r.id} {r.title['en']}" + ("" if r.default else " (opt-in)")
        for r in rules.RULES
        if r.kind == "lint"
    )
    parser = argparse.ArgumentParser(
        prog="python -m torch_pitfalls.lint",
        description="Find PyTorch pitfalls in Python files, without running them. "
        f"Rules: {listing}.",
        epilog="Exit status: 0 nothing found, 1 findings, 2 usage error or a file that could not "
        "be read or parsed. Suppress a finding with '# noqa: ID' on its line.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, or folders to search")
    parser.add_argument(
        "--select",
        type=_id_list,
        metavar="IDS",
        help="run only these rules (comma-separated; ALL: every rule, opt-in ones included)",
    )
    parser.add_argument("--ignore", type=_id_list, metavar="IDS", help="do not run these rules")
    parser.add_argument(
        "--enable", type=_id_list, metavar="IDS", help="also run these opt-in rules (TP104)"
    )
    parser.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of findings of each rule (and of each PATH, when several are "
        "given) instead of the findings",
    )
    parser.add_argument(
        "--language",
        type=_language,
        metavar="LANG",
        help=f"language of messages and URLs: {' or '.join(rules.LANGUAGES)}, or another "
        f"spelling of them such as zh or zh-CN (default: ${rules.LANGUAGE_ENV}, then the locale)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help=f"site of the pages (default: ${rules.BASE_URL_ENV}, else {rules.BASE_URL})",
    )
    return parser


def _python_files(paths: Iterable) -> Iterator[str]:
    """The files to check, each once (under the name it was first reached by)."""
    seen: set[str] = set()
    for path in paths:
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"paths must be str or os.PathLike, got {type(path).__name__}")
        for file in _files_under(os.fspath(path)):
            key = os.path.realpath(file)
            if key not in seen:
                seen.add(key)
                yield file


def _files_under(path: str) -> Iterator[str]:
    if not os.path.isdir(path):
        yield path  # a missing file is reported by the reader
        return
    for folder, subfolders, files in os.walk(path):
        subfolders[:] = sorted(
            d for d in subfolders if not d.startswith(".") and d not in SKIPPED_DIRECTORIES
        )
        yield from (
            os.path.join(folder, name)
            for name in sorted(files)
            if name.endswith((".py", NOTEBOOK_SUFFIX))
        )


# Rule selection and messages -----------------------------------------------------------------


def _static_ids(ids: Iterable[str] | str, what: str) -> frozenset[str]:
    """Validate ids of static rules; KeyError for an unknown id, ValueError for a runtime one."""
    checked = rules.check_ids(ids, what=what)
    for rule_id in sorted(checked):
        found = rules.rule(rule_id)
        if found.kind != "lint":
            raise ValueError(
                f"{rule_id} is a runtime {found.kind} rule, not a static check; "
                f"static checks: {', '.join(_STATIC_IDS)}"
            )
    return checked


def _active_rules(select, ignore, enable) -> frozenset[str]:
    if select is not None:
        active = _static_ids(select, "rule id in select")
    else:
        defaults = {r.id for r in rules.RULES if r.kind == "lint" and r.default}
        active = defaults | _static_ids(enable, "rule id in enable")
    if ignore is None:
        ignore = ()
    return active - _static_ids(ignore, "rule id in ignore")


def _describer(language: str | None, base_url: str | None):
    """``rule id -> "message → URL"``, with the language resolved (and checked) once."""
    language = rules.resolve_language(language)
    cache: dict[str, str] = {}

    def describe(rule_id: str) -> str:
        if rule_id not in cache:
            text = rules.describe(rule_id, language=language, base_url=base_url)
            cache[rule_id] = text.removeprefix(f"{rule_id} ")
        return cache[rule_id]

    return describe


def _findings(tree: ast.AST, source: str, path: str, active, describe) -> list[Finding]:
    """The sorted findings of one parsed module, noqa applied."""
    with _deep_recursion():
        found = _analyse(tree, active, source)
    if found and "noqa" in source.lower():
        found = _without_noqa(found, source)
    return sorted(Finding(path, line, col + 1, id_, describe(id_)) for line, col, id_ in found)


def _without_noqa(found: list[tuple[int, int, str]], source: str) -> list[tuple[int, int, str]]:
    """Leave out the findings that a ``# noqa`` comment covers, as flake8 would."""
    lines = io.StringIO(source).readlines()
    logical = _noqa_lines(source, lines)

    def suppressed(line: int, rule_id: str) -> bool:
        text = logical.get(line) or (lines[line - 1] if 0 < line <= len(lines) else "")
        match = _NOQA.search(text)
        if match is None:
            return False
        if match["codes"] is None:
            return True
        codes = tuple(code for code in re.split(r"[,\s]", match["codes"]) if code)
        return rule_id.startswith(codes)

    return [(line, col, rule_id) for line, col, rule_id in found if not suppressed(line, rule_id)]


def _noqa_lines(source: str, lines: list[str]) -> dict[int, str]:
    """flake8's mapping of a line to the text searched for ``noqa``: multi-line tokens join."""
    mapping: dict[int, str] = {}
    first, last = len(lines) + 2, -1
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            first, last = min(first, token.start[0]), max(last, token.end[0])
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                joined = "".join(lines[first - 1 : last])
                mapping.update(dict.fromkeys(range(first, last + 1), joined))
                first, last = len(lines) + 2, -1
    except (tokenize.TokenError, SyntaxError):
        return {}
    return mapping


# Notebooks -----------------------------------------------------------------------------------


class _NotebookError(ValueError):
    """A file named ``*.ipynb`` that is not a notebook the checker can read."""


def _read_notebook(path: str) -> tuple[str, list[tuple[int, int]]]:
    """The code of a notebook's code cells as one module, and where each of its lines comes from.

    Returns ``(source, cells)``: ``cells[i]`` is ``(cell number, line in that cell)``, both
    from 1, of the source's line ``i + 1``.

    Raises:
        OSError: the file cannot be read.
        _NotebookError: the file is not UTF-8 JSON of an nbformat 4 notebook.
    """
    with open(path, "rb") as file:
        data = file.read()
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _NotebookError(f"not valid notebook JSON: {error}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise _NotebookError("not valid notebook JSON: no list of cells")
    if notebook.get("nbformat") != 4:
        version = notebook.get("nbformat")
        raise _NotebookError(f"nbformat {version!r} is not supported (only nbformat 4)")
    lines: list[str] = []
    cells: list[tuple[int, int]] = []
    for number, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell.get("source", "")
        if isinstance(text, list) and all(isinstance(part, str) for part in text):
            text = "".join(text)
        if not isinstance(text, str):
            raise _NotebookError(f"not valid notebook JSON: cell {number} has no source text")
        if text.lstrip().startswith("%%"):  # a cell magic: the cell is not Python
            continue
        for line_number, line in enumerate(text.splitlines(), start=1):
            code = line.lstrip()
            if code.startswith(("%", "!")):  # a line magic or a shell command
                line = line[: len(line) - len(code)] + "pass"
            lines.append(line)
            cells.append((number, line_number))
    return "".join(line + "\n" for line in lines), cells


def _in_cell(finding: Finding, cells: list[tuple[int, int]]) -> Finding:
    """A finding of a notebook's joined source, located in its cell."""
    if not cells:
        return finding
    index = min(max(finding.line, 1), len(cells)) - 1  # a SyntaxError may point past the end
    cell, line = cells[index]
    return dataclasses.replace(finding, cell=cell, line=line)


# The analysis --------------------------------------------------------------------------------


@contextlib.contextmanager
def _deep_recursion() -> Iterator[None]:
    """Run the analysis under :data:`RECURSION_LIMIT`: it recurses once per nested statement or
    expression, and an ``elif`` chain nests one level per branch."""
    previous = sys.getrecursionlimit()
    if previous < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def _analyse(tree: ast.AST, active: frozenset[str], source: str = "") -> list[tuple[int, int, str]]:
    """Every ``(line, column from 0, rule id)`` of the active rules, noqa not applied."""
    if not active:
        return []
    return list(checks.run(checks.Context.of(tree, source), active))


if __name__ == "__main__":
    sys.exit(main())
