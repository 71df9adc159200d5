"""``# noqa`` comments, read as flake8 reads them.

Suppress a finding with ``# noqa: TP101`` (several ids: ``# noqa: TP101,TP102``; a prefix such as
``# noqa: TP1`` covers every id that starts with it) or a bare ``# noqa`` on the reported line,
with flake8's rules: the word ``noqa`` in any case but the ids in capitals, and a comment at the
end of a multi-line string or backslash-continued line covers all its lines. ``# flake8: noqa``
(a whole file) is not read by the command line.
"""

from __future__ import annotations

import io
import re
import tokenize

# flake8's own pattern (flake8.defaults.NOQA_INLINE_REGEXP), so both read a comment the same way.
_NOQA = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)


def without_noqa(found: list[tuple[int, int, str]], source: str) -> list[tuple[int, int, str]]:
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
