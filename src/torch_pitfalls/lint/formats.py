"""The output formats of the command line (``--output-format``): ``text``, ``json``, ``sarif``
and ``github``, as ruff names them.

* ``text``: one line per finding, ``path:line:col: ID message → URL`` (``str(finding)``).
* ``json``: a list of objects, one per finding, ``{"code", "message", "filename", "cell",
  "location": {"row", "column"}, "url", "fix"}`` (:func:`as_json`).
* ``sarif``: a SARIF 2.1.0 log with one run, whose ``tool.driver.rules`` are read from the rules'
  modules (:func:`as_sarif`), for code scanning (GitHub's ``upload-sarif``).
* ``github``: GitHub Actions workflow commands, ``::error title=torch-pitfalls (TP101),file=…,
  line=…,col=…::message → URL``, shown as annotations on a pull request (:func:`as_github`).

Rows and columns count from 1, the column as Python's :mod:`ast` counts it plus one (as flake8
prints it). A finding in a notebook carries its cell's number, and its row is the row in the cell.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable
from pathlib import PurePath

from torch_pitfalls import rules
from torch_pitfalls.lint.check import PARSE_ERROR, READ_ERROR, Finding

FORMATS = ("text", "json", "sarif", "github")
"""The values of ``--output-format`` (and of ``output-format`` in ``pyproject.toml``)."""

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
"""The schema a SARIF log names (OASIS's, the version the log follows)."""

TOOL_NAME = "torch-pitfalls"

ERROR_TITLES = {
    PARSE_ERROR: "files that could not be parsed (not checked)",
    READ_ERROR: "files that could not be read (not checked)",
}
"""What ``E999`` and ``E902`` mean, as ``--statistics`` and SARIF's rules say it."""


def split_message(finding: Finding) -> tuple[str, str | None]:
    """A finding's message and the URL of its page (``None`` for ``E999`` / ``E902``)."""
    if finding.rule in ERROR_TITLES:
        return finding.message, None
    message, arrow, url = finding.message.rpartition(" → ")
    return (message, url) if arrow else (finding.message, None)


def render(findings: list[Finding], output_format: str, *, language: str, base_url=None) -> str:
    """The text the command line prints for ``findings`` in ``output_format`` (no final newline;
    empty for no findings in ``text`` and ``github``).

    Raises:
        ValueError: ``output_format`` is not one of :data:`FORMATS`.
    """
    if output_format == "text":
        return "\n".join(map(str, findings))
    if output_format == "json":
        return json.dumps(as_json(findings), ensure_ascii=False, indent=2)
    if output_format == "sarif":
        sarif = as_sarif(findings, language=language, base_url=base_url)
        return json.dumps(sarif, ensure_ascii=False, indent=2)
    if output_format == "github":
        return "\n".join(as_github(findings))
    raise ValueError(f"output format must be one of {', '.join(FORMATS)}, got {output_format!r}")


# JSON ------------------------------------------------------------------------------------------


def as_json(findings: Iterable[Finding]) -> list[dict]:
    """The ``json`` format: one object per finding.

    ``{"code": "TP102", "message": ..., "filename": ..., "cell": None, "location": {"row": 5,
    "column": 12}, "url": ..., "fix": None}``; ``url`` is ``None`` for ``E999`` / ``E902``;
    ``cell`` is the notebook cell's number (``None`` in a Python file); ``fix``, when the rule
    can fix the finding (``--fix``), is ``{"applicability": "safe", "edits": [{"content",
    "location", "end_location"}]}``.
    """
    out = []
    for finding in findings:
        message, url = split_message(finding)
        fix = None
        if finding.fix:
            fix = {
                "applicability": "safe",
                "edits": [
                    {
                        "content": edit.replacement,
                        "location": {"row": edit.line, "column": edit.col + 1},
                        "end_location": {"row": edit.end_line, "column": edit.end_col + 1},
                    }
                    for edit in finding.fix
                ],
            }
        out.append(
            {
                "code": finding.rule,
                "message": message,
                "filename": finding.path,
                "cell": finding.cell or None,
                "location": {"row": finding.line, "column": finding.col},
                "url": url,
                "fix": fix,
            }
        )
    return out


# SARIF -----------------------------------------------------------------------------------------


def _rule_name(rule: rules.Rule) -> str:
    """``functional-dropout-training`` for ``tp102_functional_dropout_training``."""
    return rule.module.__name__.rpartition(".")[2].partition("_")[2].replace("_", "-")


def sarif_rule(rule_id: str, *, language: str, base_url=None) -> dict:
    """The SARIF ``reportingDescriptor`` of a rule, from its module: its title, the first section
    of its documentation (``fullDescription``), the whole of it (``help``) and its page's URL."""
    if rule_id in ERROR_TITLES:
        return {"id": rule_id, "shortDescription": {"text": ERROR_TITLES[rule_id]}}
    found = rules.rule(rule_id)
    documentation = rules.documentation(rule_id, language=language, base_url=base_url)
    return {
        "id": found.id,
        "name": _rule_name(found),
        "shortDescription": {"text": found.title[language]},
        "fullDescription": {"text": documentation["What it does"]},
        "help": {"text": rules.explain(rule_id, language=language, base_url=base_url)},
        "helpUri": documentation["Page"],
        "defaultConfiguration": {"level": "error", "enabled": found.default},
        "properties": {
            "tags": [found.kind]
            + ([] if found.default else ["opt-in"])
            + (["fixable"] if hasattr(found.module, "fix") else [])
        },
    }


def _uri(path: str) -> str:
    """A path as a SARIF URI reference: relative paths stay relative (``/`` separators)."""
    pure = PurePath(path)
    if pure.is_absolute():
        return pure.as_uri()
    return urllib.parse.quote(pure.as_posix())


def as_sarif(findings: list[Finding], *, language: str, base_url=None) -> dict:
    """The ``sarif`` format: a SARIF 2.1.0 log with one run.

    ``tool.driver.rules`` holds every static rule (:func:`sarif_rule`), and ``E999`` / ``E902``
    when a file could not be checked; each result points to its rule (``ruleId``, ``ruleIndex``)
    and to its place, ``physicalLocation`` with a 1-based ``region``. A finding in a notebook
    points to the file alone, and its message starts with ``cell N, line L, column C:``.
    """
    from torch_pitfalls.lint.flake8 import _VERSION

    ids = [r.id for r in rules.RULES if r.kind == "lint"]
    ids += sorted({f.rule for f in findings if f.rule in ERROR_TITLES})
    index = {rule_id: i for i, rule_id in enumerate(ids)}
    results = []
    for finding in findings:
        message, url = split_message(finding)
        text = message if url is None else f"{message} → {url}"
        location: dict = {"artifactLocation": {"uri": _uri(finding.path)}}
        if finding.cell:
            text = f"cell {finding.cell}, line {finding.line}, column {finding.col}: {text}"
        else:
            location["region"] = {"startLine": finding.line, "startColumn": finding.col}
        results.append(
            {
                "ruleId": finding.rule,
                "ruleIndex": index[finding.rule],
                "level": "error",
                "message": {"text": text},
                "locations": [{"physicalLocation": location}],
            }
        )
    driver = {
        "name": TOOL_NAME,
        "informationUri": rules.site_url(base_url),
        "rules": [sarif_rule(i, language=language, base_url=base_url) for i in ids],
    }
    if _VERSION != "unknown":
        driver["version"] = _VERSION
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }


# GitHub ----------------------------------------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def as_github(findings: Iterable[Finding]) -> list[str]:
    """The ``github`` format: one workflow command per finding,
    ``::error title=torch-pitfalls (ID),file=PATH,line=L,col=C::message → URL`` (escaped as
    GitHub Actions reads them). In a notebook, the command names the file alone, and the message
    starts with ``cell N, line L, column C:``."""
    lines = []
    for finding in findings:
        properties = [
            f"title={_escape_property(f'{TOOL_NAME} ({finding.rule})')}",
            f"file={_escape_property(finding.path)}",
        ]
        text = finding.message
        if finding.cell:
            text = f"cell {finding.cell}, line {finding.line}, column {finding.col}: {text}"
        else:
            properties += [f"line={finding.line}", f"col={finding.col}"]
        lines.append(f"::error {','.join(properties)}::{_escape_data(text)}")
    return lines
