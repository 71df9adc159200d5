"""The flake8 adapter: the same checks, reported by flake8 under the codes ``TP1xx``."""

from __future__ import annotations

import ast
import importlib.metadata
from collections.abc import Iterator

from torch_pitfalls.lint.check import (
    _active_rules,
    _analyse,
    _deep_recursion,
    _describer,
    _static_ids,
)

try:
    _VERSION = importlib.metadata.version("torch-pitfalls")
except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
    _VERSION = "unknown"


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
        lines: the file's lines, as flake8 read them: the rules see the same text as with
            :func:`check_source` (comments too, such as the ``# %%`` cells ``TP121`` reads).
    """

    name = "torch-pitfalls"
    version = _VERSION
    enabled: frozenset[str] = frozenset()
    """Opt-in rule ids turned on by ``--torch-pitfalls-enable`` (set by :meth:`parse_options`)."""

    def __init__(
        self, tree: ast.AST, filename: str = "<unknown>", lines: list[str] | None = None
    ) -> None:
        self.tree = tree
        self.filename = filename
        self.source = "".join(lines or ())

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
            found = _analyse(self.tree, active, self.source)
        for line, col, rule_id in sorted(found):
            yield line, col, f"{rule_id} {describe(rule_id)}", type(self)
