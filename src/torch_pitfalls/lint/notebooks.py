"""Jupyter notebooks (``*.ipynb``): their code cells, read as one module, with cell magics
(``%%bash``) skipped and line magics and shell commands (``%time``, ``!pip``) read as ``pass``; a
finding is printed as ``path:cell N:line:col: ...``, as ruff prints it.

A line is a magic only where IPython reads one: at the start of a statement. A line that
continues a statement (inside brackets, after a backslash, inside a triple-quoted string) is
code whatever it starts with, such as the ``%`` of a string formatting split over two lines::

    print("epoch %d, loss %.3f"
          % (epoch, loss))
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING

# Notebooks -----------------------------------------------------------------------------------

if TYPE_CHECKING:
    from torch_pitfalls.lint.check import Finding


class NotebookError(ValueError):
    """A file named ``*.ipynb`` that is not a notebook the checker can read."""


def read_notebook(path: str) -> tuple[str, list[tuple[int, int]]]:
    """The code of a notebook's code cells as one module, and where each of its lines comes from.

    Returns ``(source, cells)``: ``cells[i]`` is ``(cell number, line in that cell)``, both
    from 1, of the source's line ``i + 1``.

    Raises:
        OSError: the file cannot be read.
        NotebookError: the file is not UTF-8 JSON of an nbformat 4 notebook.
    """
    with open(path, "rb") as file:
        data = file.read()
    try:
        notebook = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise NotebookError(f"not valid notebook JSON: {error}") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError("not valid notebook JSON: no list of cells")
    if notebook.get("nbformat") != 4:
        version = notebook.get("nbformat")
        raise NotebookError(f"nbformat {version!r} is not supported (only nbformat 4)")
    lines: list[str] = []
    cells: list[tuple[int, int]] = []
    for number, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = cell.get("source", "")
        if isinstance(text, list) and all(isinstance(part, str) for part in text):
            text = "".join(text)
        if not isinstance(text, str):
            raise NotebookError(f"not valid notebook JSON: cell {number} has no source text")
        if text.lstrip().startswith("%%"):  # a cell magic: the cell is not Python
            continue
        state = _START
        for line_number, line in enumerate(text.splitlines(), start=1):
            code = line.lstrip()
            if state == _START and code.startswith(("%", "!")):  # a line magic, a shell command
                line = line[: len(line) - len(code)] + "pass"
            else:
                state = _scan(line, state)
            lines.append(line)
            cells.append((number, line_number))
    return "".join(line + "\n" for line in lines), cells


_START = (0, None, False)
"""The state of :func:`_scan` at the start of a statement: no open bracket, string or backslash."""


def _scan(line: str, state: tuple[int, str | None, bool]) -> tuple[int, str | None, bool]:
    """The state after ``line``: ``(open brackets, the quotes of an open string, a backslash at
    the end)``, as far as it says whether the next line starts a statement.

    Not a tokenizer: enough to tell a continuation line from the start of a statement in code
    that Python parses (brackets, strings with their escapes, comments, backslashes).
    """
    depth, quote, _ = state
    i, end = 0, len(line)
    while i < end:
        char = line[i]
        if quote is not None:
            if char == "\\":
                i += 2
                continue
            if line.startswith(quote, i):
                i += len(quote)
                quote = None
                continue
        elif char == "#":
            return depth, quote, False
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char in "'\"":
            quote = char * 3 if line.startswith(char * 3, i) else char
            i += len(quote)
            continue
        i += 1
    backslash = line.endswith("\\")
    if quote is not None and len(quote) == 1 and not backslash:
        quote = None  # a one-line string does not go on (Python would not parse this)
    return depth, quote, backslash


def in_cell(finding: Finding, cells: list[tuple[int, int]]) -> Finding:
    """A finding of a notebook's joined source, located in its cell."""
    if not cells:
        return finding
    index = min(max(finding.line, 1), len(cells)) - 1  # a SyntaxError may point past the end
    cell, line = cells[index]
    return dataclasses.replace(finding, cell=cell, line=line, fix=None)
