"""Checking sources and paths: the findings of the active static rules, ``# noqa`` applied."""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import sys
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from torch_pitfalls import rules
from torch_pitfalls.lint.context import Context
from torch_pitfalls.lint.noqa import without_noqa
from torch_pitfalls.lint.notebooks import NotebookError, in_cell, read_notebook

SKIPPED_DIRECTORIES = frozenset({"__pycache__", "build"})
"""Folders :func:`~torch_pitfalls.lint.check_paths` does not enter, besides hidden ones
(``.git``, ``.nox``, ``.venv``) (a folder given explicitly is searched whatever its name)."""

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


def static_ids() -> tuple[str, ...]:
    """The ids of the static rules, in order."""
    return tuple(r.id for r in rules.RULES if r.kind == "lint")


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
        fix: the edits of the rule's safe fix (:class:`torch_pitfalls.rules.Edit`, lines and
            columns of the checked source), or None when the rule has no fix for this finding
            (and in a notebook).
    """

    path: str
    line: int
    col: int
    rule: str
    message: str
    cell: int = 0
    fix: tuple[rules.Edit, ...] | None = field(default=None, compare=False, repr=False)

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
            :func:`torch_pitfalls.catalog.resolve_language` (the environment variable
            ``TORCH_PITFALLS_LANGUAGE``, then the locale).
        base_url: where the site is published; by default the environment variable
            ``TORCH_PITFALLS_BASE_URL``, else :data:`torch_pitfalls.catalog.BASE_URL`.

    Returns:
        The findings, sorted by line, column and id.

    Raises:
        SyntaxError: ``source`` is not valid Python (:func:`check_paths` reports it instead).
        RecursionError, MemoryError: ``source`` nests too deeply for Python's own parser (an
            expression of thousands of terms, an ``elif`` chain of thousands of branches);
            :func:`check_paths` reports it instead. Whatever the parser accepts, the checker
            handles (see :data:`~torch_pitfalls.lint.check.RECURSION_LIMIT`).
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
    per_file_ignores: Callable[[str], Iterable[str]] | None = None,
) -> list[Finding]:
    """Check files, and the ``*.py`` and ``*.ipynb`` files in folders; return every finding, sorted.

    A folder is searched recursively, skipping hidden folders (``.git``, ``.nox``, ``.venv``,
    ``.ipynb_checkpoints``), ``__pycache__`` and ``build``. A file named explicitly is checked
    whatever its extension; a file reached twice is checked once. Files are read with the
    encoding their coding cookie declares (UTF-8 by default).

    A file whose name ends in ``.ipynb`` is read as a Jupyter notebook (JSON, nbformat 4): its
    code cells, joined in order into one module (a name imported in one cell is known in the
    next), as ruff reads them. A cell whose source starts with a cell magic (``%%time``,
    ``%%bash``) is skipped; a line that starts a statement with ``%`` or ``!`` (a line magic, a
    shell command), after its indentation, is read as ``pass`` (a line that continues a
    statement, such as ``% (a, b))`` after ``print("%d %d"``, is code). Findings carry the
    cell's number (:class:`Finding`'s ``cell``) and the line in that cell.

    As flake8 does, a file that cannot be checked is a finding, not an exception: ``E999`` for
    invalid Python, at the error's position (at 1:1 for code nested too deeply for Python's own
    parser, which Python cannot run either), and ``E902`` at 1:1 for a path that cannot be read
    or a notebook that is not valid notebook JSON. They are reported whatever ``select`` and
    ``ignore`` say.

    Args:
        paths: files and folders (one path alone is accepted too).
        select, ignore, enable, language, base_url: as for :func:`check_source`.
        per_file_ignores: if given, ``per_file_ignores(path)`` gives the ids of the rules not run
            on the file ``path`` (the ``per-file-ignores`` of ``pyproject.toml``,
            :meth:`torch_pitfalls.lint.config.Settings.ignored_in`).

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
                source, cells = read_notebook(path)
            else:
                with tokenize.open(path) as file:
                    source = file.read()
        except NotebookError as error:
            findings.append(Finding(path, 1, 1, READ_ERROR, f"NotebookError: {error}"))
            continue
        except (OSError, UnicodeDecodeError, SyntaxError) as error:  # SyntaxError: bad cookie
            findings.append(Finding(path, 1, 1, READ_ERROR, f"{type(error).__name__}: {error}"))
            continue
        here = active
        if per_file_ignores is not None:
            here = active - frozenset(per_file_ignores(path))
        found = _check_file(source, path, here, describe)
        if cells is not None:
            found = [in_cell(finding, cells) for finding in found]
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


def _static_ids(ids: Iterable[str] | str, what: str) -> frozenset[str]:
    """Validate ids of static rules; KeyError for an unknown id, ValueError for a runtime one."""
    checked = rules.check_ids(ids, what=what)
    for rule_id in sorted(checked):
        found = rules.rule(rule_id)
        if found.kind != "lint":
            raise ValueError(
                f"{rule_id} is a runtime {found.kind} rule, not a static check; "
                f"static checks: {', '.join(static_ids())}"
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
    fixes: dict[tuple[int, int, str], tuple[rules.Edit, ...]] = {}
    with _deep_recursion():
        found = _analyse(tree, active, source, fixes)
    if found and "noqa" in source.lower():
        found = without_noqa(found, source)
    return sorted(
        Finding(path, line, col + 1, id_, describe(id_), fix=fixes.get((line, col, id_)))
        for line, col, id_ in found
    )


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


def _analyse(
    tree: ast.AST, active: frozenset[str], source: str = "", fixes: dict | None = None
) -> list[tuple[int, int, str]]:
    """Every ``(line, column from 0, rule id)`` of the active rules, noqa not applied; with
    ``fixes``, the edits of each finding that its rule can fix (``fix(context)``) are put there,
    by ``(line, column from 0, rule id)``."""
    if not active:
        return []
    context = Context.of(tree, source)
    found = []
    for rule in rules.RULES:
        if rule.id not in active:
            continue
        mine = [(line, col, rule.id) for line, col in rule.module.check(context)]
        found += mine
        if fixes is not None and mine and hasattr(rule.module, "fix"):
            at = set(mine)
            for fix in rule.module.fix(context):
                if (fix.line, fix.col, rule.id) in at and fix.edits:
                    fixes[(fix.line, fix.col, rule.id)] = tuple(fix.edits)
    return found
