"""The command line, ``python -m torch_pitfalls.lint``: options, ``--statistics``, ``--explain``."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path

from torch_pitfalls import rules
from torch_pitfalls.lint.check import (
    PARSE_ERROR,
    READ_ERROR,
    Finding,
    _static_ids,
    check_paths,
    check_source,
    static_ids,
)
from torch_pitfalls.lint.config import (
    KEYS,
    SECTION,
    ConfigError,
    Settings,
    active_rules,
    discover,
    has_table,
    load,
)
from torch_pitfalls.lint.fixes import fixed_source, read_source, unified_diff
from torch_pitfalls.lint.formats import ERROR_TITLES, FORMATS, render

EXIT_CLEAN = 0
"""The exit status when nothing was found (with ``--diff``, nothing to change)."""
EXIT_FINDINGS = 1
"""The exit status when something was found (with ``--fix``, findings left after fixing; with
``--diff``, a fix would change a file)."""
EXIT_ERROR = 2
"""The exit status of a usage or configuration error (an unknown option, rule id, language or output
format, a ``pyproject.toml`` that is not valid), or a file that could not be read or parsed
(``E902``, ``E999``, printed with the findings)."""

EXIT_STATUS_HELP = (
    "exit status: 0 nothing found; 1 findings (with --fix: findings left; with --diff: changes "
    "to make); 2 a usage or configuration error (bad option, rule id, language, output format or "
    "pyproject.toml), or a file that could not be read or parsed (E902, E999)."
)


def main(argv: list[str] | None = None) -> int:
    """The command line, ``python -m torch_pitfalls.lint``; returns the exit status.

    Prints the findings in the output format asked for (:mod:`torch_pitfalls.lint.formats`; by
    default one line per finding, ``path:line:col: ID message → URL``, ``path:cell
    N:line:col: ...`` in a notebook), sorted by path, cell, line and column
    (:func:`check_paths`); with ``--statistics``, the counts per rule and per path instead
    (:func:`statistics`). Settings are read from ``pyproject.toml``
    (:mod:`torch_pitfalls.lint.config`) unless ``--isolated`` is given.

    Args:
        argv: the arguments, without the program name; by default ``sys.argv[1:]``.

    Returns:
        0 (:data:`~torch_pitfalls.lint.cli.EXIT_CLEAN`) when nothing was found, 1
        (:data:`~torch_pitfalls.lint.cli.EXIT_FINDINGS`) when something was, 2
        (:data:`~torch_pitfalls.lint.cli.EXIT_ERROR`) when a file could not be read or parsed
        (its ``E902`` / ``E999`` finding is printed with the others) or the configuration is not
        valid (the reason is printed on stderr). With ``--fix``, the findings left decide; with
        ``--diff``, 1 when a fix would change a file.

    Raises:
        SystemExit: with status 2, on a usage error (an unknown or runtime-only id, an unknown
            language or output format, no path), after printing the reason; with status 0 for
            ``--help``.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.explain is not None:
        try:
            text = rules.explain(
                args.explain.strip().upper(), language=args.language, base_url=args.base_url
            )
        except (KeyError, ValueError) as error:
            parser.error(str(error).strip("'\""))
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(errors="backslashreplace")
        print(text)
        return EXIT_CLEAN
    if not args.paths:
        parser.error("the following arguments are required: PATH")
    if args.isolated and args.config is not None:
        parser.error("--config and --isolated cannot be used together")
    try:
        language = rules.resolve_language(args.language)
        rules.site_url(args.base_url)
    except ValueError as error:  # the environment variable names another language or site
        parser.error(str(error))
    try:
        settings = _settings(args)
    except ConfigError as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    active = active_rules(settings, args.select, args.ignore or (), args.enable or ())
    options = {
        "select": active,
        "language": language,
        "base_url": args.base_url,
        "per_file_ignores": settings.ignored_in if settings.per_file_ignores else None,
    }
    output_format = args.output_format or settings.output_format or "text"
    if args.statistics and (args.fix or args.diff):
        parser.error("--statistics cannot be used with --fix or --diff")
    if args.statistics:
        by_path = {path: check_paths(path, **options) for path in dict.fromkeys(args.paths)}
        findings = [finding for found in by_path.values() for finding in found]
    else:
        findings = check_paths(args.paths, **options)
    if hasattr(sys.stdout, "reconfigure"):  # "→" and Chinese on a console that cannot show them
        sys.stdout.reconfigure(errors="backslashreplace")
    if args.fix or args.diff:
        fixed, files = _apply_fixes(findings, options, diff=args.diff)
        if args.diff:
            print(f"{fixed} fix{'es' if fixed != 1 else ''} would be applied to {files} "
                  f"file{'s' if files != 1 else ''}", file=sys.stderr)  # fmt: skip
            if any(f.rule in (PARSE_ERROR, READ_ERROR) for f in findings):
                return EXIT_ERROR
            return EXIT_FINDINGS if fixed else EXIT_CLEAN
        findings = check_paths(args.paths, **options)  # what is left
        left = len(findings)
        print(f"fixed {fixed} finding{'s' if fixed != 1 else ''} in {files} "
              f"file{'s' if files != 1 else ''}, {left} left", file=sys.stderr)  # fmt: skip
    if args.statistics:
        print(statistics(by_path, active, language=language))
    else:
        text = render(findings, output_format, language=language, base_url=args.base_url)
        if text:
            print(text)
    return _status(findings)


