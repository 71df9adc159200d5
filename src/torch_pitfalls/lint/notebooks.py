"""Jupyter notebooks (``*.ipynb``): their code cells, read as one module, with cell magics
(``%%bash``) skipped and line magics and shell commands (``%time``, ``!pip``) read as ``pass``; a
finding is printed as ``path:cell N:line:col: ...``, as ruff prints it.
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
        for line_number, line in enumerate(text.splitlines(), start=1):
            code = line.lstrip()
            if code.startswith(("%", "!")):  # a line magic or a shell command
                line = line[: len(line) - len(code)] + "pass"
            lines.append(line)
            cells.append((number, line_number))
    return "".join(line + "\n" for line in lines), cells


def in_cell(finding: Finding, cells: list[tuple[int, int]]) -> Finding:
    """A finding of a notebook's joined source, located in its cell."""
    if not cells:
        return finding
    index = min(max(finding.line, 1), len(cells)) - 1  # a SyntaxError may point past the end
    cell, line = cells[index]
    return dataclasses.replace(finding, cell=cell, line=line, fix=None)
