"""Safe fixes: ``--fix`` applies them in place, ``--diff`` prints them as a unified diff.

A static rule may define ``fix(context)``, which yields a :class:`torch_pitfalls.rules.Fix` for
each finding it can fix without changing anything but the pitfall (see
:mod:`torch_pitfalls.rules`). The checker attaches the edits to the finding
(:attr:`Finding.fix <torch_pitfalls.lint.Finding.fix>`); :func:`fixed_source` applies them,
checks the result again and applies what is found then (at most :data:`MAX_PASSES` times), and
keeps the result only if it is still valid Python. Fixes whose edits overlap an edit already
applied wait for the next pass. Notebooks are not fixed (their findings carry no fix).
"""

from __future__ import annotations

import ast
import difflib
import io
import re
import tokenize
from collections.abc import Iterable, Sequence

from torch_pitfalls import rules

MAX_PASSES = 10
"""How many times :func:`fixed_source` checks and fixes a file at most (as ruff)."""

_NEWLINE = re.compile(r"\r\n|\r|\n")


class SourceText:
    """A module's text, with the positions :mod:`ast` gives (line from 1, column in UTF-8 bytes
    from 0) turned into offsets in the string, and back."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def _line(self, line: int) -> str:
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return self.text[start:end]

    def offset(self, line: int, col: int) -> int:
        """The string offset of ``(line, col)``.

        Raises:
            ValueError: the position is not in the text, or not at a character's start.
        """
        if not 1 <= line <= len(self.starts):
            raise ValueError(f"line {line} is not in the text (1 to {len(self.starts)})")
        encoded = self._line(line).encode("utf-8")
        if col > len(encoded):
            raise ValueError(f"column {col} is past the end of line {line}")
        try:
            return self.starts[line - 1] + len(encoded[:col].decode("utf-8"))
        except UnicodeDecodeError:
            raise ValueError(f"column {col} of line {line} is inside a character") from None

    def position(self, offset: int) -> tuple[int, int]:
        """The ``(line, col)`` of a string offset (the inverse of :meth:`offset`)."""
        import bisect

        line = bisect.bisect_right(self.starts, offset)
        start = self.starts[line - 1]
        return line, len(self.text[start:offset].encode("utf-8"))


def keyword_insertion(call: ast.Call, source: SourceText, keyword: str) -> rules.Edit | None:
    """The edit that adds the argument ``keyword`` (``training=self.training``) to a call that
    has arguments: ``, keyword`` after the last one (after the closing parentheses around it),
    `` keyword`` after a trailing comma, or a line of its own when each argument has one; None
    when the text between the last argument and the call's ``)`` is not only blanks, commas,
    parentheses and comments (a call the edit cannot place safely)."""
    last = max((*call.args, *call.keywords), key=lambda n: (n.end_lineno, n.end_col_offset))
    try:
        start = source.offset(last.end_lineno, last.end_col_offset)
        end = source.offset(call.end_lineno, call.end_col_offset) - 1  # the call's ")"
    except ValueError:
        return None
    text = source.text
    if text[end : end + 1] != ")":
        return None
    at, comma, i = start, False, start
    while i < end:  # only ")", ",", blanks, backslashes and comments lie between
        char = text[i]
        if char == "#":
            while i < end and text[i] not in "\r\n":
                i += 1
            continue
        if char == ")":
            at, comma = i + 1, False
        elif char == ",":
            at, comma = i + 1, True
        elif not char.isspace() and char != "\\":
            return None
        i += 1
    line, col = source.position(at)
    if comma and call.end_lineno > line:  # one argument a line, each with a trailing comma
        first = text[source.offset(last.lineno, 0) :]
        indent = first[: len(first) - len(first.lstrip(" \t"))]
        return rules.Edit.insert(line, col, f"\n{indent}{keyword},")
    return rules.Edit.insert(line, col, f" {keyword}" if comma else f", {keyword}")


def apply(text: str, fixes: Iterable[Sequence[rules.Edit]]) -> tuple[str, int]:
    """``text`` with the fixes applied (each fix whole or not at all); and how many were.

    A fix that overlaps one applied before it (in the order of their first edit) is left out.

    Raises:
        ValueError: an edit points outside the text, or a fix's own edits overlap.
    """
    source = SourceText(text)
    spans = []
    for edits in fixes:
        ranges = sorted(
            (source.offset(e.line, e.col), source.offset(e.end_line, e.end_col), e.replacement)
            for e in edits
        )
        for (_, end, _), (start, _, _) in zip(ranges, ranges[1:], strict=False):
            if start < end:
                raise ValueError(f"the edits of one fix overlap: {edits}")
        if ranges:
            spans.append(ranges)
    spans.sort(key=lambda ranges: ranges[0][:2])
    chosen, taken, count = [], [], 0
    for ranges in spans:
        if any(_overlap(start, end, s, e) for start, end, _ in ranges for s, e in taken):
            continue
        count += 1
        chosen += ranges
        taken += [(start, end) for start, end, _ in ranges]
    out, last = [], 0
    for start, end, replacement in sorted(chosen, key=lambda r: r[:2]):
        out += [text[last:start], replacement]
        last = end
    out.append(text[last:])
    return "".join(out), count


def _overlap(start: int, end: int, other_start: int, other_end: int) -> bool:
    """Whether two edits touch the same text (two insertions at one place count)."""
    if start == end == other_start == other_end:
        return True
    return start < other_end and other_start < end


def read_source(path: str) -> tuple[str, str]:
    """A Python file's text, its newlines as they are, and its encoding (its coding cookie's,
    UTF-8 by default, ``utf-8-sig`` with a byte-order mark).

    Raises:
        OSError: the file cannot be read.
        SyntaxError: the coding cookie names no known encoding.
        UnicodeDecodeError: the file is not in its encoding.
    """
    with open(path, "rb") as file:
        data = file.read()
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return data.decode(encoding), encoding


def fixed_source(text: str, check) -> tuple[str, int]:
    """``text`` with its safe fixes applied, checked again after each pass, and how many fixes
    were applied; ``text`` itself (and 0) if the result would not parse.

    Args:
        text: the module's source.
        check: ``check(text) -> findings`` (:class:`~torch_pitfalls.lint.Finding`, with
            their ``fix``).
    """
    current, applied = text, 0
    for _ in range(MAX_PASSES):
        fixes = [finding.fix for finding in check(current) if finding.fix]
        if not fixes:
            break
        new, count = apply(current, fixes)
        if new == current or count == 0:
            break
        current, applied = new, applied + count
    if applied:
        try:
            ast.parse(current)
        except (SyntaxError, ValueError):
            return text, 0
    return current, applied


def unified_diff(path: str, old: str, new: str) -> str:
    """The unified diff of a file's change (``--- path``, ``+++ path``), as ``--diff`` shows it."""
    lines = []
    for line in difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), path, path
    ):
        lines.append(
            line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
        )
    return "".join(lines)