def _apply_fixes(findings: list[Finding], options: dict, *, diff: bool) -> tuple[int, int]:
    """Apply the safe fixes of ``findings``' files (re-checking after each pass), or with
    ``diff`` print them as unified diffs; return how many fixes, in how many files."""
    fixed = files = 0
    for path in dict.fromkeys(f.path for f in findings if f.fix):
        try:
            text, encoding = read_source(path)
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue  # it was read a moment ago: changed since, and checked again below
        active = options["select"]
        if options["per_file_ignores"] is not None:
            active = active - frozenset(options["per_file_ignores"](path))

        def check(source: str, path=path, active=active) -> list[Finding]:
            try:
                return check_source(
                    source,
                    path,
                    select=active,
                    language=options["language"],
                    base_url=options["base_url"],
                )
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return []

        new, count = fixed_source(text, check)
        if not count:
            continue
        fixed, files = fixed + count, files + 1
        if diff:
            sys.stdout.write(unified_diff(path, text, new))
        else:
            with open(path, "wb") as file:
                file.write(new.encode(encoding))
    return fixed, files


def _status(findings: list[Finding]) -> int:
    if any(f.rule in (PARSE_ERROR, READ_ERROR) for f in findings):
        return EXIT_ERROR
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _settings(args: argparse.Namespace) -> Settings:
    """The settings of ``--config``, of the ``pyproject.toml`` found, or none (``--isolated``)."""
    if args.isolated:
        return Settings()
    if args.config is not None:
        path = Path(args.config)
        if not path.is_file():
            raise ConfigError(f"--config {args.config}: no such file (expected a pyproject.toml)")
        if not has_table(path):
            raise ConfigError(f"{path}: no [tool.{SECTION}] table")
        return load(path)
    found = discover()
    return Settings() if found is None else load(found)


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
    titles = ERROR_TITLES
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


# The command line ----------------------------------------------------------------------------


def _id_list(value: str) -> frozenset[str]:
    """An argparse type: comma-separated static rule ids (``ALL``: every static rule)."""
    ids = [part.strip().upper() for part in value.split(",") if part.strip()]
    if "ALL" in ids:  # as ruff's --select ALL
        ids = [i for i in ids if i != "ALL"] + list(static_ids())
    try:
        return _static_ids(ids, "rule id")
    except (KeyError, ValueError) as error:
        raise argparse.ArgumentTypeError(error.args[0]) from None


def _language(value: str) -> str:
    """An argparse type: a language as :func:`torch_pitfalls.catalog.resolve_language` reads it."""
    try:
        if not value.strip():  # resolve_language would take the environment's instead
            raise ValueError(f"language must be one of {rules.LANGUAGES}, got {value!r}")
        return rules.resolve_language(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def rule_listing(kind: str | None = "lint", language: str = "en") -> str:
    """One line per rule, ``  ID  title``, from the rule modules (every rule with ``kind=None``)."""
    return "\n".join(
        f"  {r.id}  {r.title[language]}" + ("" if r.default else " (opt-in)")
        for r in rules.RULES
        if kind is None or r.kind == kind
    )


def pre_commit_description() -> str:
    """The ``description`` of the pre-commit hook ``torch-pitfalls-lint`` in
    ``.pre-commit-hooks.yaml``, from the rules: how many static rules there are, and their ids
    (a plain YAML scalar: no ``": "`` or ``" #"``; a test checks that the file says this)."""
    ids = static_ids()
    opt_in = sum(1 for i in ids if not rules.rule(i).default)
    return (
        f"Find PyTorch pitfalls in Python files and Jupyter notebooks without running them "
        f"({len(ids)} static rules, {ids[0]}-{ids[-1]}, {opt_in} of them opt-in); each finding "
        f"links to the page that explains it."
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m torch_pitfalls.lint",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Find PyTorch pitfalls in Python files, without running them.\n\n"
        f"rules (--explain ID for one's documentation):\n{rule_listing('lint')}\n\n"
        "runtime rules, of python -m torch_pitfalls.guards (not run here):\n"
        + "\n".join(line for line in rule_listing(None).splitlines() if "  TP0" in line),
        epilog=textwrap.fill(EXIT_STATUS_HELP, 79)
        + "\n\n"
        + textwrap.fill(
            f"Suppress a finding with '# noqa: ID' on its line. Settings: [tool.{SECTION}] in "
            f"the first pyproject.toml found from the current folder up, keys "
            f"{', '.join(KEYS)}.",
            79,
        ),
    )
    parser.add_argument(
        "--explain",
        metavar="ID",
        help="print the documentation of a rule (of either kind) and exit",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files, or folders to search")
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
        "--output-format",
        choices=FORMATS,
        help="how findings are printed: text (path:line:col: ID message → URL, the default), "
        "json (a list of objects), sarif (SARIF 2.1.0, for code scanning), github (GitHub "
        "Actions annotations); default: output-format of pyproject.toml, else text",
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="apply the safe fixes in place (rules that have one: --explain ID says), check "
        "again, and print what is left",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print the safe fixes as a unified diff and change nothing (exit status 1 when "
        "there are some)",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"read the settings from this pyproject.toml (its [tool.{SECTION}] table) instead "
        "of the first one found from the current folder up",
    )
    parser.add_argument(
        "--isolated", action="store_true", help="read no pyproject.toml: the options alone"
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
