"""The checker's settings in ``pyproject.toml``, under ``[tool.torch-pitfalls]`` (as ruff reads
``[tool.ruff]``)::

    [tool.torch-pitfalls]
    select = ["TP101", "TP102"]       # only these rules (default: every rule that is not opt-in)
    ignore = ["TP103"]                # never these
    extend-select = ["TP104"]         # also these opt-in rules (``enable`` is the same key)
    output-format = "github"          # text, json, sarif or github
    [tool.torch-pitfalls.per-file-ignores]
    "tests/**" = ["TP102"]            # glob -> rule ids not reported in the files it matches
    "__init__.py" = ["TP105"]         # a glob without "/" matches the file's name in any folder

The file is the first ``pyproject.toml`` with a ``[tool.torch-pitfalls]`` table found walking up
from the current directory (:func:`discover`), or the one ``--config PATH`` names; ``--isolated``
reads none. Globs of ``per-file-ignores`` are relative to the file's folder. The command line's
options come after the file's: ``--select`` replaces ``select`` (and its ``extend-select`` and
``ignore``), ``--enable`` and ``--ignore`` add to them; ``per-file-ignores`` holds whatever is
selected.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from torch_pitfalls.lint.check import _static_ids, static_ids
from torch_pitfalls.lint.formats import FORMATS

SECTION = "torch-pitfalls"
"""The table of ``pyproject.toml``'s ``[tool]`` that holds the settings."""

KEYS = ("select", "ignore", "extend-select", "enable", "per-file-ignores", "output-format")
"""The keys ``[tool.torch-pitfalls]`` accepts (``enable`` is ``extend-select``'s other name)."""


class ConfigError(ValueError):
    """A ``pyproject.toml`` that cannot be read, or whose ``[tool.torch-pitfalls]`` is not
    valid; the message names the file and says what was expected."""


@dataclass(frozen=True)
class Settings:
    """The settings read from one ``pyproject.toml`` (all empty: no file).

    Attributes:
        path: the file, or None.
        select: the ``select`` ids, or None when not set.
        ignore, extend_select: ids.
        per_file_ignores: ``(glob, ids)`` pairs, in the file's order.
        output_format: one of :data:`~torch_pitfalls.lint.formats.FORMATS`, or None.
    """

    path: Path | None = None
    select: frozenset[str] | None = None
    ignore: frozenset[str] = frozenset()
    extend_select: frozenset[str] = frozenset()
    per_file_ignores: tuple[tuple[str, frozenset[str]], ...] = ()
    output_format: str | None = None
    _patterns: tuple = field(default=(), compare=False, repr=False)

    @property
    def root(self) -> Path:
        """The folder the globs of ``per-file-ignores`` are relative to (the file's)."""
        return self.path.parent if self.path is not None else Path.cwd()

    def ignored_in(self, path: str) -> frozenset[str]:
        """The ids that ``per-file-ignores`` silences in the file ``path``."""
        if not self._patterns:
            return frozenset()
        absolute = Path(os.path.abspath(path))
        try:
            relative = absolute.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            try:
                relative = absolute.relative_to(os.path.abspath(self.root)).as_posix()
            except ValueError:
                relative = None
        ids: set[str] = set()
        for (glob, rule_ids), pattern in zip(self.per_file_ignores, self._patterns, strict=True):
            subject = absolute.name if "/" not in glob else relative
            if subject is not None and pattern.fullmatch(subject):
                ids |= rule_ids
        return frozenset(ids)


def glob_pattern(glob: str) -> re.Pattern[str]:
    """A glob as a regular expression over ``/``-separated paths: ``*`` and ``?`` within a
    folder's name, ``**`` any number of folders, ``[...]`` a set of characters.

    >>> bool(glob_pattern("tests/**/*.py").fullmatch("tests/a/b/test_x.py"))
    True
    >>> bool(glob_pattern("tests/*.py").fullmatch("tests/a/test_x.py"))
    False
    """
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and "]" in glob[i + 2 :]:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


