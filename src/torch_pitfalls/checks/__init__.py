"""The static checker's rules, one module per rule.

Each module ``tpNNN_<name>.py`` of this package is the one home of one static rule: it holds

* ``RULE``, the rule's :class:`torch_pitfalls.rules.Rule` (id, page, title and message in English
  and Simplified Chinese), which :data:`torch_pitfalls.rules.RULES` collects;
* ``check(context)``, the analysis: it yields ``(line, column from 0)`` of each finding in one
  parsed module (:class:`Context`), ``# noqa`` not applied;
* its docstring, which says exactly what is and is not reported (the API reference shows it).

Its fixtures lie in ``tests/lint_fixtures/`` under the rule's id (``tp105_positive.py``,
``tp105_negative.py``), and each reported line carries the marker the test compares exactly.
The command line and the flake8 adapter (:mod:`torch_pitfalls.lint`) run every module listed in
:data:`MODULES`; nothing here imports torch.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from torch_pitfalls.checks._ast import Imports, statements

_AFTER_A_DOT = re.compile(r"\.\s*([A-Za-z_]\w*)")

Imports.__module__ = __name__  # documented here, with the rest of the rules' interface

MODULES: tuple[str, ...] = (
    "tp101_softmax_into_cross_entropy",
    "tp102_functional_dropout_training",
    "tp103_loop_never_clears_gradients",
    "tp104_data_edit_before_backward",
    "tp105_layers_in_plain_list",
    "tp106_scheduler_before_optimizer",
    "tp107_clip_without_unscale",
    "tp108_sampler_without_set_epoch",
    "tp109_parameters_generator_reused",
)
"""The rule modules of this package, by name, in id order."""


@dataclass
class Context:
    """One parsed module, as the rules see it.

    Attributes:
        tree: the module's :mod:`ast` tree.
        source: its text.
        imports: the qualified name each imported name stands for.
        attributes: every attribute name the module uses (``x.step`` gives ``step``), so that
            a rule can skip a module that cannot contain its pattern.
        cache: what an analysis shared by several rules keeps for the next one (by name).
        statements: every statement of the module, nested ones included (walked once for all
            rules).
    """

    tree: ast.AST
    source: str
    imports: Imports
    attributes: frozenset[str] = field(default_factory=frozenset)
    cache: dict = field(default_factory=dict)
    statements: list = field(default_factory=list)

    @classmethod
    def of(cls, tree: ast.AST, source: str = "") -> Context:
        """The context of ``tree``; ``source`` is its text, if known.

        With the text, ``attributes`` are read from it (every word after a dot: some that are
        not attributes too, in strings and comments, which only makes a rule skip less); without
        it, from the tree (several times slower).
        """
        if source:
            names = frozenset(_AFTER_A_DOT.findall(source))
        else:
            names = frozenset(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))
        every = list(statements(tree))
        return cls(tree, source, Imports(tree, statements=every), names, statements=every)


def modules() -> list:
    """The rule modules, imported, in id order."""
    return [importlib.import_module(f"{__name__}.{name}") for name in MODULES]


def run(context: Context, active: frozenset[str]) -> Iterator[tuple[int, int, str]]:
    """``(line, column from 0, rule id)`` of every finding of the active rules of this package."""
    for module in modules():
        if module.RULE.id in active:
            for line, col in module.check(context):
                yield line, col, module.RULE.id


# The registry imports the rule modules; importing it last lets a rule module be imported first.
from torch_pitfalls import rules as _rules  # noqa: E402, F401