def discover(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The first ``pyproject.toml`` with a ``[tool.torch-pitfalls]`` table in ``start`` (the
    current directory by default) or a folder above it, or None.

    Raises:
        ConfigError: a ``pyproject.toml`` on the way is not valid TOML.
    """
    folder = Path(start if start is not None else os.getcwd()).resolve()
    for candidate in (folder, *folder.parents):
        path = candidate / "pyproject.toml"
        if path.is_file() and has_table(path):
            return path
    return None


def has_table(path: str | os.PathLike[str]) -> bool:
    """Whether the TOML file ``path`` has a ``[tool.torch-pitfalls]`` table (even an empty one).

    Raises:
        ConfigError: the file cannot be read or is not valid TOML.
    """
    return _table(Path(path)) is not None


def _table(path: Path) -> dict | None:
    try:
        with open(path, "rb") as file:
            data = tomllib.load(file)
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    tool = data.get("tool")
    return tool.get(SECTION) if isinstance(tool, dict) else None


def load(path: str | os.PathLike[str]) -> Settings:
    """The settings of the ``[tool.torch-pitfalls]`` table of ``path`` (none if it has none).

    Raises:
        ConfigError: the file cannot be read or is not valid TOML; the table has an unknown key
            (the message lists the allowed ones), a value of the wrong type, an unknown or
            runtime rule id, or an unknown output format.
    """
    path = Path(path)
    table = _table(path)
    if table is None:
        return Settings(path=path)
    where = f"{path}: [tool.{SECTION}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown))}; allowed keys: {', '.join(KEYS)}"
        )
    if "extend-select" in table and "enable" in table:
        raise ConfigError(f"{where}: 'extend-select' and 'enable' are the same key: give one")

    def ids(key: str, value: object) -> frozenset[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f'{where}: {key} must be a list of rule ids such as ["TP101"]')
        wanted = [v.strip().upper() for v in value]
        if "ALL" in wanted:
            wanted = [v for v in wanted if v != "ALL"] + list(static_ids())
        try:
            return _static_ids(wanted, f"rule id in {key}")
        except (KeyError, ValueError) as error:
            raise ConfigError(f"{where}: {error.args[0]}") from None

    select = ids("select", table["select"]) if "select" in table else None
    ignore = ids("ignore", table.get("ignore", []))
    extend_key = "enable" if "enable" in table else "extend-select"
    extend = ids(extend_key, table.get(extend_key, []))
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{where}: per-file-ignores must be a table of glob = [rule ids]")
    pairs = tuple(
        (glob, ids(f"per-file-ignores {glob!r}", value)) for glob, value in per_file.items()
    )
    output_format = table.get("output-format")
    if output_format is not None and output_format not in FORMATS:
        raise ConfigError(
            f"{where}: output-format must be one of {', '.join(FORMATS)}, got {output_format!r}"
        )
    return Settings(
        path=path,
        select=select,
        ignore=ignore,
        extend_select=extend,
        per_file_ignores=pairs,
        output_format=output_format,
        _patterns=tuple(glob_pattern(glob.replace(os.sep, "/")) for glob, _ in pairs),
    )


def active_rules(
    settings: Settings,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] = (),
    enable: Iterable[str] = (),
) -> frozenset[str]:
    """The rules that run, from the file's settings and then the command line's options:
    ``select`` (or every default rule) plus ``extend-select``, less ``ignore``; then the
    command line's ``--select`` replaces that set, ``--enable`` adds to it and ``--ignore``
    takes from it (as without a file, ``--enable`` does nothing after ``--select``: selecting
    an opt-in rule enables it)."""
    if select is not None:
        return frozenset(select) - frozenset(ignore)
    if settings.select is not None:
        active = settings.select
    else:
        active = frozenset(i for i in static_ids() if _is_default(i))
    active = (active | settings.extend_select) - settings.ignore
    return (active | frozenset(enable)) - frozenset(ignore)


def _is_default(rule_id: str) -> bool:
    from torch_pitfalls import rules

    return rules.rule(rule_id).default
